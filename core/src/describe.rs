//! Events in words, for `hamlet log` and the viewer: one line per event, and which agents
//! an event concerns.

use hamlet_log::event::{Account, AgentId, Body, Intervention, MayorAct};
use hamlet_log::id::hex;

/// Simulated seconds as `day D HH:MM:SS`.
pub fn sim_time(secs: u64) -> String {
    format!("day {} {:02}:{:02}:{:02}", secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60)
}

/// Simulated seconds as the time of day, `HH:MM`.
pub fn clock(secs: u64) -> String {
    format!("{:02}:{:02}", secs / 3600 % 24, secs / 60 % 60)
}

/// The agents an event is about.
pub fn agents_of(body: &Body) -> Vec<AgentId> {
    match body {
        Body::AgentJoined(b) => vec![b.agent],
        Body::Moved(b) => vec![b.agent],
        Body::Perceived(b) => vec![b.agent],
        Body::MemoryAdded(b) => vec![b.agent],
        Body::Retrieved(b) => vec![b.agent],
        Body::LlmRequested(b) => b.agent.into_iter().collect(),
        Body::PlanMade(b) => vec![b.agent],
        Body::ActionStarted(b) => vec![b.agent],
        Body::ConversationStarted(b) => b.agents.clone(),
        Body::DialogueTurn(b) => vec![b.speaker],
        Body::ReflectionStarted(b) => vec![b.agent],
        Body::ObjectStateChanged(b) => b.by.into_iter().collect(),
        Body::CashMoved(b) => [&b.from, &b.to]
            .into_iter()
            .filter_map(|a| match a {
                Account::Agent(id) => Some(*id),
                _ => None,
            })
            .collect(),
        Body::Intervened(b) => match &b.intervention {
            Intervention::InnerVoice { agent, .. }
            | Intervention::Interview { agent, .. }
            | Intervention::EditPersona { agent, .. } => vec![*agent],
            _ => vec![],
        },
        Body::InterviewAnswered(b) => vec![b.agent],
        _ => vec![],
    }
}

fn clip(text: &str, max: usize) -> String {
    let one_line: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match one_line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

/// One line saying what happened; `name` gives an agent's name.
pub fn summary(body: &Body, name: &dyn Fn(AgentId) -> String) -> String {
    match body {
        Body::BranchCreated(b) => match (b.parent_branch, b.fork_seq) {
            (Some(p), Some(s)) => format!("branch `{}` forks {p} at #{s}", b.name),
            _ => format!("branch `{}` begins", b.name),
        },
        Body::RunConfigured(c) => format!(
            "run configured: seed {}, {} s per step, engine {}",
            c.seed, c.seconds_per_step, c.engine_version
        ),
        Body::TownLoaded(t) => {
            format!("town `{}` loaded ({} bytes of {})", t.name, t.source.len(), t.format)
        }
        Body::AgentJoined(j) => {
            format!("{} joins at ({}, {}) with {}", j.name, j.tile.x, j.tile.y, cents(j.cash_cents))
        }
        Body::ClockStepped(c) => format!("step {}", c.step),
        Body::Moved(m) => format!(
            "{} moves ({}, {}) → ({}, {})",
            name(m.agent),
            m.from.x,
            m.from.y,
            m.to.x,
            m.to.y
        ),
        Body::Perceived(p) => format!(
            "{} perceives {}",
            name(p.agent),
            clip(
                &p.percepts
                    .iter()
                    .map(|x| format!("{} ({})", x.subject, x.description))
                    .collect::<Vec<_>>()
                    .join("; "),
                100
            )
        ),
        Body::MemoryAdded(m) => format!(
            "{} remembers [{:?}, importance {}] {}",
            name(m.agent),
            m.kind,
            m.importance,
            clip(&m.description, 80)
        ),
        Body::Retrieved(r) => format!(
            "{} retrieves {} memories for \"{}\"",
            name(r.agent),
            r.hits.len(),
            clip(&r.query, 60)
        ),
        Body::LlmRequested(r) => format!(
            "LLM call {} for {} ({}, {} try {})",
            &hex(&r.request_hash)[..12],
            r.purpose,
            r.model,
            r.agent.map_or_else(|| "no agent".into(), name),
            r.attempt
        ),
        Body::LlmResponded(r) => format!(
            "LLM answer {}{}: {} ({}+{} tokens, {} ms)",
            &hex(&r.request_hash)[..12],
            if r.fallback { " [fallback]" } else { "" },
            clip(&r.text, 60),
            r.tokens_prompt,
            r.tokens_completion,
            r.latency_ms
        ),
        Body::LlmFailed(f) => format!(
            "LLM call {} failed ({:?}, try {}): {}",
            &hex(&f.request_hash)[..12],
            f.kind,
            f.attempt,
            clip(&f.message, 60)
        ),
        Body::EmbeddingRequested(e) => {
            format!("embedding of {} texts by {}", e.texts.len(), e.model)
        }
        Body::EmbeddingReturned(e) => format!("{} embeddings returned", e.vectors.len()),
        Body::PlanMade(p) => format!(
            "{} plans ({:?}, {} items): {}",
            name(p.agent),
            p.level,
            p.items.len(),
            clip(&p.items.first().map(|i| i.description.clone()).unwrap_or_default(), 60)
        ),
        Body::ActionStarted(a) => {
            format!(
                "{} {} {} {}",
                name(a.agent),
                a.emoji,
                clip(&a.description, 60),
                crate::town::at_place(&a.address)
            )
        }
        Body::ConversationStarted(c) => format!(
            "conversation: {}",
            c.agents.iter().map(|a| name(*a)).collect::<Vec<_>>().join(", ")
        ),
        Body::DialogueTurn(t) => format!(
            "{}: \"{}\"{}",
            name(t.speaker),
            clip(&t.text, 90),
            if t.ends { " (ends)" } else { "" }
        ),
        Body::ConversationEnded(e) => format!("conversation ends ({})", e.reason),
        Body::ReflectionStarted(r) => {
            format!("{} reflects (importance {})", name(r.agent), r.importance_sum)
        }
        Body::ObjectStateChanged(o) => format!("{} is now {}", o.address, o.state),
        Body::CashMoved(c) => format!(
            "{} pays {} {} for {}",
            account(&c.from, name),
            account(&c.to, name),
            cents(c.amount_cents),
            c.reason
        ),
        Body::Intervened(i) => match &i.intervention {
            Intervention::InnerVoice { agent, text } => {
                format!("inner voice to {}: \"{}\"", name(*agent), clip(text, 80))
            }
            Intervention::Interview { agent, question, .. } => {
                format!("interview of {}: \"{}\"", name(*agent), clip(question, 80))
            }
            Intervention::EditPersona { agent, .. } => {
                format!("persona of {} edited", name(*agent))
            }
            Intervention::AddBuilding { template, name: n, .. } => {
                format!("building `{n}` added from template `{template}`")
            }
            Intervention::SetObjectState { address, state } => format!("{address} set to {state}"),
            Intervention::AddAgent { name: n, .. } => format!("agent {n} added"),
            Intervention::Happening { place, text, until_secs } => {
                format!("at {place} until {}: {}", clock(*until_secs), clip(text, 80))
            }
            Intervention::SetModel { agent, model } => {
                format!("{} thinks with the model `{}` from now on", name(*agent), clip(model, 64))
            }
        },
        Body::InterviewAnswered(a) => {
            format!("{} answers: \"{}\"", name(a.agent), clip(&a.answer, 90))
        }
        Body::SeedDrawn(s) => format!("seed {} drawn for {}", s.seed, s.purpose),
        Body::BranchRenamed(r) => format!("branch renamed `{}`", r.name),
        Body::CommitmentMade(c) => format!(
            "{} agrees: {} at {}, {}",
            name(c.agent),
            clip(&c.what, 60),
            c.address,
            clock(c.start_secs)
        ),
        Body::MayorActed(m) => {
            let who = m.mayor.map_or_else(
                || "the mayor (the person at the viewer)".to_owned(),
                |a| format!("mayor {}", name(a)),
            );
            let what = match &m.act {
                MayorAct::PostJob { sector, title, cents_per_hour } => format!(
                    "posts a job at {}: {} at {} an hour",
                    clip(sector, 60),
                    clip(title, 60),
                    cents(*cents_per_hour)
                ),
                MayorAct::Found { template, name, site, cost_cents } => format!(
                    "founds {} on {} (like {}) for {}",
                    clip(name, 60),
                    clip(site, 60),
                    clip(template, 60),
                    cents(*cost_cents)
                ),
                MayorAct::SetWage { sector, cents_per_hour } => {
                    format!(
                        "sets the wage at {} to {} an hour",
                        clip(sector, 60),
                        cents(*cents_per_hour)
                    )
                }
                MayorAct::CallMeeting { what, place, start_secs, .. } => format!(
                    "calls a meeting at {}, {}: {}",
                    clip(place, 60),
                    clock(*start_secs),
                    clip(what, 60)
                ),
                MayorAct::AssignTask { agent, what, place, start_secs, .. } => format!(
                    "asks {} to {} at {}, {}",
                    name(*agent),
                    clip(what, 60),
                    clip(place, 60),
                    clock(*start_secs)
                ),
            };
            format!("{who} {what}")
        }
        Body::JobTaken(j) => format!("{} takes a job the mayor posted", name(j.agent)),
        Body::Unknown { kind, schema } => format!("event of unknown kind {kind} (schema {schema})"),
    }
}

/// Cents as money: `$12.05`, `-$0.50`.
pub fn cents(n: i64) -> String {
    let sign = if n < 0 { "-" } else { "" };
    format!("{sign}${}.{:02}", n.unsigned_abs() / 100, n.unsigned_abs() % 100)
}

/// Text from a recording, safe to print to a terminal: control characters (escape
/// sequences among them) become U+FFFD.
pub fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { '\u{fffd}' } else { c }).collect()
}

fn account(a: &Account, name: &dyn Fn(AgentId) -> String) -> String {
    match a {
        Account::Agent(id) => name(*id),
        Account::Shop(s) => s.clone(),
        Account::World => "the world".into(),
        Account::Town => "the town's treasury".into(),
    }
}
