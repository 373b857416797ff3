//! `hamlet-web`: the viewer's read commands for a browser. Built for
//! `wasm32-unknown-unknown`, it opens a recording's bytes (verifying them, as the desktop
//! window does) and answers every read command through `hamlet_core::view::dispatch`, the
//! door the desktop's commands go through too, so the two answer the same JSON byte for
//! byte.
//!
//! The export table is plain (no bindings generator): the page writes into the inbox and
//! reads the outbox through the module's memory.
//!
//! | export | does |
//! |---|---|
//! | `hamlet_inbox(len) -> ptr` | makes the inbox `len` bytes long; the page writes its bytes there |
//! | `hamlet_open(name_len) -> status` | the inbox is a file name (`name_len` bytes of UTF-8) then the recording: opens it; the outbox holds the `opened` answer |
//! | `hamlet_ask(command_len) -> status` | the inbox is a command's name (`command_len` bytes) then its arguments as JSON: the outbox holds the answer |
//! | `hamlet_outbox() -> ptr`, `hamlet_outbox_len() -> len` | where the last answer is |
//!
//! A status is 0 when the outbox holds JSON, 1 when it holds an error in words. A panic
//! traps (WebAssembly has no unwinding here): the page answers the asking panel with an
//! error and starts a new instance. The bytes of a recording opened stay for the
//! instance's life (the session borrows them); the page opens one recording per instance.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use hamlet_core::log::Log;
use hamlet_core::view::dispatch::dispatch;
use hamlet_core::view::session::Session;

/// A recording open in this instance: its bytes (kept for the instance's life), read as a
/// log, and the session on it.
struct Open {
    recording: hamlet_log::Recording<'static>,
    session: Session,
}

thread_local! {
    static INBOX: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static OUTBOX: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static OPEN: RefCell<Option<Open>> = const { RefCell::new(None) };
}

/// Opens `bytes` as a recording named `name` (verified first); answers the `opened` JSON.
/// What was open before is closed.
pub fn open(name: &str, bytes: Vec<u8>) -> Result<String, String> {
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    let (recording, session) =
        Session::recording(bytes, Path::new(name)).map_err(|e| e.to_string())?;
    let opened = serde_json::to_string(session.opened()).map_err(|e| e.to_string());
    OPEN.with(|open| *open.borrow_mut() = Some(Open { recording, session }));
    opened
}

/// Answers read command `command` with `args` (JSON) over the recording open.
pub fn ask(command: &str, args: &str) -> Result<String, String> {
    OPEN.with(|open| {
        let mut open = open.borrow_mut();
        let Some(open) = open.as_mut() else {
            return Err("nothing is open: open a recording first".to_owned());
        };
        let log: &dyn Log = &open.recording;
        dispatch(&mut open.session, log, command, args, &BTreeMap::new())
    })
}

/// The inbox's first `head` bytes as UTF-8 (what to do), and the rest (its matter).
fn take_inbox(head: u32) -> Result<(String, Vec<u8>), String> {
    let mut inbox = INBOX.with(|i| std::mem::take(&mut *i.borrow_mut()));
    let head = usize::try_from(head).unwrap_or(usize::MAX);
    if head > inbox.len() {
        return Err(format!("the inbox holds {} bytes, fewer than {head}", inbox.len()));
    }
    let rest = inbox.split_off(head);
    let head = String::from_utf8(inbox).map_err(|_| "a name that is not UTF-8".to_owned())?;
    Ok((head, rest))
}

/// Puts an answer in the outbox; its status.
fn answer(result: Result<String, String>) -> u32 {
    let (status, text) = match result {
        Ok(json) => (0, json),
        Err(words) => (1, words),
    };
    OUTBOX.with(|o| *o.borrow_mut() = text.into_bytes());
    status
}

/// Makes the inbox `len` bytes long (zeroed); where to write them.
#[allow(unsafe_code, reason = "a WebAssembly export must keep its name")]
#[no_mangle]
pub extern "C" fn hamlet_inbox(len: u32) -> *mut u8 {
    INBOX.with(|i| {
        let mut inbox = i.borrow_mut();
        inbox.clear();
        inbox.resize(usize::try_from(len).unwrap_or(0), 0);
        inbox.as_mut_ptr()
    })
}

/// Opens the recording in the inbox (after its name, `name_len` bytes).
#[allow(unsafe_code, reason = "a WebAssembly export must keep its name")]
#[no_mangle]
pub extern "C" fn hamlet_open(name_len: u32) -> u32 {
    answer(take_inbox(name_len).and_then(|(name, bytes)| open(&name, bytes)))
}

/// Answers the command in the inbox (its name, `command_len` bytes, then its arguments).
#[allow(unsafe_code, reason = "a WebAssembly export must keep its name")]
#[no_mangle]
pub extern "C" fn hamlet_ask(command_len: u32) -> u32 {
    answer(take_inbox(command_len).and_then(|(command, args)| {
        let args = String::from_utf8(args).map_err(|_| "arguments that are not UTF-8")?;
        ask(&command, &args)
    }))
}

/// Where the last answer is.
#[allow(unsafe_code, reason = "a WebAssembly export must keep its name")]
#[no_mangle]
pub extern "C" fn hamlet_outbox() -> *const u8 {
    OUTBOX.with(|o| o.borrow().as_ptr())
}

/// How long the last answer is, in bytes.
#[allow(unsafe_code, reason = "a WebAssembly export must keep its name")]
#[no_mangle]
pub extern "C" fn hamlet_outbox_len() -> u32 {
    OUTBOX.with(|o| u32::try_from(o.borrow().len()).unwrap_or(u32::MAX))
}
