//! The economy (after AgentSims): purchases at shops and wages for work, as `CashMoved`
//! events checked against the folded town before they are made. No balance ever goes
//! negative. Money is conserved inside the town except at two documented places: wages
//! come from outside ([`Account::World`] pays), and nothing else leaves or enters.

use hamlet_log::event::{Account, AgentId, Body, CashMoved, NewEvent};

use crate::fold::Town;
use crate::town::Definition;

/// Why a payment cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EconomyError {
    /// No such agent in the town.
    #[error("agent {0} is not in the town")]
    NoAgent(u32),
    /// The shop does not sell it.
    #[error("{shop} sells no `{item}`")]
    NotSold {
        /// The shop.
        shop: String,
        /// The item.
        item: String,
    },
    /// The buyer cannot pay.
    #[error("{name} has {has_cents} cents, and {item} costs {price_cents}")]
    CannotAfford {
        /// The buyer.
        name: String,
        /// What they have.
        has_cents: i64,
        /// The item.
        item: String,
        /// Its price.
        price_cents: i64,
    },
    /// The sector pays no wage.
    #[error("{0} pays no wage")]
    NoWage(String),
}

/// `agent` buys `item` at `shop`, at the town's price: the event to commit at `now`.
pub fn buy(
    town: &Definition,
    state: &Town,
    agent: AgentId,
    shop: &str,
    item: &str,
    now: u64,
) -> Result<NewEvent, EconomyError> {
    let buyer = state.agents.get(&agent).ok_or(EconomyError::NoAgent(agent.0))?;
    let price = town
        .prices
        .iter()
        .find(|p| p.sector == shop && p.item == item)
        .ok_or_else(|| EconomyError::NotSold { shop: shop.into(), item: item.into() })?;
    if buyer.cash_cents < price.cents {
        return Err(EconomyError::CannotAfford {
            name: buyer.name.clone(),
            has_cents: buyer.cash_cents,
            item: item.into(),
            price_cents: price.cents,
        });
    }
    Ok(NewEvent::new(
        now,
        Body::CashMoved(CashMoved {
            from: Account::Agent(agent),
            to: Account::Shop(shop.into()),
            amount_cents: price.cents,
            reason: item.into(),
        }),
    ))
}

/// `agent` is paid for `minutes` of work at `workplace` (a sector), from outside the town.
pub fn pay_wage(
    town: &Definition,
    state: &Town,
    agent: AgentId,
    workplace: &str,
    minutes: u32,
    now: u64,
) -> Result<Option<NewEvent>, EconomyError> {
    if !state.agents.contains_key(&agent) {
        return Err(EconomyError::NoAgent(agent.0));
    }
    let wage = town
        .wages
        .iter()
        .find(|w| w.sector == workplace)
        .ok_or_else(|| EconomyError::NoWage(workplace.into()))?;
    let amount = wage.cents_per_hour * i64::from(minutes) / 60;
    Ok((amount > 0).then(|| {
        NewEvent::new(
            now,
            Body::CashMoved(CashMoved {
                from: Account::World,
                to: Account::Agent(agent),
                amount_cents: amount,
                reason: format!("wage at {workplace}"),
            }),
        )
    }))
}

/// Words too common to say what an action buys.
const COMMON: &[&str] = &[
    "a", "an", "and", "at", "for", "from", "get", "go", "have", "in", "of", "on", "some", "the",
    "to", "with", "buy", "buys", "order", "orders", "pick", "up",
];

/// The item of `shop` an action's words name (the one sharing the most words, ties to the
/// cheaper), if any.
pub fn item_named<'t>(town: &'t Definition, shop: &str, words: &str) -> Option<&'t str> {
    let said: std::collections::BTreeSet<String> = words
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.len() > 2 && !COMMON.contains(&w.as_str()))
        .map(|w| w.trim_end_matches('s').to_owned())
        .collect();
    town.prices
        .iter()
        .filter(|p| p.sector == shop)
        .map(|p| {
            let shared = p
                .item
                .split(|c: char| !c.is_alphanumeric())
                .map(|w| w.to_lowercase().trim_end_matches('s').to_owned())
                .filter(|w| said.contains(w))
                .count();
            (shared, -p.cents, p.item.as_str())
        })
        .filter(|(shared, _, _)| *shared > 0)
        .max()
        .map(|(_, _, item)| item)
}

/// The money an action moves when `agent` starts it at `address` (`sector:arena[:object]`)
/// at `now`, with `workplace` its own (a sector, if it works): the wage for the work it
/// leaves (its time at its workplace, up to the action's planned length), then a purchase
/// when the new action is at a shop it does not work at and names something the shop
/// sells. Nothing it cannot afford.
pub fn on_action_start(
    town: &Definition,
    state: &Town,
    agent: AgentId,
    workplace: Option<&str>,
    description: &str,
    address: &str,
    now: u64,
) -> Vec<NewEvent> {
    let mut out = Vec::new();
    let sector = |a: &str| a.split(':').next().unwrap_or_default().to_owned();
    let Some(me) = state.agents.get(&agent) else { return out };
    if let (Some(work), Some(previous)) = (workplace, me.action.as_ref()) {
        if sector(&previous.address) == work {
            let worked =
                now.saturating_sub(previous.started_secs).min(u64::from(previous.duration_secs));
            let minutes = u32::try_from(worked / 60).unwrap_or(u32::MAX);
            if let Ok(Some(paid)) = pay_wage(town, state, agent, work, minutes, now) {
                out.push(paid);
            }
        }
    }
    let shop = sector(address);
    if workplace != Some(shop.as_str()) {
        let price = item_named(town, &shop, description)
            .and_then(|item| town.prices.iter().find(|p| p.sector == shop && p.item == item));
        // The wage just paid counts towards what it can afford.
        let paid: i64 = out
            .iter()
            .map(|e| match &e.body {
                Body::CashMoved(c) => c.amount_cents,
                _ => 0,
            })
            .sum();
        if let Some(price) = price.filter(|p| me.cash_cents + paid >= p.cents) {
            out.push(NewEvent::new(
                now,
                Body::CashMoved(CashMoved {
                    from: Account::Agent(agent),
                    to: Account::Shop(shop.clone()),
                    amount_cents: price.cents,
                    reason: price.item.clone(),
                }),
            ));
        }
    }
    out
}
