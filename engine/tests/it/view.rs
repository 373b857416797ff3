//! What the desktop viewer shows, without a window (`hamlet_engine::view`): over the shipped
//! recording and a store holding it, every answer agrees with the queries (`Past`) and the
//! fold; bad files are refused or shown unsound, never trusted.

use std::path::{Path, PathBuf};

use hamlet_engine::query::Past;
use hamlet_engine::store::Store;
use hamlet_engine::view::{ViewError, Viewer};
use hamlet_log::{Body, Event, Recording};

fn shipped() -> (PathBuf, Vec<u8>) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings/willowmere-morning.hamlet");
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn events_of(bytes: &[u8]) -> Vec<Event> {
    let rec = Recording::open(bytes).unwrap();
    let root = rec.root().unwrap().id;
    rec.events(root, 0).unwrap().collect::<Result<_, _>>().unwrap()
}

#[test]
fn frames_agree_with_the_fold_forwards_backwards_and_from_a_store() {
    let (path, bytes) = shipped();
    let events = events_of(&bytes);
    let head = events.last().unwrap().seq();
    let mut viewer = Viewer::recording(&bytes, &path).unwrap();
    let opened = viewer.opened().clone();
    assert!(opened.sound, "{:?}", opened.findings);
    assert_eq!(opened.branch, "main");
    assert_eq!(opened.branches.len(), 1);

    let tmp = tempfile::tempdir().unwrap();
    {
        let mut store = Store::open(tmp.path()).unwrap();
        store.import(&bytes).unwrap();
    }
    let mut from_store = Viewer::store(tmp.path()).unwrap();

    // Forwards (the warm town folded on), then backwards (from a checkpoint or the start),
    // then the same moment twice.
    let moments = [5, 400, 401, 1200, head / 2, head, 30, 1200, 1200];
    for seq in moments {
        let frame = viewer.frame("main", seq).unwrap();
        let past = Past::new(Past::cut(&events, seq));
        let town = past.town();
        assert_eq!(frame.seq, town.seq, "at #{seq}");
        assert_eq!(frame.secs, town.sim_time_secs);
        assert_eq!(frame.agents.len(), town.agents.len(), "at #{seq}");
        for (mark, brief) in frame.agents.iter().zip(&town.agents) {
            assert_eq!((mark.id, &mark.name, mark.tile), (brief.id, &brief.name, brief.tile));
            assert_eq!(mark.action, brief.action.as_ref().map_or("", |a| a.description.as_str()));
            assert_eq!(mark.talking_with, brief.talking_with, "{} at #{seq}", mark.name);
            if let Some(last) = mark.trail.last() {
                assert_eq!(*last, mark.tile, "a trail ends where the agent stands");
            }
        }
        // A bubble for each conversation under way that has a line, its speaker in it.
        assert!(frame.bubbles.len() <= town.conversations.len());
        for bubble in &frame.bubbles {
            let c = town.conversations.iter().find(|c| c.agents.contains(&bubble.speaker));
            let c = c.unwrap_or_else(|| panic!("{} speaks in no conversation", bubble.speaker));
            assert_eq!(bubble.text, c.lines.last().unwrap().text);
        }
        let again = from_store.frame("main", seq).unwrap();
        assert_eq!(serde_json::to_value(&again).unwrap(), serde_json::to_value(&frame).unwrap());
    }
    // A moment of conversation shows its bubble.
    let talk = events.iter().find_map(|e| match &e.body {
        Body::DialogueTurn(_) => Some(e.seq()),
        _ => None,
    });
    let frame = viewer.frame("main", talk.unwrap()).unwrap();
    assert!(!frame.bubbles.is_empty(), "a line under way at #{}", frame.seq);
    // Someone walked: a trail of several tiles.
    let walked = (0..head)
        .step_by(97)
        .any(|s| viewer.frame("main", s).unwrap().agents.iter().any(|a| a.trail.len() >= 3));
    assert!(walked, "some frame shows a walking agent's trail");
}

#[test]
fn the_timeline_counts_every_event_and_marks_what_matters() {
    let (path, bytes) = shipped();
    let events = events_of(&bytes);
    let mut viewer = Viewer::recording(&bytes, &path).unwrap();
    let t = viewer.timeline("main", 300).unwrap();
    assert_eq!(t.density.len(), 300);
    assert_eq!(t.density.iter().map(|&n| u64::from(n)).sum::<u64>(), events.len() as u64);
    assert_eq!((t.first_seq, t.head_seq), (0, events.last().unwrap().seq()));
    // The day starts with the clock (the run's set-up at midnight counts in the first column).
    let clock = events.iter().find(|e| matches!(e.body, Body::ClockStepped(_))).unwrap();
    assert_eq!(t.start_secs, clock.sim_time_secs() - 10, "07:00, when the first step began");
    assert_eq!(t.end_secs, events.last().unwrap().sim_time_secs());
    assert_eq!(t.seconds_per_step, 10);
    let count = |kind: &str| t.markers.iter().filter(|m| m.kind == kind).count();
    let started = |f: fn(&Body) -> bool| events.iter().filter(|e| f(&e.body)).count();
    assert_eq!(count("conversation"), started(|b| matches!(b, Body::ConversationStarted(_))));
    assert_eq!(count("reflection"), started(|b| matches!(b, Body::ReflectionStarted(_))));
    assert!(count("conversation") > 0 && count("reflection") > 0 && count("plan") > 0);
    assert!(t.markers.windows(2).all(|w| w[0].seq <= w[1].seq));
    // 07:00 to 09:00: no night.
    assert!(t.nights.is_empty(), "{:?}", t.nights);

    // Stepping by clock step lands just before a step begins, and comes back.
    let steps: Vec<u64> =
        events.iter().filter(|e| matches!(e.body, Body::ClockStepped(_))).map(Event::seq).collect();
    let mut seq = 0;
    for &next in steps.iter().take(20) {
        seq = viewer.step("main", seq, true, 1).unwrap();
        assert_eq!(seq, next - 1);
    }
    let back = viewer.step("main", seq, true, -1).unwrap();
    assert!(back < seq && steps.contains(&(back + 1)), "{back}");
    assert_eq!(viewer.step("main", seq, false, 1).unwrap(), seq + 1);
    assert_eq!(viewer.step("main", 0, false, -1).unwrap(), 0);
    assert_eq!(viewer.seq_at("main", t.end_secs + 999).unwrap(), t.head_seq);
    assert_eq!(viewer.seq_at("main", 0).unwrap(), 0);
}

#[test]
fn the_timeline_marks_each_of_the_mayors_acts() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings/oak-hill-mayor.hamlet");
    let bytes = std::fs::read(&path).unwrap();
    let acted: Vec<u64> = events_of(&bytes)
        .iter()
        .filter(|e| matches!(e.body, Body::MayorActed(_)))
        .map(Event::seq)
        .collect();
    assert!(!acted.is_empty(), "the mayor's scenario has the mayor act");
    let mut viewer = Viewer::recording(&bytes, &path).unwrap();
    let t = viewer.timeline("main", 300).unwrap();
    let marked: Vec<u64> = t.markers.iter().filter(|m| m.kind == "mayor").map(|m| m.seq).collect();
    assert_eq!(marked, acted);
}

#[test]
fn the_map_is_the_recorded_town() {
    let (path, bytes) = shipped();
    let mut viewer = Viewer::recording(&bytes, &path).unwrap();
    let map = viewer.map("main").unwrap();
    assert_eq!((map.name.as_str(), map.width, map.height), ("Willowmere", 72, 46));
    assert_eq!(map.cells.len(), 72 * 46);
    assert_eq!((map.arenas.len(), map.sectors.len(), map.objects.len()), (33, 13, 109));
    let cell = |[x, y]: [u16; 2]| map.cells[usize::from(y) * 72 + usize::from(x)];
    assert_eq!(cell([0, 0]), 1, "open ground at the corner");
    assert_eq!(cell([1, 1]), 0, "a wall");
    for o in &map.objects {
        let c = cell(o.tile);
        assert!(c >= 2, "{} stands on a floor", o.address);
        let arena = &map.arenas[(c - 2) as usize];
        assert!(
            o.address.starts_with(&format!("{}:{}:", arena.sector, arena.arena)),
            "{}",
            o.address
        );
    }
    for a in &map.arenas {
        assert!(cell(a.label) >= 2, "{}'s label is on its floor", a.arena);
    }
}

#[test]
fn the_agent_panel_and_why_answer_as_the_queries_do() {
    let (path, bytes) = shipped();
    let events = events_of(&bytes);
    let mut viewer = Viewer::recording(&bytes, &path).unwrap();
    let seq = viewer.seq_at("main", 8 * 3600 + 45 * 60).unwrap();
    let past = Past::new(Past::cut(&events, seq));
    let delphine = past.find_agent("Delphine Ashcombe").unwrap();
    let panel = viewer.agent("main", seq, delphine.0).unwrap();
    assert_eq!(
        serde_json::to_value(&panel.agent).unwrap(),
        serde_json::to_value(past.agent(delphine).unwrap()).unwrap()
    );
    assert!(panel.conversations.iter().all(|c| c.agents.contains(&panel.agent.name)));
    assert!(!panel.conversations.is_empty(), "Delphine talked with Tobias by 08:45");
    assert!(matches!(viewer.agent("main", seq, 999), Err(ViewError::NoAgent(999))));

    let why = viewer.why_action("main", seq, delphine.0).unwrap();
    let root = &why.nodes[why.root];
    assert_eq!(root.kind, "ActionStarted");
    assert_eq!((root.x, root.layer), (0, 0));
    let prompt = why.nodes.iter().find(|n| n.kind == "LlmRequested").expect("a model call");
    assert!(prompt.detail.as_deref().is_some_and(|d| d.contains("Delphine")), "its prompt");
    assert!(why.edges.iter().any(|e| e.link == "recalled" && e.scores.is_some()));
    // No two boxes overlap; every edge joins two nodes; the tree lists each node once
    // expanded.
    for (i, a) in why.nodes.iter().enumerate() {
        assert!(a.x + a.w <= why.width && a.y + a.h <= why.height);
        for b in &why.nodes[i + 1..] {
            let apart =
                a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
            assert!(apart, "{} and {} overlap", a.id, b.id);
        }
    }
    assert!(why.edges.iter().all(|e| e.from < why.nodes.len() && e.to < why.nodes.len()));
    let expanded: std::collections::BTreeSet<usize> =
        why.tree.iter().filter(|l| !l.again).map(|l| l.node).collect();
    assert_eq!(expanded.len(), why.nodes.len());

    // From a memory: its own causes.
    let memory = panel.agent.memories.last().unwrap();
    let from_memory = viewer.why_event("main", &memory.id.to_string()).unwrap();
    assert_eq!(from_memory.nodes[from_memory.root].kind, "MemoryAdded");
    assert!(matches!(viewer.why_event("main", "ev_nonsense"), Err(ViewError::NoEvent(_))));

    let calls = viewer.calls("main", 0, seq, Some(delphine.0)).unwrap();
    assert_eq!(
        serde_json::to_value(&calls).unwrap(),
        serde_json::to_value(past.calls(0, seq, Some(delphine))).unwrap()
    );
    assert!(!calls.is_empty());
}

#[test]
fn bad_files_are_refused_or_shown_unsound_and_never_trusted() {
    let (path, bytes) = shipped();
    let text = b"This is not a recording, only a note.".to_vec();
    let err = Viewer::recording(&text, Path::new("note.hamlet")).err().unwrap();
    assert!(matches!(err, ViewError::NotARecording { .. }), "{err}");
    assert!(err.to_string().contains("note.hamlet is not a Hamlet recording"), "{err}");
    assert!(Viewer::recording(&[], Path::new("empty.hamlet")).is_err());

    // A flipped bit in the middle of the events.
    let mut flipped = bytes.clone();
    let at = flipped.len() / 3;
    flipped[at] ^= 0x10;
    let mut viewer = Viewer::recording(&flipped, &path).unwrap();
    let opened = viewer.opened().clone();
    assert!(!opened.sound);
    assert!(!opened.findings.is_empty());
    assert!(opened.branches.is_empty(), "nothing of an unsound file is listed");
    assert!(matches!(viewer.frame("main", 10), Err(ViewError::Unsound(_))));
    assert!(matches!(viewer.timeline("main", 10), Err(ViewError::Unsound(_))));

    let mut sound = Viewer::recording(&bytes, &path).unwrap();
    let err = sound.frame("what-if", 3).err().unwrap();
    assert!(err.to_string().contains("no branch `what-if`; there are: main"), "{err}");
}

/// Every frame the tracks rebuild equals the engine's, at every moment of `bytes`.
fn tracks_match_frames(path: &Path, bytes: &[u8]) -> usize {
    let mut viewer = Viewer::recording(bytes, path).unwrap();
    let tracks = viewer.tracks("main").unwrap();
    assert!(tracks.head_seq > tracks.first_seq);
    let mut bubbles = 0;
    let mut trails = 0;
    for seq in tracks.first_seq..=tracks.head_seq {
        let engine = serde_json::to_value(viewer.frame("main", seq).unwrap()).unwrap();
        let frame = tracks.frame(seq);
        bubbles += frame.bubbles.len();
        trails += frame.agents.iter().filter(|a| a.trail.len() > 1).count();
        let ours = serde_json::to_value(&frame).unwrap();
        assert!(ours == engine, "at #{seq} the tracks draw\n{ours:#}\nthe engine\n{engine:#}");
    }
    assert!(bubbles > 0 && trails > 0, "the moments compared show lines and walks");
    // Times fall on the same seqs.
    let secs_first = tracks.frame(tracks.first_seq).secs;
    let secs_last = tracks.frame(tracks.head_seq).secs;
    for secs in (secs_first.saturating_sub(20)..=secs_last + 20).step_by(7) {
        assert_eq!(tracks.seq_at(secs), viewer.seq_at("main", secs).unwrap(), "at {secs} s");
    }
    (tracks.head_seq - tracks.first_seq + 1) as usize
}

#[test]
fn the_tracks_draw_every_moment_as_the_engine_does() {
    let (path, bytes) = shipped();
    let n = tracks_match_frames(&path, &bytes);
    assert!(n > 1000, "{n} moments of the shipped recording");

    // A synthetic town: more agents, more talk and money.
    let spec = hamlet_engine::synth::SynthSpec { n_events: 20_000, n_agents: 9, seed: 7 };
    let synth = hamlet_engine::synth::write_recording(spec, Vec::new(), |_| {}).unwrap();
    let n = tracks_match_frames(Path::new("synth.hamlet"), &synth);
    assert!(n >= 20_000, "{n} moments of the synthetic recording");
}

#[test]
fn a_synthetic_town_walks_the_shipped_map() {
    use hamlet_engine::synth::{write_recording_in, SynthSpec};
    use hamlet_engine::town::{Definition, WILLOWMERE};
    use hamlet_log::event::Tile;
    let town = Definition::parse("willowmere.toml", WILLOWMERE).unwrap();
    let spec = SynthSpec { n_events: 30_000, n_agents: 25, seed: 3 };
    let bytes = write_recording_in(spec, Some(&town), Vec::new(), |_| {}).unwrap();
    let mut viewer = Viewer::recording(&bytes, Path::new("synthetic-willowmere.hamlet")).unwrap();
    assert_eq!(viewer.map("main").unwrap().name, town.name, "the map is the town's");
    let tracks = viewer.tracks("main").unwrap();
    let (mut frames, mut walked) = (0, 0);
    for seq in (tracks.first_seq..=tracks.head_seq).step_by(101) {
        let frame = tracks.frame(seq);
        if frame.agents.is_empty() {
            continue;
        }
        frames += 1;
        assert_eq!(frame.agents.len(), 25, "at #{seq}");
        for a in &frame.agents {
            let tile = Tile { x: a.tile[0], y: a.tile[1] };
            assert!(town.grid.is_walkable(tile), "{} stands in a wall at #{seq}: {tile:?}", a.name);
            walked += usize::from(a.trail.len() > 1);
        }
    }
    assert!(frames > 200 && walked > 0, "{frames} moments, {walked} trails");
}

/// Goal: the window forks and deletes as the command line does, and shows the store as it
/// now is. Method: the shipped morning imported into a store, opened in a viewer: a fork at
/// 08:00 (whole steps, the parent untouched, the new branch listed with its fork point and
/// frames of its own), a named fork from it, renames (the fork, listed and shown under its
/// new name, its own fork's parent renamed with it; the branch shown, still shown; a taken
/// name refused in the store's words), deletions refused (a root; a branch forked from)
/// and made (the leaf, then its parent); a recording refuses to fork or rename.
#[test]
fn a_viewer_on_a_store_forks_and_deletes_as_the_engine_does() {
    use hamlet_engine::history::Moment;
    let (path, bytes) = shipped();
    let mut recording = Viewer::recording(&bytes, &path).unwrap();
    assert!(!recording.writable());
    let refused = recording.fork("main", Moment::End, None).unwrap_err();
    assert!(matches!(refused, ViewError::ReadOnly), "{refused}");
    assert!(refused.to_string().contains("import it into a store"));

    let tmp = tempfile::tempdir().unwrap();
    {
        let mut store = Store::open(tmp.path()).unwrap();
        hamlet_engine::ops::import(&mut store, &bytes).unwrap();
    }
    let mut viewer = Viewer::store(tmp.path()).unwrap();
    assert!(viewer.writable());
    let main_head = viewer.opened().branches[0].head_seq;
    // Warm the parent's caches: a fork must not disturb them.
    let before = viewer.frame("main", main_head / 2).unwrap();
    let eight = 8 * 3600;
    let forked = viewer.fork("main", Moment::Time(eight), None).unwrap();
    assert_eq!(forked.name, "main-what-if-1");
    assert!(!forked.inside_step && forked.secs <= eight);
    let rows = &viewer.opened().branches;
    assert_eq!(rows.len(), 2);
    let row = rows.iter().find(|b| b.name == forked.name).unwrap();
    assert_eq!(
        (row.parent_name.as_deref(), row.fork_seq, row.head_seq, row.own_events),
        (Some("main"), Some(forked.seq), forked.seq + 1, 1),
        "the fork is one event past its fork point"
    );
    assert_eq!(rows.iter().find(|b| b.name == "main").unwrap().head_seq, main_head);
    let again = viewer.frame("main", main_head / 2).unwrap();
    assert_eq!(
        serde_json::to_value(&again.agents).unwrap(),
        serde_json::to_value(&before.agents).unwrap()
    );
    let at_fork = viewer.frame(&forked.name, forked.seq).unwrap();
    let on_main = viewer.frame("main", forked.seq).unwrap();
    assert_eq!(
        serde_json::to_value(&at_fork.agents).unwrap(),
        serde_json::to_value(&on_main.agents).unwrap()
    );

    let deeper = viewer.fork(&forked.name, Moment::End, Some("deeper")).unwrap();
    assert_eq!((deeper.parent.as_str(), deeper.name.as_str()), (forked.name.as_str(), "deeper"));

    let read_only = recording.rename_branch("main", "other").unwrap_err();
    assert!(matches!(read_only, ViewError::ReadOnly), "{read_only}");
    let fork_frame = viewer.frame(&forked.name, forked.seq + 1).unwrap();
    let renamed = viewer.rename_branch(&forked.name, "  bread ").unwrap();
    assert_eq!((renamed.old.as_str(), renamed.name.as_str()), (forked.name.as_str(), "bread"));
    let rows = &viewer.opened().branches;
    let bread = rows.iter().find(|b| b.name == "bread").unwrap();
    assert_eq!((bread.id, bread.head_seq, bread.own_events), (forked.id, forked.seq + 2, 2));
    assert!(!rows.iter().any(|b| b.name == forked.name), "the old name is gone");
    let deeper_row = rows.iter().find(|b| b.name == "deeper").unwrap();
    assert_eq!(deeper_row.parent_name.as_deref(), Some("bread"), "its fork names it anew");
    let again = viewer.frame("bread", forked.seq + 1).unwrap();
    assert_eq!(
        serde_json::to_value(&again.agents).unwrap(),
        serde_json::to_value(&fork_frame.agents).unwrap(),
        "the same town under the new name"
    );
    assert!(viewer.frame(&forked.name, 0).is_err(), "nothing answers to the old name");
    let taken = viewer.rename_branch("bread", "main").unwrap_err().to_string();
    assert_eq!(taken, "a branch named `main` exists already");
    let empty = viewer.rename_branch("bread", "   ").unwrap_err().to_string();
    assert!(empty.contains("cannot be empty"), "{empty}");
    assert_eq!(
        viewer.opened().branches.iter().find(|b| b.name == "bread").unwrap().head_seq,
        forked.seq + 2,
        "refusals write nothing"
    );
    // The branch shown (main, the first shown) is still shown under its new name, and back.
    assert_eq!(viewer.opened().branch, "main");
    viewer.rename_branch("main", "high-street").unwrap();
    assert_eq!(viewer.opened().branch, "high-street");
    assert_eq!(
        viewer.opened().branches.iter().find(|b| b.name == "bread").unwrap().parent_name.as_deref(),
        Some("high-street")
    );
    viewer.rename_branch("high-street", "main").unwrap();
    assert_eq!(viewer.opened().branch, "main");

    let root = viewer.delete_branch("main").unwrap_err().to_string();
    assert!(root.contains("main"), "a root stays: {root}");
    let parent = viewer.delete_branch("bread").unwrap_err().to_string();
    assert!(parent.contains("deeper"), "a branch forked from stays: {parent}");
    assert_eq!(viewer.opened().branches.len(), 3, "refusals change nothing");
    assert_eq!(viewer.delete_branch("deeper").unwrap(), 1);
    assert_eq!(viewer.delete_branch("bread").unwrap(), 2);
    let names: Vec<&str> = viewer.opened().branches.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["main"]);
    assert!(viewer.frame("deeper", 0).is_err(), "a deleted branch is gone from the view");
    // A fresh viewer on the store agrees.
    drop(viewer);
    let reopened = Viewer::store(tmp.path()).unwrap();
    assert_eq!(reopened.opened().branches.len(), 1);
}

/// Goal: what the window's Compare, Research and Export tabs show is the engine's, and a
/// viewer lent to a run answers as the viewer it was. Method: a rule-based run of twelve
/// steps in a store, forked half way; the fork changed (the café's coffee machine out of
/// order, through the model-less gateway) and run on three steps by the rule-based double
/// while the viewer is taken apart and made again over the borrowed store and over the store
/// given back; then the compare says where the days part, each measurement has rows and a CSV
/// table, and an export up to a moment verifies and ends there.
#[test]
fn a_viewer_compares_measures_and_exports_and_answers_the_same_when_lent() {
    use hamlet_engine::history::Moment;
    use hamlet_engine::ops::{self, Intervention};
    use hamlet_engine::sim::{Sim, SimSettings};
    use hamlet_engine::view::ResearchAsk;

    let (tmp, main_events) =
        crate::sim::run_town(crate::sim::town(), SimSettings::default(), crate::sim::rules(), 12);
    let mut viewer = Viewer::store(tmp.path()).unwrap();
    let mid = main_events[main_events.len() / 2].sim_time_secs();
    let forked = viewer.fork("main", Moment::Time(mid), Some("broken")).unwrap();
    let before = viewer.frame("main", forked.seq).unwrap();

    // Lend the store to a run: a change, then three steps.
    let (store, state) = viewer.into_parts().ok().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut sim = rt
        .block_on(Sim::resume(store, forked.id, ops::no_model(), SimSettings::default()))
        .unwrap();
    let set = Intervention::SetObject {
        address: "Marigold café:counter:coffee machine".into(),
        state: "out of order".into(),
    };
    rt.block_on(set.make(&mut sim)).unwrap();
    // A viewer borrowing the run's store sees the change and refuses to write.
    let mut borrowed = Viewer::borrowing(sim.store(), state);
    let head = borrowed.opened().branches.iter().find(|b| b.name == "broken").unwrap().head_seq;
    assert_eq!(head, forked.seq + 2, "the fork and the change");
    let frame = borrowed.frame("broken", head).unwrap();
    assert_eq!(
        frame.objects.get("Marigold café:counter:coffee machine").map(String::as_str),
        Some("out of order")
    );
    assert!(matches!(borrowed.fork("main", Moment::End, None), Err(ViewError::Busy)));
    assert!(matches!(borrowed.rename_branch("main", "x"), Err(ViewError::Busy)));
    let state = borrowed.into_state();
    let branch = sim.branch();
    let store = sim.into_store();
    let mut sim = rt
        .block_on(Sim::resume(store, branch, crate::sim::rules(), SimSettings::default()))
        .unwrap();
    for _ in 0..3 {
        rt.block_on(sim.step()).unwrap();
    }
    let mut viewer = Viewer::from_parts(sim.into_store(), state);
    let again = viewer.frame("main", forked.seq).unwrap();
    assert_eq!(
        serde_json::to_value(&again.agents).unwrap(),
        serde_json::to_value(&before.agents).unwrap(),
        "main is as it was"
    );

    // Compare: they part at the fork; whoever's days differ says from when.
    let d = viewer.compare("main", "broken").unwrap();
    assert_eq!(d.shared, forked.seq + 1);
    assert_eq!(d.parted_secs, Some(forked.secs));
    let differing: Vec<_> = d.agents.iter().filter(|a| a.first_secs.is_some()).collect();
    assert!(!differing.is_empty(), "the run on the fork parts from main's morning");
    for a in &differing {
        assert!(a.first_secs.unwrap() >= forked.secs, "{}: {:?}", a.name, a.first_secs);
        assert!(!a.same());
    }
    for a in d.agents.iter().filter(|a| a.first_secs.is_none()) {
        // No first difference: the same actions and conversations on both (memories or
        // cash may still differ, and `same` says so).
        assert_eq!(a.a.actions, a.b.actions, "{}", a.name);
        assert_eq!(a.a.conversations, a.b.conversations, "{}", a.name);
    }

    // Research: every chart has rows and its CSV table.
    for what in ["diffusion", "density", "relationships", "cost"] {
        let ask = ResearchAsk {
            what: what.into(),
            keywords: vec!["party".into()],
            every_secs: 1800,
            at_secs: None,
            ..ResearchAsk::default()
        };
        let answer = viewer.research("main", &ask).unwrap();
        let lines = answer.csv.lines().count();
        assert!(lines >= 2, "{what}: a header and rows: {}", answer.csv);
        assert!(!answer.rows.is_null(), "{what}");
    }
    let diffusion = viewer
        .research(
            "main",
            &ResearchAsk {
                what: "diffusion".into(),
                keywords: vec!["party".into()],
                every_secs: 1800,
                ..ResearchAsk::default()
            },
        )
        .unwrap();
    let rows = diffusion.rows.as_array().unwrap();
    let knew = |r: &serde_json::Value| r["knowing"].as_array().unwrap().len();
    assert!(knew(rows.last().unwrap()) >= knew(&rows[0]), "knowledge spreads, never forgets");
    let graph = viewer
        .research("main", &ResearchAsk { what: "relationships".into(), ..ResearchAsk::default() })
        .unwrap();
    let density = hamlet_engine::research::network_density(&main_events, 3600);
    assert_eq!(
        graph.rows["edges"].as_array().unwrap().len() as u32,
        density.last().unwrap().pairs,
        "the graph's edges are the pairs density counts"
    );
    let refused = viewer
        .research("main", &ResearchAsk { what: "astrology".into(), ..ResearchAsk::default() });
    assert!(refused.unwrap_err().to_string().contains("diffusion, density"));

    // Export: the fork up to a moment after the change, which verifies and ends there.
    let until = viewer.seq_at("broken", forked.secs).unwrap().max(forked.seq + 2);
    let exported = viewer.export("broken", Some(until)).unwrap();
    let (rec, report) = Recording::open_verified(&exported).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    let last = rec.branches().iter().map(|b| b.head_seq).max().unwrap();
    assert_eq!(last, until, "the export ends at the moment asked");
    let whole = viewer.export("broken", None).unwrap();
    assert!(whole.len() > exported.len());
    // Opened again, each export shows the town the store shows, moment for moment.
    let head = viewer.opened().branches.iter().find(|b| b.name == "broken").unwrap().head_seq;
    for (bytes, end) in [(&exported, until), (&whole, head)] {
        let mut reopened = Viewer::recording(bytes, Path::new("broken.hamlet")).unwrap();
        for seq in [forked.seq / 2, forked.seq, forked.seq + 1, end] {
            let shown = serde_json::to_value(reopened.frame("broken", seq).unwrap()).unwrap();
            let stored = serde_json::to_value(viewer.frame("broken", seq).unwrap()).unwrap();
            assert_eq!(shown, stored, "the exported branch at #{seq}");
        }
    }
}
