//! The real embedded models: the default Qwen2.5-Coder-1.5B answers a schema-constrained
//! question, and all-MiniLM-L6-v2 gives the measured similarities. The models are fetched
//! by `./hamlet-dev test` before the tests run; without them these tests fail and say how
//! to fetch them (set HAMLET_SKIP_MODEL_TESTS=1 to skip them deliberately).

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::config::{self, Env, FileSettings, Flags};
use hamlet_gateway::models::{self, ModelChoice};
use hamlet_gateway::{Call, EmbedCall};

fn skip() -> bool {
    std::env::var_os("HAMLET_SKIP_MODEL_TESTS").is_some_and(|v| v == "1")
}

fn installed(choice: ModelChoice) -> std::path::PathBuf {
    models::installed(choice).unwrap_or_else(|| {
        panic!(
            "the {choice} model is not installed: run `./hamlet-dev setup` (it fetches every model the tests use) \
             or `hamlet models fetch --model {choice}`; HAMLET_SKIP_MODEL_TESTS=1 skips these tests"
        )
    })
}

#[test]
fn the_default_model_rates_importance_within_its_schema() {
    if skip() {
        return;
    }
    installed(ModelChoice::Default);
    installed(ModelChoice::Embeddings);
    let settings = config::resolve(
        &FileSettings::default(),
        &Env::default(),
        &Flags { slots: Some(2), ..Flags::default() },
    )
    .unwrap();
    let llm = config::llm_backend(&settings).unwrap();
    let embed = config::embed_backend(&settings).unwrap();
    let gateway = config::gateway(&settings, llm, embed);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ask = |memory: &str| {
        let call = Call::chat(
            "importance",
            "On a scale of 1 to 10, where 1 is purely mundane (brushing teeth, making the bed) and \
             10 is extremely poignant (a break-up, a college acceptance), rate the likely \
             poignancy of the memory. Answer in JSON.",
            &format!("Memory: {memory}"),
            Shape::Importance,
        );
        runtime.block_on(gateway.ask(&call)).unwrap()
    };
    let teeth = ask("Mei Lin is brushing her teeth");
    let college = ask("Mei Lin got the letter: she was accepted to the college of her dreams");
    for answered in [&teeth, &college] {
        assert!(!answered.fallback, "{:?}", answered.events);
        assert!(matches!(answered.answer, Answer::Importance(1..=10)));
    }
    let (Answer::Importance(low), Answer::Importance(high)) = (&teeth.answer, &college.answer)
    else {
        unreachable!()
    };
    assert!(low < high, "brushing teeth ({low}) rates below a college acceptance ({high})");
    // Same question, same seed: the same answer, token for token.
    let again = ask("Mei Lin is brushing her teeth");
    let text = |a: &hamlet_gateway::Answered| match a.events.last() {
        Some(hamlet_log::Body::LlmResponded(r)) => r.text.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(text(&again), text(&teeth));
}

#[test]
fn the_embedding_model_gives_the_measured_similarities() {
    if skip() {
        return;
    }
    installed(ModelChoice::Embeddings);
    let settings =
        config::resolve(&FileSettings::default(), &Env::default(), &Flags::default()).unwrap();
    let embed = config::embed_backend(&settings).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let call = EmbedCall::new(
        "test",
        vec![
            "Isabella is planning a Valentine's Day party".into(),
            "Isabella invites friends to a party at Hobbs Cafe".into(),
            "John brushes his teeth".into(),
        ],
    );
    let vectors = runtime.block_on(embed.embed(&call, [0; 32])).unwrap().vectors;
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert_eq!(vectors[0].len(), 384);
    let party = dot(&vectors[0], &vectors[1]);
    let teeth = dot(&vectors[0], &vectors[2]);
    assert!((party - 0.6057).abs() < 0.005, "party {party}");
    assert!((teeth + 0.0202).abs() < 0.005, "teeth {teeth}");
}

#[test]
fn the_small_model_cites_only_the_statements_it_was_given() {
    if skip() {
        return;
    }
    installed(ModelChoice::Small);
    let settings = config::resolve(
        &FileSettings::default(),
        &Env::default(),
        &Flags { model: Some("small".into()), slots: Some(1), ..Flags::default() },
    )
    .unwrap();
    let llm = config::llm_backend(&settings).unwrap();
    let embed = config::embed_backend(&settings).unwrap();
    let gateway = config::gateway(&settings, llm, embed);
    // The question a real run asked, word for word, when this model cited a tenth of nine.
    let statements = [
        "Delphine Ashcombe is married to Tobias Ashcombe",
        "Delphine Ashcombe and Ilona Varga have been close friends for twenty years",
        "Delphine Ashcombe plans: 07:00 Wake up (30 min); 07:30 Go to the café (30 min); 08:00 \
         Take a shower (30 min); 08:30 Go to the café (30 min); 09:00 Take a shower (30 min); \
         09:30 Go to the café (30 min); 10:00 Take a shower (30 min); 10:30 Go to the café (30 min)",
        "Delphine Ashcombe wants to invite her friends and neighbours to the party at Marigold café",
        "Rowan Ashcombe is a student at Willowmere college and lives in Reedbank dorm",
        "Delphine Ashcombe is the mother of Rowan Ashcombe",
        "Tobias Ashcombe is Eat breakfast",
        "Tobias Ashcombe is Wake up",
        "Ashcombe house:living room:bookshelf is idle",
    ];
    let listed: Vec<String> =
        statements.iter().enumerate().map(|(i, s)| format!("{}. {s}", i + 1)).collect();
    let mut call = Call::chat(
        "insights",
        "You draw high-level insights about a character from numbered statements. Each insight is\n\
         one sentence and cites the numbers of the statements it rests on.\n\
         Reply with JSON: {\"insights\": [{\"insight\": \"...\", \"evidence\": [n, ...]}, ...]}.",
        &format!(
            "Statements about Delphine Ashcombe:\n{}\nGive 5 insights about Delphine Ashcombe.",
            listed.join("\n")
        ),
        Shape::Insights { count: 5, statements: 9 },
    );
    call.max_tokens = Some(320);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let answered = runtime.block_on(gateway.ask(&call)).unwrap();
    assert!(!answered.fallback, "{:?}", answered.events);
    let Answer::Insights(insights) = &answered.answer else { panic!("{:?}", answered.answer) };
    assert_eq!(insights.len(), 5);
    assert!(insights.iter().flat_map(|i| &i.evidence).all(|n| (1..=9).contains(n)));
}

#[test]
fn a_slot_given_another_slots_cache_answers_as_if_it_had_read_the_prompt() {
    if skip() {
        return;
    }
    installed(ModelChoice::Small);
    let gateway = || {
        let settings = config::resolve(
            &FileSettings::default(),
            &Env::default(),
            &Flags { model: Some("small".into()), slots: Some(3), ..Flags::default() },
        )
        .unwrap();
        let llm = config::llm_backend(&settings).unwrap();
        let embed = config::embed_backend(&settings).unwrap();
        config::gateway(&settings, llm, embed)
    };
    // A long shared opening (an agent's preamble), then two questions of different kinds for
    // different agents: the second takes an empty slot of its own, given the first's cache.
    let preamble = "Willowmere is a small town by a river. Delphine Ashcombe runs the Marigold \
                    café; she is warm, busy and remembers every regular's order. Her husband \
                    Tobias teaches at the college and their son Rowan studies there and lives \
                    in the Reedbank dorm. Nnamdi Okafor keeps the Crooked Lamp bar, Ilona Varga \
                    the Thistle supply store, Oskar Lindqvist works at the Fernside market, and \
                    Juniper Quill paints in a flat on Brindle Row. Wendell Penhallow is running \
                    for the town council and talks about it to anyone who will listen.";
    let ask = |gateway: &hamlet_gateway::Gateway, agent: u32, question: &str| {
        let mut call = Call::chat("text", preamble, question, Shape::Text).template(question, 1);
        call.agent = Some(hamlet_log::event::AgentId(agent));
        call.max_tokens = Some(24);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let answered = runtime.block_on(gateway.ask(&call)).unwrap();
        match answered.events.last() {
            Some(hamlet_log::Body::LlmResponded(r)) => (r.text.clone(), r.tokens_cached),
            other => panic!("{other:?}"),
        }
    };
    let shared = gateway();
    let (_, cold) = ask(&shared, 1, "Who runs the café?");
    assert_eq!(cold, 0, "nothing cached yet");
    let (copied, reused) = ask(&shared, 2, "Where does Rowan live?");
    assert!(reused >= 100, "the preamble came from the other slot: {reused} tokens reused");
    let (fresh, none) = ask(&gateway(), 2, "Where does Rowan live?");
    assert_eq!(none, 0);
    assert_eq!(copied, fresh, "the copied cache answers as the prompt read afresh");
}

/// Goal: a slot never claims a token its cache does not hold. Method: an answer cut at its
/// length ends on a token that was sampled but never decoded; a second prompt that goes on
/// from that answer reuses the first prompt and the answer but that last token, and answers
/// as a fresh gateway does.
#[test]
fn an_answer_cut_at_its_length_leaves_only_decoded_tokens_in_the_cache() {
    if skip() {
        return;
    }
    installed(ModelChoice::Small);
    let gateway = || {
        let settings = config::resolve(
            &FileSettings::default(),
            &Env::default(),
            &Flags { model: Some("small".into()), slots: Some(1), ..Flags::default() },
        )
        .unwrap();
        let llm = config::llm_backend(&settings).unwrap();
        let embed = config::embed_backend(&settings).unwrap();
        config::gateway(&settings, llm, embed)
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ask = |gateway: &hamlet_gateway::Gateway, text: &str, max: u32| {
        let mut call = Call::chat("text", "", "", Shape::Text);
        call.prompt = hamlet_log::event::Prompt::Text(text.to_owned());
        call.max_tokens = Some(max);
        let answered = runtime.block_on(gateway.ask(&call)).unwrap();
        match answered.events.last() {
            Some(hamlet_log::Body::LlmResponded(r)) => {
                (r.text.clone(), r.tokens_prompt, r.tokens_completion, r.tokens_cached)
            }
            other => panic!("{other:?}"),
        }
    };
    let opening = "The town of Willowmere wakes slowly. At the Marigold café, Delphine Ashcombe";
    let shared = gateway();
    let (said, read, made, _) = ask(&shared, opening, 6);
    assert_eq!(made, 6, "cut at its length: {said:?}");
    let next = format!("{opening}{said} Meanwhile, at the Crooked Lamp bar,");
    let (warm, _, _, cached) = ask(&shared, &next, 12);
    assert!(cached >= read, "the first prompt is reused: {cached} of {read}");
    assert!(cached < read + made, "the answer's last token was never decoded: {cached} cached");
    let (fresh, _, _, none) = ask(&gateway(), &next, 12);
    assert_eq!(none, 0);
    assert_eq!(warm, fresh, "the reused cache answers as the prompt read afresh");
}
