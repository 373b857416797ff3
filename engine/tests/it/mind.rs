//! Remembering and recalling through the gateway, committed to a store, folded back: each
//! memory carries its rating and embedding, and its causes lead back to the prompt that
//! rated it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use hamlet_engine::mind::memory::Minds;
use hamlet_engine::mind::prompt::Style;
use hamlet_engine::mind::retrieval::RetrievalSettings;
use hamlet_engine::mind::think::{recall, remember};
use hamlet_engine::pending::Pending;
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
        Box::pin(async move { Ok(Vectors { vectors, tokens: 5 }) })
    }
}

#[test]
fn memories_are_rated_embedded_committed_and_traceable_to_their_prompt() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let llm = ScriptedRater(Mutex::new(VecDeque::from([
        r#"{"rating": 9}"#,
        "this is blank",
        r#"{"rating": 2}"#,
    ])));
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
            mei,
            "Mei Lin",
            MemoryKind::Observation,
            &texts,
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
    assert_eq!(seen_prompt.as_deref(), Some("Mei Lin remembers: Mei brushes her teeth"));

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
