//! Carries the viewer's page into `hamlet` for `hamlet serve` and `hamlet share`: every file
//! of `viewer/` (the same page the desktop window shows), and the browser's build of the
//! read commands (`web/`, built here for `wasm32-unknown-unknown` with the `web` profile, in
//! a target directory of its own). Without the wasm32 target the build goes on, says so, and
//! those two commands say how to get it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.parent().expect("cli/ is in the workspace").to_owned();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    for watched in ["viewer", "web/src", "web/Cargo.toml", "core/src", "core/Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    for watched in ["log-format/src", "log-format/Cargo.toml", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    let mut page: Vec<(String, PathBuf)> = std::fs::read_dir(root.join("viewer"))
        .expect("viewer/ is there")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            ["html", "js", "mjs", "css"].contains(&ext)
        })
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    page.sort();
    let mut code = String::from("/// The viewer's page: each file's name and bytes.\n");
    code.push_str("pub const PAGE: &[(&str, &[u8])] = &[\n");
    for (name, path) in &page {
        code.push_str(&format!(
            "    ({name:?}, include_bytes!({:?})),\n",
            path.display().to_string()
        ));
    }
    code.push_str("];\n");
    code.push_str("/// The browser's build of the read commands, if it could be made.\n");
    match wasm(&root) {
        Ok(path) => code.push_str(&format!(
            "pub const WASM: Option<&[u8]> = Some(include_bytes!({:?}));\n",
            path.display().to_string()
        )),
        Err(why) => {
            println!("cargo:warning=hamlet serve and hamlet share are built without the browser viewer: {why}");
            code.push_str("pub const WASM: Option<&[u8]> = None;\n");
        }
    }
    std::fs::write(out.join("page.rs"), code).expect("OUT_DIR is writable");
}

/// Builds `web/` for the browser; its module's path.
fn wasm(root: &Path) -> Result<PathBuf, String> {
    let target = root.join("target").join("wasm");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--locked", "--profile", "web", "-p", "hamlet-web"])
        .args(["--target", "wasm32-unknown-unknown", "--target-dir"])
        .arg(&target)
        // The host's flags (a CPU to tune for) are not the browser's.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .status()
        .map_err(|e| format!("cargo did not run: {e}"))?;
    if !status.success() {
        return Err("web/ did not build for wasm32-unknown-unknown \
                    (rustup target add wasm32-unknown-unknown, then build again)"
            .into());
    }
    Ok(target.join("wasm32-unknown-unknown/web/hamlet_web.wasm"))
}
