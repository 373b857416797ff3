//! `hamlet_engine::ops`, what the command line and the viewer both do to a store: a run
//! stopped and gone on with is the run made at once, id for id; a fork at a moment keeps
//! its parent and says when it cuts a step; an import is idempotent.

use std::sync::atomic::{AtomicBool, Ordering};

use hamlet_engine::history::Moment;
use hamlet_engine::ops::{self, OpsError, RunEnd};
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_log::{Event, EventId};

use crate::sim::{rules, town};

fn ids(events: &[Event]) -> Vec<EventId> {
    events.iter().map(|e| e.id).collect()
}

/// Goal: Cancel loses nothing and changes nothing. Method: the rule-based town runs twelve
/// steps at once; a second runs, is told to stop after its fifth step, is closed, reopened
/// and run on to the twelfth: the two logs are the same, id for id.
#[test]
fn a_run_stopped_and_gone_on_with_is_the_run_made_at_once() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let straight = tempfile::tempdir().unwrap();
    let stopped = tempfile::tempdir().unwrap();
    let (whole, parts) = rt.block_on(async {
        let store = Store::open(straight.path()).unwrap();
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        let never = AtomicBool::new(false);
        let mut told = 0;
        let end = ops::run_until(&mut sim, 12, &never, |_, stepped| {
            told += 1;
            assert!(!stepped.events.is_empty(), "each step commits its events");
            assert_eq!(stepped.target, 12);
        })
        .await
        .unwrap();
        assert_eq!(end, RunEnd::Done);
        assert_eq!(sim.state().step, 12);
        assert!(told >= 12, "told after every step: {told}");
        let whole = sim.store().events(sim.branch(), 0, ops::head(&sim)).unwrap();

        let store = Store::open(stopped.path()).unwrap();
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        let stop = AtomicBool::new(false);
        let end = ops::run_until(&mut sim, 12, &stop, |sim, _| {
            if sim.state().step >= 5 {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .await
        .unwrap();
        assert_eq!(end, RunEnd::Stopped);
        assert_eq!(sim.state().step, 5, "stopped after the step under way");
        let branch = sim.branch();
        let store = sim.into_store();
        drop(store);
        let store = Store::open(stopped.path()).unwrap();
        let mut sim = Sim::resume(store, branch, rules(), SimSettings::default()).await.unwrap();
        let go = AtomicBool::new(false);
        assert_eq!(ops::run_until(&mut sim, 12, &go, |_, _| {}).await.unwrap(), RunEnd::Done);
        let parts = sim.store().events(sim.branch(), 0, ops::head(&sim)).unwrap();
        (whole, parts)
    });
    assert_eq!(ids(&parts), ids(&whole), "the same events, id for id");
}

/// Goal: a fork at a moment is what the user asked, and says so. Method: fork the rule-based
/// run at a time (whole steps kept), inside a step (said), past its end and from a branch
/// that does not exist (refused, naming what there is, nothing written).
#[test]
fn a_fork_at_a_moment_keeps_its_parent_and_says_when_it_cuts_a_step() {
    let (tmp, _) = crate::sim::run_town(town(), SimSettings::default(), rules(), 6);
    let mut store = Store::open(tmp.path()).unwrap();
    let main = store.find_branch("main").unwrap();
    let events = store.events(main.id, 0, main.head_seq).unwrap();
    // The third distinct time: the fork keeps every event up to its last.
    let times: Vec<u64> = events.iter().map(Event::sim_time_secs).collect();
    let mut steps: Vec<u64> = times.clone();
    steps.dedup();
    let third = steps[2];
    let last_of_third = times.iter().rposition(|&t| t == third).unwrap() as u64;
    let forked = ops::fork_at(&mut store, "main", Moment::Time(third), "what-if").unwrap();
    assert_eq!((forked.seq, forked.secs, forked.inside_step), (last_of_third, third, false));
    assert_eq!(forked.parent, "main");
    assert_eq!(store.find_branch("main").unwrap().head_seq, main.head_seq, "parent untouched");
    // Inside a step: the first event of that step.
    let first_of_third = times.iter().position(|&t| t == third).unwrap() as u64;
    let inside = ops::fork_at(&mut store, "main", Moment::Seq(first_of_third), "cut").unwrap();
    assert!(inside.inside_step || first_of_third == last_of_third);
    // Refused, and nothing written.
    let before = store.branches().len();
    let past = ops::fork_at(&mut store, "main", Moment::Seq(main.head_seq + 1), "late");
    assert!(matches!(&past, Err(OpsError::NoMoment(m)) if m.contains("past the end")), "{past:?}");
    let none = ops::fork_at(&mut store, "nowhere", Moment::End, "x");
    match none {
        Err(e @ OpsError::NoBranch { .. }) => {
            let said = e.to_string();
            assert!(said.contains("nowhere") && said.contains("what-if"), "{said}");
        }
        other => panic!("{other:?}"),
    }
    let taken = ops::fork_at(&mut store, "main", Moment::End, "what-if");
    assert!(taken.is_err(), "a taken name is refused");
    assert_eq!(store.branches().len(), before);
    assert_eq!(ops::unused_name(&store, "what-if"), "what-if-1");
}

/// Goal: importing is safe to repeat. Method: a run exported and imported into a fresh
/// store twice: the second import adds nothing and the branch is the same.
#[test]
fn an_import_is_checkpointed_and_idempotent() {
    let (tmp, _) = crate::sim::run_town(town(), SimSettings::default(), rules(), 4);
    let bytes = {
        let store = Store::open(tmp.path()).unwrap();
        hamlet_engine::history::export_with_checkpoints(&store, None, Vec::new()).unwrap()
    };
    let other = tempfile::tempdir().unwrap();
    let mut store = Store::open(other.path()).unwrap();
    let first = ops::import(&mut store, &bytes).unwrap();
    assert!(first > 0);
    let head = store.find_branch("main").unwrap().head_seq;
    assert_eq!(first, head + 1, "every event is new the first time");
    assert_eq!(ops::import(&mut store, &bytes).unwrap(), 0, "nothing is new the second time");
    assert_eq!(store.find_branch("main").unwrap().head_seq, head);
    store.check_index().unwrap();
}

/// Goal: the window's changes are the engine's interventions: checked first, refusals
/// naming the form's field and writing nothing, made at the branch's head, and the ones that
/// ask no model made without one. Method: on a fork of the rule-based run, refused changes
/// of each kind (the head unmoved), then an object set through `ops::no_model()` (no
/// model: a call through it would fail) and an inner voice through the rule-based double.
#[test]
fn the_windows_changes_are_checked_by_field_and_written_at_the_head() {
    use hamlet_engine::ops::Intervention;
    use hamlet_engine::sim::SimError;
    use hamlet_log::event::Intervention as Recorded;
    use hamlet_log::Body;

    let (tmp, _) = crate::sim::run_town(town(), SimSettings::default(), rules(), 6);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    let fork = ops::fork_at(&mut store, "main", Moment::End, "what-if").unwrap();
    let machine = "Marigold café:counter:coffee machine";
    let mut sim =
        rt.block_on(Sim::resume(store, fork.id, ops::no_model(), SimSettings::default())).unwrap();
    let head = ops::head(&sim);
    let text = |s: &str| s.to_owned();
    for (change, field) in [
        (Intervention::SetObject { address: text("Nowhere:at:all"), state: text("on") }, "address"),
        (Intervention::SetObject { address: text(machine), state: text(" ") }, "state"),
        (
            Intervention::Interview { agent: 99, question: text("Who are you?"), remember: false },
            "agent",
        ),
        (Intervention::Interview { agent: 0, question: text(" "), remember: false }, "question"),
        (Intervention::InnerVoice { agent: 0, text: text("") }, "text"),
        (
            Intervention::Happen {
                place: text("Marigold café"),
                text: text("a fire alarm"),
                minutes: 0,
            },
            "minutes",
        ),
        (
            Intervention::Happen {
                place: text("Atlantis"),
                text: text("a fire alarm"),
                minutes: 5,
            },
            "place",
        ),
        (
            Intervention::AddBuilding {
                template: text("Marigold café"),
                name: text("Far"),
                x: 1020,
                y: 1,
            },
            "x",
        ),
        (
            Intervention::AddAgent {
                name: text("Ada Brook"),
                persona: text("Ada Brook sings"),
                home: text("Reedbank dorm:common room"),
                strategy: text("clever"),
                cash_cents: 0,
                model: None,
            },
            "strategy",
        ),
        (
            Intervention::AddAgent {
                name: text("Ada Brook"),
                persona: text("Ada Brook sings"),
                home: text("Reedbank dorm:common room"),
                strategy: text("full"),
                cash_cents: 0,
                model: Some(text("gpt-99")),
            },
            "model",
        ),
    ] {
        let e = rt.block_on(change.make(&mut sim)).unwrap_err();
        match &e {
            OpsError::Sim(SimError::Refused { field: f, .. }) => {
                assert_eq!(*f, field, "{change:?}")
            }
            other => panic!("{change:?}: not a refusal: {other}"),
        }
        assert_eq!(ops::head(&sim), head, "a refused {change:?} writes nothing");
    }
    assert!(!Intervention::SetObject { address: text(machine), state: text("x") }.needs_model());
    assert!(Intervention::InnerVoice { agent: 0, text: text("x") }.needs_model());

    let set = Intervention::SetObject { address: text(machine), state: text("out of order") };
    let done = rt.block_on(set.make(&mut sim)).unwrap();
    assert_eq!((done.from_seq, done.to_seq), (head + 1, head + 1), "{done:?}");
    assert!(done.said.contains("out of order"), "{}", done.said);
    let event = sim.store().event_at(sim.branch(), done.from_seq).unwrap();
    assert!(
        matches!(&event.body, Body::Intervened(i) if matches!(&i.intervention, Recorded::SetObjectState { state, .. } if state == "out of order")),
        "{event:?}"
    );
    // A change that asks a model fails through `no_model`, saying so.
    let voice = Intervention::InnerVoice { agent: 0, text: text("I should bake bread") };
    assert!(rt.block_on(voice.make(&mut sim)).is_err(), "no model was there to ask");

    let branch = sim.branch();
    let store = sim.into_store();
    let mut sim = rt.block_on(Sim::resume(store, branch, rules(), SimSettings::default())).unwrap();
    let before = ops::head(&sim);
    let done = rt.block_on(voice.make(&mut sim)).unwrap();
    let name = sim.state().agents[&hamlet_log::event::AgentId(0)].name.clone();
    assert!(done.said.starts_with(&name), "{}", done.said);
    assert_eq!(done.from_seq, before + 1);
    assert!(done.to_seq > done.from_seq, "the thought and what the agent made of it: {done:?}");
    let main = sim.store().find_branch("main").unwrap();
    assert_eq!(main.head_seq, fork.seq, "the parent is untouched");
}

/// Goal: a rename lands between steps and a run goes on under the new name as if nothing
/// happened. Method: the rule-based run renamed (its fork made after keeps its own name, a
/// taken name refused in the store's words); a bare clock step appended (a step stopped part
/// way): the rename is refused and nothing written, a run resumed there still knows it is
/// part way, even under a rename the store was made to write there; the step finished, the
/// rename made, and the run continued under its new name.
#[test]
fn a_rename_lands_between_steps_and_the_run_goes_on_under_its_new_name() {
    use hamlet_engine::town::clock;
    use hamlet_log::Body;

    let (tmp, _) = crate::sim::run_town(town(), SimSettings::default(), rules(), 4);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    let main = store.find_branch("main").unwrap();
    assert!(!ops::head_mid_step(&store, &main).unwrap(), "a run stops between steps");
    let renamed = ops::rename_branch(&mut store, "main", "high-street").unwrap();
    assert_eq!(
        (renamed.id, renamed.old.as_str(), renamed.name.as_str()),
        (main.id, "main", "high-street")
    );
    let head = store.find_branch("high-street").unwrap();
    assert_eq!(head.head_seq, main.head_seq + 1);
    assert!(matches!(ops::rename_branch(&mut store, "main", "x"), Err(OpsError::NoBranch { .. })));
    let fork = ops::fork_at(&mut store, "high-street", Moment::End, "what-if").unwrap();
    assert_eq!(fork.parent, "high-street");
    assert!(!fork.inside_step);
    let taken = ops::rename_branch(&mut store, "what-if", "high-street").unwrap_err();
    assert_eq!(taken.to_string(), "a branch named `high-street` exists already");
    assert_eq!(store.find_branch("what-if").unwrap().head_seq, fork.seq + 1, "nothing written");

    // A step stopped part way: its clock step, and nothing after it yet.
    let town_now = hamlet_engine::history::state_at(&store, main.id, Moment::End).unwrap();
    let clock_step = clock::advance(&town(), &town_now, 1);
    store.append_durable(main.id, &[clock_step]).unwrap();
    let ticked = store.branch(main.id).unwrap();
    assert!(ops::head_mid_step(&store, &ticked).unwrap());
    let refused = ops::rename_branch(&mut store, "high-street", "market-day");
    assert!(matches!(refused, Err(OpsError::MidStep)), "{refused:?}");
    assert_eq!(store.branch(main.id).unwrap().head_seq, ticked.head_seq, "nothing written");
    // The store itself does not know steps: a rename written there does not hide the step
    // under way from a run resumed on it, nor from the window's check.
    store.rename_branch(main.id, "market-day").unwrap();
    assert!(ops::head_mid_step(&store, &store.branch(main.id).unwrap()).unwrap());
    let mut sim =
        rt.block_on(Sim::resume(store, main.id, rules(), SimSettings::default())).unwrap();
    assert!(sim.mid_step(), "a rename at the head ends no step");
    assert!(sim.rename_branch("later").is_err(), "the run refuses a rename part way too");
    let step = sim.state().step;
    rt.block_on(sim.step()).unwrap();
    assert!(!sim.mid_step());
    assert_eq!(sim.state().step, step, "the step under way was finished, the clock not moved");
    sim.rename_branch("evening").unwrap();
    rt.block_on(sim.step()).unwrap();
    assert_eq!(sim.state().step, step + 1, "and the run goes on");
    let store = sim.into_store();
    let info = store.find_branch("evening").unwrap();
    assert_eq!(info.id, main.id);
    let renames: Vec<String> = store
        .events(main.id, 0, info.head_seq)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.body {
            Body::BranchRenamed(r) => Some(r.name),
            _ => None,
        })
        .collect();
    assert_eq!(renames, ["high-street", "market-day", "evening"]);
    assert_eq!(store.find_branch("what-if").unwrap().name, "what-if", "its fork keeps its name");
    store.check_index().unwrap();
}

/// Goal: the window's Mayor forms are the engine's mayor acts: checked by field, made with no
/// model, said with what the treasury holds after.
#[test]
fn the_windows_mayor_forms_act_for_the_town_whose_mayor_is_the_person() {
    use hamlet_engine::ops::Intervention;
    use hamlet_engine::sim::SimError;

    let source = format!(
        "{}\n[mayor]\nwho = \"player\"\nfunds_cents = 100000\nsite = [{{ name = \"north lot\", at = [80, 1] }}]\n",
        town().source
    );
    let led = hamlet_engine::town::Definition::parse("led.toml", &source).unwrap();
    let (tmp, _) = crate::sim::run_town(led, SimSettings::default(), rules(), 6);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let main = store.find_branch("main").unwrap().id;
    let mut sim =
        rt.block_on(Sim::resume(store, main, ops::no_model(), SimSettings::default())).unwrap();
    let head = ops::head(&sim);
    let wageless = Intervention::MayorJob {
        sector: "Marigold café".into(),
        title: "baker".into(),
        dollars: 0,
    };
    assert!(matches!(wageless.check(&sim), Err(SimError::Refused { field: "wage", .. })));
    let nowhere = Intervention::MayorFound {
        template: "Marigold café".into(),
        name: "Oak Hill bakery".into(),
        site: "south lot".into(),
    };
    assert!(matches!(nowhere.check(&sim), Err(SimError::Refused { field: "site", .. })));
    assert_eq!(ops::head(&sim), head, "nothing written");
    assert!(!Intervention::MayorMeeting {
        what: "a".into(),
        place: "b".into(),
        in_minutes: 1,
        minutes: 1
    }
    .needs_model());
    let found = Intervention::MayorFound {
        template: "Marigold café".into(),
        name: "Oak Hill bakery".into(),
        site: "north lot".into(),
    };
    let made = rt.block_on(found.make(&mut sim)).unwrap();
    assert!(made.said.contains("founds Oak Hill bakery on north lot"), "{}", made.said);
    assert!(made.said.ends_with("the treasury holds $600.00"), "{}", made.said);
    let meeting = Intervention::MayorMeeting {
        what: "the bakery opens".into(),
        place: "Oak Hill bakery".into(),
        in_minutes: 90,
        minutes: 60,
    };
    let made = rt.block_on(meeting.make(&mut sim)).unwrap();
    assert!(made.said.contains("calls a meeting at Oak Hill bakery"), "{}", made.said);
    assert_eq!(made.to_seq, made.from_seq, "one event");
}

/// Goal: a change is made at a head that ends at a quiet step (one in which nobody did
/// anything writes only its clock step), and still refused at a step whose thinking is to
/// do. Method: the rule-based run stepped until its log ends at such a step, opened again
/// without a model: an object is set there; then a bare clock step appended at the start of
/// a morning full of planning: the same change is refused as part way, nothing written.
#[test]
fn a_change_lands_at_a_quiet_step_and_not_inside_a_step_still_to_think() {
    use hamlet_engine::ops::Intervention;
    use hamlet_engine::town::clock;
    use hamlet_log::Body;

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let store = rt.block_on(async {
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        let quiet = |sim: &Sim<_>| {
            let head = ops::head(sim);
            !sim.mid_step()
                && matches!(
                    sim.store().event_at(sim.branch(), head).unwrap().body,
                    Body::ClockStepped(_)
                )
        };
        for _ in 0..2_000 {
            sim.step().await.unwrap();
            if sim.state().step > 30 && quiet(&sim) {
                break;
            }
        }
        assert!(quiet(&sim), "no quiet step in the run");
        sim.into_store()
    });
    let main = store.find_branch("main").unwrap();
    let machine = "Marigold café:counter:coffee machine";
    let set = || Intervention::SetObject { address: machine.into(), state: "out of order".into() };
    let mut sim =
        rt.block_on(Sim::resume(store, main.id, ops::no_model(), SimSettings::default())).unwrap();
    assert!(sim.mid_step(), "read back, a quiet step looks part way");
    let head = ops::head(&sim);
    let done = rt.block_on(set().make(&mut sim)).unwrap();
    assert_eq!(done.from_seq, head + 1, "written at the head: {done:?}");
    assert!(!sim.mid_step());
    // Made again, the run meets the change where it was made.
    let log = sim.store().events(sim.branch(), 0, ops::head(&sim)).unwrap();
    crate::sim::assert_resim_identical(&log);

    // A morning's first clock step, its planning still to do.
    let (early, _) = crate::sim::run_town(town(), SimSettings::default(), rules(), 1);
    let mut store = Store::open(early.path()).unwrap();
    let main = store.find_branch("main").unwrap();
    let now = hamlet_engine::history::state_at(&store, main.id, Moment::End).unwrap();
    store.append_durable(main.id, &[clock::advance(&town(), &now, 1)]).unwrap();
    let mut sim =
        rt.block_on(Sim::resume(store, main.id, ops::no_model(), SimSettings::default())).unwrap();
    let head = ops::head(&sim);
    let refused = rt.block_on(set().make(&mut sim));
    assert!(matches!(refused, Err(OpsError::MidStep)), "{refused:?}");
    assert_eq!(ops::head(&sim), head, "nothing written");
    assert!(sim.mid_step());
}
