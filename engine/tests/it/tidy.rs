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
    // Every dependency table but the dev-dependencies: `[dependencies]` and the per-target
    // ones (`[target.'cfg(...)'.dependencies]`).
    let names: Vec<&str> = text
        .split("\n[")
        .filter(|table| {
            let head = table.lines().next().unwrap_or("");
            head.ends_with("dependencies]") && !head.ends_with("dev-dependencies]")
        })
        .flat_map(|table| table.lines().skip(1))
        .filter_map(|l| l.split_once('=').map(|(n, _)| n.trim().trim_end_matches(".workspace")))
        .filter(|n| !n.is_empty() && !n.starts_with('#'))
        .collect();
    assert_eq!(
        names,
        ["serde", "postcard", "blake3", "thiserror", "zstd", "ruzstd"],
        "every dependency of hamlet-log is a format decision"
    );
}

#[test]
fn the_readme_stays_a_front_door() {
    // What Hamlet is, the two commands, things to try, how to work on it: the long guides
    // and the measurements live in docs/.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.len() <= 12 * 1024, "README.md is {} bytes: move detail to docs/", readme.len());
    for linked in ["docs/commands.md", "docs/viewer.md", "docs/measurements.md", "docs/tests.md"] {
        assert!(readme.contains(linked), "README.md points to {linked}");
        assert!(root().join(linked).exists(), "{linked} exists");
    }
}

#[test]
fn the_architecture_maps_every_module_and_stays_short() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    assert!(map.len() <= 20 * 1024, "ARCHITECTURE.md is {} bytes: detail goes in `//!`", map.len());
    for crate_dir in ["log-format", "core", "gateway", "engine"] {
        let lib = std::fs::read_to_string(root().join(crate_dir).join("src/lib.rs")).unwrap();
        // Each module of a file of its own (`pub mod x;`), not an inline one.
        let modules = lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod "));
        for module in modules.filter_map(|m| m.strip_suffix(';')) {
            let named = [format!("`{module}.rs`"), format!("`{module}/`")];
            assert!(
                named.iter().any(|n| map.contains(n.as_str())),
                "ARCHITECTURE.md's code map does not name {crate_dir}'s `{module}`"
            );
        }
    }
}

#[test]
fn one_rust_version_everywhere() {
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let version = workspace
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("the workspace names its rust-version")
        .trim_matches('"')
        .to_owned();
    for member in ["log-format", "core", "gateway", "engine", "cli", "testkit", "src-tauri", "web"]
    {
        let manifest = std::fs::read_to_string(root().join(member).join("Cargo.toml")).unwrap();
        assert!(
            manifest.lines().any(|l| l.trim() == "rust-version.workspace = true"),
            "{member}/Cargo.toml takes the workspace's rust-version"
        );
    }
    let script = std::fs::read_to_string(root().join("hamlet-dev")).unwrap();
    assert!(script.contains(&format!("MIN_RUST=\"{version}\"")), "hamlet-dev checks {version}");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains(&format!("Rust {version} or newer")), "README asks for {version}");
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

/// The models `hamlet-dev` fetches for a command: the words of its `NAME=(…)` line.
fn hamlet_dev_models(name: &str) -> Vec<String> {
    let script = std::fs::read_to_string(root().join("hamlet-dev")).unwrap();
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=(")))
        .unwrap_or_else(|| panic!("hamlet-dev declares {name}=(…)"));
    line.trim_end_matches(')').split_whitespace().map(str::to_owned).collect()
}

/// Whether test or benchmark code asks for the embedded model `choice`: by its `ModelChoice`
/// variant, or by name as a `--model` flag or a `model` setting.
fn asks_for(text: &str, choice: hamlet_gateway::models::ModelChoice) -> bool {
    let name = choice.name();
    [
        format!("ModelChoice::{choice:?}"),
        format!("\"--model\", \"{name}\""),
        format!("--model {name}"),
        format!("model: Some(\"{name}\""),
    ]
    .iter()
    .any(|pattern| text.contains(pattern.as_str()))
}

#[test]
fn set_up_fetches_every_model_the_tests_use() {
    use hamlet_gateway::models::ModelChoice;
    let setup = hamlet_dev_models("TEST_MODELS");
    let run = hamlet_dev_models("RUN_MODELS");
    for name in setup.iter().chain(&run) {
        assert!(name.parse::<ModelChoice>().is_ok(), "hamlet-dev fetches `{name}`: not a model");
    }
    for name in &run {
        assert!(setup.contains(name), "`./hamlet-dev test` must fetch `{name}` too");
    }
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    let mut asked = std::collections::BTreeMap::<&str, Vec<String>>::new();
    for path in files {
        let in_tests =
            path.components().any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "benches")));
        if !in_tests {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for choice in ModelChoice::ALL {
            if asks_for(&text, choice) {
                asked.entry(choice.name()).or_default().push(path.display().to_string());
            }
        }
    }
    assert!(!asked.is_empty(), "the model tests name their models (gateway/tests/it/model.rs)");
    for (name, users) in asked {
        assert!(
            setup.iter().any(|s| s == name),
            "{users:?} use the {name} model, which `./hamlet-dev setup` does not fetch: add it to \
             TEST_MODELS in hamlet-dev"
        );
    }
}

/// Whether `word` occurs in `text` not as the tail of a longer name (`retrieval(` is not
/// `eval(`).
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
    })
}

#[test]
fn the_viewer_page_sets_recording_text_as_text_and_trusts_nothing_remote() {
    let dir = root().join("viewer");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !["js", "mjs", "html", "css"].contains(&ext) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for banned in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "javascript:",
            "srcdoc",
        ] {
            assert!(!has_word(&text, banned), "{}: `{banned}`", path.display());
        }
        // The only address in the page is SVG's namespace: nothing is fetched from outside.
        let addresses = text.matches("http").count();
        let svg_ns = text.matches("http://www.w3.org/2000/svg").count();
        assert_eq!(addresses, svg_ns, "{}: a remote address", path.display());
        if ext == "html" {
            assert!(
                !text.contains("<script>") && !text.contains("style="),
                "{}: inline code",
                path.display()
            );
            let handler = text.split(" on").skip(1).any(|rest| {
                let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
                !name.is_empty() && rest[name.len()..].starts_with('=')
            });
            assert!(!handler, "{}: an inline event handler", path.display());
        }
        checked += 1;
    }
    assert!(checked >= 5, "the page's files were read");

    let conf: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("src-tauri/tauri.conf.json")).unwrap(),
    )
    .unwrap();
    let csp = conf["app"]["security"]["csp"].as_str().expect("a CSP");
    for must in ["default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'"]
    {
        assert!(csp.contains(must), "the CSP says {must}: {csp}");
    }
    let remote: Vec<&str> = csp
        .split([' ', ';'])
        .filter(|w| w.contains("://") && *w != "http://ipc.localhost")
        .collect();
    assert!(remote.is_empty(), "no remote origin in the CSP: {remote:?}");
    assert!(!csp.contains("unsafe"), "nothing unsafe in the CSP: {csp}");
    assert_eq!(conf["app"]["security"]["freezePrototype"], true);

    let caps: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("src-tauri/capabilities/default.json")).unwrap(),
    )
    .unwrap();
    let granted: Vec<&str> = caps["permissions"]
        .as_array()
        .expect("a list of permissions")
        .iter()
        .map(|p| p.as_str().expect("a permission by name"))
        .collect();
    // Core and plugin permissions: only listening to the window's events. The app's own
    // commands each by name (`allow-<command>`, from the app manifest), none a wildcard.
    let (core, own): (Vec<&str>, Vec<&str>) = granted.iter().partition(|p| p.contains(':'));
    assert_eq!(
        core,
        ["core:event:allow-listen", "core:event:allow-unlisten"],
        "the page may only listen to the window's events"
    );
    assert!(own.iter().all(|p| p.starts_with("allow-") && !p.contains('*')), "{own:?}");
    assert!(!own.contains(&"allow-answer-next-dialog"), "the test build's command, granted");
}

/// The crates of `package`'s tree for `target` (the host's if none; normal dependencies),
/// one crate a line.
fn core_tree(package: &str, target: Option<&str>) -> String {
    let out = std::process::Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["tree", "--locked", "-p", package, "-e", "normal", "--prefix", "none"])
        .args(["--format", "{p}"])
        .args(target.map(|t| ["--target", t]).iter().flatten())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_read_path_needs_no_store_gateway_runtime_or_c() {
    // hamlet-core, and the browser's build of its read commands (hamlet-web).
    for package in ["hamlet-core", "hamlet-web"] {
        let banned = |tree: &str, names: &[&str]| {
            for line in tree.lines() {
                let name = line.split_whitespace().next().unwrap_or("");
                assert!(
                    !names.iter().any(|b| name == *b || name.starts_with("llama-cpp")),
                    "{package} depends on {line}: the read path must build without it"
                );
            }
        };
        let host = core_tree(package, None);
        assert!(host.contains("hamlet-log"), "the tree was read: {host}");
        banned(&host, &["sled", "tokio", "reqwest", "hamlet-gateway", "hamlet-engine"]);
        let browser = core_tree(package, Some("wasm32-unknown-unknown"));
        assert!(browser.contains("ruzstd"), "on wasm32 chunks are read by ruzstd: {browser}");
        banned(&browser, &["sled", "tokio", "reqwest", "hamlet-gateway", "zstd-sys", "zstd"]);
    }
}

#[test]
fn every_action_icon_has_a_word_where_no_font_draws_it() {
    // The viewer shows an icon's word where the machine has no font for the emoji
    // (viewer/glyphs.js); each icon the engine may pick needs one, and only those.
    let text = std::fs::read_to_string(root().join("viewer/glyphs.js")).unwrap();
    let words: Vec<&str> = text
        .split("['")
        .skip(1)
        .filter_map(|entry| entry.split_once("', '").map(|(icon, _)| icon))
        .collect();
    for icon in hamlet_engine::mind::plan::ACTION_ICONS {
        assert!(words.contains(icon), "viewer/glyphs.js has no word for the action icon {icon}");
    }
    for icon in &words {
        assert!(
            hamlet_engine::mind::plan::ACTION_ICONS.contains(icon),
            "viewer/glyphs.js has a word for {icon}, which is no action icon"
        );
    }
}
