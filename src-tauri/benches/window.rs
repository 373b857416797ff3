//! The viewer's latencies, measured in the real window (Xvfb, WebKitWebDriver, the harness
//! of the end-to-end tests) and printed with the machine:
//!
//!     cargo bench -p hamlet-viewer --bench window
//!
//! The shipped recording dragged through 300 moments and "why?" opened ten times; a
//! million-event synthetic recording dragged the same way; the shipped map with 25 agents
//! played at 600×; a memory stream of over ten thousand memories scrolled end to end.
//! Nothing is asserted: the end-to-end tests check what these do. Needs what they need
//! (`./hamlet-dev setup`). Screenshots go to `target/viewer-bench/`.

#[path = "../tests/e2e/measure.rs"]
mod measure;
#[path = "../tests/e2e/webdriver.rs"]
#[allow(dead_code, reason = "the tests use more of the driver than the benchmark does")]
mod webdriver;

use std::path::{Path, PathBuf};

use measure::{machine, report, wait_open, wait_tracks, why_clicks, DRAG, PLAY, SCROLL};
use serde_json::json;
use webdriver::Window;

fn open(file: &Path, data: &Path) -> Window {
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/viewer-bench");
    let w = Window::open(&[file.display().to_string()], data, &shots);
    wait_open(&w);
    wait_tracks(&w);
    w
}

fn main() {
    // `cargo bench -- --test` (a smoke run) and filters are not for this one.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    println!("{}", machine());
    let data = tempfile::tempdir().unwrap();

    let shipped: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings/willowmere-day.hamlet");
    {
        let w = open(&shipped, data.path());
        println!("shipped recording:");
        report("  tracks asked → kept", &w.run("return window.hamletStats.tracks;", json!([])));
        let dragged = w.run_async(DRAG, json!([300]));
        report("  scrub input → frame drawn", &dragged["scrub"]);
        report("  frame draw", &dragged["frames"]);
        let (agent, seq, nodes) = measure::longest_why(&shipped);
        let why = why_clicks(&w, agent, seq, 10);
        report(&format!("  why click → graph laid out ({nodes} events, the longest chain)"), &why);
        measure::report_why_parts(&w);
        w.screenshot("shipped");
    }
    {
        let file = data.path().join("million.hamlet");
        measure::million(&file);
        let w = open(&file, data.path());
        println!("synthetic recording (1,000,000 events, 25 agents):");
        report("  tracks asked → kept", &w.run("return window.hamletStats.tracks;", json!([])));
        let dragged = w.run_async(DRAG, json!([300]));
        report("  scrub input → frame drawn", &dragged["scrub"]);
        report("  frame draw", &dragged["frames"]);
        w.screenshot("million");
    }
    {
        let file = data.path().join("willowmere-25.hamlet");
        measure::willowmere_25(&file);
        let w = open(&file, data.path());
        let played = w.run_async(PLAY, json!([240]));
        println!("the shipped map with 25 agents, playing at 600×:");
        println!(
            "  display frames with a new moment drawn: {} of {}",
            played["fresh"], played["n"]
        );
        report("  map draw", &played["draws"]);
        report("  the page's work per display frame", &played["work"]);
        report("  display frame interval", &played["raf"]);
        w.screenshot("willowmere-25");
    }
    {
        let file = data.path().join("memories.hamlet");
        measure::many_memories(&file);
        let w = open(&file, data.path());
        let panel = measure::open_memories(&w);
        let scrolled = w.run_async(SCROLL, json!([]));
        println!("memory stream of {} memories, scrolled end to end:", panel["memories"]);
        report("  list redraw per scroll", &scrolled["render"]);
        report("  display frame interval while scrolling", &scrolled["raf"]);
    }
}
