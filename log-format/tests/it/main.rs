//! Integration tests of `hamlet-log`: damage, the sans-IO reader, round trips, and the
//! format document. One binary, as every crate of Hamlet has.

mod compressed;
mod damage;
mod format_doc;
mod names;
mod reading;
