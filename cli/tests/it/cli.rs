//! The `hamlet` binary at the process boundary: exit statuses, `error:` and `hint:` lines,
//! files written. A cleared environment keeps runs hermetic.

use std::path::Path;
use std::process::{Command, Output};

fn hamlet(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hamlet"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("HOME", dir)
        .env("COLUMNS", "100")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn synth_verify_cut_recover_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = hamlet(d, &["synth", "--events", "12000", "--out", "t.hamlet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = hamlet(d, &["verify", "t.hamlet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("sound"));

    // Cut the file short: verify says so (1), inspect errors with a hint (2).
    let bytes = std::fs::read(d.join("t.hamlet")).unwrap();
    std::fs::write(d.join("cut.hamlet"), &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = hamlet(d, &["verify", "cut.hamlet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let out = hamlet(d, &["inspect", "cut.hamlet"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: cannot open recording cut.hamlet"), "{stderr}");
    assert!(stderr.contains("hint: the file looks cut short: `hamlet recover"), "{stderr}");

    // Recover keeps a prefix (3), which verifies (0).
    let out = hamlet(d, &["recover", "cut.hamlet", "--out", "fixed.hamlet"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let out = hamlet(d, &["verify", "fixed.hamlet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // A sound file: recover loses nothing (0); garbage: nothing kept (1).
    let out = hamlet(d, &["recover", "t.hamlet", "--out", "same.hamlet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(std::fs::read(d.join("same.hamlet")).unwrap(), bytes);
    std::fs::write(d.join("junk.hamlet"), b"not a recording at all").unwrap();
    let out = hamlet(d, &["recover", "junk.hamlet", "--out", "j2.hamlet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

#[test]
fn store_import_export_rebuild_and_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(hamlet(d, &["synth", "--events", "2000", "--out", "t.hamlet"]).status.success());
    let out = hamlet(d, &["import", "t.hamlet", "--store", "st"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(hamlet(d, &["export", "--store", "st", "--out", "a.hamlet"]).status.success());
    assert!(hamlet(d, &["import", "a.hamlet", "--store", "st2"]).status.success());
    assert!(hamlet(d, &["export", "--store", "st2", "--out", "b.hamlet"]).status.success());
    assert_eq!(
        std::fs::read(d.join("a.hamlet")).unwrap(),
        std::fs::read(d.join("b.hamlet")).unwrap()
    );
    std::fs::remove_dir_all(d.join("st/index")).unwrap();
    let out = hamlet(d, &["store", "rebuild", "--store", "st"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = hamlet(d, &["store", "check", "--store", "st"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = hamlet(d, &["log", "--store", "st", "--kind", "AgentJoined", "--limit", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);
    let out = hamlet(
        d,
        &["log", "t.hamlet", "--agent", "Agent 2", "--kind", "Moved", "--to", "day0 00:05"],
    );
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().count() > 0 && stdout.lines().all(|l| l.contains("Agent 2 moves")),
        "{stdout}"
    );
    // The same state from the file and from its export.
    let a = hamlet(d, &["replay", "t.hamlet", "--to", "#1500"]);
    let b = hamlet(d, &["replay", "a.hamlet", "--to", "#1500"]);
    assert_eq!(a.stdout, b.stdout);
    assert!(String::from_utf8_lossy(&a.stdout).starts_with("state hash   st_"));
}

/// One bit flipped in the last chunk of an acknowledged segment: `store check` says what a
/// repair would cut and changes nothing; opening the store makes the cut, says so with the
/// number of acknowledged bytes lost, and keeps the cut bytes beside the segment.
#[test]
fn damage_to_acknowledged_events_is_never_cut_silently() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(hamlet(d, &["synth", "--events", "6000", "--out", "t.hamlet"]).status.success());
    assert!(hamlet(d, &["import", "t.hamlet", "--store", "st"]).status.success());
    let segments = d.join("st/segments");
    let segment = std::fs::read_dir(&segments)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x10;
    std::fs::write(&segment, &bytes).unwrap();

    let out = hamlet(d, &["store", "check", "--store", "st"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("would repair") && text(&out).contains("nothing was changed"));
    assert_eq!(std::fs::read(&segment).unwrap(), bytes, "check changed nothing");

    // A command that reads reads what is sound, says what a repair would do, and does not.
    for read in [&["log", "--store", "st", "--limit", "1"][..], &["branches", "--store", "st"]] {
        let out = hamlet(d, read);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("warning: st needs a repair (read as it stands"), "{said}");
        assert!(said.contains("acknowledged bytes among them"), "{said}");
        assert_eq!(std::fs::read(&segment).unwrap(), bytes, "{read:?} changed the segment");
    }

    // One that writes makes the repair, and says so.
    let out = hamlet(d, &["store", "rebuild", "--store", "st"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("warning: opening st repaired"), "{said}");
    assert!(said.contains("acknowledged bytes among them"), "{said}");
    let cut_len = std::fs::read(&segment).unwrap().len();
    let kept: Vec<_> = std::fs::read_dir(&segments)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".seg.cut-"))
        .collect();
    assert_eq!(kept.len(), 1, "{said}");
    assert_eq!(std::fs::read(&kept[0]).unwrap(), bytes[cut_len..], "every cut byte is kept");
    let out = hamlet(d, &["store", "check", "--store", "st"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// `hamlet rename-branch`: a new name by an event, said, listed, logged and exported; a
/// taken name and an unknown branch refused with the store's words and a hint.
#[test]
fn a_branch_is_renamed_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = hamlet(d, &["rename-branch", "--help"]);
    assert!(
        text(&out).contains("Examples:\n  hamlet rename-branch --store run/"),
        "{}",
        text(&out)
    );
    assert!(hamlet(d, &["synth", "--events", "2000", "--out", "t.hamlet"]).status.success());
    assert!(hamlet(d, &["import", "t.hamlet", "--store", "st"]).status.success());
    let out = hamlet(d, &["rename-branch", "--store", "st", "main", "high-street"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).starts_with("renamed `main` to `high-street`"), "{}", text(&out));
    let out = hamlet(d, &["branches", "--store", "st"]);
    assert!(text(&out).starts_with("high-street "), "{}", text(&out));
    let out =
        hamlet(d, &["log", "--store", "st", "--branch", "high-street", "--kind", "BranchRenamed"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("branch renamed `high-street`"), "{}", text(&out));

    let out = hamlet(d, &["rename-branch", "--store", "st", "main", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.starts_with(
            "error: cannot rename `main`: no branch `main`; the store has: high-street"
        ),
        "{said}"
    );
    assert!(hamlet(
        d,
        &["fork", "--store", "st", "--branch", "high-street", "--at", "end", "--name", "what-if"]
    )
    .status
    .success());
    let out = hamlet(d, &["rename-branch", "--store", "st", "what-if", "high-street"]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("a branch named `high-street` exists already"), "{said}");
    assert!(said.contains("hint: `hamlet branches --store DIR` lists the branches"), "{said}");

    // Exported, the branch is listed and replayed under its new name.
    assert!(hamlet(
        d,
        &["export", "--store", "st", "--branch", "high-street", "--out", "r.hamlet"]
    )
    .status
    .success());
    let out = hamlet(d, &["replay", "r.hamlet"]);
    assert!(text(&out).contains("branch       high-street\n"), "{}", text(&out));
}

/// A checkpoint whose hashes all hold but whose state is another moment's: `verify` exits 4
/// and says so, `replay` answers from the events (as for the honest file), and `convert`
/// writes the events again without it.
#[test]
fn a_false_checkpoint_is_refused_and_never_read() {
    use hamlet_engine::fold::fold;
    use hamlet_log::Recording;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = hamlet(d, &["synth", "--events", "6000", "--out", "t.hamlet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let bytes = std::fs::read(d.join("t.hamlet")).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let root = rec.root().unwrap().id;
    let events: Vec<_> = rec.events(root, 0).unwrap().map(Result::unwrap).collect();
    let (early, late) = (1500usize, 4500usize);
    let mut elsewhen = fold(&events[..=early]);
    elsewhen.head = fold(&events[..=late]).head;
    let honest = crate::forge::with_checkpoints(&bytes, &[(late as u64, fold(&events[..=late]))]);
    let lying = crate::forge::with_checkpoints(&bytes, &[(late as u64, elsewhen)]);
    std::fs::write(d.join("honest.hamlet"), honest).unwrap();
    std::fs::write(d.join("lying.hamlet"), lying).unwrap();

    let out = hamlet(d, &["verify", "honest.hamlet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("the state at its checkpoint re-derived"), "{}", text(&out));
    let out = hamlet(d, &["verify", "lying.hamlet"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains(&format!("#{late}: its state is not the one its events fold to (st_")),
        "{said}"
    );
    assert!(said.contains("hamlet convert lying.hamlet --out FIXED"), "{said}");

    let to = format!("#{}", late + 10);
    let truth = hamlet(d, &["replay", "honest.hamlet", "--to", &to]);
    let read = hamlet(d, &["replay", "lying.hamlet", "--to", &to]);
    assert_eq!(read.status.code(), Some(0), "{}", text(&read));
    let hash = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.starts_with("state hash"))
            .map(String::from)
    };
    assert!(hash(&truth).is_some());
    assert_eq!(hash(&read), hash(&truth), "the events' state, not the checkpoint's");
    assert!(String::from_utf8_lossy(&read.stderr).contains("lying.hamlet is not sound"));

    let out = hamlet(d, &["convert", "lying.hamlet", "--out", "fixed.hamlet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("written without checkpoints"), "{}", text(&out));
    let out = hamlet(d, &["verify", "fixed.hamlet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn wrong_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = hamlet(d, &["verify", "missing.hamlet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read recording missing.hamlet"));
    let out = hamlet(d, &["log", "missing.hamlet", "--kind", "Nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("no event kind `Nope`; the kinds are: BranchCreated"));
    let out = hamlet(d, &["replay", "x.hamlet", "--to", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("#<seq>"));
    let out = hamlet(d, &["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `hamlet view` says what is wrong before it looks for a window: no such file, no store,
/// no display, no viewer built (and where to get each).
#[test]
fn view_says_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hamlet"));
        c.current_dir(dir).args(args).env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
        for (k, v) in envs {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let out = run(&["view", "nothing.hamlet"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no recording at nothing.hamlet"), "{}", text(&out));
    let out = run(&["view", "--store", "nowhere"], &[]);
    assert!(text(&out).contains("no store at nowhere"), "{}", text(&out));
    std::fs::write(dir.join("a.hamlet"), b"x").unwrap();
    let out = run(&["view", "a.hamlet"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no display"), "{}", text(&out));
    assert!(text(&out).contains("xvfb-run"), "{}", text(&out));
    let out = run(
        &["view", "a.hamlet"],
        &[("DISPLAY", ":99"), ("HAMLET_VIEWER", "/nonexistent/hamlet-viewer")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("cannot run the viewer /nonexistent/hamlet-viewer"),
        "{}",
        text(&out)
    );
}
