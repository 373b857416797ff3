//! Mayor mode: a town file's `[mayor]` leads the town. The person at the viewer acts as
//! mayor (`Sim::mayor_act`); acts the town cannot take are refused with nothing written; a
//! business founded pays its cost from the treasury and stands on the map; every agent
//! reads each act as a notice; a job is offered to one agent at a time until one takes it,
//! and its hours are paid from the treasury; a meeting is kept in everyone's plans.

use hamlet_engine::sim::{Sim, SimError, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::town::Definition;
use hamlet_log::event::{Account, MayorAct, PlanLevel};
use hamlet_log::Body;

use crate::sim::{rules, town};

const MAYOR: &str = "\n[mayor]\nwho = \"player\"\nfunds_cents = 100000\nfound_cents = 40000\nsite = [{ name = \"north lot\", at = [80, 1] }]\n";

fn led_town() -> Definition {
    Definition::parse("led.toml", &format!("{}{MAYOR}", town().source)).unwrap()
}

/// The first job taken in `log`: who took it, and when.
fn first_taken(log: &[hamlet_log::Event]) -> (hamlet_log::event::AgentId, u64) {
    log.iter()
        .find_map(|e| match &e.body {
            Body::JobTaken(j) => Some((j.agent, e.sim_time_secs())),
            _ => None,
        })
        .expect("a job taken")
}

/// What the treasury paid `agent` in `log`, in cents.
fn wages_of(log: &[hamlet_log::Event], agent: hamlet_log::event::AgentId) -> i64 {
    log.iter()
        .filter_map(|e| match &e.body {
            Body::CashMoved(c) if c.from == Account::Town && c.to == Account::Agent(agent) => {
                Some(c.amount_cents)
            }
            _ => None,
        })
        .sum()
}

fn refused(r: Result<hamlet_log::EventId, SimError>) -> (&'static str, String) {
    match r {
        Err(SimError::Refused { field, why }) => (field, why),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn the_person_as_mayor_posts_a_job_founds_a_business_and_calls_a_meeting_and_the_town_answers() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let log = rt.block_on(async {
        let mut sim = Sim::start(store, "main", led_town(), 7, rules(), SimSettings::default())
            .await
            .unwrap();
        // The treasury's funds arrived at the start.
        assert_eq!(sim.state().mayor.as_ref().map(|b| b.treasury_cents), Some(100_000));
        for _ in 0..6 {
            sim.step().await.unwrap();
        }
        // Refusals name the field and write nothing.
        let head = |sim: &Sim<_>| sim.store().branch(sim.branch()).unwrap().head_seq;
        let before = head(&sim);
        let found = |site: &str, cost: i64| MayorAct::Found {
            template: "Marigold café".into(),
            name: "Oak Hill bakery".into(),
            site: site.into(),
            cost_cents: cost,
        };
        assert_eq!(refused(sim.mayor_act(found("south lot", 40_000))).0, "site");
        assert_eq!(refused(sim.mayor_act(found("north lot", 5))).0, "cost");
        let job_nowhere = MayorAct::PostJob {
            sector: "Nowhere".into(),
            title: "baker".into(),
            cents_per_hour: 1_500,
        };
        assert!(refused(sim.mayor_act(job_nowhere)).1.contains("no sector `Nowhere`"));
        // A home is not a workplace: no job there, and no wage.
        let job_at_home = MayorAct::PostJob {
            sector: "Ashcombe house".into(),
            title: "baker".into(),
            cents_per_hour: 1_500,
        };
        let why = refused(sim.mayor_act(job_at_home)).1;
        assert!(why.contains("is a home") && why.contains("Marigold café"), "{why}");
        let wage_at_home =
            MayorAct::SetWage { sector: "Okafor house".into(), cents_per_hour: 1_500 };
        assert!(refused(sim.mayor_act(wage_at_home)).1.contains("is a home"));
        let past = MayorAct::CallMeeting {
            what: "the bakery".into(),
            place: "Willowmere town hall".into(),
            start_secs: 0,
            duration_secs: 3600,
        };
        assert_eq!(refused(sim.mayor_act(past)).0, "start");
        assert_eq!(head(&sim), before, "nothing written");
        // A meeting "from" the hour under way, decided after it struck, begins at the next
        // minute and ends when it was to.
        let now = sim.state().sim_time_secs;
        let hour = now - now % 3600;
        let this_hour = MayorAct::CallMeeting {
            what: "the bakery".into(),
            place: "Willowmere town hall".into(),
            start_secs: hour,
            duration_secs: 3600,
        };
        let bodies = sim.check_mayor_act(this_hour).unwrap();
        let next_minute = now.div_ceil(60) * 60;
        assert!(
            matches!(&bodies[0], Body::MayorActed(m) if matches!(&m.act,
                MayorAct::CallMeeting { start_secs, duration_secs, .. }
                    if *start_secs == next_minute && *start_secs + u64::from(*duration_secs) == hour + 3600)),
            "{bodies:?}"
        );

        // Founded: paid from the treasury, on the map; a second time on the same site is not.
        sim.mayor_act(found("north lot", 40_000)).unwrap();
        assert_eq!(sim.state().mayor.as_ref().map(|b| b.treasury_cents), Some(60_000));
        assert!(sim.definition().sectors.iter().any(|s| s.name == "Oak Hill bakery"));
        let again = MayorAct::Found {
            template: "Marigold café".into(),
            name: "Oak Hill bakery two".into(),
            site: "north lot".into(),
            cost_cents: 40_000,
        };
        assert!(refused(sim.mayor_act(again)).1.contains("built on already"));
        // A job there, and a meeting at the town hall in an hour.
        sim.mayor_act(MayorAct::PostJob {
            sector: "Oak Hill bakery".into(),
            title: "baker".into(),
            cents_per_hour: 1_500,
        })
        .unwrap();
        // The same job again while it is open is refused; another is not.
        let job = |title: &str| MayorAct::PostJob {
            sector: "Oak Hill bakery".into(),
            title: title.into(),
            cents_per_hour: 1_500,
        };
        assert!(refused(sim.mayor_act(job(" Baker"))).1.contains("open already"));
        assert!(sim.check_mayor_act(job("counter hand")).is_ok());
        let now = sim.state().sim_time_secs;
        let meeting = now - now % 3600 + 2 * 3600;
        sim.mayor_act(MayorAct::CallMeeting {
            what: "the bakery's opening".into(),
            place: "Willowmere town hall".into(),
            start_secs: meeting,
            duration_secs: 3600,
        })
        .unwrap();
        for _ in 0..3 * 360 {
            sim.step().await.unwrap();
        }
        let head = head(&sim);
        sim.store().events(sim.branch(), 0, head).unwrap()
    });
    let names: Vec<String> = town().personas.iter().map(|p| p.name.clone()).collect();
    // Every agent read each of the three acts as a notice.
    for name in &names {
        let read = log
            .iter()
            .filter(|e| matches!(&e.body, Body::MemoryAdded(m)
                if m.description.starts_with("A notice from the mayor:")
                && log.iter().any(|j| matches!(&j.body, Body::AgentJoined(a) if a.agent == m.agent && a.name == *name))))
            .count();
        assert_eq!(read, 3, "{name}");
    }
    // The job went to the first agent asked (the rules say yes), and only one was asked.
    let taken: Vec<_> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::JobTaken(j) => Some(j.agent),
            _ => None,
        })
        .collect();
    assert_eq!(taken.len(), 1);
    let offers = log.iter().filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "job_offer" && r.attempt == 1)).count();
    assert_eq!(offers, 1);
    // The meeting is in everyone's plans: each one's latest day plan keeps it, at its time.
    let joined: Vec<hamlet_log::event::AgentId> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::AgentJoined(j) => Some(j.agent),
            _ => None,
        })
        .collect();
    for agent in joined {
        let latest = log.iter().rev().find_map(|e| match &e.body {
            Body::PlanMade(p) if p.agent == agent && p.level == PlanLevel::Day => Some(p),
            _ => None,
        });
        let items = &latest.unwrap().items;
        let kept = items.iter().find(|i| i.description.starts_with("goes to the mayor's meeting"));
        assert!(
            kept.is_some_and(
                |i| i.address.starts_with("Willowmere town hall") && i.duration_secs == 3600
            ),
            "agent {}: {items:?}",
            agent.0
        );
    }
    // The treasury paid the founding, and nobody worked at the bakery yet.
    let from_town: Vec<i64> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::CashMoved(c) if c.from == Account::Town => Some(c.amount_cents),
            _ => None,
        })
        .collect();
    assert_eq!(from_town, vec![40_000]);
    // The same answers give the same log.
    crate::sim::assert_resim_identical(&log);
}

#[test]
fn a_town_whose_mayor_is_an_agent_refuses_the_person_and_a_town_file_names_a_real_mayor() {
    let with = |who: &str| format!("{}{}", town().source, MAYOR.replace("\"player\"", who));
    let e = Definition::parse("bad.toml", &with("\"Nobody Here\"")).unwrap_err().to_string();
    assert!(e.contains("mayor.who") && e.contains("neither a persona"), "{e}");
    let first = town().personas[0].name.clone();
    let agent_led = Definition::parse("agent.toml", &with(&format!("\"{first}\""))).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    rt.block_on(async {
        let mut sim =
            Sim::start(store, "main", agent_led, 7, rules(), SimSettings::default()).await.unwrap();
        assert!(sim.mayor_agent().is_some());
        let job = MayorAct::PostJob {
            sector: "Marigold café".into(),
            title: "baker".into(),
            cents_per_hour: 1,
        };
        let (field, why) = refused(sim.mayor_act(job));
        assert_eq!(field, "mayor");
        assert!(why.contains(&format!("mayor is {first}")), "{why}");
    });
}

#[test]
fn a_mayor_agent_decides_for_the_town_founds_and_posts_a_job_that_someone_takes() {
    let first = town().personas[0].name.clone();
    let source =
        format!("{}{}", town().source, MAYOR.replace("\"player\"", &format!("\"{first}\"")));
    let led = Definition::parse("agent.toml", &source).unwrap();
    let (_tmp, log) = crate::sim::run_town(led, SimSettings::default(), rules(), 5 * 360);
    let acts: Vec<(Option<hamlet_log::event::AgentId>, &MayorAct)> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::MayorActed(m) => Some((m.mayor, &m.act)),
            _ => None,
        })
        .collect();
    // By the rules double: found on the free site, then a job there (decided two hours apart).
    assert!(
        matches!(acts.first(), Some((Some(_), MayorAct::Found { site, .. })) if site == "north lot"),
        "{acts:?}"
    );
    assert!(
        acts.iter()
            .any(|(_, a)| matches!(a, MayorAct::PostJob { sector, .. } if sector == "Rule bakery")),
        "{acts:?}"
    );
    let decisions = log.iter().filter(
        |e| matches!(&e.body, Body::LlmRequested(r) if r.template == "mayor_where" && r.attempt == 1),
    );
    let times: Vec<u64> = decisions.clone().map(|e| e.sim_time_secs()).collect();
    assert!(times.windows(2).all(|w| w[1] >= w[0] + 2 * 3600), "{times:?}");
    // Where the mayor may act: the free site while it is free (and never once built on),
    // the places that stand and never a home; the business founded stands among them after.
    let asked: Vec<String> = decisions
        .map(|e| match &e.body {
            Body::LlmRequested(r) => match &r.prompt {
                hamlet_log::event::Prompt::Chat(m) => m.iter().map(|m| m.content.clone()).collect(),
                hamlet_log::event::Prompt::Text(t) => t.clone(),
            },
            _ => unreachable!(),
        })
        .collect();
    assert!(asked.len() >= 2, "{asked:?}");
    let options = |p: &String| p.lines().find(|l| l.starts_with("Options: ")).expect(p).to_owned();
    assert!(options(&asked[0]).contains("| north lot (a free site) |"), "{}", asked[0]);
    for p in &asked {
        let line = options(p);
        assert!(line.contains("Marigold café (a café that stands)"), "{line}");
        assert!(!line.contains("Ashcombe house") && line.ends_with("| nowhere for now"), "{line}");
    }
    for p in &asked[1..] {
        let line = options(p);
        assert!(!line.contains("free site") && line.contains("Rule bakery ("), "{line}");
    }
    let (taker, taken_at) = first_taken(&log);
    // Its hours went into the taker's plans at once, from the next whole hour, at the
    // bakery; the taker worked there and was paid from the treasury for it.
    let first_hour = taken_at.div_ceil(3600) * 3600;
    let planned = log.iter().find_map(|e| match &e.body {
        Body::PlanMade(p) if p.agent == taker && e.sim_time_secs() == taken_at => Some(p),
        _ => None,
    });
    let shift = planned.map(|p| {
        p.items
            .iter()
            .filter(|i| i.description == "works as baker at Rule bakery")
            .collect::<Vec<_>>()
    });
    assert!(
        shift.as_ref().is_some_and(|s| !s.is_empty()
            && s[0].start_secs == first_hour
            && s.iter().all(|i| i.address.starts_with("Rule bakery"))),
        "{planned:?}"
    );
    let worked = log.iter().any(|e| {
        matches!(&e.body, Body::ActionStarted(a)
        if a.agent == taker && a.address.starts_with("Rule bakery"))
    });
    assert!(worked, "the taker never worked at the bakery");
    assert!(wages_of(&log, taker) > 0, "no wage paid");
    // The founding was paid from the treasury; the map holds the business.
    assert!(log.iter().any(|e| matches!(&e.body, Body::CashMoved(c) if c.from == Account::Town && c.amount_cents == 40_000)));
    let town = hamlet_engine::town::build::recorded_town(&log).unwrap();
    assert!(town.sectors.iter().any(|s| s.name == "Rule bakery"));
    crate::sim::assert_resim_identical(&log);
}

#[test]
fn the_shipped_scenario_oak_hill_has_its_mayor_found_on_its_site_and_fill_a_job() {
    let oak_hill = hamlet_engine::town::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("towns/oak-hill.toml"),
    )
    .unwrap();
    assert!(
        matches!(&oak_hill.mayor, Some(m) if matches!(&m.who, hamlet_engine::town::MayorWho::Agent(a) if a == "Ada Brook"))
    );
    let (_tmp, log) = crate::sim::run_town(oak_hill, SimSettings::default(), rules(), 3 * 360);
    let founded = log.iter().any(|e| matches!(&e.body, Body::MayorActed(m) if matches!(&m.act, MayorAct::Found { site, .. } if site == "north lot")));
    assert!(founded);
    assert!(log.iter().any(|e| matches!(e.body, Body::JobTaken(_))));
    let town = hamlet_engine::town::build::recorded_town(&log).unwrap();
    assert_eq!(town.sectors.len(), 5, "the business stands on the map");
    // Who was there is asked of the business founded as of any place.
    let founded = &town.sectors[4].name;
    let end = log.last().unwrap().sim_time_secs();
    assert!(hamlet_engine::research::attendance(&log, founded, 0, end).is_ok(), "{founded}");
    assert!(hamlet_engine::research::attendance(&log, "Nowhere", 0, end).is_err());
    // Ada's goal is measured by the hires of jobs she posted.
    let rows = hamlet_engine::research::goals(&log, 3600);
    let ada = rows.iter().rfind(|r| r.agent == "Ada Brook").unwrap();
    assert_eq!((ada.measure.as_str(), ada.count), ("hire someone", 1), "{ada:?}");
    assert!(ada.reached_secs.is_some());
    // Every prompt says which town it is about.
    let prompts: Vec<&str> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::LlmRequested(r) => match &r.prompt {
                hamlet_log::event::Prompt::Chat(m) => Some(m[0].content.as_str()),
                hamlet_log::event::Prompt::Text(t) => Some(t.as_str()),
            },
            _ => None,
        })
        .collect();
    assert!(prompts.iter().any(|p| p.contains("the small town of Oak Hill")));
    assert!(prompts.iter().all(|p| !p.contains("Willowmere")), "{prompts:?}");
}

/// The rules, except that the mayor posts the same job every time it decides and nobody
/// takes a job.
fn same_job_again(template: &str, _: &str) -> Option<String> {
    let text = match template {
        "mayor_where" => r#"{"choice": "Marigold café (a café that stands)"}"#,
        "mayor_act" => r#"{"choice": "post a job"}"#,
        // The place named again in the title is the place's.
        "mayor_details" => r#"{"title": "baker at Marigold Café", "dollars_per_hour": 15}"#,
        "job_offer" => r#"{"answer": "no"}"#,
        _ => return None,
    };
    Some(text.to_owned())
}

#[test]
fn a_mayor_agents_act_the_town_refuses_is_not_written_and_the_mayor_remembers_why() {
    let first = town().personas[0].name.clone();
    let source =
        format!("{}{}", town().source, MAYOR.replace("\"player\"", &format!("\"{first}\"")));
    let led = Definition::parse("agent.toml", &source).unwrap();
    let gateway = hamlet_gateway::Gateway::new(
        std::sync::Arc::new(hamlet_testkit::rules::RulesExcept(same_job_again)),
        std::sync::Arc::new(hamlet_testkit::rules::LetterEmbedder),
        hamlet_gateway::Params::default(),
        hamlet_gateway::RetryPolicy::default(),
        4,
    );
    let (_tmp, log) = crate::sim::run_town(led, SimSettings::default(), gateway, 5 * 360);
    let decided = log
        .iter()
        .filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "mayor_details" && r.attempt == 1))
        .count();
    assert!(decided >= 2, "the mayor decided {decided} times");
    // The first posting stands; every later one is the same job while it is open: refused.
    let posted = log
        .iter()
        .filter(|e| matches!(&e.body, Body::MayorActed(m) if matches!(&m.act, MayorAct::PostJob { title, .. } if title == "baker")))
        .count();
    assert_eq!(posted, 1);
    assert!(!log.iter().any(|e| matches!(e.body, Body::JobTaken(_))));
    let remembered: Vec<&str> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::MemoryAdded(m)
                if m.description.contains(
                    "meant to post a job at Marigold café for the town but could not",
                ) =>
            {
                Some(m.description.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(remembered.len(), decided - 1, "{remembered:?}");
    assert!(
        remembered.iter().all(|m| m.contains("a job as baker at Marigold café is open already")),
        "{remembered:?}"
    );
    crate::sim::assert_resim_identical(&log);
}

/// What `recordings/README.md` says of the mayor's recorded day, held to the recording: a
/// business founded, a job taken and worked there, its wages paid from the treasury, the
/// mayor's goal and the baker's reached, a meeting everyone came to; and a re-run of it is
/// identical.
#[test]
fn the_recorded_mayors_day_founds_hires_pays_and_meets() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../recordings/oak-hill-mayor.hamlet");
    let bytes = std::fs::read(&path).unwrap();
    let rec = hamlet_log::Recording::open(&bytes).unwrap();
    let root = rec.root().unwrap().id;
    let log: Vec<hamlet_log::Event> =
        rec.events(root, 0).unwrap().collect::<Result<_, _>>().unwrap();
    let town = hamlet_engine::town::build::recorded_town(&log).unwrap();
    let founded = log.iter().find_map(|e| match &e.body {
        Body::MayorActed(m) => match &m.act {
            MayorAct::Found { name, .. } => Some(name.clone()),
            _ => None,
        },
        _ => None,
    });
    let founded = founded.expect("a business founded");
    assert!(town.sectors.iter().any(|s| s.name == founded));
    let (taker, _) = first_taken(&log);
    let wages = wages_of(&log, taker);
    assert!(wages >= 10_000, "wages paid: {wages} cents");
    let end = log.last().unwrap().sim_time_secs();
    let there = hamlet_engine::research::attendance(&log, &founded, 0, end).unwrap();
    assert!(!there.is_empty(), "somebody worked at {founded}");
    let rows = hamlet_engine::research::goals(&log, 3600);
    for name in ["Ada Brook", "Tomas Reyes"] {
        let last = rows.iter().rfind(|r| r.agent == name).unwrap();
        assert!(last.reached_secs.is_some(), "{last:?}");
    }
    let meeting = log.iter().find_map(|e| match &e.body {
        Body::MayorActed(m) => match &m.act {
            MayorAct::CallMeeting { place, start_secs, duration_secs, .. } => {
                Some((place.clone(), *start_secs, *start_secs + u64::from(*duration_secs)))
            }
            _ => None,
        },
        _ => None,
    });
    let (place, from, until) = meeting.expect("a meeting called");
    let came = hamlet_engine::research::attendance(&log, &place, from, until).unwrap();
    assert_eq!(came.len(), town.personas.len(), "{came:?}");
    crate::sim::assert_resim_identical(&log);
}
