//! What agent code asks of a model, and the canonical form whose hash names the question.
//!
//! A [`Call`] is the question: purpose, agent, prompt template (name and version), the
//! prompt itself, and the [`Shape`] of the answer. [`Params`] are the sampling settings of
//! the gateway. Together with the model's name they make the *canonical request*, encoded
//! with postcard and hashed with blake3: replay finds a recorded answer by that hash, so
//! the hash covers everything that decides the answer and nothing that does not (not the
//! backend, not the server's address, not the attempt number, never a key).

use hamlet_log::event::{AgentId, ChatMessage, Prompt};
use serde::Serialize;

use crate::answer::Shape;

/// One question for a language model, as agent code asks it.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Why the call is made: "importance", "day_plan", "react", ….
    pub purpose: String,
    /// For whom, if for an agent.
    pub agent: Option<AgentId>,
    /// The prompt template's name.
    pub template: String,
    /// The prompt template's version: bump it whenever the template's words change.
    pub template_version: u32,
    /// The prompt.
    pub prompt: Prompt,
    /// What the answer must look like.
    pub shape: Shape,
    /// The most tokens to generate; `None` takes the gateway's default.
    pub max_tokens: Option<u32>,
    /// Sampling temperature for this call instead of the gateway's (`None`: the gateway's).
    /// The request hash covers the temperature used either way.
    pub temperature: Option<f32>,
    /// Texts rated each on its own after `prompt`: set only in the call as sent in the
    /// [`StructuredForm::Probabilities`](hamlet_log::event::StructuredForm::Probabilities)
    /// form (see [`Call::by_probabilities`]), empty otherwise.
    pub items: Vec<String>,
    /// The same question asked item by item, for a backend that reads a rating from the
    /// model's probabilities instead of generating it: a prompt shared by every item (the
    /// long, stable part, read once and kept in the cache) and the items, each added to the
    /// end of its last message. Only for answers of 1 to 10 (importance, ratings).
    pub scored: Option<Scored>,
    /// Texts whose words the answer should not say again: for a line of dialogue, the
    /// conversation's earlier lines. The embedded model weighs their words down (as it does
    /// words its answer has already used); servers are not told. Part of the request hash
    /// when not empty.
    pub avoid: Vec<String>,
}

/// A rating question asked item by item (see [`Call::scored`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scored {
    /// The prompt every item shares.
    pub prompt: Prompt,
    /// The texts to rate, in order: as many as the answer has ratings.
    pub items: Vec<String>,
}

impl Call {
    /// A chat call with a system message and one user message.
    pub fn chat(purpose: &str, system: &str, user: &str, shape: Shape) -> Call {
        Call {
            purpose: purpose.to_owned(),
            agent: None,
            template: purpose.to_owned(),
            template_version: 1,
            prompt: Prompt::Chat(vec![
                ChatMessage { role: "system".into(), content: system.to_owned() },
                ChatMessage { role: "user".into(), content: user.to_owned() },
            ]),
            shape,
            max_tokens: None,
            temperature: None,
            items: Vec::new(),
            scored: None,
            avoid: Vec::new(),
        }
    }

    /// The call as sent in the `Probabilities` form: the shared prompt and its items, if the
    /// call has them. The request hash stays the whole call's.
    pub fn by_probabilities(&self) -> Option<Call> {
        let scored = self.scored.as_ref()?;
        Some(Call {
            prompt: scored.prompt.clone(),
            items: scored.items.clone(),
            scored: None,
            ..self.clone()
        })
    }

    /// The prompt of item `i` of a call as sent in the `Probabilities` form: the item added
    /// to the end of the last message (or of the plain prompt), after a newline.
    pub fn item_prompt(&self, i: usize) -> Option<Prompt> {
        let item = self.items.get(i)?;
        let mut prompt = self.prompt.clone();
        match &mut prompt {
            Prompt::Text(text) => {
                text.push('\n');
                text.push_str(item);
            }
            Prompt::Chat(messages) => match messages.last_mut() {
                Some(last) => {
                    last.content.push('\n');
                    last.content.push_str(item);
                }
                None => messages.push(ChatMessage { role: "user".into(), content: item.clone() }),
            },
        }
        Some(prompt)
    }

    /// The same call, for `agent`.
    pub fn for_agent(mut self, agent: AgentId) -> Call {
        self.agent = Some(agent);
        self
    }

    /// The same call, naming its template and version.
    pub fn template(mut self, name: &str, version: u32) -> Call {
        self.template = name.to_owned();
        self.template_version = version;
        self
    }

    /// The call as sent to a server that is not told the schema any other way
    /// ([`StructuredForm::in_prompt`](hamlet_log::event::StructuredForm::in_prompt)): the
    /// last message (or the plain prompt) ends with the answer's JSON Schema and an example
    /// answer. Free-text calls are unchanged. The request hash stays the unchanged call's.
    pub fn with_schema_in_prompt(&self) -> Call {
        let Some(schema) = self.shape.json_schema() else { return self.clone() };
        let example = crate::answer::example(&schema);
        let note = format!(
            "\n\nAnswer with one JSON value and nothing else. It must follow this JSON Schema:\n{}\nFor example:\n{}",
            schema, example
        );
        let mut call = self.clone();
        match &mut call.prompt {
            Prompt::Text(text) => text.push_str(&note),
            Prompt::Chat(messages) => match messages.last_mut() {
                Some(last) => last.content.push_str(&note),
                None => messages
                    .push(ChatMessage { role: "user".into(), content: note.trim().to_owned() }),
            },
        }
        call
    }
}

/// Sampling settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Sampling temperature, 0 for greedy.
    pub temperature: f32,
    /// Nucleus sampling's p.
    pub top_p: f32,
    /// The most tokens to generate unless a call asks otherwise.
    pub max_tokens: u32,
    /// The sampling seed.
    pub seed: Option<u64>,
    /// Stop sequences.
    pub stop: Vec<String>,
}

impl Default for Params {
    fn default() -> Params {
        Params { temperature: 0.0, top_p: 1.0, max_tokens: 256, seed: Some(0), stop: Vec::new() }
    }
}

/// Thousandths, as events store fractions.
pub(crate) fn milli(x: f32) -> u32 {
    if x.is_finite() && x > 0.0 {
        (x * 1000.0).round().min(u32::MAX as f32) as u32
    } else {
        0
    }
}

/// The canonical request: everything that decides an answer, in a fixed order.
#[derive(Serialize)]
struct Canonical<'a> {
    purpose: &'a str,
    agent: Option<AgentId>,
    model: &'a str,
    temperature_milli: u32,
    top_p_milli: u32,
    max_tokens: u32,
    seed: Option<u64>,
    stop: &'a [String],
    prompt: &'a Prompt,
    template: &'a str,
    template_version: u32,
    schema_hash: Option<[u8; 32]>,
}

/// The blake3 hash of a call's canonical request.
pub fn request_hash(call: &Call, params: &Params, model: &str) -> [u8; 32] {
    let canonical = Canonical {
        purpose: &call.purpose,
        agent: call.agent,
        model,
        temperature_milli: milli(params.temperature),
        top_p_milli: milli(params.top_p),
        max_tokens: call.max_tokens.unwrap_or(params.max_tokens),
        seed: params.seed,
        stop: &params.stop,
        prompt: &call.prompt,
        template: &call.template,
        template_version: call.template_version,
        schema_hash: call.shape.schema_hash(),
    };
    let mut bytes = postcard::to_allocvec(&canonical)
        .unwrap_or_else(|e| panic!("a canonical request always encodes: {e}"));
    // The item-by-item form is part of the question when there is one (a call without it
    // hashes as it always has).
    if let Some(scored) = &call.scored {
        let more = postcard::to_allocvec(scored)
            .unwrap_or_else(|e| panic!("a canonical request always encodes: {e}"));
        bytes.extend_from_slice(&more);
    }
    // So are the texts to avoid (a call without them hashes as it always has).
    if !call.avoid.is_empty() {
        bytes.extend_from_slice(b"avoid");
        let more = postcard::to_allocvec(&call.avoid)
            .unwrap_or_else(|e| panic!("a canonical request always encodes: {e}"));
        bytes.extend_from_slice(&more);
    }
    blake3::derive_key("hamlet 2026-11-22 llm request", &bytes)
}

/// Texts to embed, as agent code asks.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbedCall {
    /// Why ("memory", "query", …).
    pub purpose: String,
    /// For whom, if for an agent.
    pub agent: Option<AgentId>,
    /// The texts.
    pub texts: Vec<String>,
}

impl EmbedCall {
    /// Texts embedded for `purpose`.
    pub fn new(purpose: &str, texts: Vec<String>) -> EmbedCall {
        EmbedCall { purpose: purpose.to_owned(), agent: None, texts }
    }
}

/// The blake3 hash of an embedding request.
pub fn embed_hash(call: &EmbedCall, model: &str) -> [u8; 32] {
    let bytes = postcard::to_allocvec(&(&call.purpose, call.agent, model, &call.texts))
        .unwrap_or_else(|e| panic!("a canonical request always encodes: {e}"));
    blake3::derive_key("hamlet 2026-11-22 embedding request", &bytes)
}

/// Lower-case hex of a hash, as the CLI prints it.
pub use hamlet_log::id::hex;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_covers_what_decides_the_answer_and_not_the_attempt() {
        let call =
            Call::chat("importance", "Rate it.", "Mei brushes her teeth.", Shape::Importance);
        let params = Params::default();
        let h = request_hash(&call, &params, "m");
        assert_eq!(h, request_hash(&call.clone(), &params, "m"), "stable");
        assert_ne!(h, request_hash(&call, &params, "other"), "model");
        let warmer = Params { temperature: 0.7, ..params.clone() };
        assert_ne!(h, request_hash(&call, &warmer, "m"), "temperature");
        let for_agent = call.clone().for_agent(AgentId(3));
        assert_ne!(h, request_hash(&for_agent, &params, "m"), "agent");
        let newer = call.clone().template("importance", 2);
        assert_ne!(h, request_hash(&newer, &params, "m"), "template version");
        let yes_no = Call { shape: Shape::YesNo, ..call.clone() };
        assert_ne!(h, request_hash(&yes_no, &params, "m"), "answer shape");
        let scored = Call {
            scored: Some(Scored {
                prompt: Prompt::Text("Rate it.".into()),
                items: vec!["Mei brushes her teeth.".into()],
            }),
            ..call.clone()
        };
        let h_scored = request_hash(&scored, &params, "m");
        assert_ne!(h, h_scored, "item by item");
        let mut other_item = scored.clone();
        other_item.scored.as_mut().unwrap().items[0] = "Mei is fired.".into();
        assert_ne!(h_scored, request_hash(&other_item, &params, "m"), "the items");
        let avoiding = Call { avoid: vec!["Hello!".into()], ..call.clone() };
        assert_ne!(h, request_hash(&avoiding, &params, "m"), "the texts to avoid");
    }

    #[test]
    fn an_item_goes_at_the_end_of_the_last_message() {
        let call = Call {
            scored: Some(Scored {
                prompt: Prompt::Chat(vec![
                    ChatMessage { role: "system".into(), content: "Mei Lin.".into() },
                    ChatMessage { role: "user".into(), content: "Rate:".into() },
                ]),
                items: vec!["a".into(), "b".into()],
            }),
            ..Call::chat("ratings", "s", "u", Shape::Ratings { count: 2 })
        };
        let sent = call.by_probabilities().unwrap();
        assert_eq!(sent.items, ["a", "b"]);
        let Some(Prompt::Chat(m)) = sent.item_prompt(1) else { panic!() };
        assert_eq!((m[0].content.as_str(), m[1].content.as_str()), ("Mei Lin.", "Rate:\nb"));
        assert_eq!(sent.item_prompt(2), None);
        assert!(Call::chat("x", "s", "u", Shape::Importance).by_probabilities().is_none());
    }

    #[test]
    fn milli_is_total() {
        assert_eq!(milli(0.7), 700);
        assert_eq!(milli(f32::NAN), 0);
        assert_eq!(milli(-1.0), 0);
        assert_eq!(milli(f32::INFINITY), 0);
    }
}
