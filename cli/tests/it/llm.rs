//! The model commands at the process boundary: `hamlet llm complete` against a real HTTP
//! server on loopback records its call in a store, the key never reaches the store or an
//! exported recording, and `hamlet cost` adds the call up.

use std::path::Path;
use std::process::{Command, Output};

use crate::loopback::{LoopbackServer, Reply};

const KEY: &str = "sk-hamlet-test-key-0123456789abcdef";

async fn hamlet(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_hamlet"))
            .args(&args)
            .env("OPENAI_API_KEY", KEY)
            .env_remove("OPENAI_BASE_URL")
            .env_remove("HAMLET_CONFIG")
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_call_keeps_no_secret_and_is_costed() {
    let server = LoopbackServer::start(
        vec![Reply::Status(429, Some(0), "{}".into())],
        Reply::Chat(r#"{"rating": 6}"#.into()),
    )
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("run");
    let s = |x: &str| x.to_owned();
    let out = hamlet(vec![
        s("llm"),
        s("complete"),
        s("Rate: Mei finds a lost cat."),
        s("--shape"),
        s("importance"),
        s("--base-url"),
        server.base_url(),
        s("--model"),
        s("loopback-model"),
        s("--record"),
        store.display().to_string(),
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"{"rating": 6}"#);
    assert!(stderr.contains("try 1 failed (RateLimited)"), "{stderr}");
    assert!(!stderr.contains(KEY));
    // The key went to the server, and nowhere else.
    assert!(server
        .requests()
        .iter()
        .all(|r| r.authorization.as_deref() == Some(&*format!("Bearer {KEY}"))));

    let recording = tmp.path().join("run.hamlet");
    let out = hamlet(vec![
        s("export"),
        s("--store"),
        store.display().to_string(),
        s("--out"),
        recording.display().to_string(),
    ])
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut files = vec![recording.clone()];
    files_under(&store, &mut files);
    assert!(files.len() > 2, "{files:?}");
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        assert!(!contains(&bytes, KEY.as_bytes()), "the key is in {}", file.display());
        assert!(
            !contains(&bytes, &KEY.as_bytes()[3..20]),
            "part of the key is in {}",
            file.display()
        );
    }
    let log = hamlet(vec![
        s("log"),
        recording.display().to_string(),
        s("--kind"),
        s("LlmRequested,LlmFailed"),
    ])
    .await;
    let log = String::from_utf8_lossy(&log.stdout);
    assert_eq!(log.lines().count(), 3, "two tries and one failure:\n{log}");

    let cost = hamlet(vec![s("cost"), recording.display().to_string()]).await;
    let cost = String::from_utf8_lossy(&cost.stdout);
    let total = cost.lines().find(|l| l.starts_with("total")).unwrap_or_else(|| panic!("{cost}"));
    let numbers: Vec<&str> = total.split_whitespace().collect();
    // total, calls, tries, failed, fallbacks, prompt, cached share, completion, embedding
    // tokens, cost (the loopback server says nothing of a cache)
    assert_eq!(&numbers[1..9], ["1", "2", "1", "0", "21", "0%", "4", "0"], "{cost}");
    assert!(
        cost.contains("unpriced (add them to [prices] in the config file): loopback-model"),
        "{cost}"
    );
    assert!(!cost.contains("per agent-hour"), "no agent, no agent-hours: {cost}");
}

#[tokio::test]
async fn cost_says_calls_per_agent_hour_over_the_waking_hours() {
    let day = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../recordings/willowmere-day.hamlet");
    let out = hamlet(vec!["cost".to_owned(), day.display().to_string()]).await;
    let cost = String::from_utf8_lossy(&out.stdout);
    let calls_in = |row: &str| -> u64 {
        let line = cost.lines().find(|l| l.starts_with(row)).unwrap_or_else(|| panic!("{cost}"));
        line[row.len()..].split_whitespace().next().unwrap().parse().unwrap()
    };
    let (calls, late) = (calls_in("total"), calls_in("day0 23:00"));
    assert!(late > 0 && late < calls, "{cost}");
    // Ten agents, 07:00 to 23:00 of day 0: the span is the waking hours, and what was asked
    // at 23:00 is outside them.
    let line = cost
        .lines()
        .find(|l| l.starts_with("calls per agent-hour"))
        .unwrap_or_else(|| panic!("{cost}"));
    let per = |n: u64| format!("{:.1}", n as f64 / 160.0);
    assert_eq!(
        line,
        format!(
            "calls per agent-hour: {} ({calls} calls in 160 agent-hours); over the waking hours, \
             07:00 to 23:00 of each day: {} ({} calls in 160 agent-hours)",
            per(calls),
            per(calls - late),
            calls - late
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_a_clear_error() {
    let server = LoopbackServer::start(
        vec![],
        Reply::Status(
            401,
            None,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#
                .into(),
        ),
    )
    .await;
    let s = |x: &str| x.to_owned();
    let out = hamlet(vec![
        s("llm"),
        s("complete"),
        s("hello"),
        s("--base-url"),
        server.base_url(),
        s("--model"),
        s("m"),
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error:") && stderr.contains("Incorrect API key"), "{stderr}");
    assert!(!stderr.contains(KEY), "{stderr}");
    let missing =
        hamlet(vec![s("llm"), s("complete"), s("hello"), s("--base-url"), server.base_url()]).await;
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr.contains("--model"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetching_an_installed_model_only_checks_its_hash() {
    if std::env::var_os("HAMLET_SKIP_MODEL_TESTS").is_some_and(|v| v == "1") {
        return;
    }
    // No python3 on the PATH: a fetch that tried to download would fail.
    let out = tokio::task::spawn_blocking(|| {
        Command::new(env!("CARGO_BIN_EXE_hamlet"))
            .args(["models", "fetch", "--model", "embeddings", "--quiet"])
            .env("PATH", "/nonexistent")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the embedding model must be installed first (`./hamlet-dev setup`): {stderr}"
    );
    assert!(stderr.contains("already installed, SHA-256 verified"), "{stderr}");
}
