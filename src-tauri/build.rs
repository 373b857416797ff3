//! Embeds the page (`../viewer`) and the window's configuration (`tauri.conf.json`,
//! `capabilities/`) into the binary: the viewer builds with `cargo` alone.

fn main() {
    // A file added to the page must rebuild the binary too (edits are tracked already).
    println!("cargo:rerun-if-changed=../viewer");
    tauri_build::build();
}
