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
        let causes: Vec<Cause> =
            rated_at.into_iter().chain(vectors_at).map(Cause::Pending).collect();
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
