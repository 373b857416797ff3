//! Goal: every recording ever written stays readable, folding to the same state forever.
//! Method: an add-only corpus, one recording per schema version under
//! `log-format/tests/golden/`, verified and folded with pinned state hashes. Never rewrite
//! a file there; a new schema version adds a new file and a new pin.

use hamlet_engine::history::{state_at, Moment};
use hamlet_log::Recording;

fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../log-format/tests/golden")
}

/// (file, branch, state hash at its end). Add lines; never change one.
const PINNED: &[(&str, &str, &str)] = &[
    (
        "schema-v1.hamlet",
        "main",
        "st_6fb8c31de9b7464262023e83fca3cb3c494f4cdb0e31b296ce55edb938a55ac3",
    ),
    (
        "schema-v1.hamlet",
        "what-if",
        "st_c88523e1471d3259689e10352486f3c15c4917791f0f733c4bb58b08a5363442",
    ),
    (
        "schema-v1-town.hamlet",
        "main",
        "st_a374762161c425b8ea70f82137425a6ab92a75528400c1772f9e39dfba2af1b3",
    ),
    (
        "embedding-requested-v2.hamlet",
        "main",
        "st_084005bd6dfc5610420cb4952881d7c85e6aa00bae05a03eddc9805bd2ef7500",
    ),
    (
        "embedding-requested-v2.hamlet",
        "what-if",
        "st_c88523e1471d3259689e10352486f3c15c4917791f0f733c4bb58b08a5363442",
    ),
    (
        "llm-schema-v2.hamlet",
        "main",
        "st_dafcf7bf17cbe3ce5b9de4cedd971a395d6d5b1d1e38b246502d0fe482892cce",
    ),
    (
        "llm-schema-v2.hamlet",
        "what-if",
        "st_c88523e1471d3259689e10352486f3c15c4917791f0f733c4bb58b08a5363442",
    ),
    (
        "llm-schema-v3.hamlet",
        "main",
        "st_ddfbb4a857c09bad7bc048e1681105d0599b3e3dd626ce9be8dbe45ddc25fc48",
    ),
    (
        "llm-schema-v4.hamlet",
        "main",
        "st_48a3bb132b99a7eeac1a38691a2417c4b9cb9c811e5695b883525927c537a708",
    ),
    (
        "intervened-v2.hamlet",
        "main",
        "st_012968b9cc69c21b584af3703111122f87ed10563a4b51e6bbff6aceb85ad1f4",
    ),
    (
        "branch-renamed-v1.hamlet",
        "market-day",
        "st_98beaaaa3f455d866e6c2732bc4c39da636b6d21668a4683345707f524a22bb8",
    ),
    (
        "branch-renamed-v1.hamlet",
        "what-if",
        "st_c88523e1471d3259689e10352486f3c15c4917791f0f733c4bb58b08a5363442",
    ),
    (
        "format-v2.hamlet",
        "market-day",
        "st_98beaaaa3f455d866e6c2732bc4c39da636b6d21668a4683345707f524a22bb8",
    ),
    (
        "format-v2.hamlet",
        "what-if",
        "st_c88523e1471d3259689e10352486f3c15c4917791f0f733c4bb58b08a5363442",
    ),
    (
        "commitment-made-v1.hamlet",
        "market-day",
        "st_a2a5848ee67c456f20466573c8fe78e9eebe79b6a69dd465b24c5a0f62b89107",
    ),
    (
        "commitment-made-v1.hamlet",
        "what-if",
        "st_c88523e1471d3259689e10352486f3c15c4917791f0f733c4bb58b08a5363442",
    ),
    (
        "format-v2-town.hamlet",
        "main",
        "st_ace6d5fcd7f81668933bb103cdc84cd9391e0108cfce2659c5b2edc18e66fc80",
    ),
    (
        "intervened-v3.hamlet",
        "main",
        "st_56558e3027e59ee59b9c44b7739d6230e7ff55c2b654589fa5f00f8ee809b2a2",
    ),
    (
        "mayor-v1.hamlet",
        "main",
        "st_2f9d67709a0c6f5ec775cfcd2525512c765adde6351351a64a454d8600884a32",
    ),
];

#[test]
fn the_golden_corpus_reads_and_folds_to_its_pinned_states() {
    for (file, branch, pinned) in PINNED {
        let path = corpus_dir().join(file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let report = hamlet_log::verify::verify(&bytes);
        assert!(report.is_clean(), "{file}: {:?}", report.problems);
        let rec = Recording::open(&bytes).unwrap();
        let id = rec.find_branch(branch).unwrap().id;
        let town = state_at(&rec, id, Moment::End).unwrap();
        assert_eq!(town.state_hash().to_string(), *pinned, "{file} branch {branch}");
        assert_eq!(town.n_unknown, 0, "{file}: every kind is known to this build");
    }
}

#[test]
fn the_format_2_corpus_holds_compressed_chunks_and_the_same_history_as_format_1() {
    for (file, same_as) in
        [("format-v2.hamlet", "branch-renamed-v1.hamlet"), ("format-v2-town.hamlet", "")]
    {
        let bytes = std::fs::read(corpus_dir().join(file)).unwrap();
        let rec = Recording::open(&bytes).unwrap();
        assert_eq!(rec.version(), 2, "{file}");
        let codes: Vec<u8> =
            rec.summary().chunks.iter().map(|e| rec.chunk(e).unwrap().header.compression).collect();
        assert!(codes.contains(&hamlet_log::format::compression::ZSTD), "{file}: {codes:?}");
        if same_as.is_empty() {
            continue;
        }
        // The same events, ids and all, as the format 1 file written from the same sample.
        let old_bytes = std::fs::read(corpus_dir().join(same_as)).unwrap();
        let old = Recording::open(&old_bytes).unwrap();
        assert_eq!(old.version(), 1);
        for branch in old.branches() {
            let a: Vec<_> = old.events(branch.id, 0).unwrap().map(Result::unwrap).collect();
            let b: Vec<_> = rec.events(branch.id, 0).unwrap().map(Result::unwrap).collect();
            assert_eq!(a, b, "{file} branch {}", branch.name);
        }
    }
}

#[test]
fn a_schema_1_embedding_request_upcasts_to_schema_2() {
    let bytes = std::fs::read(corpus_dir().join("schema-v1.hamlet")).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let main = rec.find_branch("main").unwrap().id;
    let requests: Vec<_> = rec
        .events(main, 0)
        .unwrap()
        .filter_map(|e| match e.unwrap().body {
            hamlet_log::Body::EmbeddingRequested(r) => Some(r),
            _ => None,
        })
        .collect();
    assert!(!requests.is_empty(), "the v1 corpus holds an embedding request");
    for r in requests {
        assert_eq!((r.purpose.as_str(), r.agent, r.server.as_str()), ("", None, ""));
        assert!(!r.texts.is_empty() && !r.model.is_empty());
    }
}

#[test]
fn schema_1_model_calls_upcast_to_the_forms_their_writers_used() {
    let bytes = std::fs::read(corpus_dir().join("schema-v1.hamlet")).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let main = rec.find_branch("main").unwrap().id;
    let (mut requests, mut returned) = (0, 0);
    for e in rec.events(main, 0).unwrap() {
        match e.unwrap().body {
            hamlet_log::Body::LlmRequested(r) => {
                requests += 1;
                // The sample asked the embedded model with a schema: a grammar.
                assert_eq!((r.backend.as_str(), r.schema_hash.is_some()), ("local", true));
                assert_eq!(r.structured, hamlet_log::event::StructuredForm::Grammar);
            }
            hamlet_log::Body::EmbeddingReturned(r) => {
                returned += 1;
                assert!(!r.pooled);
            }
            _ => {}
        }
    }
    assert!(requests > 0 && returned > 0, "the v1 corpus holds both kinds");
}

#[test]
fn schema_2_model_calls_upcast_to_no_items_and_the_v3_sample_carries_its_distribution() {
    for (file, scored) in [
        ("llm-schema-v2.hamlet", false),
        ("llm-schema-v3.hamlet", true),
        ("llm-schema-v4.hamlet", true),
    ] {
        let bytes = std::fs::read(corpus_dir().join(file)).unwrap();
        let rec = Recording::open(&bytes).unwrap();
        let main = rec.find_branch("main").unwrap().id;
        let (mut requests, mut answers) = (0, 0);
        for e in rec.events(main, 0).unwrap() {
            match e.unwrap().body {
                hamlet_log::Body::LlmRequested(r) => {
                    requests += 1;
                    assert_eq!(r.items.is_empty(), !scored, "{file}");
                    // Texts to avoid came with schema 4; older calls upcast to none.
                    let v4 = file.contains("v4");
                    assert_eq!(r.avoid.is_empty(), !v4, "{file}");
                    let probabilities = hamlet_log::event::StructuredForm::Probabilities;
                    assert_eq!(r.structured == probabilities, scored, "{file}");
                }
                hamlet_log::Body::LlmResponded(r) => {
                    answers += 1;
                    assert_eq!(r.probabilities.is_empty(), !scored, "{file}");
                    assert_eq!(r.tokens_cached > 0, scored, "{file}");
                }
                _ => {}
            }
        }
        assert!(requests > 0 && answers > 0, "{file} holds both kinds");
    }
}

/// Writes a corpus file that does not exist yet. Run once per schema version:
/// `cargo test -p hamlet-engine --test it golden::write_missing_corpus -- --ignored`.
#[test]
#[ignore = "writes the golden corpus; run by hand once per schema version"]
fn write_missing_corpus() {
    let dir = corpus_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let files: [(&str, Vec<u8>); 13] = [
        // MayorActed (kind 28) and JobTaken (29), and CashMoved at schema 2 (the treasury).
        ("mayor-v1.hamlet", hamlet_log::samples::mayor_recording()),
        // Intervened at schema 3: an agent's model set by hand (`SetModel`).
        ("intervened-v3.hamlet", hamlet_log::samples::set_model_recording()),
        ("schema-v1.hamlet", hamlet_log::samples::small_recording()),
        // EmbeddingRequested schema 2 (purpose, agent, server).
        ("embedding-requested-v2.hamlet", hamlet_log::samples::small_recording()),
        // LlmRequested (the structured form), LlmFailed (FormRefused) and EmbeddingReturned
        // (pooled) at schema 2.
        ("llm-schema-v2.hamlet", hamlet_log::samples::small_recording()),
        // LlmRequested at schema 3 (items) and LlmResponded at schema 2 (probabilities): a
        // rating read from the model's probabilities.
        ("llm-schema-v3.hamlet", hamlet_log::samples::small_recording()),
        // LlmRequested at schema 4 (texts to avoid).
        ("llm-schema-v4.hamlet", hamlet_log::samples::small_recording()),
        // Intervened at schema 2 (a happening).
        ("intervened-v2.hamlet", hamlet_log::samples::small_recording()),
        // BranchRenamed (kind 26, schema 1): the root renamed `market-day`.
        ("branch-renamed-v1.hamlet", hamlet_log::samples::small_recording()),
        // CommitmentMade (kind 27, schema 1), before the rename.
        ("commitment-made-v1.hamlet", hamlet_log::samples::small_recording()),
        // Format version 2: the sample and a synthetic town with their chunks compressed.
        ("format-v2.hamlet", hamlet_log::samples::small_recording()),
        (
            "format-v2-town.hamlet",
            hamlet_engine::synth::write_recording(
                hamlet_engine::synth::SynthSpec { n_events: 600, n_agents: 4, seed: 11 },
                Vec::new(),
                |_| {},
            )
            .unwrap(),
        ),
        (
            "schema-v1-town.hamlet",
            hamlet_engine::synth::write_recording(
                hamlet_engine::synth::SynthSpec { n_events: 600, n_agents: 4, seed: 11 },
                Vec::new(),
                |_| {},
            )
            .unwrap(),
        ),
    ];
    for (name, bytes) in files {
        let path = dir.join(name);
        if !path.exists() {
            std::fs::write(&path, bytes).unwrap();
        }
    }
}

#[test]
fn an_intervention_of_schema_2_can_be_a_happening_and_the_fold_keeps_it() {
    let intervention = |file: &str| {
        let bytes = std::fs::read(corpus_dir().join(file)).unwrap();
        let rec = Recording::open(&bytes).unwrap();
        let main = rec.find_branch("main").unwrap().id;
        let found = rec.events(main, 0).unwrap().find_map(|e| match e.unwrap().body {
            hamlet_log::Body::Intervened(i) => Some(i.intervention),
            _ => None,
        });
        let town = state_at(&rec, main, Moment::End).unwrap();
        (found.expect("the sample holds an intervention"), town)
    };
    use hamlet_log::event::Intervention;
    let (v1, town) = intervention("schema-v1.hamlet");
    assert!(matches!(v1, Intervention::InnerVoice { .. }), "{v1:?}");
    assert!(town.happenings.is_empty());
    let (v2, town) = intervention("intervened-v2.hamlet");
    assert!(matches!(&v2, Intervention::Happening { place, .. } if place == "café:counter"));
    assert_eq!(town.happenings.len(), 1, "still going on at the sample's end");
    assert_eq!(town.happenings[0].text, "a fire alarm is ringing");
}

#[test]
fn an_intervention_of_schema_3_can_set_an_agents_model_and_the_town_keeps_nothing_of_it() {
    let bytes = std::fs::read(corpus_dir().join("intervened-v3.hamlet")).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let main = rec.find_branch("main").unwrap().id;
    let events: Vec<_> = rec.events(main, 0).unwrap().map(Result::unwrap).collect();
    let set = events.iter().find_map(|e| match &e.body {
        hamlet_log::Body::Intervened(i) => Some(i.intervention.clone()),
        _ => None,
    });
    assert!(
        matches!(&set, Some(hamlet_log::event::Intervention::SetModel { model, .. }) if model == "small"),
        "{set:?}"
    );
    // The model is the engine's routing, not the town's: the fold keeps nothing of it.
    let before = state_at(&rec, main, Moment::Seq(1)).unwrap();
    let after = state_at(&rec, main, Moment::End).unwrap();
    assert_eq!(after.agents, before.agents);
    assert_eq!((after.n_unknown, after.n_anomalies), (0, 0));
}

#[test]
fn a_mayors_acts_and_the_treasury_fold_into_the_mayors_book() {
    let bytes = std::fs::read(corpus_dir().join("mayor-v1.hamlet")).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let main = rec.find_branch("main").unwrap().id;
    let town = state_at(&rec, main, Moment::End).unwrap();
    let book = town.mayor.as_ref().expect("a mayor's book");
    assert_eq!(book.treasury_cents, 100_000 - 40_000 - 1_800);
    assert_eq!(book.acts, 5);
    assert_eq!(book.jobs.len(), 1);
    assert_eq!(book.jobs[0].taken_by, Some(hamlet_log::event::AgentId(1)));
    assert_eq!(book.wages.get("Oak Hill bakery"), Some(&1_800));
    assert_eq!((town.n_unknown, town.n_anomalies), (0, 0));
    // Money: what the world paid in, less what went out, is all inside the town.
    assert_eq!(town.cash_inside_cents(), 1_000 + 100_000 - 40_000);
    // A checkpoint of it reads back whole, book and all.
    let again = hamlet_engine::fold::Town::from_checkpoint(&town.to_checkpoint()).unwrap();
    assert_eq!(again, town);
    // Before any act, the town has no book, and encodes as towns did before mayors.
    let before = state_at(&rec, main, Moment::Seq(2)).unwrap();
    assert!(before.mayor.is_none());
}

#[test]
fn a_renamed_branch_is_found_by_its_new_name_and_its_rename_changes_nothing_in_the_town() {
    let bytes = std::fs::read(corpus_dir().join("branch-renamed-v1.hamlet")).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    assert!(rec.find_branch("main").is_none(), "created `main`, renamed since");
    let root = rec.find_branch("market-day").unwrap();
    let last = rec.events(root.id, root.head_seq).unwrap().next().unwrap().unwrap();
    assert!(matches!(&last.body, hamlet_log::Body::BranchRenamed(r) if r.name == "market-day"));
    // Up to the rename it is the previous file's history, event for event: the same town.
    let before = state_at(&rec, root.id, Moment::Seq(root.head_seq - 1)).unwrap();
    assert_eq!(
        before.state_hash().to_string(),
        "st_012968b9cc69c21b584af3703111122f87ed10563a4b51e6bbff6aceb85ad1f4",
        "intervened-v2.hamlet's main at its end"
    );
    // The rename moves the head on and changes nothing else: the branch keeps, in the
    // town, the name it was created with.
    let after = state_at(&rec, root.id, Moment::End).unwrap();
    assert_eq!(after.n_events, before.n_events + 1);
    assert_eq!((after.n_unknown, after.n_anomalies), (before.n_unknown, before.n_anomalies));
    assert_eq!(after.branch_name, "main");
    let same = hamlet_engine::fold::Town {
        head: before.head,
        n_events: before.n_events,
        // (The sample's events are 10 s apart; the engine renames at the head's time.)
        sim_time_secs: before.sim_time_secs,
        ..after
    };
    assert_eq!(same, before);
}

#[test]
fn a_commitment_reads_back_whole_and_changes_nothing_in_the_town() {
    let bytes = std::fs::read(corpus_dir().join("commitment-made-v1.hamlet")).unwrap();
    let rec = Recording::open(&bytes).unwrap();
    let root = rec.find_branch("market-day").unwrap();
    let events: Vec<_> = rec.events(root.id, 0).unwrap().map(Result::unwrap).collect();
    let at = events
        .iter()
        .position(|e| matches!(e.body, hamlet_log::Body::CommitmentMade(_)))
        .expect("the sample holds a commitment");
    let hamlet_log::Body::CommitmentMade(c) = &events[at].body else { unreachable!() };
    assert_eq!((c.what.as_str(), c.address.as_str()), ("goes to Isabella's party", "café:counter"));
    assert_eq!((c.start_secs, c.duration_secs), (61_200, 7_200));
    // The town before and after it differs only in the count of events folded.
    let seq = events[at].seq();
    let before = state_at(&rec, root.id, Moment::Seq(seq - 1)).unwrap();
    let after = state_at(&rec, root.id, Moment::Seq(seq)).unwrap();
    assert_eq!(after.n_events, before.n_events + 1);
    let same = hamlet_engine::fold::Town {
        head: before.head,
        n_events: before.n_events,
        sim_time_secs: before.sim_time_secs,
        ..after
    };
    assert_eq!(same, before);
}
