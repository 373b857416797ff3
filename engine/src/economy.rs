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
