//! What a run's model calls cost: calls, tries, tokens and (with a price table) money, per
//! agent, per purpose and per simulated hour — read from the recorded events alone.
//!
//! Prices live in the config file, per model, in currency units per million tokens:
//!
//! ```toml
//! [prices."gpt-4o-mini"]
//! prompt_per_million = 0.15
//! completion_per_million = 0.60
//! ```
//!
//! The embedded models cost nothing. A model without a price is counted in tokens and
//! listed as unpriced, never guessed. The made-up calls of `hamlet synth` (backend and model
//! `synthetic`) are left out: no model was asked.

use std::collections::{BTreeMap, BTreeSet};

use hamlet_log::Body;
use serde::Deserialize;

/// A model's price.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens.
    pub prompt_per_million: f64,
    /// Per million completion tokens.
    pub completion_per_million: f64,
}

/// Counts for one row of the report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// Calls (first tries).
    pub calls: u64,
    /// Tries, first ones included.
    pub tries: u64,
    /// Tries that failed (transport errors and answers that did not validate).
    pub failures: u64,
    /// Calls answered by the documented fallback.
    pub fallbacks: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Of those, the tokens the backend reused from its cache instead of reading them.
    pub cached_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Embedding calls.
    pub embeddings: u64,
    /// Embedding tokens.
    pub embedding_tokens: u64,
    /// Money, from the price table.
    pub money: f64,
}

impl Tally {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Tally) {
        self.calls += other.calls;
        self.tries += other.tries;
        self.failures += other.failures;
        self.fallbacks += other.fallbacks;
        self.prompt_tokens += other.prompt_tokens;
        self.cached_tokens += other.cached_tokens;
        self.completion_tokens += other.completion_tokens;
        self.embeddings += other.embeddings;
        self.embedding_tokens += other.embedding_tokens;
        self.money += other.money;
    }
}

/// The report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Everything.
    pub total: Tally,
    /// By agent number (`None`: calls for no agent).
    pub by_agent: BTreeMap<Option<u32>, Tally>,
    /// By purpose.
    pub by_purpose: BTreeMap<String, Tally>,
    /// By simulated hour since day 0 00:00.
    pub by_hour: BTreeMap<u64, Tally>,
    /// By model.
    pub by_model: BTreeMap<String, Tally>,
    /// Models used that the price table does not list (and that are not embedded).
    pub unpriced: BTreeSet<String>,
}

#[derive(Clone)]
struct Who {
    agent: Option<u32>,
    purpose: String,
    model: String,
    backend: String,
}

/// Adds up `(simulated seconds, event)` pairs in log order.
pub fn report<'a>(
    events: impl IntoIterator<Item = (u64, &'a Body)>,
    prices: &BTreeMap<String, Price>,
) -> Report {
    let mut out = Report::default();
    let mut calls: BTreeMap<[u8; 32], Who> = BTreeMap::new();
    for (secs, body) in events {
        let mut row = Tally::default();
        let who = match body {
            // Made up by `hamlet synth`: no model was asked, nothing was spent.
            Body::LlmRequested(r) if r.backend == crate::synth::SYNTHETIC => continue,
            Body::LlmRequested(r) => {
                let who = Who {
                    agent: r.agent.map(|a| a.0),
                    purpose: r.purpose.clone(),
                    model: r.model.clone(),
                    backend: r.backend.clone(),
                };
                calls.insert(r.request_hash, who.clone());
                row.tries = 1;
                row.calls = u64::from(r.attempt == 1);
                who
            }
            Body::LlmResponded(r) => {
                let Some(who) = calls.get(&r.request_hash).cloned() else { continue };
                row.prompt_tokens = u64::from(r.tokens_prompt);
                row.cached_tokens = u64::from(r.tokens_cached.min(r.tokens_prompt));
                row.completion_tokens = u64::from(r.tokens_completion);
                row.fallbacks = u64::from(r.fallback);
                who
            }
            Body::LlmFailed(f) => {
                let Some(who) = calls.get(&f.request_hash).cloned() else { continue };
                row.failures = 1;
                who
            }
            Body::EmbeddingRequested(r) => {
                let who = Who {
                    agent: r.agent.map(|a| a.0),
                    purpose: if r.purpose.is_empty() {
                        "embedding".into()
                    } else {
                        r.purpose.clone()
                    },
                    model: r.model.clone(),
                    backend: r.backend.clone(),
                };
                calls.insert(r.request_hash, who.clone());
                row.embeddings = 1;
                who
            }
            Body::EmbeddingReturned(r) => {
                let Some(who) = calls.get(&r.request_hash).cloned() else { continue };
                row.embedding_tokens = u64::from(r.tokens);
                row.prompt_tokens = 0;
                who
            }
            _ => continue,
        };
        let billed = row.prompt_tokens + row.completion_tokens + row.embedding_tokens > 0;
        if billed && who.backend != "local" {
            match prices.get(&who.model) {
                Some(p) => {
                    row.money = (row.prompt_tokens + row.embedding_tokens) as f64 / 1e6
                        * p.prompt_per_million
                        + row.completion_tokens as f64 / 1e6 * p.completion_per_million;
                }
                None => {
                    out.unpriced.insert(who.model.clone());
                }
            }
        }
        out.total.add(&row);
        out.by_agent.entry(who.agent).or_default().add(&row);
        out.by_purpose.entry(who.purpose).or_default().add(&row);
        out.by_hour.entry(secs / 3600).or_default().add(&row);
        out.by_model.entry(who.model).or_default().add(&row);
    }
    out
}

#[cfg(test)]
mod tests {
    use hamlet_log::event::{AgentId, LlmRequested, LlmResponded, Prompt};

    use super::*;

    fn request(hash: u8, agent: u32, purpose: &str, attempt: u32) -> Body {
        Body::LlmRequested(LlmRequested {
            request_hash: [hash; 32],
            purpose: purpose.into(),
            agent: Some(AgentId(agent)),
            backend: "openai".into(),
            server: "http://x/v1".into(),
            model: "m".into(),
            temperature_milli: 0,
            top_p_milli: 1000,
            max_tokens: 10,
            seed: None,
            stop: vec![],
            prompt: Prompt::Text("p".into()),
            template: purpose.into(),
            template_version: 1,
            schema_hash: None,
            attempt,
            structured: hamlet_log::event::StructuredForm::None,
            items: Vec::new(),
            avoid: Vec::new(),
        })
    }

    fn answer(hash: u8, p: u32, c: u32) -> Body {
        answer_cached(hash, p, c, 0)
    }

    fn answer_cached(hash: u8, p: u32, c: u32, cached: u32) -> Body {
        Body::LlmResponded(LlmResponded {
            request_hash: [hash; 32],
            text: "t".into(),
            parsed: None,
            fallback: false,
            tokens_prompt: p,
            tokens_completion: c,
            latency_ms: 1,
            finish_reason: "stop".into(),
            response_model: "m".into(),
            response_id: String::new(),
            probabilities: Vec::new(),
            tokens_cached: cached,
        })
    }

    #[test]
    fn made_up_calls_cost_nothing_and_count_for_nothing() {
        let spec = crate::synth::SynthSpec { n_events: 4000, n_agents: 4, seed: 3 };
        let bytes = crate::synth::write_recording(spec, Vec::new(), |_| {}).unwrap();
        let rec = hamlet_log::Recording::open(&bytes).unwrap();
        let events: Vec<_> =
            rec.events(rec.root().unwrap().id, 0).unwrap().map(Result::unwrap).collect();
        let made_up = events
            .iter()
            .filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.model == "synthetic"))
            .count();
        assert!(made_up > 10, "the synthetic town asks its made-up model");
        let r = report(events.iter().map(|e| (e.sim_time_secs(), &e.body)), &BTreeMap::new());
        assert_eq!((r.total.calls, r.total.prompt_tokens), (0, 0));
        assert!(r.by_model.is_empty() && r.unpriced.is_empty());
    }

    #[test]
    fn cached_tokens_add_up_and_never_exceed_the_prompt() {
        let events = [
            (0, request(1, 0, "plan", 1)),
            (0, answer_cached(1, 1000, 10, 600)),
            (0, request(2, 0, "turn", 1)),
            // A server that says it cached more than the prompt: counted as the prompt.
            (0, answer_cached(2, 100, 10, 400)),
        ];
        let r = report(events.iter().map(|(t, b)| (*t, b)), &BTreeMap::new());
        assert_eq!((r.total.prompt_tokens, r.total.cached_tokens), (1100, 700));
        assert_eq!(r.by_purpose["plan"].cached_tokens, 600);
    }

    #[test]
    fn tokens_and_money_add_up_by_agent_purpose_and_hour() {
        let events = [
            (3600 * 7, request(1, 0, "plan", 1)),
            (3600 * 7, answer(1, 1000, 100)),
            (3600 * 8 + 5, request(2, 1, "importance", 1)),
            (3600 * 8 + 5, request(2, 1, "importance", 2)),
            (3600 * 8 + 5, answer(2, 500, 5)),
        ];
        let prices = BTreeMap::from([(
            "m".to_owned(),
            Price { prompt_per_million: 1.0, completion_per_million: 10.0 },
        )]);
        let r = report(events.iter().map(|(t, b)| (*t, b)), &prices);
        assert_eq!((r.total.calls, r.total.tries), (2, 3));
        assert_eq!((r.total.prompt_tokens, r.total.completion_tokens), (1500, 105));
        assert_eq!(r.by_agent[&Some(1)].prompt_tokens, 500);
        assert_eq!(r.by_purpose["plan"].completion_tokens, 100);
        assert_eq!(r.by_hour[&7].calls, 1);
        assert_eq!(r.by_hour[&8].tries, 2);
        assert!((r.total.money - (1500.0 / 1e6 + 1050.0 / 1e6)).abs() < 1e-12);
        assert!(r.unpriced.is_empty());
        let unpriced = report(events.iter().map(|(t, b)| (*t, b)), &BTreeMap::new());
        assert!(unpriced.unpriced.contains("m") && unpriced.total.money == 0.0);
    }
}
