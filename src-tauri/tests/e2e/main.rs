//! The viewer tested as a person would use it: the real `hamlet-viewer` window under Xvfb,
//! driven through WebKitWebDriver. It opens the shipped recording, scrubs to moments and
//! checks the agents' places against the engine's query of the same moment, opens an
//! agent's panel and "why?" down to a prompt, plays, and opens a recording full of hostile
//! text to check that nothing in it runs. Screenshots of each view go to
//! `target/viewer-e2e/`; the scrub, frame and "why?" latencies measured in the window are
//! printed with the machine.
//!
//! Needs Xvfb, WebKitWebDriver and ImageMagick's `import` (`./hamlet-dev setup` installs
//! them); HAMLET_SKIP_VIEWER_E2E=1 skips.

mod hostile;
mod webdriver;

use std::path::{Path, PathBuf};

use hamlet_engine::query::Past;
use hamlet_log::{Event, Recording};
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
    root().join("recordings/willowmere-morning.hamlet")
}

fn events_of(path: &Path) -> Vec<Event> {
    let bytes = std::fs::read(path).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let main = rec.root().unwrap().id;
    rec.events(main, 0).unwrap().collect::<Result<_, _>>().unwrap()
}

/// Waits until the page shows a file with a frame drawn.
fn wait_open(w: &Window) -> Value {
    w.wait_for(
        "the recording to open and a frame to be drawn",
        "const s = window.hamlet && window.hamlet.state(); return s && s.seq !== null && s.seq !== undefined && s.agents && s.agents.length ? s : null;",
        json!([]),
    )
}

/// Seeks to `seq` through the page and waits for that frame on screen.
fn seek(w: &Window, seq: u64) -> Value {
    w.run("window.hamlet.seekSeq(arguments[0]); return true;", json!([seq]));
    w.wait_for(
        &format!("the frame at #{seq}"),
        "const s = window.hamlet.state(); return s.seq === arguments[0] ? s : null;",
        json!([seq]),
    )
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn report(what: &str, samples: &Value) {
    let v: Vec<f64> = samples
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    println!(
        "{what}: {} samples, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        v.len(),
        percentile(v.clone(), 0.5),
        percentile(v.clone(), 0.99),
        v.iter().copied().fold(f64::NAN, f64::max)
    );
}

/// Drags the scrubber through `steps` positions, one per animation frame, as a hand would.
const DRAG: &str = r#"
const [steps, done] = [arguments[0], arguments[arguments.length - 1]];
const bar = document.querySelector('[data-scrubber]');
const r = bar.getBoundingClientRect();
const y = r.top + r.height / 2;
const at = (i) => r.left + 2 + (r.width - 4) * ((i * 7919) % steps) / steps;
const ev = (type, i) => bar.dispatchEvent(new PointerEvent(type, { bubbles: true, clientX: at(i), clientY: y, pointerId: 1, buttons: 1, isPrimary: true }));
window.hamletStats.scrub.length = 0;
window.hamletStats.frames.length = 0;
ev('pointerdown', 0);
let i = 1;
const tick = () => {
  if (i < steps) { ev('pointermove', i); i += 1; requestAnimationFrame(tick); }
  else { ev('pointerup', i); setTimeout(() => done({ scrub: window.hamletStats.scrub.slice(), frames: window.hamletStats.frames.slice() }), 500); }
};
requestAnimationFrame(tick);
"#;

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
    for (i, seq) in [head / 5, head / 2, head - 3].into_iter().enumerate() {
        let shown = seek(&w, seq);
        let town = Past::new(Past::cut(&events, seq)).town();
        let agents = shown["agents"].as_array().unwrap();
        assert_eq!(agents.len(), town.agents.len(), "at #{seq}");
        for brief in &town.agents {
            let a = agents
                .iter()
                .find(|a| a["id"] == brief.id)
                .unwrap_or_else(|| panic!("{} on screen", brief.name));
            assert_eq!(a["tile"], json!(brief.tile), "{} at #{seq}", brief.name);
        }
        w.screenshot(&format!("02-moment-{}", i + 1));
    }

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
    w.run(
        "document.querySelector('#pane-why g[data-kind=LlmRequested]').dispatchEvent(new MouseEvent('click', {bubbles: true})); return true;",
        json!([]),
    );
    let detail = w.wait_for(
        "the prompt behind the action",
        "const d = document.querySelector('[data-why-detail]'); return d && !d.hidden && d.textContent.length > 40 ? d.textContent : null;",
        json!([]),
    );
    assert!(detail.as_str().unwrap().contains("Delphine"), "the prompt names her: {detail}");
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
    println!("{}", machine());
    println!("shipped recording ({} events):", events.len());
    report("  scrub input → frame drawn", &stats["scrub"]);
    report("  frame draw", &stats["frames"]);
    report("  why click → graph drawn", &w.run("return window.hamletStats.why;", json!([])));
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

/// This machine, for the numbers printed beside it.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("machine: {cpu}, {cores} cores; the window under Xvfb (software rendering)")
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
    use hamlet_engine::synth::{write_recording, SynthSpec};
    let data = tempfile::tempdir().unwrap();
    let spec = SynthSpec { n_events: 1_000_000, n_agents: 25, seed: 7 };
    let bytes = write_recording(spec, Vec::new(), |_| {}).unwrap();
    let file = data.path().join("million.hamlet");
    {
        let mut store = hamlet_engine::store::Store::open(&data.path().join("store")).unwrap();
        store.import(&bytes).unwrap();
        let out = std::fs::File::create(&file).unwrap();
        let written = hamlet_engine::history::export_with_checkpoints(
            &store,
            None,
            std::io::BufWriter::new(out),
        )
        .unwrap();
        written.into_inner().unwrap().sync_all().unwrap();
    }
    let w = Window::open(&[file.display().to_string()], data.path(), &shots());
    let opened = wait_open(&w);
    assert_eq!(opened["agents"].as_array().map(Vec::len), Some(25), "{opened}");
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
