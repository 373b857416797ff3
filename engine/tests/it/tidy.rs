//! Properties of the code itself, checked by the normal test run.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && !name.starts_with('.') && name != "target" {
            rust_files(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_source_file_says_what_it_owns_and_nothing_is_unfinished() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    assert!(files.len() > 20);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let shown = path.display();
        assert!(text.starts_with("//!"), "{shown}: open with a `//!` line saying what it owns");
        let in_tests = path
            .components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "benches" | "fuzz")));
        if !in_tests {
            for banned in ["todo!(", "unimplemented!(", "dbg!("] {
                assert!(!text.contains(banned), "{shown}: `{banned}` on a shipped path");
            }
        }
    }
}

#[test]
fn determinism_is_enforced_by_clippy_toml() {
    let text = std::fs::read_to_string(root().join("clippy.toml")).unwrap();
    for banned in [
        "std::collections::HashMap",
        "std::collections::HashSet",
        "rand::rngs::StdRng",
        "rand::thread_rng",
        "std::time::SystemTime::now",
    ] {
        assert!(text.contains(&format!("path = \"{banned}\"")), "clippy.toml must ban {banned}");
    }
}

#[test]
fn the_log_format_keeps_its_dependencies_short() {
    let text = std::fs::read_to_string(root().join("log-format/Cargo.toml")).unwrap();
    let deps = text.split("[dependencies]").nth(1).unwrap().split("\n[").next().unwrap();
    let names: Vec<&str> = deps
        .lines()
        .filter_map(|l| l.split_once('=').map(|(n, _)| n.trim().trim_end_matches(".workspace")))
        .filter(|n| !n.is_empty() && !n.starts_with('#'))
        .collect();
    assert_eq!(
        names,
        ["serde", "postcard", "blake3", "thiserror"],
        "every dependency of hamlet-log is a format decision"
    );
}

#[test]
fn ci_runs_the_readme_test_command() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let command = readme
        .lines()
        .find(|l| l.starts_with("./hamlet-dev test"))
        .expect("README names the test command");
    assert!(ci.lines().any(|l| l.trim() == command.trim()), ".ci/run must run `{command}` exactly");
}
