//! The mind's steps that need a model, as batches of events: remembering (each memory
//! rated for importance and embedded) and retrieving (the query embedded, memories ranked).
//! Every event names what led to it, so a memory points at the rating and the embedding it
//! was made from, and a retrieval at the embedding of its query.

use std::collections::BTreeMap;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::{Answered, Call, EmbedCall, Embedded, Gateway, GatewayError};
use hamlet_log::event::{AgentId, MemoryAdded, MemoryKind, Retrieved};
use hamlet_log::{Body, EventId};

use super::memory::picture_words;
use super::memory::{Memory, MemoryStream};
use super::prompt::{template, PromptError, Style};
use super::retrieval::{recall_long_short, retrieve, RetrievalSettings};
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
    /// The gateway answered a shape other than the one asked (a bug).
    #[error("the `{purpose}` call was answered with another shape: {answer}")]
    WrongAnswer {
        /// The call's purpose.
        purpose: String,
        /// The answer, as JSON.
        answer: String,
    },
}

/// Who a model call is about: the town, the agent, its name, and its summary (the words of the
/// preamble every one of its prompts opens with).
#[derive(Clone, Copy, Debug)]
pub struct Who<'a> {
    /// The town's name.
    pub town: &'a str,
    /// The agent.
    pub agent: AgentId,
    /// Its name.
    pub name: &'a str,
    /// Its summary description.
    pub summary: &'a str,
}

impl Who<'_> {
    /// The placeholders every agent template takes: `town`, `agent` and `summary`.
    pub fn vars(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("town", self.town.to_owned()),
            ("agent", self.name.to_owned()),
            ("summary", self.summary.to_owned()),
        ])
    }
}

/// Asks the gateway and adds the call's events to the batch (also when it failed for good:
/// every try is kept), the first caused by `causes`. Returns the answer and the position of
/// its last event.
pub async fn ask(
    gateway: &Gateway,
    call: Call,
    causes: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<(Answered, Option<PendingId>), ThinkError> {
    match gateway.ask(&call).await {
        Ok(a) => {
            let at = pending.push_chain(now, a.events.iter().cloned(), causes);
            Ok((a, at))
        }
        Err(e) => {
            pending.push_chain(now, e.events().iter().cloned(), causes);
            Err(e.into())
        }
    }
}

/// Embeds through the gateway and adds the call's events to the batch, as [`ask`] does.
pub async fn embed(
    gateway: &Gateway,
    call: EmbedCall,
    now: u64,
    pending: &mut Pending,
) -> Result<(Embedded, Option<PendingId>), ThinkError> {
    match gateway.embed(&call).await {
        Ok(e) => {
            let at = pending.push_chain(now, e.events.iter().cloned(), &[]);
            Ok((e, at))
        }
        Err(e) => {
            pending.push_chain(now, e.events().iter().cloned(), &[]);
            Err(e.into())
        }
    }
}

/// How many memories one importance call rates at most. Rating them together costs one
/// call instead of one per memory (a persona's seed memories, a step's observations);
/// ten keeps the list short enough for a small model to keep count.
pub const RATINGS_PER_CALL: usize = 10;

/// The call that rates `group` (one memory or several) for `who`. A backend that reads
/// ratings from the model's probabilities gets each memory on its own after the shared
/// `importance` prompt ([`Call::scored`]); one that generates gets the memory after that
/// prompt, or the numbered list of the `ratings` template.
pub fn rating_call(who: &Who<'_>, style: Style, group: &[String]) -> Result<Call, ThinkError> {
    let importance = template("importance")?;
    // Each memory in quotes, then the question again: a few tokens more per memory, which
    // a small model needs to rate the memory rather than continue it.
    let asked: Vec<String> = group
        .iter()
        .map(|d| format!("\"{d}\"\nHow much does this matter to {}, from 1 to 10?", who.name))
        .collect();
    let scored = importance.scored(&who.vars(), style, asked)?;
    let mut call = if let [description] = group {
        let mut call = importance.call(&who.vars(), style, Shape::Importance)?;
        let sent = Call { items: vec![description.clone()], ..call.clone() };
        call.prompt = sent.item_prompt(0).unwrap_or(call.prompt);
        call
    } else {
        let listed: Vec<String> =
            group.iter().enumerate().map(|(i, d)| format!("{}. {d}", i + 1)).collect();
        let mut vars = who.vars();
        vars.insert("memories", listed.join("\n"));
        vars.insert("count", group.len().to_string());
        let shape = Shape::Ratings { count: group.len() as u16 };
        template("ratings")?.call(&vars, style, shape)?
    };
    call.agent = Some(who.agent);
    call.max_tokens = Some(8 + 4 * group.len() as u32);
    call.scored = Some(scored);
    Ok(call)
}

/// Rates and embeds new memories of `who`, and adds them to the batch: the importance
/// calls' events (up to [`RATINGS_PER_CALL`] memories a call, see [`rating_call`]), then
/// (once for all) the embedding's, then a `MemoryAdded` for each, caused by its rating and
/// the embedding. A rating the gateway fell back on is caused by the answer event that
/// says so (`fallback`). Returns the memories' positions.
#[allow(clippy::too_many_arguments)]
pub async fn remember(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    kind: MemoryKind,
    descriptions: &[String],
    evidence: &[EventId],
    causes: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<Vec<PendingId>, ThinkError> {
    let evidence = vec![evidence.to_vec(); descriptions.len()];
    remember_cited(gateway, style, who, kind, descriptions, &evidence, causes, now, pending).await
}

/// [`remember`], each memory with its own evidence (`evidence[i]` for `descriptions[i]`).
#[allow(clippy::too_many_arguments)]
pub async fn remember_cited(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    kind: MemoryKind,
    descriptions: &[String],
    evidence: &[Vec<EventId>],
    causes: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<Vec<PendingId>, ThinkError> {
    let by_model = vec![None; descriptions.len()];
    remember_rated(
        gateway,
        style,
        who,
        kind,
        descriptions,
        &by_model,
        evidence,
        causes,
        now,
        pending,
    )
    .await
}

/// [`remember_cited`], where `by_rule[i]`, when it is set, is `descriptions[i]`'s importance
/// and no call asks it (rulebook 8's routine sights); the model rates the others. The
/// memories are added in the order given.
#[allow(clippy::too_many_arguments)]
pub async fn remember_rated(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    kind: MemoryKind,
    descriptions: &[String],
    by_rule: &[Option<u8>],
    evidence: &[Vec<EventId>],
    causes: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<Vec<PendingId>, ThinkError> {
    let agent = who.agent;
    if descriptions.is_empty() {
        return Ok(Vec::new());
    }
    let asked: Vec<String> = descriptions
        .iter()
        .zip(by_rule.iter().chain(std::iter::repeat(&None)))
        .filter(|(_, rule)| rule.is_none())
        .map(|(d, _)| d.clone())
        .collect();
    let mut from_model = Vec::with_capacity(asked.len());
    for group in asked.chunks(RATINGS_PER_CALL) {
        let call = rating_call(who, style, group)?;
        let purpose = call.purpose.clone();
        let (answered, last) = ask(gateway, call, &[], now, pending).await?;
        match answered.answer {
            Answer::Importance(r) if group.len() == 1 => from_model.push((r, last)),
            Answer::Ratings(rs) if rs.len() == group.len() => {
                from_model.extend(rs.into_iter().map(|r| (r, last)));
            }
            other => return Err(ThinkError::WrongAnswer { purpose, answer: other.to_json() }),
        }
    }
    // Each memory's rating and the answer it came from (none for a rating by rule), in order.
    let mut from_model = from_model.into_iter();
    let mut ratings = Vec::with_capacity(descriptions.len());
    for i in 0..descriptions.len() {
        let rating = match by_rule.get(i).copied().flatten() {
            Some(rating) => (rating, None),
            None => from_model.next().ok_or_else(|| ThinkError::WrongAnswer {
                purpose: "importance".into(),
                answer: format!("fewer ratings than the {} memories asked", asked.len()),
            })?,
        };
        ratings.push(rating);
    }
    let mut call = EmbedCall::new("memory", descriptions.to_vec());
    call.agent = Some(agent);
    let (embedded, vectors_at) = embed(gateway, call, now, pending).await?;
    let mut out = Vec::with_capacity(descriptions.len());
    for (((description, (rating, rated_at)), vector), evidence) in
        descriptions.iter().zip(ratings).zip(embedded.vectors).zip(evidence)
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
            evidence: evidence.clone(),
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
    if stream.long_short() {
        // Long-term memory found by name, short-term by time: nothing to embed.
        let retrieved = recall_long_short(agent, stream, query, now, settings);
        let at = pending.push(now, Body::Retrieved(retrieved.clone()), &[]);
        return Ok((retrieved, at));
    }
    let mut call = EmbedCall::new("query", vec![query.to_owned()]);
    call.agent = Some(agent);
    let (embedded, vector_at) = embed(gateway, call, now, pending).await?;
    let query_vector = embedded.vectors.into_iter().next().unwrap_or_default();
    let retrieved = retrieve(agent, stream, query, &query_vector, now, settings, |_| true);
    let causes: Vec<Cause> = vector_at.into_iter().map(Cause::Pending).collect();
    let at = pending.push(now, Body::Retrieved(retrieved.clone()), &causes);
    Ok((retrieved, at))
}

/// The importance a picture is remembered at, by rule (no rating call): what it sums up
/// was rated as it came.
pub const PICTURE_IMPORTANCE: u8 = 4;

/// For an agent of the `long_short` memory module: its picture of `subject` (a person or a
/// place) written again from the one it had and `recent` (what it just saw and heard), one
/// `picture` call, and remembered as a reflection citing `evidence` (at
/// [`PICTURE_IMPORTANCE`]). Nothing is remembered when the answer is the fallback or empty.
#[allow(clippy::too_many_arguments)]
pub async fn update_picture(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    stream: &MemoryStream,
    subject: &str,
    recent: &[String],
    evidence: &[EventId],
    causes: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<(), ThinkError> {
    let before = stream
        .pictures()
        .find(|(s, _)| *s == subject)
        .and_then(|(_, m)| m.description.split_once(": ").map(|(_, text)| text.to_owned()))
        .unwrap_or_else(|| "nothing yet".to_owned());
    let mut vars = who.vars();
    vars.insert("subject", subject.to_owned());
    vars.insert("before", before);
    vars.insert("recent", recent.join("\n"));
    let mut call = template("picture")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(110);
    let (answered, asked) = ask(gateway, call, causes, now, pending).await?;
    let text = match &answered.answer {
        Answer::Text(t) if !answered.fallback => t.split_whitespace().collect::<Vec<_>>().join(" "),
        _ => String::new(),
    };
    if text.is_empty() {
        return Ok(());
    }
    let words = picture_words(who.name, subject, &text);
    let causes: Vec<Cause> = asked.into_iter().map(Cause::Pending).collect();
    remember_rated(
        gateway,
        style,
        who,
        MemoryKind::Reflection,
        &[words],
        &[Some(PICTURE_IMPORTANCE)],
        &[evidence.to_vec()],
        &causes,
        now,
        pending,
    )
    .await?;
    Ok(())
}

/// When and how an agent reflects (the paper's defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct ReflectionSettings {
    /// Summed importance of memories since the last reflection that triggers one.
    pub threshold: u32,
    /// How many recent memories the questions are drawn from.
    pub recent: usize,
    /// The most characters those memories may take in the prompt: the oldest are left out
    /// beyond it, so that a stream of long memories (a conversation is remembered whole)
    /// still fits the model's context.
    pub recent_chars: usize,
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
            recent_chars: RECENT_CHARS,
            questions: 3,
            insights: 5,
            statements: 24,
        }
    }
}

/// [`ReflectionSettings::recent_chars`] by default: 11,000 characters are at most about 3,700
/// tokens at three characters a token, which with the template and the answer fits a slot of
/// the embedded model (4,096 tokens), and is more than a hundred everyday memories take.
pub const RECENT_CHARS: usize = 11_000;

/// The lines listing `memories` (oldest first) for the reflection prompt: the newest whose
/// lines add up to at most `chars` characters, oldest first.
pub fn recent_lines(memories: &[Memory], chars: usize) -> Vec<String> {
    let mut total = 0;
    let mut lines: Vec<String> = memories
        .iter()
        .rev()
        .map(|m| format!("- {}", m.description))
        .take_while(|line| {
            total += line.len() + 1;
            total <= chars
        })
        .collect();
    lines.reverse();
    lines
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
    who: &Who<'_>,
    stream: &MemoryStream,
    importance_sum: u32,
    now: u64,
    settings: &ReflectionSettings,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<Vec<PendingId>, ThinkError> {
    let agent = who.agent;
    let listed = recent_lines(stream.recent(settings.recent), settings.recent_chars);
    let mut vars = who.vars();
    vars.insert("memories", listed.join("\n"));
    let mut call = template("reflection_questions")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(agent);
    call.max_tokens = Some(96);
    let (answered, asked_at) = ask(gateway, call, &[], now, pending).await?;
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
    let mut vars = who.vars();
    vars.insert("statements", statements.join("\n"));
    vars.insert("count", settings.insights.to_string());
    let shape = Shape::Insights { count: settings.insights, statements: cited.len() as u16 };
    let mut call = template("insights")?.call(&vars, style, shape)?;
    call.agent = Some(agent);
    // Room for every insight at its longest (`INSIGHT_CHARS`, about four characters a token)
    // with its citations, so the grammar can always close the answer.
    let per_insight = (hamlet_gateway::answer::INSIGHT_CHARS / 3 + 24) as u32;
    call.max_tokens = Some(16 + per_insight * u32::from(settings.insights));
    let mut causes: Vec<Cause> = vec![Cause::Pending(started)];
    causes.extend(recalled_at.iter().copied().map(Cause::Pending));
    let (answered, insights_at) = ask(gateway, call, &causes, now, pending).await?;
    let Answer::Insights(insights) = answered.answer else { return Ok(Vec::new()) };
    // The insights are rated together (one call, not one each); each keeps its own evidence.
    let texts: Vec<String> = insights.iter().map(|i| i.text.clone()).collect();
    let because: Vec<Cause> = insights_at.into_iter().map(Cause::Pending).collect();
    let evidence: Vec<Vec<EventId>> = insights
        .iter()
        .map(|insight| {
            insight
                .evidence
                .iter()
                .filter_map(|n| cited.get(usize::from(*n).checked_sub(1)?).copied())
                .collect()
        })
        .collect();
    remember_cited(
        gateway,
        style,
        who,
        MemoryKind::Reflection,
        &texts,
        &evidence,
        &because,
        now,
        pending,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(i: u8, description: &str) -> Memory {
        Memory {
            id: EventId([i; 32]),
            kind: MemoryKind::Observation,
            description: description.to_owned(),
            created_secs: u64::from(i),
            last_access_secs: u64::from(i),
            importance: 2,
            embedding: Vec::new(),
            embedding_norm: 0.0,
            evidence: Vec::new(),
        }
    }

    #[test]
    fn the_reflection_lists_the_newest_memories_that_fit() {
        let stream: Vec<Memory> = (0..5).map(|i| memory(i, &format!("memory {i}"))).collect();
        let all = recent_lines(&stream, RECENT_CHARS);
        assert_eq!(all, ["- memory 0", "- memory 1", "- memory 2", "- memory 3", "- memory 4"]);
        // Each line is 10 characters and a newline: 33 characters hold the newest three.
        assert_eq!(recent_lines(&stream, 33), ["- memory 2", "- memory 3", "- memory 4"]);
        assert_eq!(recent_lines(&stream, 32), ["- memory 3", "- memory 4"]);
        assert!(recent_lines(&stream, 5).is_empty());
        // A long memory (a conversation remembered whole) leaves the older ones out.
        let mut long = stream.clone();
        long.push(memory(9, &"x".repeat(RECENT_CHARS - 10)));
        assert_eq!(recent_lines(&long, RECENT_CHARS).len(), 1);
    }
}
