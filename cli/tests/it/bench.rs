//! `hamlet bench models` at the process boundary, against two test-double servers that
//! answer differently on loopback: one by the rules, one by the rules with every line of
//! dialogue the same greeting. Each model's agents are measured apart, a mixed run splits
//! them, and one assignment run twice from one seed measures the same.

use std::process::{Command, Output};

use crate::loopback::{LoopbackServer, Reply};
use crate::rules::{echoing_over_http, over_http};

fn command(args: &[String]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hamlet"));
    c.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_API_KEY", "sk-loopback")
        .env("A_KEY", "sk-a")
        .env("B_KEY", "sk-b")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("HAMLET_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent");
    c
}

async fn hamlet(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || command(&args).output().unwrap()).await.unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn chats(server: &LoopbackServer) -> Vec<crate::loopback::Received> {
    server.requests().into_iter().filter(|r| r.line.contains("/chat/completions")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_models_measures_each_models_agents_apart_and_from_one_seed_alike() {
    let run_server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let a_server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let b_server = LoopbackServer::start(vec![], Reply::Rules(echoing_over_http)).await;
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    let profile = |name: &str, server: &LoopbackServer, key: &str| {
        format!(
            "[models.{name}]\nbase_url = \"{}\"\nmodel = \"rules-{name}\"\napi_key_env = \"{key}\"\n",
            server.base_url()
        )
    };
    let profiles = profile("a", &a_server, "A_KEY") + &profile("b", &b_server, "B_KEY");
    std::fs::write(&config, profiles).unwrap();
    let quiz = tmp.path().join("quiz.toml");
    std::fs::write(&quiz, "[[question]]\nask = \"Where do you live?\"\nexpect = [\"house\"]\n")
        .unwrap();
    let town =
        hamlet_engine::town::Definition::parse("t", hamlet_engine::town::WILLOWMERE).unwrap();
    let family: Vec<String> = town.personas[..3].iter().map(|p| p.name.clone()).collect();
    let first = &family[0];
    let base = |rest: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["bench", "models"].iter().map(|s| (*s).to_owned()).collect();
        v.extend(rest.iter().map(|s| (*s).to_owned()));
        v.extend(
            [
                "--agents",
                &family.join(","),
                "--base-url",
                &run_server.base_url(),
                "--model",
                "rules",
                "--embed",
                "openai",
                "--embed-model",
                "letters",
                "--config",
                &config.display().to_string(),
            ]
            .map(str::to_owned),
        );
        v
    };

    // Refusals come before any model is asked.
    for (args, says) in [
        (vec!["--assign", "a", "--assign", "Nobody Here=b"], "no persona `Nobody Here`"),
        (vec!["--assign", "a", "--assign", "c"], "no model named `c`"),
        (vec!["--assign", "a", "--every", "30m"], "no --questions file"),
    ] {
        let out = hamlet(base(&args)).await;
        assert!(!out.status.success(), "{args:?}");
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
    }
    assert_eq!(chats(&a_server).len() + chats(&b_server).len() + chats(&run_server).len(), 0);

    let mixed = format!("a,{first}=b");
    let store = tmp.path().join("compare");
    let (quiz, store_dir) = (quiz.display().to_string(), store.display().to_string());
    let args = base(&[
        "--assign",
        "a",
        "--assign",
        "b",
        "--assign",
        &mixed,
        "--assign",
        "a",
        "--hours",
        "4",
        "--spread",
        "breakfast",
        "--questions",
        &quiz,
        "--every",
        "2h",
        "--format",
        "json",
        "--store",
        &store_dir,
    ]);
    let out = hamlet(args).await;
    assert!(out.status.success(), "{}", text(&out));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = |assignment: &str, model: &str| -> Vec<&serde_json::Value> {
        rows.iter().filter(|r| r["assignment"] == assignment && r["model"] == model).collect()
    };
    assert_eq!(rows.len(), 5, "a, b, the mix's two models, a again: {rows:#?}");
    let (a, b) = (row("a", "a"), row("b", "b"));
    let (mix_a, mix_b) = (row(&mixed, "a")[0], row(&mixed, "b")[0]);
    assert_eq!(a.len(), 2, "a was run twice");
    assert_eq!((a[0]["agents"].as_u64(), b[0]["agents"].as_u64()), (Some(3), Some(3)));
    assert_eq!((mix_a["agents"].as_u64(), mix_b["agents"].as_u64()), (Some(2), Some(1)));
    for (r, answered) in
        [(a[0], "rules-a"), (b[0], "rules-b"), (mix_a, "rules-a"), (mix_b, "rules-b")]
    {
        assert_eq!(r["answered_by"], serde_json::json!([answered]), "{r:#}");
        assert!(r["calls"].as_u64().unwrap() > 0, "{r:#}");
        assert_eq!(r["heard"].as_array().map(Vec::len), Some(1), "one fact followed");
        // Asked at an hour and at the end, one question each.
        let agents = r["agents"].as_u64().unwrap();
        assert_eq!(r["quiz_answers"].as_u64(), Some(agents * 2), "{r:#}");
        let score = r["quiz_score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&score), "{r:#}");
    }
    // The model that says one greeting over and over has its repeats left out of the same
    // talk (the rules double talks once in these hours, Delphine and Tobias at 07:01).
    let lines = |r: &serde_json::Value| r["believability"]["lines"].as_u64().unwrap();
    assert!(lines(b[0]) > 0 && lines(b[0]) < lines(a[0]), "{:#} {:#}", b[0], a[0]);
    // One seed, one assignment: the same measures (wall time apart).
    let measured = |r: &serde_json::Value| {
        let mut r = r.clone();
        r.as_object_mut().unwrap().remove("wall_minutes_per_agent_hour");
        r
    };
    assert_eq!(measured(a[0]), measured(a[1]));
    // Each model was asked at its own server with its own key, and every call is counted.
    for r in chats(&b_server) {
        assert_eq!(r.body["model"], "rules-b");
        assert_eq!(r.authorization.as_deref(), Some("Bearer sk-b"));
    }
    let tries = |r: &serde_json::Value| r["tries"].as_u64().unwrap();
    let quiz_b = mix_b["quiz_answers"].as_u64().unwrap() + b[0]["quiz_answers"].as_u64().unwrap();
    assert_eq!(chats(&b_server).len() as u64, tries(b[0]) + tries(mix_b) + quiz_b);
    // Each run is a store of its own, kept where asked.
    for dir in ["1-a", "2-b", "4-a"] {
        assert!(store.join(dir).is_dir(), "{dir}");
    }

    // For people: the machine, the command again, and the columns.
    let out = hamlet(base(&["--assign", "a", "--hours", "0.05"])).await;
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    for says in ["machine: ", "reproduce: ", "--assign a", "calls/agent-h", "line faults/100"] {
        assert!(shown.contains(says), "{says}: {shown}");
    }
}
