//! Goal: the fold is a function of the events alone, however it is reached.
//! Method: folding a prefix then the rest, resuming from a checkpoint, and `state_at`
//! over a store and over a recording (with their checkpoints) all equal a full fold.

use hamlet_engine::fold::{fold, Town};
use hamlet_engine::history::{
    checkpoint_store, export_with_checkpoints, state_at, Moment, CHECKPOINT_EVERY,
};
use hamlet_engine::log::open_checked;
use hamlet_engine::store::Store;
use hamlet_engine::synth::{write_recording, SynthSpec};
use hamlet_log::{Event, Recording};
use hamlet_testkit::forge::with_checkpoints;
use proptest::prelude::*;

fn synth_events(n: u64, seed: u64) -> Vec<Event> {
    let bytes =
        write_recording(SynthSpec { n_events: n, n_agents: 6, seed }, Vec::new(), |_| {}).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let root = rec.root().unwrap().id;
    rec.events(root, 0).unwrap().map(Result::unwrap).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn folding_a_prefix_then_the_rest_equals_folding_all(seed in 0..1000u64, cut in 0..1500usize) {
        let events = synth_events(1500, seed);
        let whole = fold(&events);
        let cut = cut.min(events.len());
        let mut town = fold(&events[..cut]);
        // Through a checkpoint, as a seek would resume.
        town = Town::from_checkpoint(&town.to_checkpoint()).unwrap();
        for e in &events[cut..] {
            town.apply(e);
        }
        prop_assert_eq!(town.state_hash(), whole.state_hash());
        prop_assert_eq!(town, whole);
    }
}

#[test]
fn state_at_from_checkpoints_equals_a_full_fold_at_random_moments() {
    let n = CHECKPOINT_EVERY * 3 + 500;
    let events = synth_events(n, 3);
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let bytes =
        write_recording(SynthSpec { n_events: n, n_agents: 6, seed: 3 }, Vec::new(), |_| {})
            .unwrap();
    store.import(&bytes).unwrap();
    let root = store.branches()[0].id;
    let full = checkpoint_store(&store, root).unwrap();
    assert_eq!(full, fold(&events));
    assert_eq!(store.checkpoints().unwrap().len(), 3);
    let exported = export_with_checkpoints(&store, None, Vec::new()).unwrap();
    // Seeks start at the checkpoints once the fold has vouched for them.
    let (rec, report) = open_checked(&exported).unwrap();
    assert!(report.is_clean() && rec.is_verified() && rec.checkpoints_trusted());
    assert_eq!(rec.summary().checkpoints.len(), 3);
    let mut rng = hamlet_engine::rng::SimRng::stream(9, &[]);
    for _ in 0..25 {
        let seq = rng.int_inclusive(0, events.len() as u64 - 1);
        let expected = fold(&events[..=seq as usize]);
        assert_eq!(state_at(&store, root, Moment::Seq(seq)).unwrap(), expected, "store at #{seq}");
        assert_eq!(
            state_at(&rec, root, Moment::Seq(seq)).unwrap(),
            expected,
            "recording at #{seq}"
        );
        let time = events[seq as usize].sim_time_secs();
        let last_at_time = events.iter().rposition(|e| e.sim_time_secs() <= time).unwrap();
        let expected = fold(&events[..=last_at_time]);
        assert_eq!(state_at(&rec, root, Moment::Time(time)).unwrap(), expected, "at {time}s");
        assert_eq!(
            state_at(&store, root, Moment::Time(time)).unwrap(),
            expected,
            "store at {time}s"
        );
    }
    // Checkpoints are derived: without them, the same towns.
    store.clear_checkpoints().unwrap();
    assert_eq!(state_at(&store, root, Moment::End).unwrap(), full);
}

/// A recording's author writes its checkpoints and their hashes: one that holds another
/// moment's state, or the right moment with one word changed, passes every hash. The fold
/// finds both; readers then answer from the events; `convert` drops them.
#[test]
fn a_checkpoint_that_lies_is_found_and_never_used() {
    let n = CHECKPOINT_EVERY * 2;
    let bytes =
        write_recording(SynthSpec { n_events: n, n_agents: 6, seed: 4 }, Vec::new(), |_| {})
            .unwrap();
    let events = synth_events(n, 4);
    let root = Recording::open(&bytes).unwrap().root().unwrap().id;
    let (early, late) = (n / 4, n * 3 / 4);
    let at = |seq: u64| fold(&events[..=seq as usize]);
    let honest = with_checkpoints(&bytes, &[(early, at(early)), (late, at(late))]);
    let (rec, report) = open_checked(&honest).unwrap();
    assert!(report.is_clean() && rec.checkpoints_trusted(), "{:?}", report.problems);

    // Another moment's state, saying it was folded to `late`.
    let mut elsewhen = at(early);
    elsewhen.head = at(late).head;
    // The right moment, one word changed.
    let mut reworded = at(late);
    reworded.town_name = "Elsewhere".into();
    for forged in [elsewhen, reworded] {
        let lying = with_checkpoints(&bytes, &[(early, at(early)), (late, forged)]);
        assert!(hamlet_log::verify::verify(&lying).is_clean(), "every hash holds");
        let (rec, report) = open_checked(&lying).unwrap();
        assert!(!rec.checkpoints_trusted());
        match report.problems.as_slice() {
            [hamlet_log::verify::Problem::Checkpoint { seq, .. }] => assert_eq!(*seq, late),
            other => panic!("one false checkpoint, not {other:?}"),
        }
        for seq in [late, late + 1, n - 1] {
            let expected = at(seq.min(events.len() as u64 - 1));
            assert_eq!(state_at(&rec, root, Moment::Seq(seq)).unwrap(), expected, "#{seq}");
            // Nor does a reader that never checked start there.
            let unchecked = Recording::open(&lying).unwrap();
            assert_eq!(state_at(&unchecked, root, Moment::Seq(seq)).unwrap(), expected);
        }
        // Written again, the events stay and the checkpoints go.
        let rewritten = hamlet_log::writer::rewrite(&rec, Vec::new(), "test", 2).unwrap();
        let (again, report) = open_checked(&rewritten).unwrap();
        assert!(report.is_clean() && again.summary().checkpoints.is_empty());
        assert_eq!(again.summary().statistics.n_events, rec.summary().statistics.n_events);
    }
}

#[test]
fn the_fold_is_total_on_nonsense() {
    use hamlet_log::event::*;
    use hamlet_log::{BranchId, EventId};
    let ghost = AgentId(99);
    let bodies = vec![
        Body::Moved(Moved { agent: ghost, from: Tile::default(), to: Tile::default() }),
        Body::CashMoved(CashMoved {
            from: Account::Agent(ghost),
            to: Account::World,
            amount_cents: 5,
            reason: String::new(),
        }),
        Body::CashMoved(CashMoved {
            from: Account::World,
            to: Account::Shop("x".into()),
            amount_cents: -5,
            reason: String::new(),
        }),
        Body::DialogueTurn(DialogueTurn {
            conversation: EventId::NONE,
            speaker: ghost,
            text: String::new(),
            ends: true,
        }),
        Body::ConversationEnded(ConversationEnded {
            conversation: EventId::NONE,
            reason: String::new(),
        }),
        Body::Unknown { kind: 999, schema: 1 },
    ];
    let mut town = Town::default();
    for (i, body) in bodies.into_iter().enumerate() {
        let header = Header { seq: i as u64, sim_time_secs: 0, causes: vec![] };
        town.apply(&Event {
            id: EventId::NONE,
            parent: EventId::NONE,
            branch: BranchId::default(),
            header,
            body,
        });
    }
    assert_eq!(town.n_anomalies, 5);
    assert_eq!(town.n_unknown, 1);
    assert_eq!(town.cash_inside_cents(), 0);
}

#[test]
fn both_roads_fold_nonsense_alike() {
    use hamlet_log::event::*;
    use hamlet_log::format::ChunkBuilder;
    use hamlet_log::{EventId, RecordingWriter};
    let ghost = AgentId(99);
    let created = NewEvent::new(
        0,
        Body::BranchCreated(BranchCreated {
            name: "main".into(),
            parent_branch: None,
            fork_seq: None,
            nonce: 0,
        }),
    );
    let (branch, mut chunk) = ChunkBuilder::new_branch(&created, EventId::NONE, 0);
    let bodies = [
        Body::Moved(Moved { agent: ghost, from: Tile::default(), to: Tile { x: 3, y: 4 } }),
        Body::CashMoved(CashMoved {
            from: Account::Agent(ghost),
            to: Account::World,
            amount_cents: 5,
            reason: String::new(),
        }),
        Body::DialogueTurn(DialogueTurn {
            conversation: EventId::NONE,
            speaker: ghost,
            text: String::new(),
            ends: true,
        }),
        Body::AgentJoined(AgentJoined {
            agent: AgentId(1),
            name: "A".into(),
            persona: String::new(),
            traits: vec![],
            tile: Tile::default(),
            cash_cents: 0,
        }),
        Body::Moved(Moved { agent: AgentId(1), from: Tile::default(), to: Tile { x: 1, y: 2 } }),
    ];
    for body in bodies {
        chunk.push(&NewEvent::new(10, body).encode(chunk.next_seq()));
    }
    let mut writer = RecordingWriter::new(Vec::new(), "test").unwrap();
    writer.write_chunk(&chunk.finish().1).unwrap();
    let bytes = writer.finish().unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let events: Vec<Event> = rec.events(branch, 0).unwrap().map(Result::unwrap).collect();
    let from_bytes = state_at(&rec, branch, Moment::End).unwrap();
    assert_eq!(from_bytes, fold(&events));
    assert_eq!(from_bytes.n_anomalies, 3);
    assert_eq!(from_bytes.agents[&AgentId(1)].tile, Tile { x: 1, y: 2 });
}
