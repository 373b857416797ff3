//! Remembering and recalling through the gateway, committed to a store, folded back: each
//! memory carries its rating and embedding, and its causes lead back to the prompt that
//! rated it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use hamlet_engine::mind::memory::Minds;
use hamlet_engine::mind::prompt::Style;
use hamlet_engine::mind::retrieval::RetrievalSettings;
use hamlet_engine::mind::think::{
    recall, reflect, reflection_due, remember, ReflectionSettings, Who,
};
use hamlet_engine::pending::Pending;
use hamlet_engine::rulebook::Rulebook;
use hamlet_engine::store::Store;
use hamlet_gateway::backend::{
    Attempt, BackendError, BoxFuture, Completion, EmbedBackend, LlmBackend, Vectors,
};
use hamlet_gateway::{EmbedCall, Gateway, Params, RetryPolicy};
use hamlet_log::event::{AgentId, MemoryKind, Prompt};
use hamlet_log::{Body, Event, EventId};

/// A test double: rates memories from a script.
struct ScriptedRater(Mutex<VecDeque<&'static str>>);

impl LlmBackend for ScriptedRater {
    fn name(&self) -> &str {
        "scripted-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "scripted".into()
    }
    fn complete<'a>(&'a self, _: Attempt<'a>) -> BoxFuture<'a, Result<Completion, BackendError>> {
        let text = self.0.lock().unwrap().pop_front().unwrap_or(r#"{"rating": 1}"#);
        Box::pin(async move {
            Ok(Completion {
                text: text.into(),
                tokens_prompt: 30,
                tokens_completion: 6,
                finish_reason: "stop".into(),
                response_model: "scripted".into(),
                response_id: String::new(),
                probabilities: Vec::new(),
                tokens_cached: 0,
            })
        })
    }
}

/// A test double: embeds a text as [1, 0] if it mentions the party, else [0, 1].
struct KeywordEmbedder;

impl EmbedBackend for KeywordEmbedder {
    fn name(&self) -> &str {
        "keyword-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "keywords".into()
    }
    fn embed<'a>(
        &'a self,
        call: &'a EmbedCall,
        _: [u8; 32],
    ) -> BoxFuture<'a, Result<Vectors, BackendError>> {
        let vectors = call
            .texts
            .iter()
            .map(|t| if t.contains("party") { vec![1.0, 0.0] } else { vec![0.0, 1.0] })
            .collect();
        Box::pin(async move { Ok(Vectors { vectors, tokens: 5, pooled: false }) })
    }
}

#[test]
fn memories_are_rated_embedded_committed_and_traceable_to_their_prompt() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Two memories are rated in one call; the first answer is refused and retried.
    let llm =
        ScriptedRater(Mutex::new(VecDeque::from(["this is blank", r#"{"ratings": [9, 2]}"#])));
    let gateway = Gateway::new(
        Arc::new(llm),
        Arc::new(KeywordEmbedder),
        Params::default(),
        RetryPolicy::default(),
        2,
    );
    let mei = AgentId(0);
    let mut pending = Pending::new();
    let texts = vec![
        "Delphine invites Mei to a party at Marigold café".to_owned(),
        "Mei brushes her teeth".to_owned(),
    ];
    let added = rt
        .block_on(remember(
            &gateway,
            Style::Chat,
            &Who {
                town: "Willowmere",
                agent: mei,
                name: "Mei Lin",
                summary: "Mei Lin is an art student.",
            },
            MemoryKind::Observation,
            &texts,
            &[],
            &[],
            3600,
            &mut pending,
        ))
        .unwrap();
    assert_eq!(added.len(), 2);

    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    let branch = store.create_root("main").unwrap();
    pending.commit(&mut store, branch).unwrap();
    let head = store.branch(branch).unwrap().head_seq;
    let events: Vec<Event> = store.events(branch, 0, head).unwrap();
    let by_id: BTreeMap<EventId, &Event> = events.iter().map(|e| (e.id, e)).collect();

    let mut minds = Minds::default();
    events.iter().for_each(|e| minds.apply(e));
    let stream = minds.stream(mei);
    let importances: Vec<u8> = stream.memories().iter().map(|m| m.importance).collect();
    assert_eq!(importances, [9, 2], "the bad answer was retried, never stored");
    assert_eq!(stream.memories()[0].embedding, [1.0, 0.0]);

    // From the memory back to the prompt that rated it.
    let memory = by_id[&stream.memories()[1].id];
    let mut seen_prompt = None;
    let mut frontier: Vec<EventId> = memory.header.causes.clone();
    while let Some(id) = frontier.pop() {
        let e = by_id[&id];
        if let Body::LlmRequested(r) = &e.body {
            if let Prompt::Chat(m) = &r.prompt {
                seen_prompt = Some(m[1].content.clone());
            }
        }
        frontier.extend(e.header.causes.iter().copied());
    }
    assert_eq!(
        seen_prompt.as_deref().and_then(|p| p.split("\n\n").last()),
        Some(
            "The moments Mei Lin remembers:\n1. Delphine invites Mei to a party at Marigold café\n\
             2. Mei brushes her teeth"
        )
    );

    // Recall: the party memory is relevant to a party query; the retrieval names the
    // query's embedding as its cause.
    let mut pending = Pending::new();
    let (retrieved, _) = rt
        .block_on(recall(
            &gateway,
            mei,
            stream,
            "the party tonight",
            7200,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
    assert_eq!(retrieved.hits[0].memory, stream.memories()[0].id);
    let ids = pending.commit(&mut store, branch).unwrap();
    let last = store.event_at(branch, head + ids.len() as u64).unwrap();
    assert!(matches!(last.body, Body::Retrieved(_)));
    let cause = store.event_at(branch, head + ids.len() as u64 - 1).unwrap();
    assert_eq!(last.header.causes, vec![cause.id]);
    assert!(matches!(cause.body, Body::EmbeddingReturned(_)));
}

#[test]
fn a_reflection_asks_questions_recalls_and_stores_insights_citing_memories() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let llm = ScriptedRater(Mutex::new(VecDeque::from([
        // three observations, rated together
        r#"{"ratings": [8, 7, 3]}"#,
        // the questions
        "1. Why is Mei excited about the party?\n2. Who will Mei meet there?\n3. What does Mei paint?",
        // two insights citing statements
        r#"{"insights":[{"insight":"Mei looks forward to the party","evidence":[1,2]},{"insight":"Mei paints to relax","evidence":[3]}]}"#,
        // their ratings, in one call
        r#"{"ratings": [6, 4]}"#,
    ])));
    let gateway = Gateway::new(
        Arc::new(llm),
        Arc::new(KeywordEmbedder),
        Params::default(),
        RetryPolicy::default(),
        2,
    );
    let mei = AgentId(0);
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    let branch = store.create_root("main").unwrap();
    let texts: Vec<String> = [
        "Delphine invites Mei to a party at Marigold café",
        "Tamsin says she will come to the party",
        "Mei paints the pond at Millbrook park",
    ]
    .map(String::from)
    .to_vec();
    let mut pending = Pending::new();
    rt.block_on(remember(
        &gateway,
        Style::Chat,
        &Who {
            town: "Willowmere",
            agent: mei,
            name: "Mei Lin",
            summary: "Mei Lin is an art student.",
        },
        MemoryKind::Observation,
        &texts,
        &[],
        &[],
        60,
        &mut pending,
    ))
    .unwrap();
    pending.commit(&mut store, branch).unwrap();
    let fold = |store: &Store<_>| {
        let head = store.branch(branch).unwrap().head_seq;
        let mut minds = Minds::default();
        store.events(branch, 0, head).unwrap().iter().for_each(|e| minds.apply(e));
        minds
    };
    let minds = fold(&store);
    let settings =
        ReflectionSettings { threshold: 15, insights: 2, ..ReflectionSettings::default() };
    let sum = reflection_due(minds.stream(mei), 0, &settings).expect("8 + 7 + 3 passes 15");
    assert_eq!(sum, 18);
    assert!(
        reflection_due(minds.stream(mei), 0, &ReflectionSettings::default()).is_none(),
        "150 is not reached"
    );

    let mut pending = Pending::new();
    let added = rt
        .block_on(reflect(
            &gateway,
            Style::Chat,
            &Who {
                town: "Willowmere",
                agent: mei,
                name: "Mei Lin",
                summary: "Mei Lin is an art student.",
            },
            minds.stream(mei),
            sum,
            120,
            &settings,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
    assert_eq!(added.len(), 2);
    pending.commit(&mut store, branch).unwrap();
    let minds = fold(&store);
    let stream = minds.stream(mei);
    let reflections: Vec<_> =
        stream.memories().iter().filter(|m| m.kind == MemoryKind::Reflection).collect();
    assert_eq!(reflections.len(), 2);
    assert_eq!(reflections[0].description, "Mei looks forward to the party");
    assert_eq!(reflections[0].importance, 6);
    // Evidence points at memories of the stream, and the statement numbers map to them.
    for r in &reflections {
        assert!(!r.evidence.is_empty());
        for e in &r.evidence {
            assert!(stream.get(*e).is_some(), "evidence is a memory of the stream");
        }
    }
    let painted = stream.memories().iter().find(|m| m.description.contains("paints")).unwrap();
    assert!(
        reflections[1].evidence.contains(&painted.id)
            || reflections[0].evidence.contains(&painted.id)
    );
    let head = store.branch(branch).unwrap().head_seq;
    let started = store
        .events(branch, 0, head)
        .unwrap()
        .into_iter()
        .find_map(|e| match e.body {
            Body::ReflectionStarted(r) => Some(r),
            _ => None,
        })
        .unwrap();
    assert_eq!(started.importance_sum, 18);
    assert_eq!(started.questions.len(), 3);
    assert_eq!(started.questions[0], "Why is Mei excited about the party?");
}

fn scripted_gateway(answers: Vec<&'static str>) -> Gateway {
    let llm = ScriptedRater(Mutex::new(answers.into()));
    Gateway::new(
        Arc::new(llm),
        Arc::new(KeywordEmbedder),
        Params::default(),
        RetryPolicy::default(),
        2,
    )
}

#[test]
fn a_day_is_planned_remembered_and_decomposed_to_cover_its_stroke() {
    use hamlet_engine::mind::plan::{decompose, plan_day};
    use hamlet_log::event::{PlanLevel, PlanRef};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // At the times asked (08:00, 09:00, 12:00, 14:00, 17:00, 19:00, 21:00: the hour after
    // waking is the morning's, not asked), each activity opening with her name, as the
    // grammar writes it; and a server's stroke before 08:00, which is left out.
    let plan = r#"{"steps":[{"start":"07:30","activity":"Mei Lin sleeps in"},
        {"start":"08:00","activity":"Mei Lin has breakfast"},
        {"start":"09:00","activity":"Mei Lin goes to drawing class at the college"},
        {"start":"12:00","activity":"Mei Lin has lunch with Tamsin"},
        {"start":"14:00","activity":"Mei Lin paints at Millbrook park"},
        {"start":"17:00","activity":"Mei Lin goes to the party at the café"},
        {"start":"19:00","activity":"Mei Lin has dinner at home"},
        {"start":"21:00","activity":"Mei Lin reads in bed"}]}"#;
    // A server's times, not the quarter hours asked: kept, in order.
    let actions = r#"{"steps":[{"start":"07:00","activity":"get out of bed"},
        {"start":"07:05","activity":"brush teeth"},
        {"start":"07:50","activity":"dress"},
        {"start":"09:30","activity":"outside the stroke"}]}"#;
    let gateway = scripted_gateway(vec![plan, r#"{"rating": 3}"#, actions]);
    let mei = AgentId(0);
    let day1 = 86_400;
    let mut pending = Pending::new();
    let (made, _) = rt
        .block_on(plan_day(
            &gateway,
            Style::Chat,
            &Who {
                town: "Willowmere",
                agent: mei,
                name: "Mei Lin",
                summary: "Mei Lin is an art student.",
            },
            "Saturday 14 February 2026",
            "She painted.",
            "Mei Lin is going to the party at the café at 17:00.",
            420,
            day1,
            &[],
            None,
            &[],
            day1 + 25_200,
            Rulebook::CURRENT,
            &mut pending,
        ))
        .unwrap();
    assert_eq!(made.level, PlanLevel::Day);
    // The morning, then seven strokes, each until the next, the last until bedtime; then
    // sleep.
    let spans: Vec<(u64, u32)> =
        made.items.iter().map(|i| ((i.start_secs - day1) / 60, i.duration_secs / 60)).collect();
    assert_eq!(
        spans,
        [
            (420, 60),
            (480, 60),
            (540, 180),
            (720, 120),
            (840, 180),
            (1020, 120),
            (1140, 120),
            (1260, 90),
            (1350, 90)
        ]
    );
    assert_eq!(made.items[0].description, hamlet_engine::mind::plan::MORNING);
    assert_eq!(made.items[5].description, "goes to the party at the café", "the lead is off");
    assert_eq!(made.items[8].description, hamlet_engine::mind::plan::SLEEP);
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    let branch = store.create_root("main").unwrap();
    let ids = pending.commit(&mut store, branch).unwrap();
    let head = store.branch(branch).unwrap().head_seq;
    let events = store.events(branch, 0, head).unwrap();
    let plan_event = events.iter().find(|e| matches!(e.body, Body::PlanMade(_))).unwrap();
    let memory = events.iter().find_map(|e| match &e.body {
        Body::MemoryAdded(m) if m.kind == MemoryKind::Plan => Some((e, m)),
        _ => None,
    });
    let (memory_event, memory) = memory.expect("the plan is remembered");
    assert!(
        memory
            .description
            .starts_with("Mei Lin plans: 07:00 wakes up and gets ready for the day (60 min); 08:00 has breakfast (60 min); 09:00"),
        "{}",
        memory.description
    );
    assert!(memory_event.header.causes.contains(&plan_event.id));
    assert_eq!(ids.len(), events.len() - 1);

    let of = PlanRef { plan: plan_event.id, item: 0 };
    let mut pending = Pending::new();
    let (actions, _) = rt
        .block_on(decompose(
            &gateway,
            Style::Chat,
            &Who {
                town: "Willowmere",
                agent: mei,
                name: "Mei Lin",
                summary: "Mei Lin is an art student.",
            },
            "Saturday 14 February 2026",
            &made.items[0],
            Some(of),
            PlanLevel::Action,
            Rulebook::CURRENT,
            None,
            day1 + 25_200,
            &mut pending,
        ))
        .unwrap();
    assert_eq!(actions.decomposes, Some(of));
    let starts: Vec<u64> = actions.items.iter().map(|i| (i.start_secs - day1) / 60).collect();
    // The action outside the stroke is dropped; brushing teeth until 07:50 is cut to ten
    // minutes and dressing starts sooner.
    assert_eq!(starts, [420, 425, 435]);
    // The stroke is covered: a part lasts until the next begins, the last until the
    // morning ends at 08:00.
    let lasts: Vec<u32> = actions.items.iter().map(|i| i.duration_secs / 60).collect();
    assert_eq!(lasts, [5, 10, 45]);
}

#[test]
fn a_place_is_chosen_down_the_spatial_tree_preferring_where_the_agent_is() {
    use hamlet_engine::mind::plan::choose_place;
    use hamlet_engine::town::spatial::SpatialMemory;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut known = SpatialMemory::default();
    let mut put = |s: &str, a: &str, o: &str| {
        known
            .known
            .entry(s.into())
            .or_default()
            .entry(a.into())
            .or_default()
            .insert(o.into(), "idle".into());
    };
    put("Lin house", "kitchen", "stove");
    put("Lin house", "bedroom", "bed");
    put("Lin house", "bedroom", "easel");
    put("Marigold café", "counter", "coffee machine");
    let mei = AgentId(0);
    // Mei, where she is, doing `activity` (by rulebook 9 or before), the model answering
    // `answers` in turn: where she goes, the choice's position, and what was written.
    let place = |answers: Vec<&'static str>, here: (&str, &str), activity: &str, by_name: bool| {
        let gateway = scripted_gateway(answers);
        let mut pending = Pending::new();
        let who = Who {
            town: "Willowmere",
            agent: mei,
            name: "Mei Lin",
            summary: "Mei Lin is an art student.",
        };
        let home = Some("Lin house:bedroom");
        let (address, last) = rt
            .block_on(choose_place(
                &gateway,
                Style::Chat,
                &who,
                &known,
                here,
                home,
                activity,
                by_name,
                0,
                &mut pending,
            ))
            .unwrap();
        (address, last, pending)
    };
    // Asked at each level with more than one option: sector, arena, object.
    let (address, last, pending) = place(
        vec![r#"{"choice": "Lin house"}"#, r#"{"choice": "bedroom"}"#, r#"{"choice": "easel"}"#],
        ("Marigold café", "counter"),
        "paint",
        false,
    );
    assert_eq!(address, "Lin house:bedroom:easel");
    assert!(last.is_some());
    let asked: Vec<Vec<String>> = pending
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            Body::LlmRequested(r) => match &r.prompt {
                Prompt::Chat(m) => Some(
                    m[1].content
                        .lines()
                        .filter(|l| l.starts_with("Options:"))
                        .map(String::from)
                        .collect(),
                ),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        asked[0],
        ["Options: Marigold café [counter] | Lin house [bedroom, kitchen]"],
        "where it is comes first, each place with what it holds"
    );
    assert_eq!(asked[1], ["Options: bedroom [bed, easel] | kitchen [stove]"]);
    assert_eq!(asked[2], ["Options: bed | easel"], "objects hold nothing more");
    // The café has one arena and one object: after the sector, nothing more is asked; a
    // model that does not answer falls back to the first option, where the agent is.
    let (address, _, _) = place(
        vec!["no idea", "still no idea", "nope"],
        ("Marigold café", "counter"),
        "coffee",
        false,
    );
    assert_eq!(address, "Marigold café:counter:coffee machine");
    // Waking is done at home: only the object there is asked.
    let (address, _, pending) =
        place(vec![r#"{"choice": "bed"}"#], ("Marigold café", "counter"), "wakes up", false);
    assert_eq!(address, "Lin house:bedroom:bed");
    let asked = pending.events().iter().filter(|e| matches!(e.body, Body::LlmRequested(_))).count();
    assert_eq!(asked, 1, "no sector or arena asked");
    // By rulebook 9 a place the activity names is where it is done, unasked; the first
    // answer goes to the object; from the open ground the prompt says where it stands.
    for (by_name, answers) in [
        (true, vec![r#"{"choice": "easel"}"#]),
        (
            false,
            vec![
                r#"{"choice": "Lin house"}"#,
                r#"{"choice": "bedroom"}"#,
                r#"{"choice": "easel"}"#,
            ],
        ),
    ] {
        let asked_for = answers.len();
        let (address, _, pending) =
            place(answers, ("", ""), "paints in the bedroom at Lin house", by_name);
        let prompts: Vec<String> = pending
            .events()
            .iter()
            .filter_map(|e| match &e.body {
                Body::LlmRequested(r) => match &r.prompt {
                    Prompt::Chat(m) => m.last().map(|m| m.content.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert_eq!(prompts.len(), asked_for, "{prompts:?}");
        if by_name {
            assert_eq!(address, "Lin house:bedroom:easel");
            assert!(prompts[0].contains("\nMei Lin is in the street. Next:"), "{}", prompts[0]);
        } else {
            assert!(!prompts[0].contains("the street"), "{}", prompts[0]);
        }
    }
}

/// Mei Lin (agent 0), walking at 17:00 of day 0, with `stream` for her memories.
fn mei_walking(
    stream: &hamlet_engine::mind::memory::MemoryStream,
    rulebook: Rulebook,
) -> hamlet_engine::mind::respond::Situation<'_> {
    hamlet_engine::mind::respond::Situation {
        town: "Willowmere",
        agent: AgentId(0),
        name: "Mei Lin",
        summary: "Mei Lin is an art student.",
        time: "day0 17:00",
        status: "walking",
        stream,
        rulebook,
    }
}

#[test]
fn reacting_speaking_interviews_and_the_inner_voice_are_events_with_causes() {
    use hamlet_engine::mind::respond::{answer_interview, hear_inner_voice, should_react, speak};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let gateway = scripted_gateway(vec![
        r#"{"rating": 7}"#,                                                 // seed memory
        r#"{"answer": "yes"}"#,                                             // react?
        r#"{"say": "Tamsin! Are you coming tonight?", "end": false}"#,      // a line
        r#"{"say": "Mei: Tamsin, are you coming tonight?", "end": false}"#, // its echo
        "I am going to Delphine's party at the café.", // interview, not remembered
        "Yes, the party at six.",                      // interview, remembered
        r#"{"rating": 4}"#,                            // ... its rating
        "go and buy paint at the Thistle supply store", // inner voice
        r#"{"rating": 5}"#,                            // ... its rating
    ]);
    let mei = AgentId(0);
    let mut minds = Minds::default();
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    let branch = store.create_root("main").unwrap();
    let mut commit = |pending: Pending, minds: &mut Minds| {
        let from = store.branch(branch).unwrap().head_seq + 1;
        pending.commit(&mut store, branch).unwrap();
        let head = store.branch(branch).unwrap().head_seq;
        let events = store.events(branch, from, head).unwrap();
        events.iter().for_each(|e| minds.apply(e));
        events
    };
    let mut pending = Pending::new();
    let seed = vec!["Delphine invites Mei to a party at Marigold café".to_owned()];
    rt.block_on(remember(
        &gateway,
        Style::Chat,
        &Who {
            town: "Willowmere",
            agent: mei,
            name: "Mei Lin",
            summary: "Mei Lin is an art student.",
        },
        MemoryKind::Seed,
        &seed,
        &[],
        &[],
        0,
        &mut pending,
    ))
    .unwrap();
    commit(pending, &mut minds);

    let stream = minds.stream(mei).clone();
    let who = mei_walking(&stream, Rulebook::CURRENT);
    let mut pending = Pending::new();
    let (react, at) = rt
        .block_on(should_react(
            &gateway,
            Style::Chat,
            &who,
            "Tamsin Hale is walking to the party",
            "Tamsin Hale",
            60,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
    assert!(react && at.is_some());
    let retrievals =
        pending.events().iter().filter(|e| matches!(e.body, Body::Retrieved(_))).count();
    assert_eq!(retrievals, 2, "the two retrievals the paper names");

    let conversation = EventId([7; 32]);
    let (turn, _) = rt
        .block_on(speak(
            &gateway,
            Style::Chat,
            &who,
            "Tamsin Hale",
            "Millbrook park",
            conversation,
            &[],
            None,
            None,
            60,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
    assert_eq!(turn.turn.say, "Tamsin! Are you coming tonight?");
    assert!(!turn.echo);
    let said =
        pending.events().iter().rev().find(|e| matches!(e.body, Body::DialogueTurn(_))).unwrap();
    assert!(said.causes.contains(&conversation), "a line names its conversation");

    // The same words again, after they were said: nothing is said, and the talk ends.
    let so_far = [("Tamsin Hale".to_owned(), "Are you coming tonight, Tamsin?".to_owned())];
    let (again, _) = rt
        .block_on(speak(
            &gateway,
            Style::Chat,
            &who,
            "Tamsin Hale",
            "Millbrook park",
            conversation,
            &so_far,
            None,
            None,
            60,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
    assert!(again.echo && again.turn.end && again.turn.say.is_empty(), "{again:?}");
    let Some(Body::DialogueTurn(silent)) =
        pending.events().iter().rev().map(|e| &e.body).find(|b| matches!(b, Body::DialogueTurn(_)))
    else {
        unreachable!()
    };
    assert!(silent.text.is_empty() && silent.ends, "{silent:?}");

    let asked = EventId([8; 32]);
    let (answer, _) = rt
        .block_on(answer_interview(
            &gateway,
            Style::Chat,
            &who,
            asked,
            "What are you doing tonight?",
            false,
            60,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
    assert_eq!(answer, "I am going to Delphine's party at the café.");
    let memories_before =
        pending.events().iter().filter(|e| matches!(e.body, Body::MemoryAdded(_))).count();
    assert_eq!(memories_before, 0, "an interview changes nothing unless asked to be remembered");
    rt.block_on(answer_interview(
        &gateway,
        Style::Chat,
        &who,
        asked,
        "When?",
        true,
        60,
        &RetrievalSettings::default(),
        &mut pending,
    ))
    .unwrap();
    let intention = rt
        .block_on(hear_inner_voice(
            &gateway,
            Style::Chat,
            &who,
            EventId([9; 32]),
            "buy more paint",
            60,
            &mut pending,
        ))
        .unwrap();
    assert_eq!(intention, "Mei Lin intends to go and buy paint at the Thistle supply store");
    let events = commit(pending, &mut minds);
    let kinds: Vec<MemoryKind> = minds.stream(mei).memories().iter().map(|m| m.kind).collect();
    assert_eq!(kinds, [MemoryKind::Seed, MemoryKind::Chat, MemoryKind::Plan]);
    assert_eq!(events.iter().filter(|e| matches!(e.body, Body::InterviewAnswered(_))).count(), 2);
}

#[test]
fn by_rulebook_3_a_reaction_lists_what_it_remembers_in_the_order_it_was_made() {
    use hamlet_engine::mind::respond::should_react;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let gateway = scripted_gateway(vec![
        r#"{"rating": 2}"#,
        r#"{"rating": 2}"#,
        r#"{"rating": 2}"#,
        r#"{"answer": "no"}"#,
        r#"{"answer": "no"}"#,
    ]);
    let mei = AgentId(0);
    let mut minds = Minds::default();
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    let branch = store.create_root("main").unwrap();
    let who = Who {
        town: "Willowmere",
        agent: mei,
        name: "Mei Lin",
        summary: "Mei Lin is an art student.",
    };
    // The last made is the most relevant to what she notices: by score it comes first.
    let made = [
        "Mei Lin paints in the morning light",
        "Mei Lin keeps a jar of brushes by the window",
        "Tamsin Hale is walking to the party at the café",
    ];
    for (i, memory) in made.iter().enumerate() {
        let mut pending = Pending::new();
        rt.block_on(remember(
            &gateway,
            Style::Chat,
            &who,
            MemoryKind::Observation,
            &[(*memory).to_owned()],
            &[],
            &[],
            60 * i as u64,
            &mut pending,
        ))
        .unwrap();
        let from = store.branch(branch).unwrap().head_seq + 1;
        pending.commit(&mut store, branch).unwrap();
        let head = store.branch(branch).unwrap().head_seq;
        store.events(branch, from, head).unwrap().iter().for_each(|e| minds.apply(e));
    }
    let stream = minds.stream(mei).clone();
    let remembered = |rulebook: Rulebook| {
        let who = mei_walking(&stream, rulebook);
        let mut pending = Pending::new();
        rt.block_on(should_react(
            &gateway,
            Style::Chat,
            &who,
            "Tamsin Hale is walking to the party",
            "Tamsin Hale",
            600,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
        let asked = pending
            .events()
            .iter()
            .find_map(|e| match &e.body {
                Body::LlmRequested(r) => Some(r.clone()),
                _ => None,
            })
            .expect("a question");
        let Prompt::Chat(messages) = &asked.prompt else { panic!("{:?}", asked.prompt) };
        (asked.template_version, messages[1].content.clone())
    };
    let at = |text: &str, memory: &str| text.find(memory).unwrap_or_else(|| panic!("{text}"));

    let (version, text) = remembered(Rulebook::CURRENT);
    assert_eq!(version, 4, "react v4 by rulebook 3");
    assert!(text.contains("\n\nWhat Mei Lin remembers: "), "memories first: {text}");
    assert!(at(&text, made[0]) < at(&text, made[1]) && at(&text, made[1]) < at(&text, made[2]));
    assert!(text.contains("What Mei Lin is doing: walking"), "{text}");

    let (version, text) = remembered(Rulebook::FIRST);
    assert_eq!(version, 3, "the version rulebook 1 recorded");
    assert!(text.contains("\n\nIt is day0 17:00. Mei Lin is walking."), "{text}");
    assert!(at(&text, made[2]) < at(&text, made[0]), "by score, the most relevant first: {text}");
}

/// The questions of each `turn` call in `pending`, in order.
fn turn_questions(pending: &Pending) -> Vec<String> {
    pending
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            Body::LlmRequested(r) if r.template == "turn" => match &r.prompt {
                Prompt::Chat(m) => Some(m[1].content.clone()),
                Prompt::Text(t) => Some(t.clone()),
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_line_that_names_its_speaker_or_repeats_an_earlier_talk_is_asked_again_with_why() {
    use hamlet_engine::mind::respond::{speak, LineCheck};
    use hamlet_engine::mind::validate::words;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let earlier_line = "Oh Tamsin, it has been a long time without you. How are you?";
    let gateway = scripted_gateway(vec![
        r#"{"say": "Hi, Mei! Lovely evening.", "end": false}"#, // names its speaker
        r#"{"say": "Oh Tamsin, it has been a long time without you! How are you?", "end": false}"#,
        r#"{"say": "Tamsin, the party starts at six: will you come?", "end": false}"#,
    ]);
    let stream = hamlet_engine::mind::memory::MemoryStream::default();
    let who = mei_walking(&stream, Rulebook::CURRENT);
    let earlier = vec![(words(earlier_line), earlier_line.to_owned())];
    let check = LineCheck { facts: None, earlier: &earlier, speech: true };
    let mut pending = Pending::new();
    let conversation = EventId([7; 32]);
    let (spoken, _) = rt
        .block_on(speak(
            &gateway,
            Style::Chat,
            &who,
            "Tamsin Hale",
            "Millbrook park",
            conversation,
            &[],
            Some("to invite Tamsin to the party"),
            Some(&check),
            60,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
    assert_eq!(spoken.turn.say, "Tamsin, the party starts at six: will you come?");
    assert!(!spoken.echo);
    // Three tries, each recorded; the second and third told what was wrong with the last.
    let asked = turn_questions(&pending);
    assert_eq!(asked.len(), 3);
    assert!(!asked[0].contains("was not used"));
    assert!(asked[0].contains("wants from this talk: to invite Tamsin to the party"));
    assert!(asked[1].contains("\"Hi, Mei! Lovely evening.\" was not used: Mei Lin would not say"));
    assert!(asked[2].contains("repeats a line already said in another conversation"));
    // Without the check (an older rulebook, or the mechanism left out) the first is said.
    let gateway = scripted_gateway(vec![r#"{"say": "Hi, Mei! Lovely evening.", "end": false}"#]);
    let mut pending = Pending::new();
    let (plain, _) = rt
        .block_on(speak(
            &gateway,
            Style::Chat,
            &who,
            "Tamsin Hale",
            "Millbrook park",
            conversation,
            &[],
            None,
            None,
            60,
            &RetrievalSettings::default(),
            &mut pending,
        ))
        .unwrap();
    assert_eq!(plain.turn.say, "Hi, Mei! Lovely evening.");
}

#[test]
fn by_rulebook_7_a_line_that_misnames_the_listener_or_reads_the_plan_aloud_is_asked_again() {
    use hamlet_engine::mind::respond::{speak, LineCheck};
    use hamlet_engine::mind::validate::Facts;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let everyone: Vec<String> =
        ["Mei Lin", "Tamsin Hale", "Sefa Okafor"].map(String::from).to_vec();
    let facts = Facts::of("Mei Lin", &[], "Lin house:bedroom", None, &everyone, &[]);
    let answers = [
        r#"{"say": "Hi Sefa! Lovely evening.", "end": false}"#, // Tamsin is the one spoken to
        r#"{"say": "I'll have 540 minutes free, so see you at 17:46.", "end": false}"#,
        r#"{"say": "Hi Tamsin! Will you come to the party at six?", "end": false}"#,
    ];
    let stream = hamlet_engine::mind::memory::MemoryStream::default();
    let said = |rulebook: Rulebook, speech: bool| {
        let gateway = scripted_gateway(answers.to_vec());
        let who = mei_walking(&stream, rulebook);
        let check = LineCheck { facts: Some(&facts), earlier: &[], speech };
        let mut pending = Pending::new();
        let (spoken, _) = rt
            .block_on(speak(
                &gateway,
                Style::Chat,
                &who,
                "Tamsin Hale",
                "Millbrook park",
                EventId([7; 32]),
                &[],
                None,
                Some(&check),
                60,
                &RetrievalSettings::default(),
                &mut pending,
            ))
            .unwrap();
        (spoken.turn.say, turn_questions(&pending))
    };
    let (say, asked) = said(Rulebook::CURRENT, Rulebook::CURRENT.checks_speech());
    assert_eq!(say, "Hi Tamsin! Will you come to the party at six?");
    assert_eq!(asked.len(), 3);
    assert!(asked[1].contains("calls the person Mei Lin is talking to \"Sefa\""), "{}", asked[1]);
    assert!(asked[2].contains("\"540 minutes free\" reads a schedule aloud"), "{}", asked[2]);
    // Rulebook 6 said the first.
    let six = Rulebook::numbered(6).unwrap();
    assert!(!six.checks_speech());
    let (say, asked) = said(six, six.checks_speech());
    assert_eq!((say.as_str(), asked.len()), ("Hi Sefa! Lovely evening.", 1));
}
