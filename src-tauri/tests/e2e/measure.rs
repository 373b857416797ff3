//! What the end-to-end tests and the `window` benchmark share: waiting for the page,
//! the scripts that drag, play and scroll as a hand would, the recordings they open, and
//! how the latencies measured in the window are printed with the machine.

#![allow(dead_code, reason = "each of the two users takes what it needs")]

use std::path::Path;

use serde_json::{json, Value};

use crate::webdriver::Window;

/// Waits until the page shows a file with a frame drawn.
pub fn wait_open(w: &Window) -> Value {
    w.wait_for(
        "the recording to open and a frame to be drawn",
        "const s = window.hamlet && window.hamlet.state(); return s && s.seq !== null && s.seq !== undefined && s.agents && s.agents.length ? s : null;",
        json!([]),
    )
}

/// Seeks to `seq` through the page and waits for that frame on screen.
pub fn seek(w: &Window, seq: u64) -> Value {
    w.run("window.hamlet.seekSeq(arguments[0]); return true;", json!([seq]));
    w.wait_for(
        &format!("the frame at #{seq}"),
        "const s = window.hamlet.state(); return s.seq === arguments[0] ? s : null;",
        json!([seq]),
    )
}

/// Waits for the branch's tracks (after them every moment is drawn from the page).
pub fn wait_tracks(w: &Window) {
    w.wait_for("the tracks", "return window.hamlet.state().tracks;", json!([]));
}

pub fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Prints the three parts of each "why?" click (`whyParts`): the question and its answer,
/// building the page, laying it out.
pub fn report_why_parts(w: &Window) {
    let parts = w.run("return window.hamletStats.whyParts;", json!([]));
    for (i, what) in ["the why command (IPC and engine)", "building the graph", "laying it out"]
        .into_iter()
        .enumerate()
    {
        let v: Vec<Value> =
            parts.as_array().map(|a| a.iter().map(|p| p[i].clone()).collect()).unwrap_or_default();
        report(&format!("    {what}"), &Value::Array(v));
    }
}

pub fn report(what: &str, samples: &Value) {
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
pub const DRAG: &str = r#"
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

/// This machine, for the numbers printed beside it.
pub fn machine() -> String {
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

/// A synthetic recording of a million events, 25 agents, with checkpoints as a store
/// exports them, written to `file`.
pub fn million(file: &Path) {
    use hamlet_engine::synth::{write_recording, SynthSpec};
    let spec = SynthSpec { n_events: 1_000_000, n_agents: 25, seed: 7 };
    let bytes = write_recording(spec, Vec::new(), |_| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = hamlet_engine::store::Store::open(&dir.path().join("store")).unwrap();
    store.import(&bytes).unwrap();
    let out = std::fs::File::create(file).unwrap();
    let written =
        hamlet_engine::history::export_with_checkpoints(&store, None, std::io::BufWriter::new(out))
            .unwrap();
    written.into_inner().unwrap().sync_all().unwrap();
}

/// The shipped town with 25 agents walking it (`hamlet synth --town willowmere`), written to
/// `file`.
pub fn willowmere_25(file: &Path) {
    use hamlet_engine::synth::{write_recording_in, SynthSpec};
    use hamlet_engine::town::{Definition, WILLOWMERE};
    let town = Definition::parse("willowmere.toml", WILLOWMERE).unwrap();
    let spec = SynthSpec { n_events: 200_000, n_agents: 25, seed: 5 };
    let bytes = write_recording_in(spec, Some(&town), Vec::new(), |_| {}).unwrap();
    std::fs::write(file, bytes).unwrap();
}

/// One agent with over ten thousand memories (it remembers about 3 % of its steps),
/// written to `file`.
pub fn many_memories(file: &Path) {
    use hamlet_engine::synth::{write_recording, SynthSpec};
    let spec = SynthSpec { n_events: 600_000, n_agents: 1, seed: 11 };
    std::fs::write(file, write_recording(spec, Vec::new(), |_| {}).unwrap()).unwrap();
}

/// Plays at 600× for `frames` display frames: their intervals, how many showed a new
/// moment, each map draw, and the page's own work in each frame (its animation-frame
/// callbacks run before this one's: the time from the frame's start to this callback).
pub const PLAY: &str = r#"
const [frames, done] = [arguments[0], arguments[arguments.length - 1]];
const s = document.querySelector('.tl-speed'); s.value = '600'; s.dispatchEvent(new Event('change'));
window.hamletStats.frames.length = 0;
const raf = []; const work = []; let fresh = 0; let last = performance.now(); let seq = window.hamlet.state().seq; let n = 0;
window.hamlet.play();
const tick = (t) => {
  raf.push(t - last); last = t; work.push(performance.now() - t);
  const now = window.hamlet.state().seq; if (now !== seq) { fresh += 1; seq = now; }
  if (++n < frames) requestAnimationFrame(tick);
  else { window.hamlet.pause(); done({ raf, work, fresh, n, draws: window.hamletStats.frames.slice() }); }
};
requestAnimationFrame(tick);
"#;

/// Shows agent 0 at the last moment, its memory stream: the panel's state once it is there.
pub fn open_memories(w: &Window) -> Value {
    w.run("window.hamlet.seekSeq(1e15); window.hamlet.select(0); return true;", json!([]));
    w.run("document.querySelector('[data-tab=memories]').click(); return true;", json!([]));
    w.wait_for(
        "the agent's panel",
        "const a = window.hamlet.debug().agent; return !a.loading && a.agent === 0 && a.memories > 0 ? a : null;",
        json!([]),
    )
}

/// Scrolls the memory stream end to end, a step per display frame: the list's redraws, the
/// frame intervals, the most rows it kept in the page, and the last memory shown.
pub const SCROLL: &str = r#"
const done = arguments[arguments.length - 1];
const list = document.querySelector('.pane-memories .vlist');
window.hamletStats.memories.length = 0;
const raf = []; let last = performance.now(); let rows = 0;
const step = Math.max(200, Math.floor(list.scrollHeight / 400));
const tick = (t) => {
  raf.push(t - last); last = t;
  rows = Math.max(rows, list.querySelectorAll('.vrow:not([hidden])').length);
  if (list.scrollTop + list.clientHeight < list.scrollHeight - 1) { list.scrollTop += step; requestAnimationFrame(tick); }
  else setTimeout(() => {
    const shown = [...list.querySelectorAll('.vrow:not([hidden])')].map((r) => Number(r.dataset.index));
    done({ raf, rows, render: window.hamletStats.memories.slice(), last: Math.max(...shown), top: list.scrollTop });
  }, 200);
};
requestAnimationFrame(tick);
"#;

/// The action of `file` whose "why?" graph is the largest (the longest chain of causes):
/// `(agent, seq, nodes)`.
pub fn longest_why(file: &Path) -> (u32, u64, usize) {
    use hamlet_log::{Body, Recording};
    let bytes = std::fs::read(file).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let main = rec.root().unwrap().id;
    let actions: Vec<(u32, u64)> = rec
        .events(main, 0)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            match &e.body {
                Body::ActionStarted(a) => Some((a.agent.0, e.seq())),
                _ => None,
            }
        })
        .collect();
    let mut viewer = hamlet_engine::view::Viewer::recording(&bytes, file).unwrap();
    actions
        .into_iter()
        .map(|(agent, seq)| {
            (agent, seq, viewer.why_action("main", seq, agent).unwrap().nodes.len())
        })
        .max_by_key(|&(_, seq, n)| (n, std::cmp::Reverse(seq)))
        .unwrap()
}

/// Opens "why?" on `agent`'s action at `seq` `n` times through the page: each click's time
/// to the graph laid out (`window.hamletStats.whyParts` then holds where each went).
pub fn why_clicks(w: &Window, agent: u32, seq: u64, n: usize) -> Value {
    w.run_async(
        r#"const [agent, seq, n, done] = arguments;
        (async () => {
          window.hamletStats.why.length = 0;
          window.hamletStats.whyParts.length = 0;
          for (let i = 0; i < n; i++) await window.hamlet.openWhy({ agent, seq });
          done(window.hamletStats.why.slice());
        })();"#,
        json!([agent, seq, n]),
    )
}
