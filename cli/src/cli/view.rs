//! `hamlet view`: opens the desktop viewer (`hamlet-viewer`, built from `src-tauri/`) on a
//! recording or a store. The engine does not depend on the viewer: this finds its binary
//! beside `hamlet` (or on the PATH, or at `$HAMLET_VIEWER`) and runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use clap::Args;

use super::Outcome;

/// `hamlet view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// A recording to open (`.hamlet`)
    file: Option<PathBuf>,
    /// A store to open instead (a directory made by `hamlet run --store`)
    #[arg(long, conflicts_with = "file")]
    store: Option<PathBuf>,
}

/// The environment variable that names the viewer's binary outright.
pub const VIEWER_ENV: &str = "HAMLET_VIEWER";

const BINARY: &str = "hamlet-viewer";

/// The viewer's binary: `$HAMLET_VIEWER`, else beside this program, else on the PATH.
fn viewer_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(VIEWER_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let beside = std::env::current_exe().ok()?.parent()?.join(BINARY);
    if beside.is_file() {
        return Some(beside);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|d| d.join(BINARY)).find(|p| p.is_file())
    })
}

fn has_display() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
}

pub fn view(a: ViewArgs) -> anyhow::Result<Outcome> {
    let (path, store): (&Path, bool) = match (&a.file, &a.store) {
        (Some(file), _) => (file, false),
        (None, Some(dir)) => (dir, true),
        (None, None) => {
            bail!("give a recording FILE or --store DIR (or run `hamlet-viewer` to pick one)")
        }
    };
    if store && !path.is_dir() {
        bail!(
            "no store at {}: a store is a directory made by `hamlet run --store`",
            path.display()
        );
    }
    if !store && !path.is_file() {
        bail!("no recording at {}", path.display());
    }
    if !has_display() {
        bail!(
            "no display to open a window on (neither DISPLAY nor WAYLAND_DISPLAY is set): run it in a \
             desktop session, or under `xvfb-run`; the same questions answer on the command line: \
             `hamlet show`, `hamlet why`, `hamlet transcript`"
        );
    }
    let binary = viewer_binary().with_context(|| {
        format!(
            "the viewer is not built: run `cargo build --release -p hamlet-viewer` (it needs the Debian \
             package libwebkit2gtk-4.1-dev; `./hamlet-dev setup` installs it), or set {VIEWER_ENV} to its path"
        )
    })?;
    let mut command = Command::new(&binary);
    if store {
        command.arg("--store");
    }
    command.arg(path);
    let status =
        command.status().with_context(|| format!("cannot run the viewer {}", binary.display()))?;
    if !status.success() {
        bail!("the viewer stopped with {status}");
    }
    Ok(Outcome::Done)
}
