//! The user's changes to a running town (`Sim::set_object`, `edit_persona`, `add_agent`,
//! `add_building`): each is one `Intervened` event and what follows from it; one that
//! cannot be made writes nothing; a run with all of them re-simulates identically.

use hamlet_engine::fold::Town;
use hamlet_engine::resim::{resimulate, Verdict};
use hamlet_engine::sim::{Sim, SimError, SimSettings};
use hamlet_engine::store::{FsStorage, Store};
use hamlet_engine::town::build::recorded_town;
use hamlet_engine::town::find_arena;
use hamlet_log::event::{AgentId, Intervention, MemoryKind, Tile};
use hamlet_log::{Body, Event};

use crate::sim::{rules, town};

const CAFE_MACHINE: &str = "Marigold café:counter:coffee machine";
const ADA: &str = "Ada Brook is a new student at the college; Ada Brook wants to start a choir";
const TAMSIN: &str = "Tamsin Hale keeps the lighthouse; Tamsin Hale is afraid of the dark";

fn changed_run() -> (tempfile::TempDir, Vec<Event>, u16) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let (events, width) = rt.block_on(async {
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..3 {
            sim.step().await.unwrap();
        }
        let head = |sim: &Sim<_>| sim.store().branch(sim.branch()).unwrap().head_seq;
        let before = head(&sim);
        // Each refusal names the field at fault, for the window's forms.
        fn refused<T>(r: Result<T, SimError>) -> &'static str {
            match r {
                Err(SimError::Refused { field, .. }) => field,
                Err(e) => panic!("not a refusal: {e}"),
                Ok(_) => panic!("not refused"),
            }
        }
        assert_eq!(refused(sim.set_object("Nowhere:at:all", "on")), "address");
        assert_eq!(refused(sim.set_object(CAFE_MACHINE, " ")), "state");
        let dorm = "Reedbank dorm:common room";
        assert_eq!(refused(sim.add_agent("tamsin hale", ADA, dorm, "full", 0, None).await), "name");
        assert_eq!(
            refused(sim.add_agent("Ada Brook", ADA, "Nowhere:hall", "full", 0, None).await),
            "home"
        );
        assert_eq!(
            refused(sim.add_agent("Ada Brook", ADA, dorm, "clever", 0, None).await),
            "strategy"
        );
        assert_eq!(
            refused(sim.add_agent("Ada Brook", " ; ", dorm, "full", 0, None).await),
            "persona"
        );
        assert_eq!(
            refused(sim.add_agent("Ada Brook", ADA, dorm, "full", -1, None).await),
            "cash_cents"
        );
        let on_the_cafe = Tile { x: 3, y: 16 };
        assert_eq!(
            refused(sim.add_building("Marigold café", "Second café", on_the_cafe)),
            "origin"
        );
        assert_eq!(
            refused(sim.add_building("Nowhere", "Second café", Tile { x: 80, y: 1 })),
            "template"
        );
        assert_eq!(
            refused(sim.add_building("Marigold café", "Fernside market", Tile { x: 80, y: 1 })),
            "name"
        );
        assert_eq!(
            refused(sim.add_building("Marigold café", "Far", Tile { x: 1020, y: 1 })),
            "origin"
        );
        assert_eq!(refused(sim.interview(AgentId(99), "Who are you?", false).await), "agent");
        assert_eq!(refused(sim.inner_voice(AgentId(0), "  ").await), "text");
        assert_eq!(head(&sim), before, "a refused change writes nothing");

        sim.set_object(CAFE_MACHINE, "out of order").unwrap();
        assert_eq!(sim.state().objects.get(CAFE_MACHINE).map(String::as_str), Some("out of order"));
        let tamsin = *sim.state().agents.iter().find(|(_, a)| a.name == "Tamsin Hale").unwrap().0;
        let new = sim.edit_persona(tamsin, TAMSIN).await.unwrap();
        assert_eq!(new.len(), 2);
        assert_eq!(sim.state().agents[&tamsin].persona, TAMSIN);
        let ada = sim.add_agent("Ada Brook", ADA, dorm, "full", 1500, None).await.unwrap();
        assert_eq!(ada, AgentId(town().personas.len() as u32));
        assert_eq!(sim.state().agents[&ada].cash_cents, 1500);
        let width = sim.definition().grid.width();
        sim.add_building("Marigold café", "Second café", Tile { x: width + 1, y: 1 }).unwrap();
        assert!(sim.definition().grid.width() > width, "the map grows east");
        for _ in 0..4 {
            sim.step().await.unwrap();
        }
        let events = sim.store().events(sim.branch(), 0, head(&sim)).unwrap();
        (events, width)
    });
    (tmp, events, width)
}

fn intervened(log: &[Event], f: impl Fn(&Intervention) -> bool) -> &Event {
    log.iter()
        .find(|e| matches!(&e.body, Body::Intervened(i) if f(&i.intervention)))
        .expect("the change is in the log")
}

#[test]
fn changes_to_a_running_town_take_effect_and_re_simulate_identically() {
    let (_dir, log, width) = changed_run();
    // An edited persona: its new statements are seed memories caused by the edit, and the
    // agent describes itself afresh after them.
    let edit = intervened(&log, |i| matches!(i, Intervention::EditPersona { .. }));
    let seeds: Vec<&Event> = log
        .iter()
        .filter(|e| matches!(&e.body, Body::MemoryAdded(m) if m.kind == MemoryKind::Seed && m.description.contains("lighthouse")))
        .collect();
    assert_eq!(seeds.len(), 1);
    assert!(seeds[0].header.causes.contains(&edit.id));
    assert!(log.iter().any(|e| e.seq() > seeds[0].seq()
        && matches!(&e.body, Body::LlmRequested(r) if r.template == "summary")));

    // An added agent joins, caused by the change, remembers its paragraph, and then lives:
    // it describes itself, plans and acts like everyone else.
    let add = intervened(&log, |i| matches!(i, Intervention::AddAgent { .. }));
    let joined = log
        .iter()
        .find(|e| matches!(&e.body, Body::AgentJoined(j) if j.name == "Ada Brook"))
        .unwrap();
    assert_eq!(joined.header.causes, vec![add.id]);
    let Body::AgentJoined(j) = &joined.body else { unreachable!() };
    let ada = j.agent;
    let of_ada = |f: &dyn Fn(&Body) -> bool| log.iter().filter(|e| f(&e.body)).count();
    assert_eq!(
        of_ada(
            &|b| matches!(b, Body::MemoryAdded(m) if m.agent == ada && m.kind == MemoryKind::Seed)
        ),
        2
    );
    assert_eq!(
        of_ada(
            &|b| matches!(b, Body::LlmRequested(r) if r.agent == Some(ada) && r.template == "summary")
        ),
        1
    );
    assert!(of_ada(&|b| matches!(b, Body::PlanMade(p) if p.agent == ada)) >= 1);
    assert!(of_ada(&|b| matches!(b, Body::ActionStarted(a) if a.agent == ada)) >= 1);

    // An added building: the recorded town, with the change applied, has it past the old
    // edge of the map, with its rooms and objects, and a walk leads there from the town.
    intervened(&log, |i| matches!(i, Intervention::AddBuilding { .. }));
    let grown = recorded_town(&log).expect("the recorded town loads");
    assert!(grown.grid.width() > width);
    let (si, ai) = find_arena(&grown.sectors, "Second café:counter").expect("the copy's rooms");
    let counter = &grown.sectors[si].arenas[ai];
    assert!(counter.objects.iter().any(|o| o.name == "coffee machine" && o.at.x > width));
    assert!(grown.grid.path(j.tile, counter.tiles[0]).is_some(), "reachable on foot");
    assert!(grown.prices.iter().any(|p| p.sector == "Second café"), "it sells what the café does");

    // The whole run, changes and all, made again from the recording: identical.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    match rt.block_on(resimulate(&log, scratch.path(), |_, _| {})).unwrap() {
        Verdict::Identical { events } => assert_eq!(events, log.len()),
        Verdict::Diverged(d) => panic!("{d:?}"),
    }
}

#[test]
fn a_diff_finds_where_branches_part_and_who_lives_differently() {
    use hamlet_engine::diff::diff;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let steps = |branch: &str, voice: bool| {
        rt.block_on(async {
            let store = Store::open(tmp.path()).unwrap();
            let id = store.find_branch(branch).unwrap().id;
            let mut sim = Sim::resume(store, id, rules(), SimSettings::default()).await.unwrap();
            if voice {
                let tamsin =
                    *sim.state().agents.iter().find(|(_, a)| a.name == "Tamsin Hale").unwrap().0;
                sim.inner_voice(tamsin, "You want to bake bread for the neighbours").await.unwrap();
            }
            for _ in 0..3 {
                sim.step().await.unwrap();
            }
            let head = sim.store().branch(sim.branch()).unwrap().head_seq;
            sim.store().events(sim.branch(), 0, head).unwrap()
        })
    };
    rt.block_on(async {
        let store = Store::open(tmp.path()).unwrap();
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..3 {
            sim.step().await.unwrap();
        }
    });
    let at = {
        let mut store = Store::open(tmp.path()).unwrap();
        let main = store.find_branch("main").unwrap();
        store.fork(main.id, main.head_seq, "bread").unwrap();
        main.head_seq
    };
    let bread = steps("bread", true);
    let main = steps("main", false);
    let d = diff("main", &main, "bread", &bread);
    assert_eq!(d.shared, at + 1, "they share everything up to the fork point");
    assert_eq!(d.parted_secs, Some(main[at as usize].sim_time_secs()));
    let tamsin = d.agents.iter().find(|a| a.name == "Tamsin Hale").unwrap();
    assert!(!tamsin.same());
    assert!(
        tamsin.b.memories.get("plan") > tamsin.a.memories.get("plan"),
        "the intention is remembered"
    );
    let text = d.text(false);
    assert!(text.contains("Tamsin Hale"), "{text}");
    assert!(text.starts_with("`main` and `bread` share #0 to #"), "{text}");
    // The fork, with the inner voice on it, re-simulates identically, and so does main.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for log in [&bread, &main] {
        let scratch = tempfile::tempdir().unwrap();
        match rt.block_on(resimulate(log, scratch.path(), |_, _| {})).unwrap() {
            Verdict::Identical { events } => assert_eq!(events, log.len()),
            Verdict::Diverged(d) => panic!("{d:?}"),
        }
    }
    // A branch compared with itself: nobody differs.
    let same = diff("main", &main, "main", &main);
    assert_eq!(same.shared as usize, main.len());
    assert!(same.agents.iter().all(|a| a.same()));
}

/// Runs the test town three steps, lets `change` act on it (its checks inside), runs six
/// steps more and returns the log and the town at its end.
fn run_changed(change: impl FnOnce(&mut Sim<FsStorage>)) -> (Vec<Event>, Town) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    rt.block_on(async {
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..3 {
            sim.step().await.unwrap();
        }
        change(&mut sim);
        for _ in 0..6 {
            sim.step().await.unwrap();
        }
        let head = sim.store().branch(sim.branch()).unwrap().head_seq;
        (sim.store().events(sim.branch(), 0, head).unwrap(), sim.state().clone())
    })
}

fn agent_named(log: &[Event], name: &str) -> AgentId {
    log.iter()
        .find_map(|e| match &e.body {
            Body::AgentJoined(j) if j.name == name => Some(j.agent),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name} joined"))
}

/// `agent` was asked once (`attend`, with a prompt naming each of `words`) whether to stop
/// for what they noticed, and the rest of their hour was planned again, caused by the
/// answer (the rule-based double says yes). `seen` is shown if the check fails.
fn asked_once_and_replanned(
    log: &[Event],
    agent: AgentId,
    words: &[&str],
    seen: &dyn Fn() -> String,
) {
    let asked: Vec<&Event> = log
        .iter()
        .filter(|e| {
            matches!(&e.body, Body::LlmRequested(r) if r.template == "attend"
                && r.agent == Some(agent) && r.attempt == 1)
        })
        .collect();
    assert_eq!(asked.len(), 1, "asked once, when first noticed: {}", seen());
    let Body::LlmRequested(r) = &asked[0].body else { unreachable!() };
    let prompt = format!("{:?}", r.prompt);
    assert!(words.iter().all(|w| prompt.contains(w)), "{words:?} in {prompt}");
    let answer = log
        .iter()
        .find(|e| {
            e.seq() > asked[0].seq()
                && matches!(&e.body, Body::LlmResponded(a) if a.request_hash == r.request_hash)
        })
        .expect("the question is answered");
    let replanned = log.iter().find(|e| {
        matches!(&e.body, Body::PlanMade(p) if p.agent == agent)
            && e.header.causes.contains(&answer.id)
    });
    let replanned = replanned.expect("the rest of the hour is planned again, caused by the yes");
    let Body::PlanMade(plan) = &replanned.body else { unreachable!() };
    assert!(plan.decomposes.is_some(), "a re-plan of the hour under way");
}

/// Goal: agents react to what they perceive, not only to people. Method: the wardrobe in
/// the Ashcombes' bedroom breaks (a state it does not declare); Delphine, in that room,
/// notices it, is asked whether she stops to deal with it (the rule-based double says yes),
/// and the rest of her hour is planned again, caused by that answer; the question is asked
/// once, not every step.
#[test]
fn an_object_out_of_order_is_noticed_and_can_replan_the_hour() {
    let wardrobe = "Ashcombe house:bedroom:wardrobe";
    let (log, _) = run_changed(|sim| {
        sim.set_object(wardrobe, "broken, its door hanging off").unwrap();
    });
    let delphine = agent_named(&log, "Delphine Ashcombe");
    let seen = || {
        let seen: Vec<String> = log
            .iter()
            .filter_map(|e| match &e.body {
                Body::Perceived(p) if p.agent == delphine => Some(format!(
                    "{} {:?}",
                    e.sim_time_secs(),
                    p.percepts
                        .iter()
                        .map(|x| format!("{}={}", x.subject, x.description))
                        .collect::<Vec<_>>()
                )),
                Body::ActionStarted(a) if a.agent == delphine => {
                    Some(format!("{} action {} at {}", e.sim_time_secs(), a.description, a.address))
                }
                _ => None,
            })
            .collect();
        format!("{seen:#?}")
    };
    asked_once_and_replanned(&log, delphine, &["wardrobe", "broken"], &seen);
}

/// Goal: agents react to an event, not only to people and objects. Method: the user makes
/// the Ashcombes' smoke alarm beep for two steps (a happening in the whole house); Delphine,
/// at home, perceives it where she stands, remembers it, is asked whether she stops to deal
/// with it (the rule-based double says yes) and re-plans the rest of her hour from that
/// answer; nobody in another house perceives it; it ends by itself; refused happenings
/// write nothing; the run re-simulates identically; a checkpoint keeps it.
#[test]
fn a_happening_is_noticed_where_it_goes_on_replans_the_hour_and_ends() {
    let alarm = "the smoke alarm is beeping";
    let (log, end) = run_changed(|sim| {
        let head = |sim: &Sim<_>| sim.store().branch(sim.branch()).unwrap().head_seq;
        let (before, now) = (head(sim), sim.state().sim_time_secs);
        let step = u64::from(sim.state().seconds_per_step);
        let refused = |r: Result<_, SimError>| matches!(r, Err(SimError::Refused { .. }));
        assert!(refused(sim.happen("Nowhere", alarm, now + 60)));
        assert!(refused(sim.happen("Ashcombe house:attic", alarm, now + 60)));
        assert!(refused(sim.happen("Ashcombe house", "  ", now + 60)));
        assert!(refused(sim.happen("Ashcombe house", alarm, now)));
        assert_eq!(head(sim), before, "a refused happening writes nothing");

        sim.happen("Ashcombe house", alarm, now + 2 * step).unwrap();
        assert_eq!(sim.state().happenings.len(), 1);
        let kept = Town::from_checkpoint(&sim.state().to_checkpoint()).unwrap();
        assert_eq!(&kept, sim.state(), "a checkpoint keeps what is going on");
        let mut quiet = sim.state().clone();
        quiet.happenings.clear();
        assert_ne!(quiet.state_hash(), sim.state().state_hash());
    });
    assert!(end.happenings.is_empty(), "it ended by itself");
    let (delphine, nnamdi) =
        (agent_named(&log, "Delphine Ashcombe"), agent_named(&log, "Nnamdi Okafor"));
    let perceived = |who: AgentId| {
        log.iter().any(|e| {
            matches!(&e.body, Body::Perceived(p) if p.agent == who
                && p.percepts.iter().any(|x| x.subject == "Ashcombe house::" && x.description == alarm))
        })
    };
    assert!(perceived(delphine), "perceived where it goes on");
    assert!(!perceived(nnamdi), "not in another house");
    let remembered = log.iter().any(|e| {
        matches!(&e.body, Body::MemoryAdded(m) if m.agent == delphine
            && m.description == format!("at Ashcombe house: {alarm}"))
    });
    assert!(remembered, "remembered as an observation");
    asked_once_and_replanned(&log, delphine, &[alarm], &String::new);
    intervened(&log, |i| matches!(i, Intervention::Happening { .. }));
    let scratch = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(resimulate(&log, scratch.path(), |_, _| {})).unwrap() {
        Verdict::Identical { events } => assert_eq!(events, log.len()),
        Verdict::Diverged(d) => panic!("{d:?}"),
    }
}
