//! The mind's steps that need a model, as batches of events: remembering (each memory
//! rated for importance and embedded) and retrieving (the query embedded, memories ranked).
//! Every event names what led to it, so a memory points at the rating and the embedding it
//! was made from, and a retrieval at the embedding of its query.

use std::collections::BTreeMap;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::{EmbedCall, Gateway, GatewayError};
use hamlet_log::event::{AgentId, MemoryAdded, MemoryKind, Retrieved};
use hamlet_log::{Body, EventId};

use super::memory::MemoryStream;
use super::prompt::{template, PromptError, Style};
use super::retrieval::{retrieve, RetrievalSettings};
use crate::pending::{Cause, Pending, PendingId};

/// Why thinking stopped.
#[derive(Debug, thiserror::Error)]
pub enum ThinkError {
    /// The gateway could not answer (the events it recorded are in the batch).
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    /// A prompt could not be rendered.
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

/// Pushes the events of a gateway call; returns the last one's position.
fn push_events(
    pending: &mut Pending,
    now: u64,
    events: &[Body],
    causes: &[Cause],
) -> Option<PendingId> {
    pending.push_chain(now, events.iter().cloned(), causes)
}

/// Rates and embeds new memories of `agent`, and adds them to the batch: for each, the
/// importance call's events, then (once for all) the embedding's, then a `MemoryAdded`
/// caused by its rating and the embedding. Returns the memories' positions.
#[allow(clippy::too_many_arguments)]
pub async fn remember(
    gateway: &Gateway,
    style: Style,
    agent: AgentId,
    name: &str,
    kind: MemoryKind,
    descriptions: &[String],
    evidence: &[EventId],
    causes: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<Vec<PendingId>, ThinkError> {
    let importance = template("importance")?;
    let mut ratings = Vec::with_capacity(descriptions.len());
    for description in descriptions {
        let vars = BTreeMap::from([("agent", name.to_owned()), ("memory", description.clone())]);
        let mut call = importance.call(&vars, style, Shape::Importance)?;
        call.agent = Some(agent);
        call.max_tokens = Some(16);
        let answered = match gateway.ask(&call).await {
            Ok(a) => a,
            Err(e) => {
                push_events(pending, now, e.events(), &[]);
                return Err(e.into());
            }
        };
        let last = push_events(pending, now, &answered.events, &[]);
        let rating = match answered.answer {
            Answer::Importance(r) => r,
            _ => 5,
        };
        ratings.push((rating, last));
    }
    let mut embed = EmbedCall::new("memory", descriptions.to_vec());
    embed.agent = Some(agent);
    let embedded = match gateway.embed(&embed).await {
        Ok(e) => e,
        Err(e) => {
            push_events(pending, now, e.events(), &[]);
            return Err(e.into());
        }
    };
    let vectors_at = push_events(pending, now, &embedded.events, &[]);
    let mut out = Vec::with_capacity(descriptions.len());
    for ((description, (rating, rated_at)), vector) in
        descriptions.iter().zip(ratings).zip(embedded.vectors)
    {
        let causes: Vec<Cause> = causes
            .iter()
            .copied()
            .chain(rated_at.into_iter().chain(vectors_at).map(Cause::Pending))
            .collect();
        let body = Body::MemoryAdded(MemoryAdded {
            agent,
            kind,
            description: description.clone(),
            importance: rating,
            embedding: vector,
            evidence: evidence.to_vec(),
        });
        out.push(pending.push(now, body, &causes));
    }
    Ok(out)
}

/// Embeds `query` and ranks `stream`'s memories for it; adds the embedding's events and the
/// `Retrieved` event (caused by the query's embedding) to the batch and returns the latter
/// with its position.
pub async fn recall(
    gateway: &Gateway,
    agent: AgentId,
    stream: &MemoryStream,
    query: &str,
    now: u64,
    settings: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(Retrieved, PendingId), ThinkError> {
    let mut embed = EmbedCall::new("query", vec![query.to_owned()]);
    embed.agent = Some(agent);
    let embedded = match gateway.embed(&embed).await {
        Ok(e) => e,
        Err(e) => {
            push_events(pending, now, e.events(), &[]);
            return Err(e.into());
        }
    };
    let vector_at = push_events(pending, now, &embedded.events, &[]);
    let query_vector = embedded.vectors.into_iter().next().unwrap_or_default();
    let retrieved = retrieve(agent, stream, query, &query_vector, now, settings, |_| true);
    let causes: Vec<Cause> = vector_at.into_iter().map(Cause::Pending).collect();
    let at = pending.push(now, Body::Retrieved(retrieved.clone()), &causes);
    Ok((retrieved, at))
}

/// When and how an agent reflects (the paper's defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct ReflectionSettings {
    /// Summed importance of memories since the last reflection that triggers one.
    pub threshold: u32,
    /// How many recent memories the questions are drawn from.
    pub recent: usize,
    /// How many questions.
    pub questions: usize,
    /// How many insights.
    pub insights: u8,
    /// How many statements the insights may cite, at most.
    pub statements: usize,
}

impl Default for ReflectionSettings {
    fn default() -> ReflectionSettings {
        ReflectionSettings {
            threshold: 150,
            recent: 100,
            questions: 3,
            insights: 5,
            statements: 24,
        }
    }
}

/// The summed importance since `since_secs` if it reaches the threshold.
pub fn reflection_due(
    stream: &MemoryStream,
    since_secs: u64,
    settings: &ReflectionSettings,
) -> Option<u32> {
    let sum = stream.importance_since(since_secs);
    (sum >= settings.threshold).then_some(sum)
}

/// The questions in a model's text: one per line, numbering and bullets removed.
pub fn questions_in(text: &str, most: usize) -> Vec<String> {
    text.lines()
        .map(|l| {
            l.trim().trim_start_matches(|c: char| {
                c.is_ascii_digit() || matches!(c, '.' | ')' | '-' | '*' | ' ')
            })
        })
        .map(str::trim)
        .filter(|l| l.len() > 3)
        .take(most)
        .map(str::to_owned)
        .collect()
}

/// Reflects: the recent memories raise questions, each question recalls memories, and the
/// recalled statements yield insights that cite them. The insights enter the memory stream
/// as reflections whose evidence is the memories cited — reflections on reflections form a
/// tree. Returns the reflections' positions (none when the model raised no question or
/// drew no insight: the events say so).
#[allow(clippy::too_many_arguments)]
pub async fn reflect(
    gateway: &Gateway,
    style: Style,
    agent: AgentId,
    name: &str,
    stream: &MemoryStream,
    importance_sum: u32,
    now: u64,
    settings: &ReflectionSettings,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<Vec<PendingId>, ThinkError> {
    let listed: Vec<String> =
        stream.recent(settings.recent).iter().map(|m| format!("- {}", m.description)).collect();
    let vars = BTreeMap::from([("agent", name.to_owned()), ("memories", listed.join("\n"))]);
    let mut call = template("reflection_questions")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(agent);
    call.max_tokens = Some(96);
    let answered = match gateway.ask(&call).await {
        Ok(a) => a,
        Err(e) => {
            push_events(pending, now, e.events(), &[]);
            return Err(e.into());
        }
    };
    let asked_at = push_events(pending, now, &answered.events, &[]);
    let questions = match &answered.answer {
        Answer::Text(t) if !answered.fallback => questions_in(t, settings.questions),
        _ => Vec::new(),
    };
    let started = pending.push(
        now,
        Body::ReflectionStarted(hamlet_log::event::ReflectionStarted {
            agent,
            importance_sum,
            questions: questions.clone(),
        }),
        &asked_at.into_iter().map(Cause::Pending).collect::<Vec<_>>(),
    );
    if questions.is_empty() {
        return Ok(Vec::new());
    }
    let mut cited: Vec<EventId> = Vec::new();
    let mut recalled_at = Vec::new();
    for question in &questions {
        let (retrieved, at) =
            recall(gateway, agent, stream, question, now, retrieval, pending).await?;
        recalled_at.push(at);
        for hit in retrieved.hits {
            if !cited.contains(&hit.memory) {
                cited.push(hit.memory);
            }
        }
    }
    cited.truncate(settings.statements);
    if cited.is_empty() {
        return Ok(Vec::new());
    }
    let statements: Vec<String> = cited
        .iter()
        .enumerate()
        .filter_map(|(i, id)| stream.get(*id).map(|m| format!("{}. {}", i + 1, m.description)))
        .collect();
    let vars = BTreeMap::from([
        ("agent", name.to_owned()),
        ("statements", statements.join("\n")),
        ("count", settings.insights.to_string()),
    ]);
    let shape = Shape::Insights { count: settings.insights, statements: cited.len() as u16 };
    let mut call = template("insights")?.call(&vars, style, shape)?;
    call.agent = Some(agent);
    call.max_tokens = Some(320);
    let mut causes: Vec<Cause> = vec![Cause::Pending(started)];
    causes.extend(recalled_at.iter().copied().map(Cause::Pending));
    let answered = match gateway.ask(&call).await {
        Ok(a) => a,
        Err(e) => {
            push_events(pending, now, e.events(), &causes);
            return Err(e.into());
        }
    };
    let insights_at = push_events(pending, now, &answered.events, &causes);
    let Answer::Insights(insights) = answered.answer else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for insight in insights {
        let evidence: Vec<EventId> = insight
            .evidence
            .iter()
            .filter_map(|n| cited.get(usize::from(*n).checked_sub(1)?).copied())
            .collect();
        let because: Vec<Cause> = insights_at.into_iter().map(Cause::Pending).collect();
        out.extend(
            remember(
                gateway,
                style,
                agent,
                name,
                MemoryKind::Reflection,
                &[insight.text],
                &evidence,
                &because,
                now,
                pending,
            )
            .await?,
        );
    }
    Ok(out)
}
