//! The viewer tested as a person would use it: the real `hamlet-viewer` window under Xvfb,
//! driven through WebKitWebDriver. It opens the shipped recording, scrubs to moments and
//! checks the agents' places against the engine's query of the same moment (and the frames
//! the page draws from its tracks against the engine's), opens an agent's panel and "why?"
//! down to a prompt, plays, and opens a recording full of hostile text to check that nothing
//! in it runs. Others scrub a million events, scroll ten thousand memories, play 25 agents on
//! the shipped map, reopen a file where it was left, drop one on the window, and fork one
//! (imported into a store first), rename the fork and delete it from the branch tree. Two change a
//! fork in the window against a scripted OpenAI-compatible test server (`scripted_server.rs`,
//! a test double): one adds an inner-voice thought, sees its marker on the timeline,
//! continues ten simulated minutes, cancels a second continuation part way, and compares the
//! fork with main and plots it; the other kills the viewer with SIGKILL during a
//! continuation, reopens the store in a new window, finds every step it was told of, and
//! continues. One leads a town as its mayor from the Intervene tab's form, typed as a person
//! would (`mayor.rs`): a job at a home refused next to its field, one at the café written
//! and marked on the timeline. Screenshots of each view go to `target/viewer-e2e/`; the latencies measured in
//! the window are printed with the machine (`benches/window.rs` prints the same without the
//! checks).
//!
//! Needs Xvfb, WebKitWebDriver, ImageMagick's `import`, xdotool and Debian's python3-gi, and
//! the embedded embedding model (`./hamlet-dev setup` installs them);
//! HAMLET_SKIP_VIEWER_E2E=1 skips.

mod browser;
mod hostile;
mod mayor;
mod measure;
mod scripted_server;
mod webdriver;

use std::path::{Path, PathBuf};
use std::time::Duration;

use hamlet_engine::query::Past;
use hamlet_log::{Event, Recording};
use measure::{machine, report, seek, wait_open, wait_tracks, DRAG};
use scripted_server::ScriptedServer;
use serde_json::{json, Value};
use webdriver::Window;

fn skip() -> bool {
    std::env::var_os("HAMLET_SKIP_VIEWER_E2E").is_some_and(|v| v == "1")
}

/// One window at a time: two cores cannot draw two software-rendered windows and keep
/// either one's latencies honest.
static ONE_WINDOW: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_window() -> std::sync::MutexGuard<'static, ()> {
    ONE_WINDOW.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn shots() -> PathBuf {
    root().join("target/viewer-e2e")
}

fn shipped() -> PathBuf {
    root().join("recordings/willowmere-day.hamlet")
}

fn events_of(path: &Path) -> Vec<Event> {
    let bytes = std::fs::read(path).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let main = rec.root().unwrap().id;
    rec.events(main, 0).unwrap().collect::<Result<_, _>>().unwrap()
}

/// `hamlet show FILE --at #SEQ --format json`, run with the `hamlet` built beside these
/// tests (`cargo test --workspace` builds it).
fn hamlet_show(file: &Path, seq: u64) -> Value {
    let exe = std::env::current_exe().unwrap();
    let hamlet = exe.parent().and_then(Path::parent).map(|d| d.join("hamlet")).unwrap();
    assert!(
        hamlet.exists(),
        "{} is not built: run `cargo build --release -p hamlet-cli`",
        hamlet.display()
    );
    let out = std::process::Command::new(&hamlet)
        .arg("show")
        .arg(file)
        .args(["--at", &format!("#{seq}"), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "hamlet show: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A window on a recording `make` writes into a fresh folder (which lives as long as the
/// window), once it shows a frame: the folder, the window and what the page shows.
fn open_made(name: &str, make: fn(&Path)) -> (tempfile::TempDir, Window, Value) {
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join(name);
    make(&file);
    let w = Window::open(&[file.display().to_string()], data.path(), &shots());
    let opened = wait_open(&w);
    (data, w, opened)
}

/// Waits for the branch's tracks, then holds the frames the page draws from them equal to
/// the engine's at `seqs`.
fn tracks_agree(w: &Window, seqs: &[u64]) {
    wait_tracks(w);
    let differ = w.run_async(
        "const done = arguments[arguments.length - 1]; window.hamlet.checkTracks(arguments[0]).then(done, (e) => done({ error: String(e) }));",
        json!([seqs]),
    );
    assert_eq!(differ, json!([]), "frames drawn from the page's tracks and the engine's differ");
    report("  tracks asked → kept", &w.run("return window.hamletStats.tracks;", json!([])));
}

#[test]
fn the_viewer_opens_scrubs_explains_and_plays_the_shipped_recording() {
    if skip() {
        return;
    }
    let _one = one_window();
    let file = shipped();
    let events = events_of(&file);
    let data = tempfile::tempdir().unwrap();
    let w = Window::open(&[file.display().to_string()], data.path(), &shots());
    let opened = wait_open(&w);
    assert_eq!(opened["branch"], "main", "{opened}");
    w.screenshot("01-opened");

    // Three moments: the agents stand where the engine's query says.
    let head = events.last().unwrap().seq();
    // Three moments: the agents stand where `hamlet show --format json` says.
    for (i, seq) in [head / 5, head / 2, head - 3].into_iter().enumerate() {
        let shown = seek(&w, seq);
        let town = hamlet_show(&file, seq);
        let agents = shown["agents"].as_array().unwrap();
        let expected = town["agents"].as_array().unwrap();
        assert_eq!(agents.len(), expected.len(), "at #{seq}");
        for brief in expected {
            let a = agents
                .iter()
                .find(|a| a["id"] == brief["id"])
                .unwrap_or_else(|| panic!("{} on screen", brief["name"]));
            assert_eq!(a["tile"], brief["tile"], "{} at #{seq}", brief["name"]);
        }
        w.screenshot(&format!("02-moment-{}", i + 1));
    }
    // The page draws every moment from its tracks: the same frames as the engine's.
    let seqs: Vec<u64> = (0..400).map(|i| i * head / 400 + i % 7).chain([0, head]).collect();
    tracks_agree(&w, &seqs);

    // An agent's panel: her name, her memory stream as the engine's query has it.
    let seq = seek(&w, head / 2)["seq"].as_u64().unwrap();
    let past = Past::new(Past::cut(&events, seq));
    let delphine = past.find_agent("Delphine Ashcombe").unwrap();
    w.run("window.hamlet.select(arguments[0]); return true;", json!([delphine.0]));
    let panel = w.wait_for(
        "Delphine's panel",
        "const a = window.hamlet.debug().agent; return !a.loading && a.agent === arguments[0] ? a : null;",
        json!([delphine.0]),
    );
    let view = past.agent(delphine).unwrap();
    assert_eq!(panel["memories"], json!(view.memories.len()), "her memory stream, whole");
    let text = w.run("return document.querySelector('#pane-agent').textContent;", json!([]));
    let text = text.as_str().unwrap();
    assert!(text.contains("Delphine Ashcombe"), "{text}");
    if let Some(summary) = &view.summary {
        assert!(text.contains(&summary.text[..summary.text.len().min(30)]), "her summary: {text}");
    }
    w.screenshot("03-agent-panel");

    // "Why?" on her action, down to the prompt of the call behind it.
    let before = w.run("return window.hamletStats.why.length;", json!([])).as_u64().unwrap_or(0);
    w.click("#pane-agent .agent-doing .btn-why");
    w.wait_for(
        "the why graph",
        "return window.hamletStats.why.length > arguments[0] && document.querySelector('#pane-why svg g[data-kind]');",
        json!([before]),
    );
    // The graph shows the boxes around the action; the tree lists every cause: the first
    // model call in it.
    w.run(
        "[...document.querySelectorAll('#pane-why button')].find((b) => b.textContent.trim() === 'Tree').click(); \
         document.querySelector('#pane-why .tree-row.cat-call').click(); return true;",
        json!([]),
    );
    let detail = w.wait_for(
        "the prompt behind the action",
        "const d = document.querySelector('[data-why-detail]'); return d && !d.hidden && d.textContent.length > 40 ? d.textContent : null;",
        json!([]),
    );
    assert!(detail.as_str().unwrap().contains("Delphine"), "the prompt names her: {detail}");
    w.run(
        "[...document.querySelectorAll('#pane-why button')].find((b) => b.textContent.trim() === 'Graph').click(); return true;",
        json!([]),
    );
    let first_why =
        w.run("return [window.hamletStats.why[0], window.hamletStats.whyParts[0]];", json!([]));
    w.screenshot("04-why");

    // Play for a few seconds: the moment moves on.
    let before = seek(&w, 10)["seq"].as_u64().unwrap();
    w.run("window.hamlet.play(); return true;", json!([]));
    std::thread::sleep(std::time::Duration::from_secs(3));
    let after = w.run("window.hamlet.pause(); return window.hamlet.state().seq;", json!([]));
    assert!(after.as_u64().unwrap() > before, "playing moved from #{before} to {after}");
    w.screenshot("05-played");

    // Where a frame's time goes: the IPC round trip alone, and the display's frame interval.
    let probe = w.run_async(
        r#"const done = arguments[arguments.length - 1];
        (async () => {
          const inv = window.__TAURI__.core.invoke;
          const ipc = [];
          for (let i = 0; i < 60; i++) { const t = performance.now(); await inv('frame', { branch: 'main', seq: 100 + i * 40 }); ipc.push(performance.now() - t); }
          const raf = []; let last = performance.now();
          await new Promise((res) => { let n = 0; const f = (t) => { raf.push(t - last); last = t; if (++n < 60) requestAnimationFrame(f); else res(); }; requestAnimationFrame(f); });
          const why = [];
          for (let i = 0; i < 3; i++) { const t = performance.now(); const g = await inv('why', { branch: 'main', seq: 1536, agent: 0 }); why.push(performance.now() - t); why.push(JSON.stringify(g).length); }
          for (let i = 0; i < 3; i++) { const t = performance.now(); await window.hamlet.openWhy({ agent: 0, seq: 1536 }); why.push(performance.now() - t); }
          done({ ipc, raf, why });
        })();"#,
        json!([]),
    );
    report("  frame command round trip (IPC + engine)", &probe["ipc"]);
    report("  display frame interval", &probe["raf"]);
    println!("  why command: {}", probe["why"]);

    // Scrub as a hand drags: the latency from input to frame drawn, measured in the window.
    let stats = w.run_async(DRAG, json!([300]));
    // "Why?" of the action with the longest chain of causes, ten times.
    let (agent, seq, nodes) = measure::longest_why(&file);
    let why = measure::why_clicks(&w, agent, seq, 10);
    assert_eq!(why.as_array().map(Vec::len), Some(10), "{why}");
    println!("{}", machine());
    println!("shipped recording ({} events):", events.len());
    report("  scrub input → frame drawn", &stats["scrub"]);
    report("  frame draw", &stats["frames"]);
    report(&format!("  why click → graph laid out ({nodes} events, the longest chain)"), &why);
    measure::report_why_parts(&w);
    println!(
        "  the session's first why click (nothing warm yet): {} ms (command, build, layout: {})",
        first_why[0], first_why[1]
    );
}

#[test]
fn hostile_text_shows_as_written_and_never_runs() {
    if skip() {
        return;
    }
    let _one = one_window();
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("hostile.hamlet");
    hostile::write(&file);
    let w = Window::open(&[file.display().to_string()], data.path(), &shots());
    wait_open(&w);
    let head = events_of(&file).last().unwrap().seq();
    // Its tracks draw every moment as the engine does, hostile text and all.
    tracks_agree(&w, &(0..=head).collect::<Vec<_>>());
    seek(&w, head);
    w.run("window.hamlet.select(0); return true;", json!([]));
    w.wait_for(
        "the agent panel",
        "const a = window.hamlet.debug().agent; return !a.loading && a.agent === 0;",
        json!([]),
    );
    w.screenshot("06-hostile-agent");
    w.click("#pane-agent .agent-doing .btn-why");
    w.wait_for(
        "the why graph",
        "return document.querySelector('#pane-why svg g[data-kind]');",
        json!([]),
    );
    for kind in ["LlmRequested", "LlmResponded", "PlanMade", "MemoryAdded"] {
        w.run(
            "const n = document.querySelector(`#pane-why g[data-kind=${arguments[0]}]`); if (n) n.dispatchEvent(new MouseEvent('click', {bubbles: true})); return !!n;",
            json!([kind]),
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    w.screenshot("07-hostile-why");
    // Every tab of every panel, each given time to draw.
    w.run_async(
        "const done = arguments[arguments.length - 1]; const tabs = [...document.querySelectorAll('[role=tab]')]; \
         let i = 0; const next = () => { if (i < tabs.length) { tabs[i].click(); i += 1; setTimeout(next, 250); } else done(tabs.length); }; next();",
        json!([]),
    );
    w.screenshot("08-hostile-tabs");
    let page = w.run(
        &format!(
            "return {{ pwned: window.{p} || null, text: document.body.textContent, scripts: document.scripts.length, \
             injected: document.querySelectorAll('img[src=x], a[href^=javascript], [onerror]').length }};",
            p = hostile::PWNED
        ),
        json!([]),
    );
    assert_eq!(page["pwned"], Value::Null, "a payload ran: {}", page["pwned"]);
    assert_eq!(page["injected"], 0, "recording text became elements");
    let text = page["text"].as_str().unwrap();
    for shown in [
        "<script>window.__hamletPwned='script'</script>",
        "onerror=",
        "javascript:",
        "\u{202E}txet desrever\u{202C}",
    ] {
        assert!(text.contains(shown), "shown as written: {shown}");
    }
}

/// A town-shaped recording of a million events (`hamlet synth`, with checkpoints as a store
/// exports them): the scrubber is dragged across the whole day and every frame it asks for
/// arrives; the latency from input to frame drawn is printed.
#[test]
fn the_scrubber_keeps_up_on_a_million_events() {
    if skip() {
        return;
    }
    let _one = one_window();
    let (_data, w, opened) = open_made("million.hamlet", measure::million);
    assert_eq!(opened["agents"].as_array().map(Vec::len), Some(25), "{opened}");
    let seqs: Vec<u64> = (0..60).map(|i| i * 16_661 + i % 5).collect();
    tracks_agree(&w, &seqs);
    let stats = w.run_async(DRAG, json!([300]));
    // Every input of the drag was answered by a drawn frame (its own or a later one).
    let answered = stats["scrub"].as_array().map_or(0, Vec::len);
    assert!(answered >= 290, "{answered} of 300 scrub inputs reached the screen");
    w.screenshot("09-million");
    println!("{}", machine());
    println!("synthetic recording (1,000,000 events, 25 agents):");
    report("  scrub input → frame drawn", &stats["scrub"]);
    report("  frame draw", &stats["frames"]);
}

/// What the viewer keeps between runs (tauri-plugin-store): the moment a file was left at,
/// the recent files and the settings come back when the window is opened again.
#[test]
fn a_reopened_file_comes_back_where_it_was_left() {
    if skip() {
        return;
    }
    let _one = one_window();
    let file = shipped();
    let head = events_of(&file).last().unwrap().seq();
    let left_at = head * 2 / 3;
    let data = tempfile::tempdir().unwrap();
    let kept = data.path().join("town.hamlet.viewer/settings.json");
    {
        let w = Window::open(&[file.display().to_string()], data.path(), &shots());
        wait_open(&w);
        seek(&w, left_at);
        w.run(
            "const s = document.querySelector('.tl-speed'); s.value = '600'; s.dispatchEvent(new Event('change')); return true;",
            json!([]),
        );
        // The moment is saved a second after it settles: wait for the file to say so.
        let mut tries = 600;
        loop {
            let text = std::fs::read_to_string(&kept).unwrap_or_default();
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let moment = v["moments"].as_array().and_then(|m| m.first()).map(|m| m[1].clone());
            if moment == Some(json!(left_at)) && v["settings"]["speed"] == 600 {
                break;
            }
            tries -= 1;
            assert!(tries > 0, "the moment and the speed were not saved: {text}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let w = Window::open(&[file.display().to_string()], data.path(), &shots());
    let shown = w.wait_for(
        "the moment it was left at",
        "const s = window.hamlet && window.hamlet.state(); return s && s.seq === arguments[0] ? s : null;",
        json!([left_at]),
    );
    assert_eq!(shown["seq"], json!(left_at));
    let speed = w.run("return document.querySelector('.tl-speed').value;", json!([]));
    assert_eq!(speed, json!("600"), "the speed chosen last time");
    let recent = w.run_async(
        "const done = arguments[arguments.length - 1]; window.__TAURI__.core.invoke('recent').then(done, (e) => done(String(e)));",
        json!([]),
    );
    let path = std::fs::canonicalize(&file).unwrap();
    assert_eq!(recent[0]["path"], json!(path.display().to_string()), "{recent}");
    w.screenshot("10-reopened");
}

/// An agent with over ten thousand memories: the memory stream keeps a few dozen rows in
/// the page however long it is, and scrolling it end to end redraws at once.
#[test]
fn ten_thousand_memories_scroll_smoothly() {
    if skip() {
        return;
    }
    let _one = one_window();
    let (_data, w, _) = open_made("memories.hamlet", measure::many_memories);
    wait_tracks(&w);
    let panel = measure::open_memories(&w);
    let n = panel["memories"].as_u64().unwrap();
    assert!(n >= 10_000, "{n} memories");
    let scrolled = w.run_async(measure::SCROLL, json!([]));
    let rows = scrolled["rows"].as_u64().unwrap();
    assert!(rows > 5 && rows < 80, "{rows} rows in the page for {n} memories");
    assert_eq!(scrolled["last"], json!(n - 1), "the last memory is shown at the end: {scrolled}");
    w.screenshot("11-memories");
    println!("{}", machine());
    println!("memory stream of {n} memories, scrolled end to end:");
    report("  list redraw per scroll", &scrolled["render"]);
    report("  display frame interval while scrolling", &scrolled["raf"]);
}

/// The shipped town with 25 agents walking it (`hamlet synth --town willowmere`), played at
/// ten simulated minutes a second: how often the map draws a new moment, what a draw costs
/// and how often the display shows a frame, measured in the window.
#[test]
fn twenty_five_agents_on_the_shipped_map_play_at_the_display_rate() {
    if skip() {
        return;
    }
    let _one = one_window();
    let (_data, w, opened) = open_made("willowmere-25.hamlet", measure::willowmere_25);
    assert_eq!(opened["agents"].as_array().map(Vec::len), Some(25), "{opened}");
    wait_tracks(&w);
    let played = w.run_async(measure::PLAY, json!([240]));
    let fresh = played["fresh"].as_u64().unwrap();
    assert!(fresh > 0, "playing drew new moments: {played}");
    w.screenshot("12-willowmere-25");
    println!("{}", machine());
    println!("the shipped map with 25 agents, playing at 600×:");
    println!("  display frames with a new moment drawn: {fresh} of {}", played["n"]);
    report("  map draw", &played["draws"]);
    report("  the page's work per display frame", &played["work"]);
    report("  display frame interval", &played["raf"]);
}

/// A `.hamlet` file dropped on the window opens: a real drag and drop between two X
/// clients, from a GTK window beside the viewer (`drag_source.py`), the pointer moved by
/// xdotool.
#[test]
fn a_recording_dropped_on_the_window_opens() {
    if skip() {
        return;
    }
    let _one = one_window();
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("dropped here.hamlet");
    std::fs::copy(shipped(), &file).unwrap();
    let w = Window::open(&[], data.path(), &shots());
    w.wait_for("the page", "return !!(window.hamlet && window.hamlet.state);", json!([]));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/drag_source.py");
    // Debian's Python, which python3-gi is installed for (not one earlier on PATH).
    let python = ["/usr/bin/python3", "python3"].into_iter().find(|p| Path::new(p).exists());
    let mut source = std::process::Command::new(python.unwrap_or("python3"))
        .arg(&script)
        .arg(&file)
        .env("DISPLAY", w.display())
        .env("NO_AT_BRIDGE", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs the drag source (./hamlet-dev setup installs python3-gi)");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(source.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready", "the drag source is on screen");
    let xdotool = |args: &[&str]| {
        let ok = std::process::Command::new("xdotool")
            .args(args)
            .env("DISPLAY", w.display())
            .status()
            .expect("xdotool runs (./hamlet-dev setup installs it)");
        assert!(ok.success(), "xdotool {args:?}");
        std::thread::sleep(std::time::Duration::from_millis(150));
    };
    xdotool(&["mousemove", "100", "50"]);
    xdotool(&["mousedown", "1"]);
    for (x, y) in [(120, 60), (160, 80), (300, 200), (600, 400), (800, 500), (805, 505)] {
        xdotool(&["mousemove", &x.to_string(), &y.to_string()]);
    }
    xdotool(&["mouseup", "1"]);
    let title = w.wait_for(
        "the dropped recording to open",
        "return document.title.startsWith('dropped here.hamlet') && window.hamlet.state().seq !== null ? document.title : null;",
        json!([]),
    );
    let _ = source.kill();
    let _ = source.wait();
    assert!(title.as_str().unwrap().contains("dropped here.hamlet"), "{title}");
    w.screenshot("13-dropped");
}

/// Goal: "what if?" starts with one click. Method: the shipped recording opened, the
/// playhead at its middle, Fork here: the recording (read-only) is imported into a store
/// under the data directory and the user told so, the new branch is shown at that moment,
/// the tree lists it under main; the fork renamed in the tree (✎, a new name, Enter): its
/// row, the branch shown (at the same moment) and the store follow, and a taken name is
/// refused in the store's words; deleting main is refused in the store's words; deleting
/// the fork shows main again; the recording's bytes never change.
#[test]
fn fork_here_imports_the_recording_and_the_tree_forks_and_deletes() {
    if skip() {
        return;
    }
    let _one = one_window();
    let file = shipped();
    let before = std::fs::read(&file).unwrap();
    let head = events_of(&file).last().unwrap().seq();
    let data = tempfile::tempdir().unwrap();
    let w = Window::open(&[file.display().to_string()], data.path(), &shots());
    wait_open(&w);
    let at = seek(&w, head / 2);
    let secs = at["secs"].as_u64().unwrap();
    let forked = w.run_async(
        "const done = arguments[arguments.length - 1]; window.hamlet.fork('what-if').then(done, (e) => done(String(e)));",
        json!([]),
    );
    assert_eq!(
        (forked["name"].as_str(), forked["parent"].as_str()),
        (Some("what-if"), Some("main")),
        "{forked}"
    );
    assert!(forked["secs"].as_u64().unwrap() <= secs && forked["inside_step"] == false, "{forked}");
    let store = PathBuf::from(forked["imported"]["store"].as_str().unwrap());
    assert!(
        store.starts_with(data.path()),
        "a store under the data directory: {}",
        store.display()
    );
    assert_eq!(forked["imported"]["events"], json!(head + 1), "the whole recording imported");
    let status = w.run(
        "return document.querySelector('#pane-branches .branches-status').textContent;",
        json!([]),
    );
    assert!(status.as_str().unwrap().contains("untouched"), "the user is told: {status}");
    let shown = w.wait_for(
        "the fork shown at its moment",
        "const s = window.hamlet.state(); return s.branch === 'what-if' && s.seq !== null ? s : null;",
        json!([]),
    );
    assert_eq!(
        shown["seq"].as_u64(),
        forked["seq"].as_u64().map(|s| s + 1),
        "at the fork, on the fork"
    );
    let rows = w.run(
        "return [...document.querySelectorAll('#pane-branches .branch-row')].map((r) => [r.dataset.branch, r.getAttribute('aria-level')]);",
        json!([]),
    );
    assert_eq!(rows, json!([["main", "1"], ["what-if", "2"]]));
    w.screenshot("14-branch-tree");

    // Renamed as a person does it: ✎ on the fork's row, a new name typed, Enter.
    let field = w.run(
        "const row = document.querySelector('#pane-branches .branch-row[data-branch=\"what-if\"]'); \
         row.querySelector('.branch-rename').click(); \
         const field = document.querySelector('#pane-branches .branch-name-input'); \
         if (!field) return null; \
         field.value = 'bread for everyone'; \
         field.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })); \
         return field.getAttribute('aria-label');",
        json!([]),
    );
    assert_eq!(field, json!("New name for what-if"), "the name became a field");
    let renamed = w.wait_for(
        "the fork shown under its new name",
        "const s = window.hamlet.state(); return s.branch === 'bread for everyone' && s.seq !== null ? s : null;",
        json!([]),
    );
    assert_eq!(renamed["secs"], shown["secs"], "at the same moment: {renamed}");
    let rows = w.run(
        "return [...document.querySelectorAll('#pane-branches .branch-row')].map((r) => [r.dataset.branch, r.getAttribute('aria-level'), r.classList.contains('shown')]);",
        json!([]),
    );
    assert_eq!(rows, json!([["main", "1", false], ["bread for everyone", "2", true]]));
    let status = w.run(
        "return document.querySelector('#pane-branches .branches-status').textContent;",
        json!([]),
    );
    assert!(
        status.as_str().unwrap().starts_with("Renamed what-if to bread for everyone"),
        "{status}"
    );
    // The store says so too: asked again, and (a copy of it, the window holding its lock)
    // opened by the engine.
    let listed = w.run_async(
        "const done = arguments[arguments.length - 1]; window.__TAURI__.core.invoke('branches').then((b) => done(b.map((x) => x.name)), (e) => done(String(e)));",
        json!([]),
    );
    assert_eq!(listed, json!(["main", "bread for everyone"]));
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&store, copy.path());
    std::fs::remove_dir_all(copy.path().join("index")).unwrap();
    let engine = hamlet_engine::store::Store::open(copy.path()).unwrap();
    let found = engine.find_branch("bread for everyone").unwrap();
    assert_eq!(found.parent, Some(engine.find_branch("main").unwrap().id));
    assert!(engine.find_branch("what-if").is_err(), "the old name finds nothing");
    drop(engine);
    w.screenshot("14b-branch-renamed");
    // A taken name: refused in the store's words, nothing renamed.
    let rename = "const done = arguments[arguments.length - 1]; window.hamlet.renameBranch(arguments[0], arguments[1]).then((a) => done([a, document.querySelector('#pane-branches .branches-status').textContent]), (e) => done(String(e)));";
    let refused = w.run_async(rename, json!(["bread for everyone", "main"]));
    assert!(refused[0].is_null(), "{refused}");
    assert_eq!(refused[1], json!("a branch named `main` exists already"));
    assert_eq!(
        w.run("return window.hamlet.branches().map((b) => b.name);", json!([])),
        json!(["main", "bread for everyone"])
    );

    let delete = "const done = arguments[arguments.length - 1]; window.hamlet.deleteBranch(arguments[0]).then((a) => done([a, document.querySelector('#pane-branches .branches-status').textContent]), (e) => done(String(e)));";
    let refused = w.run_async(delete, json!(["main"]));
    assert!(refused[0].is_null() && refused[1].as_str().unwrap().contains("root"), "{refused}");
    let gone = w.run_async(delete, json!(["bread for everyone"]));
    assert_eq!(gone[0]["deleted"], json!(2), "its first event and its rename: {gone}");
    w.wait_for(
        "main shown again",
        "const s = window.hamlet.state(); return s.branch === 'main' && window.hamlet.branches().length === 1;",
        json!([]),
    );
    drop(w);
    assert_eq!(std::fs::read(&file).unwrap(), before, "the recording is untouched");
}

/// Copies a directory and everything under it.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Looks a tenth of a second apart: a minute of them (a continuation runs for minutes on
/// two cores).
const MINUTE: u32 = 600;

/// A key typed into the Intervene tab: it must never reach a file.
const KEY: &str = "sk-e2e-never-written";

/// 09:00 of the shipped day, in simulated seconds.
const NINE: u64 = 9 * 3600;

/// Whether a script's answer counts as given (as [`Window::wait_for`] counts it).
fn truthy(v: &Value) -> bool {
    !(v.is_null() || *v == json!(false) || *v == json!(0) || *v == json!(""))
}

/// Waits as [`Window::wait_for`] does, for up to `tries` looks a tenth of a second apart.
fn wait_long(w: &Window, what: &str, script: &str, args: &Value, tries: u32) -> Value {
    for _ in 0..tries {
        let v = w.run(script, args.clone());
        if truthy(&v) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

/// Starts `promise` (an expression; `arguments` holds `args`) in the page and keeps what it
/// resolves to (a rejection as `{ error }`) under `key`: a fork, a change or a continuation
/// outlasts what one WebDriver script may take.
fn begin(w: &Window, key: &str, promise: &str, args: Value) {
    let script = format!(
        "const key = {key}; window.__e2e = window.__e2e || {{}}; delete window.__e2e[key]; \
         Promise.resolve({promise}).then(\
         (v) => {{ window.__e2e[key] = {{ v: v === undefined ? null : v }}; }}, \
         (e) => {{ window.__e2e[key] = {{ v: {{ error: String(e && e.message ? e.message : e) }} }}; }}); \
         return true;",
        key = json!(key),
    );
    w.run(&script, args);
}

/// What [`begin`] kept under `key`, waited for up to `tries` looks.
fn outcome(w: &Window, key: &str, tries: u32) -> Value {
    let kept = wait_long(
        w,
        &format!("the page's answer to `{key}`"),
        "const k = window.__e2e && window.__e2e[arguments[0]]; return k || null;",
        &json!([key]),
        tries,
    );
    kept["v"].clone()
}

/// From now on the page keeps every `run-progress` it hears in `window.__e2eProgress`
/// (emptied here; the listener is added once per page).
fn hear_progress(w: &Window) {
    let heard = w.run_async(
        "const done = arguments[arguments.length - 1]; window.__e2eProgress = []; \
         if (window.__e2eHearing) { done(true); } else { \
           window.__e2eHearing = true; \
           window.__TAURI__.event.listen('run-progress', (e) => window.__e2eProgress.push(e.payload)) \
             .then(() => done(true), (e) => done(String(e))); }",
        json!([]),
    );
    assert_eq!(heard, json!(true), "listening to run-progress");
}

/// Waits until a step of the continuation under way is committed: the progress heard last.
fn wait_step(w: &Window) -> Value {
    wait_long(
        w,
        "a step of the continuation",
        "const p = (window.__e2eProgress || []).filter((p) => p.secs > p.from_secs); return p.length ? p[p.length - 1] : null;",
        &json!([]),
        10 * MINUTE,
    )
}

/// The progress heard with the highest head: the last event the window was told is written.
fn last_told(w: &Window) -> Value {
    let told = w.run(
        "return (window.__e2eProgress || []).reduce((m, p) => (m && m.head_seq >= p.head_seq ? m : p), null);",
        json!([]),
    );
    assert!(told["head_seq"].is_u64(), "progress was heard: {told}");
    told
}

/// The branch tree's row for `name`, as the page has it (`null` if none).
fn branch_row(w: &Window, name: &str) -> Value {
    w.run(
        "return window.hamlet.branches().find((b) => b.name === arguments[0]) || null;",
        json!([name]),
    )
}

/// How the Intervene tab says the last continuation went (`data-run-state`).
fn run_state(w: &Window) -> Value {
    w.run("return document.querySelector('#pane-change').dataset.runState || null;", json!([]))
}

/// Waits until the map shows `seq` of `branch` and the tree lists it as the branch's head.
fn head_shown(w: &Window, branch: &str, seq: u64) {
    wait_long(
        w,
        &format!("#{seq} of {branch} on the map and in the tree"),
        "const s = window.hamlet.state(); const b = window.hamlet.branches().find((b) => b.name === arguments[0]); \
         return s.branch === arguments[0] && s.seq === arguments[1] && b && b.head_seq === arguments[1];",
        &json!([branch, seq]),
        3 * MINUTE,
    );
}

/// The embedding model the continuations embed with (the shipped recording's memories were
/// embedded by it), installed where the window looks for it.
fn need_embeddings() {
    use hamlet_gateway::models::{installed_in, models_dir, ModelChoice};
    let dir = models_dir().expect("a models directory");
    assert!(
        installed_in(&dir, ModelChoice::Embeddings).is_some(),
        "the embedding model is not in {}: `./hamlet-dev setup` fetches it",
        dir.display()
    );
}

/// The Intervene tab asks the scripted server, with embeddings from the embedded model.
fn use_scripted(w: &Window, server: &ScriptedServer) {
    w.run(
        "window.hamlet.setModel({ backend: 'server', base_url: arguments[0], model: arguments[1], api_key: '', embed: 'local', embed_model: '' }); return true;",
        json!([server.base_url(), scripted_server::MODEL]),
    );
}

/// Continues the branch shown for `hours` simulated hours from the Intervene tab (its end is
/// kept under `continue`), after the progress heard so far is forgotten.
fn start_continuing(w: &Window, hours: f64) {
    hear_progress(w);
    begin(w, "continue", "window.hamlet.continueRun(arguments[0])", json!([hours]));
}

/// The shipped recording in a window over `data`, the playhead at 09:00, forked there as
/// `name` (the recording imported into a store under `data` first), the fork shown: the
/// window, the engine's `Forked` and the store's folder.
fn fork_the_morning(data: &Path, name: &str, store: Option<&Path>) -> (Window, Value, PathBuf) {
    let file = shipped();
    let events = events_of(&file);
    let nine = events
        .iter()
        .take_while(|e| e.sim_time_secs() <= NINE)
        .last()
        .expect("the shipped day has events by 09:00")
        .seq();
    let w = Window::open(&[file.display().to_string()], data, &shots());
    wait_open(&w);
    seek(&w, nine);
    if let Some(dir) = store {
        // A folder that holds something else is refused in words, and nothing is imported.
        let other = data.join("not-a-store");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("notes.txt"), "mine").unwrap();
        // The folder dialog answers it: refused in words, and not kept.
        begin(&w, "refused", "window.hamlet.pickStore(arguments[0])", json!([other]));
        assert_eq!(outcome(&w, "refused", MINUTE), Value::Null, "a store in {}", other.display());
        let status = w.run(
            "return document.querySelector('#pane-branches .branches-status').textContent;",
            json!([]),
        );
        assert!(status.as_str().unwrap().contains("no store"), "the window says why: {status}");
        assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1, "nothing written there");
        begin(&w, "picked", "window.hamlet.pickStore(arguments[0])", json!([dir]));
        assert_eq!(outcome(&w, "picked", MINUTE), json!(dir.display().to_string()));
    }
    begin(&w, "fork", "window.hamlet.fork(arguments[0])", json!([name]));
    let forked = outcome(&w, "fork", 5 * MINUTE);
    let status = w.run(
        "return document.querySelector('#pane-branches .branches-status').textContent;",
        json!([]),
    );
    assert_eq!(forked["name"].as_str(), Some(name), "the fork: {forked}; the window says {status}");
    assert_eq!(forked["inside_step"], json!(false), "a fork at a time keeps whole steps: {forked}");
    let imported = PathBuf::from(
        forked["imported"]["store"]
            .as_str()
            .unwrap_or_else(|| panic!("the recording was imported into a store: {forked}")),
    );
    match store {
        Some(dir) => assert_eq!(imported, dir, "the store picked"),
        None => assert!(
            imported.starts_with(data),
            "a store under the data directory: {}",
            imported.display()
        ),
    }
    w.wait_for(
        "the fork shown",
        "const s = window.hamlet.state(); return s.branch === arguments[0] && s.seq !== null ? s : null;",
        json!([name]),
    );
    (w, forked, imported)
}

/// Goal: "what if?" asked and answered in the window, against a model server. Method: the
/// shipped day forked at 09:00; Delphine hears an inner voice through the Intervene tab, its
/// model a scripted OpenAI-compatible test server, and the timeline marks it; the fork
/// continues ten simulated minutes to the end, the map and the tree following its head; a
/// second continuation of an hour, the server now slow, is cancelled after a step and stops
/// part way with nothing lost; the tree lists main and the fork; Compare finds the days
/// parting at or after the fork; Research plots the fork's relationship density.
#[test]
fn a_fork_is_changed_continued_cancelled_and_compared_in_the_window() {
    if skip() {
        return;
    }
    let _one = one_window();
    need_embeddings();
    let server = ScriptedServer::start();
    let data = tempfile::tempdir().unwrap();
    let fork = "voice";
    let (w, forked, _store) = fork_the_morning(data.path(), fork, None);
    let (fork_seq, fork_secs) = (forked["seq"].as_u64().unwrap(), forked["secs"].as_u64().unwrap());

    // An inner voice, asked of the scripted server: the engine says what she means to do.
    use_scripted(&w, &server);
    let delphine = w.run(
        "const a = window.hamlet.state().agents.find((a) => a.name === 'Delphine Ashcombe'); return a ? a.id : null;",
        json!([]),
    );
    assert!(delphine.is_u64(), "Delphine is in town at 09:00");
    let voice = json!({
        "kind": "inner-voice",
        "agent": delphine,
        "text": "Invite everyone you meet to the party at the café tonight",
    });
    begin(&w, "change", "window.hamlet.change(arguments[0])", json!([voice]));
    let changed = outcome(&w, "change", 5 * MINUTE);
    let said = changed["said"].as_str().unwrap_or_else(|| panic!("the change: {changed}"));
    assert!(said.contains("Delphine Ashcombe intends to"), "what the engine said: {said}");
    let (from, to) = (changed["from_seq"].as_u64().unwrap(), changed["to_seq"].as_u64().unwrap());
    assert!(from > fork_seq && to >= from, "written after the fork: {changed}");
    let asked = server.answered();
    assert!(asked > 0, "the change asked the scripted server");
    let result = w.run(
        "return document.querySelector('#pane-change .change-result').textContent;",
        json!([]),
    );
    assert!(result.as_str().is_some_and(|t| t.contains(said)), "the window says it: {result}");
    // It is a marker on the timeline.
    w.wait_for(
        "the inner voice's marker on the timeline",
        "const seqs = [...document.querySelectorAll('.tl-marker.kind-intervention')] \
           .map((n) => Number.parseInt(n.title.slice(n.title.lastIndexOf('#') + 1), 10)); \
         return seqs.some((s) => s >= arguments[0] && s <= arguments[1]) ? seqs : null;",
        json!([from, to]),
    );

    // Ten simulated minutes, to the end: the branch grows and the map follows its head.
    start_continuing(&w, 10.0 / 60.0);
    let ended = outcome(&w, "continue", 30 * MINUTE);
    assert_eq!(ended["state"], "done", "the continuation: {ended}");
    assert_eq!(ended["branch"], fork, "{ended}");
    let span = ended["to_secs"].as_u64().unwrap() - ended["from_secs"].as_u64().unwrap();
    assert!((600..=610).contains(&span), "ten simulated minutes: {ended}");
    let head = ended["head_seq"].as_u64().unwrap();
    assert!(head > to, "the branch grew from #{to}: {ended}");
    assert!(server.answered() > asked, "the continuation asked the scripted server");
    assert_eq!(run_state(&w), json!("done"));
    assert!(last_told(&w)["head_seq"].as_u64().unwrap() <= head, "no progress past the end");
    head_shown(&w, fork, head);
    w.screenshot("15-continued");

    // An hour more with the server slow, cancelled after a step: it stops part way, and
    // every step it reported is kept.
    server.set_delay(Duration::from_millis(400));
    start_continuing(&w, 1.0);
    let step = wait_step(&w);
    w.run("window.hamlet.cancelRun(); return true;", json!([]));
    let stopped = outcome(&w, "continue", 20 * MINUTE);
    server.set_delay(Duration::ZERO);
    assert_eq!(stopped["state"], "stopped", "the cancelled continuation: {stopped}");
    let kept = stopped["head_seq"].as_u64().unwrap();
    let told = last_told(&w)["head_seq"].as_u64().unwrap();
    assert!(
        told >= step["head_seq"].as_u64().unwrap() && kept >= told,
        "told #{told}, kept {stopped}"
    );
    assert!(kept > head, "a step was made before the stop: {stopped}");
    assert!(
        stopped["secs"].as_u64().unwrap() < stopped["to_secs"].as_u64().unwrap(),
        "stopped part way: {stopped}"
    );
    assert_eq!(run_state(&w), json!("stopped"));
    head_shown(&w, fork, kept);
    w.screenshot("16-stopped");

    // A model the server does not serve: the continuation fails at its first call and the
    // window shows the engine's error and how to go on; the branch keeps what it had.
    w.run("window.hamlet.setModel({ model: 'no-such-model' }); return true;", json!([]));
    start_continuing(&w, 10.0 / 60.0);
    let failed = outcome(&w, "continue", 5 * MINUTE);
    let error = failed["error"].as_str().unwrap_or_else(|| panic!("a failure: {failed}"));
    assert!(error.contains("no-such-model"), "the engine's error names the model: {error}");
    let told = w.run(
        "const t = document.querySelector('#pane-change .run-text');          return [t.querySelector('.error')?.textContent ?? '', t.querySelector('.dim')?.textContent ?? ''];",
        json!([]),
    );
    assert_eq!(told[0], json!(error), "the window shows the error: {told}");
    assert!(told[1].as_str().is_some_and(|h| !h.is_empty()), "and how to go on: {told}");
    let row = branch_row(&w, fork);
    assert!(row["head_seq"].as_u64().is_some_and(|h| h >= kept), "nothing lost: {row}");
    let at = w.wait_for(
        "the moment shown kept",
        "const s = window.hamlet.state(); return s.seq !== null && s.branch === arguments[0] ? s : null;",
        json!([fork]),
    );
    assert!(at["seq"].as_u64().is_some_and(|s| s >= kept), "the map stays at the head: {at}");
    w.screenshot("16b-failed");
    use_scripted(&w, &server);

    // The tree: main, and the fork under it where it was made.
    let rows = w.run(
        "return [...document.querySelectorAll('#pane-branches .branch-row')].map((r) => [r.dataset.branch, r.getAttribute('aria-level')]);",
        json!([]),
    );
    assert_eq!(rows, json!([["main", "1"], [fork, "2"]]));
    let row = branch_row(&w, fork);
    assert_eq!((&row["parent"], &row["fork_seq"]), (&json!("main"), &json!(fork_seq)), "{row}");

    // Compared with main: they share the day to the fork, and days part at or after it.
    begin(
        &w,
        "compare",
        "window.hamlet.compare(arguments[0]).then((d) => (d && !d.error ? { \
           a: d.a, b: d.b, shared: d.shared, parted_secs: d.parted_secs, \
           parted: d.agents.filter((x) => x.first_secs !== null && x.first_secs !== undefined).map((x) => [x.name, x.first_secs]), \
           rows: document.querySelectorAll('#pane-compare .compare-agent.differs').length } : d))",
        json!(["main"]),
    );
    let diff = outcome(&w, "compare", 5 * MINUTE);
    assert_eq!((diff["a"].as_str(), diff["b"].as_str()), (Some(fork), Some("main")), "{diff}");
    assert_eq!(diff["shared"].as_u64(), Some(fork_seq + 1), "shared to the fork: {diff}");
    assert_eq!(diff["parted_secs"].as_u64(), Some(fork_secs), "parted at the fork: {diff}");
    let parted = diff["parted"].as_array().unwrap_or_else(|| panic!("the diff: {diff}"));
    assert!(!parted.is_empty(), "someone's day parted: {diff}");
    for agent in parted {
        assert!(agent[1].as_u64().is_some_and(|s| s >= fork_secs), "{agent} parts before the fork");
    }
    assert_eq!(diff["rows"], json!(parted.len()), "each agent whose day parted is listed");
    w.screenshot("17-compare");

    // Research: the fork's relationship density, drawn.
    begin(
        &w,
        "plot",
        "window.hamlet.plot(arguments[0]).then((a) => (a && Array.isArray(a.rows) ? { what: a.what, rows: a.rows.length } : a))",
        json!([{ "what": "density" }]),
    );
    let plotted = outcome(&w, "plot", 5 * MINUTE);
    assert_eq!(plotted["what"], "density", "{plotted}");
    assert!(plotted["rows"].as_u64().is_some_and(|n| n > 0), "the chart has rows: {plotted}");
    w.wait_for(
        "the density chart",
        "return window.hamlet.debug().plots.caption.startsWith('Density');",
        json!([]),
    );
    w.screenshot("18-research");

    // Saved and exported where the save dialog says (a test build's dialog answers).
    let saved = tempfile::tempdir().unwrap();
    let csv = saved.path().join("density.csv");
    begin(&w, "csv", "window.hamlet.saveCsv(arguments[0])", json!([csv]));
    assert_eq!(outcome(&w, "csv", MINUTE), json!(csv.display().to_string()));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.lines().count() > 1, "the chart's table: {text}");
    let out = saved.path().join("fork.hamlet");
    begin(&w, "export", "window.hamlet.exportBranch(arguments[0])", json!([out]));
    let exported = outcome(&w, "export", 5 * MINUTE);
    assert_eq!(exported["path"], json!(out.display().to_string()), "{exported}");
    let bytes = std::fs::read(&out).unwrap();
    let (_, report) = hamlet_engine::log::open_checked(&bytes).unwrap();
    assert!(report.is_clean(), "the export verifies: {:?}", report.problems);
}

/// Goal: the person leads a town from the window. Method: a Willowmere whose `[mayor]` is
/// the person (recorded by the rules double, ending at a quiet step: its clock step alone),
/// opened and forked at its end; in the Intervene
/// tab, "Mayor: post a job" typed as a person would: at a home, refused in words next to the
/// field and nothing written; at Marigold café, written and said, with a `mayor` marker on
/// the timeline where it was written.
#[test]
fn the_person_as_mayor_posts_a_job_from_the_windows_form() {
    if skip() {
        return;
    }
    let _one = one_window();
    need_embeddings();
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("led.hamlet");
    mayor::led_willowmere(&file);
    let last = events_of(&file).last().unwrap().seq();
    let w = Window::open(&[file.display().to_string()], data.path(), &shots());
    wait_open(&w);
    seek(&w, last);
    begin(&w, "fork", "window.hamlet.fork(arguments[0])", json!(["led"]));
    let forked = outcome(&w, "fork", 5 * MINUTE);
    assert_eq!(forked["name"], json!("led"), "the fork: {forked}");
    w.wait_for(
        "the fork shown",
        "const s = window.hamlet.state(); return s.branch === 'led' && s.seq !== null ? s : null;",
        json!([]),
    );
    let head = || branch_row(&w, "led")["head_seq"].as_u64().unwrap();
    let before = head();

    let job = |sector: &str| json!({ "sector": sector, "title": "baker", "dollars": 15 });
    mayor::fill_and_send(&w, "mayor-job", &job("Ashcombe house"));
    let refused = mayor::answered(&w, "sector");
    let why = refused["refused"].as_str().unwrap_or_else(|| panic!("refused: {refused}"));
    assert!(why.contains("is a home or a park"), "the window says why: {why}");
    assert_eq!(head(), before, "nothing written");
    w.screenshot("19-mayor-refused");

    mayor::fill_and_send(&w, "mayor-job", &job("Marigold café"));
    let done = mayor::answered(&w, "sector");
    let said = done["said"].as_str().unwrap_or_else(|| panic!("written: {done}"));
    assert!(said.contains("baker") && said.contains("Marigold café"), "the window says: {said}");
    let written = w.wait_for(
        "the branch grown",
        "const b = window.hamlet.branches().find((b) => b.name === 'led');          return b && b.head_seq > arguments[0] ? b.head_seq : null;",
        json!([before]),
    );
    w.wait_for(
        "the mayor's marker on the timeline",
        "const seqs = [...document.querySelectorAll('.tl-marker.kind-mayor')]            .map((n) => Number.parseInt(n.title.slice(n.title.lastIndexOf('#') + 1), 10));          return seqs.some((s) => s > arguments[0] && s <= arguments[1]) ? seqs : null;",
        json!([before, written]),
    );
    w.screenshot("20-mayor-job");
}

/// Goal: a page cannot make a release build write where it says. Method: the release build
/// of the viewer (no `e2e` feature; `./hamlet-dev test` keeps a copy at
/// `target/release-build/hamlet-viewer`) opened on the shipped day; from its page, every
/// way a test build takes a path is tried: the test hooks are not there,
/// `answer_next_dialog` and the old `open_path` are refused, and `fork` given a `store`
/// folder imports under the data directory instead, writing nothing in that folder.
#[test]
fn the_release_page_cannot_choose_a_path() {
    if skip() {
        return;
    }
    let _one = one_window();
    let binary = root().join("target/release-build/hamlet-viewer");
    assert!(
        binary.exists(),
        "{} is missing: `./hamlet-dev test` copies the release build there (`cargo build \
         --release -p hamlet-viewer`, then `cp target/release/hamlet-viewer {}`)",
        binary.display(),
        binary.display()
    );
    let data = tempfile::tempdir().unwrap();
    let aimed = data.path().join("aimed");
    let w = Window::open_binary(&binary, &[shipped().display().to_string()], data.path(), &shots());
    let invoke = |command: &str, args: Value| {
        w.run_async(
            "const done = arguments[arguments.length - 1]; \
             window.__TAURI__.core.invoke(arguments[0], arguments[1]) \
               .then((v) => done({ ok: v === undefined ? null : v }), (e) => done({ refused: String(e) }));",
            json!([command, args]),
        )
    };
    w.wait_for("the shipped day open", "return document.title.includes('—');", json!([]));
    for (command, args) in [
        ("answer_next_dialog", json!({ "path": aimed.join("answer.csv") })),
        ("open_path", json!({ "path": aimed })),
    ] {
        let answer = invoke(command, args);
        let refused = answer["refused"].as_str().unwrap_or_else(|| panic!("{command}: {answer}"));
        assert!(refused.contains(command), "{command} refused, named: {refused}");
    }
    assert_eq!(w.run("return typeof window.hamlet;", json!([])), json!("undefined"));
    let forked = invoke(
        "fork",
        json!({ "branch": "main", "secs": 9 * 3600, "name": "aimed", "store": aimed }),
    );
    let store = forked["ok"]["imported"]["store"]
        .as_str()
        .unwrap_or_else(|| panic!("the fork imports the recording: {forked}"));
    assert!(
        Path::new(store).starts_with(data.path().join("town.hamlet.viewer/stores")),
        "a store under the data directory, not where the page said: {store}"
    );
    assert!(!aimed.exists(), "the page made {} exist", aimed.display());
}

/// Goal: a crash loses nothing the window was told is written. Method: the shipped day forked
/// at 09:00 and continued for an hour against a slow scripted server; after a step the viewer
/// is killed with SIGKILL (nothing flushed, nothing closed); the store opened in a new window
/// (`hamlet-viewer --store DIR`: its lock died with the process) holds the fork with every
/// event the progress acknowledged, shows the last of them, and Continue resumes from there
/// to the end against a fast server.
#[test]
fn a_continuation_killed_part_way_is_reopened_whole_and_resumes() {
    if skip() {
        return;
    }
    let _one = one_window();
    need_embeddings();
    let server = ScriptedServer::start();
    let data = tempfile::tempdir().unwrap();
    let fork = "killed";
    let picked = data.path().join("picked");
    let (w, _forked, store) = fork_the_morning(data.path(), fork, Some(&picked));
    server.set_delay(Duration::from_millis(400));
    use_scripted(&w, &server);
    // A key typed in the window stays in its memory: the settings keep the rest.
    w.run("window.hamlet.setModel({ api_key: arguments[0] }); return true;", json!([KEY]));
    start_continuing(&w, 1.0);
    wait_step(&w);
    let told = last_told(&w);
    let acked = told["head_seq"].as_u64().unwrap();
    let pid = w.kill_hard();
    drop(w);
    println!(
        "killed the viewer (pid {pid}) once the continuation had acknowledged #{acked}; \
         the scripted server had answered {} calls",
        server.answered()
    );

    let w =
        Window::open(&["--store".to_owned(), store.display().to_string()], data.path(), &shots());
    wait_open(&w);
    let row = wait_long(
        &w,
        "the fork in the reopened store",
        "return window.hamlet.branches().find((b) => b.name === arguments[0]) || null;",
        &json!([fork]),
        MINUTE,
    );
    let head = row["head_seq"].as_u64().unwrap();
    assert!(head >= acked, "every acknowledged event is kept: head #{head}, acknowledged #{acked}");
    w.run("window.hamlet.switchBranch(arguments[0]); return true;", json!([fork]));
    w.wait_for(
        "the fork shown",
        "const s = window.hamlet.state(); return s.branch === arguments[0] && s.seq !== null ? s : null;",
        json!([fork]),
    );
    let shown = seek(&w, acked);
    assert_eq!(shown["branch"], fork, "the last acknowledged event, on the fork: {shown}");
    w.screenshot("19-killed-reopened");

    // The new window asks the same server, chosen last time; the key was never written.
    let model = w.run("return window.hamlet.debug().change.model;", json!([]));
    assert_eq!(
        (&model["backend"], &model["base_url"], &model["api_key"]),
        (&json!("server"), &json!(server.base_url()), &json!("")),
        "{model}"
    );
    let settings = std::fs::read_to_string(data.path().join("town.hamlet.viewer/settings.json"))
        .expect("the viewer's settings file");
    assert!(settings.contains(&server.base_url()), "the model is kept: {settings}");
    assert!(!settings.contains(KEY), "the key is not: {settings}");

    // Continue goes on from what was kept, to the end.
    server.set_delay(Duration::ZERO);
    use_scripted(&w, &server);
    start_continuing(&w, 5.0 / 60.0);
    let ended = outcome(&w, "continue", 30 * MINUTE);
    assert_eq!(ended["state"], "done", "the resumed continuation: {ended}");
    assert!(
        ended["from_secs"].as_u64().unwrap() >= told["secs"].as_u64().unwrap(),
        "it resumed where the killed one was: {ended}, told {told}"
    );
    let end = ended["head_seq"].as_u64().unwrap();
    assert!(end > head, "the fork grew from #{head}: {ended}");
    assert_eq!(run_state(&w), json!("done"));
    head_shown(&w, fork, end);
    w.screenshot("20-resumed");
}
