//! The events that start a town: its configuration, its definition verbatim, and every
//! persona joining at its spawn tile with its starting cash. Folding them gives the town
//! at time zero; a recording therefore carries the town it ran, and nothing about the
//! start lives outside the log.

use hamlet_log::event::{
    Account, AgentId, AgentJoined, Body, CashMoved, NewEvent, RunConfigured, TownLoaded,
};

use super::{
    Definition, GOAL_TRAIT, MEASURE_TRAIT, MEMORY_MODULES, MEMORY_TRAIT, MODEL_TRAIT,
    PLANNING_MODULES, PLANNING_TRAIT,
};
use crate::rulebook::Rulebook;

/// The settings recorded in `RunConfigured`, sorted by key.
fn settings(town: &Definition, rulebook: Rulebook) -> Vec<(String, String)> {
    let p = town.perception;
    let mut settings = vec![
        ("perception.attention_bandwidth".into(), p.attention_bandwidth.to_string()),
        ("perception.retention_steps".into(), p.retention_steps.to_string()),
        ("perception.vision_radius_tiles".into(), p.vision_radius_tiles.to_string()),
        ("town.start_secs".into(), town.start_secs.to_string()),
    ];
    settings.extend(rulebook.settings());
    settings.sort();
    settings
}

/// The traits recorded for a persona, sorted by key.
fn traits(p: &super::Persona) -> Vec<(String, String)> {
    let mut out = vec![
        ("age".to_owned(), p.age.to_string()),
        ("home".to_owned(), p.home.clone()),
        ("innate".to_owned(), p.innate.join(", ")),
        ("strategy".to_owned(), p.strategy.clone()),
    ];
    if let Some(w) = &p.workplace {
        out.push(("workplace".to_owned(), w.clone()));
    }
    // Only where the town names one, so a town without models starts as it always has.
    if let Some(m) = &p.model {
        out.push((MODEL_TRAIT.to_owned(), m.clone()));
    }
    if let Some(g) = &p.goal {
        out.push((GOAL_TRAIT.to_owned(), g.clone()));
    }
    if let Some(m) = &p.measure {
        out.push((MEASURE_TRAIT.to_owned(), m.to_trait()));
    }
    // Modules only where they are not the defaults, likewise.
    if p.planning != PLANNING_MODULES[0] {
        out.push((PLANNING_TRAIT.to_owned(), p.planning.clone()));
    }
    if p.memory != MEMORY_MODULES[0] {
        out.push((MEMORY_TRAIT.to_owned(), p.memory.clone()));
    }
    out.sort();
    out
}

/// The first events of a new run of `town` with `seed`, at the town's start time, deciding
/// by this engine's [`Rulebook::CURRENT`].
pub fn genesis(town: &Definition, seed: u64) -> Vec<NewEvent> {
    genesis_by(town, seed, Rulebook::CURRENT)
}

/// [`genesis`] of a run deciding by `rules` (a recorded run made again keeps its own).
pub fn genesis_by(town: &Definition, seed: u64, rulebook: Rulebook) -> Vec<NewEvent> {
    let at = town.start_secs;
    let mut events = vec![
        NewEvent::new(
            at,
            Body::RunConfigured(RunConfigured {
                engine_version: env!("CARGO_PKG_VERSION").into(),
                seed,
                seconds_per_step: town.seconds_per_step,
                settings: settings(town, rulebook),
            }),
        ),
        NewEvent::new(
            at,
            Body::TownLoaded(TownLoaded {
                name: town.name.clone(),
                format: "toml".into(),
                source: town.source.clone(),
            }),
        ),
    ];
    for (i, p) in town.personas.iter().enumerate() {
        events.push(NewEvent::new(
            at,
            Body::AgentJoined(AgentJoined {
                agent: AgentId(i as u32),
                name: p.name.clone(),
                persona: p.seed.clone(),
                traits: traits(p),
                tile: p.spawn,
                cash_cents: p.cash_cents,
            }),
        ));
    }
    // A town with a mayor: its treasury's funds arrive from outside, once.
    if let Some(funds) = town.mayor.as_ref().map(|m| m.funds_cents).filter(|f| *f > 0) {
        events.push(NewEvent::new(
            at,
            Body::CashMoved(CashMoved {
                from: Account::World,
                to: Account::Town,
                amount_cents: funds,
                reason: "the town's funds".into(),
            }),
        ));
    }
    events
}
