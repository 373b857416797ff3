//! The browser's build answers as the desktop does: the crate built for
//! `wasm32-unknown-unknown`, run under Node through the page's own loader
//! (`viewer/door.mjs`), opens each shipped recording and answers a few hundred read commands
//! (every command, moments across each day, every agent, errors); each answer's JSON is byte
//! for byte the native dispatcher's. The module's size is printed and held to a budget.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use hamlet_core::log::Log;
use hamlet_core::view::dispatch::dispatch;
use hamlet_core::view::session::Session;
use serde_json::{json, Value};

/// The most the module may weigh.
const BUDGET_BYTES: u64 = 4 << 20;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// Builds the module (in a target directory of its own, so the build running the test is
/// not waited on) and answers its path.
fn module() -> PathBuf {
    let target = root().join("target").join("wasm");
    let status = Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["build", "--locked", "--profile", "web", "-p", "hamlet-web"])
        .args(["--target", "wasm32-unknown-unknown", "--target-dir"])
        .arg(&target)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the module builds for wasm32-unknown-unknown");
    target.join("wasm32-unknown-unknown/web/hamlet_web.wasm")
}

/// The questions asked of one recording: every command, at moments across its main
/// branch, for every agent, and a few that must fail.
fn questions(bytes: &[u8]) -> Vec<(String, Value)> {
    let (rec, session) = Session::recording(bytes, Path::new("x.hamlet")).unwrap();
    let branches = session.opened().branches.clone();
    let main = session.opened().branch.clone();
    let id = branches.iter().find(|b| b.name == main).unwrap().id;
    let head = branches.iter().find(|b| b.name == main).unwrap().head_seq;
    let events = Log::events(&rec, id, 0, head).unwrap();
    let (start, end) = (events[0].sim_time_secs(), events[events.len() - 1].sim_time_secs());
    let mut q: Vec<(String, Value)> = Vec::new();
    let mut ask = |c: &str, a: Value| q.push((c.to_owned(), a));
    ask("opened", json!({}));
    ask("branches", json!({}));
    for buckets in [1, 64, 600] {
        ask("timeline", json!({ "branch": main, "buckets": buckets }));
    }
    ask("map", json!({ "branch": main }));
    ask("tracks", json!({ "branch": main }));
    // Moments across the day, by seq and by time, forwards (the warm town) and back.
    let n = 40u64;
    for i in 0..=n {
        ask("frame", json!({ "branch": main, "seq": head * i / n }));
    }
    for i in (0..=n).rev().step_by(4) {
        ask("frame", json!({ "branch": main, "seq": head * i / n }));
        ask("frame", json!({ "branch": main, "secs": start + (end - start) * i / n }));
    }
    for i in 0..=10 {
        let seq = head * i / 10;
        for (by, dir) in [("step", 1), ("step", -1), ("event", 1), ("event", -1)] {
            ask("step", json!({ "branch": main, "seq": seq, "by": by, "dir": dir }));
        }
    }
    // Every agent, at a few moments; "why?" of what each was doing.
    let agents: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.body {
            hamlet_log::Body::AgentJoined(j) => Some(j.agent.0),
            _ => None,
        })
        .collect();
    for &agent in &agents {
        for i in [1, 3] {
            let seq = head * i / 4;
            ask("agent", json!({ "branch": main, "seq": seq, "agent": agent }));
            ask("why", json!({ "branch": main, "seq": seq, "agent": agent }));
        }
        ask("calls", json!({ "branch": main, "from": 0, "to": head, "agent": agent }));
    }
    // "Why?" of events by id (plans, memories, lines), full and as shown.
    for e in events.iter().step_by((events.len() / 12).max(1)) {
        let hex = e.id.to_hex();
        ask("why", json!({ "branch": main, "event": hex }));
        ask("why", json!({ "branch": main, "event": format!("ev_{}", &hex[..12]) }));
    }
    ask("calls", json!({ "branch": main, "from": head / 3, "to": head / 2 }));
    for b in &branches {
        ask("compare", json!({ "a": main, "b": b.name }));
    }
    for what in ["density", "relationships", "cost"] {
        ask("research", json!({ "branch": main, "ask": { "what": what, "every_secs": 1800 } }));
    }
    let party = json!({ "what": "diffusion", "keywords": ["party"] });
    ask("research", json!({ "branch": main, "ask": party }));
    // Asks that fail, in the same words.
    ask("map", json!({ "branch": "nowhere" }));
    ask("frame", json!({ "branch": 7 }));
    ask("step", json!({ "branch": main, "seq": 1, "by": "hour", "dir": 1 }));
    ask("why", json!({ "branch": main }));
    ask("why", json!({ "branch": main, "event": "ev_zz" }));
    ask("agent", json!({ "branch": main, "seq": head, "agent": 999 }));
    ask("research", json!({ "branch": main, "ask": { "what": "weather" } }));
    ask("fork", json!({}));
    q
}

/// Each answer as the native dispatcher gives it: (answered, its text).
fn native(bytes: &[u8], name: &str, questions: &[(String, Value)]) -> Vec<(bool, String)> {
    let mut answers = Vec::new();
    match Session::recording(bytes, Path::new(name)) {
        Err(e) => answers.push((false, e.to_string())),
        Ok((rec, mut session)) => {
            answers.push((true, serde_json::to_string(session.opened()).unwrap()));
            for (command, args) in questions {
                let answer =
                    dispatch(&mut session, &rec, command, &args.to_string(), &BTreeMap::new());
                answers.push(match answer {
                    Ok(json) => (true, json),
                    Err(words) => (false, words),
                });
            }
        }
    }
    answers
}

#[test]
fn the_browser_build_answers_every_read_command_byte_for_byte_as_the_desktop_does() {
    let wasm = module();
    let size = std::fs::metadata(&wasm).unwrap().len();
    println!("hamlet_web.wasm: {size} bytes ({:.2} MiB)", size as f64 / (1 << 20) as f64);
    assert!(size <= BUDGET_BYTES, "the module is {size} bytes, over its budget of {BUDGET_BYTES}");

    let recordings =
        ["willowmere-morning.hamlet", "willowmere-day.hamlet", "willowmere-day-rulebook1.hamlet"];
    let mut plan = Vec::new();
    let mut expected = Vec::new();
    for name in recordings {
        let file = root().join("recordings").join(name);
        let bytes = std::fs::read(&file).unwrap();
        let questions = questions(&bytes);
        expected.push(native(&bytes, name, &questions));
        let questions: Vec<Value> = questions.iter().map(|(c, a)| json!([c, a])).collect();
        plan.push(json!({ "file": file, "name": name, "questions": questions }));
    }
    let dir = tempfile::tempdir().unwrap();
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, serde_json::to_vec(&plan).unwrap()).unwrap();
    let out = Command::new("node")
        .arg(root().join("web/tests/parity.mjs"))
        .arg(&wasm)
        .arg(&plan_file)
        .output()
        .expect("node runs (the Debian package nodejs)");
    assert!(out.status.success(), "node: {}", String::from_utf8_lossy(&out.stderr));
    let got: Vec<Vec<(bool, String)>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got.len(), expected.len());
    let mut compared = 0;
    for ((name, want), got) in recordings.iter().zip(&expected).zip(&got) {
        assert_eq!(got.len(), want.len(), "{name}: as many answers");
        for (i, (w, g)) in want.iter().zip(got).enumerate() {
            if w != g {
                let cut = |s: &str| s.chars().take(300).collect::<String>();
                panic!(
                    "{name}, question {i}: native {:?} {}\nwasm {:?} {}",
                    w.0,
                    cut(&w.1),
                    g.0,
                    cut(&g.1)
                );
            }
            compared += 1;
        }
        let failed = want.iter().filter(|(ok, _)| !ok).count();
        println!("{name}: {} answers the same, {failed} of them errors", want.len());
        assert!(failed >= 7 && failed < want.len() / 4, "{name}: {failed} errors");
    }
    assert!(compared >= 200, "{compared} answers compared");
}

#[test]
fn a_trap_in_the_module_fails_only_its_request_and_the_worker_starts_again() {
    let wasm = module();
    let out = Command::new("node")
        .arg(root().join("web/tests/worker.mjs"))
        .arg(&wasm)
        .arg(root().join("recordings/willowmere-day.hamlet"))
        .output()
        .expect("node runs (the Debian package nodejs)");
    assert!(out.status.success(), "node: {}", String::from_utf8_lossy(&out.stderr));
    let told: Value = serde_json::from_slice(&out.stdout).unwrap();
    // load, open, and the one made after the trap.
    assert_eq!(told["instances"], 3, "{told}");
}
