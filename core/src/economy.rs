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

/// `agent` is paid for `minutes` of work at `workplace` (a sector): for a job a mayor posted
/// and it took, from the town's treasury, at the job's wage (or the one set for the sector
/// since), at most its share of the treasury (the treasury over the jobs taken); else from outside the town, at the town file's
/// wage (or the one a mayor set for the sector).
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
    let book = state.mayor.as_ref();
    let set = book.and_then(|b| b.wages.get(workplace).copied());
    let job = book.and_then(|b| {
        b.jobs.iter().rev().find(|j| j.taken_by == Some(agent) && j.sector == workplace)
    });
    let (from, rate, most) = match (job, book) {
        // Each hire draws at most its share of the treasury: the agents of one step are paid
        // from the same balance, and together never take more than it holds.
        (Some(job), Some(book)) => {
            let hired = book.jobs.iter().filter(|j| j.taken_by.is_some()).count().max(1);
            (Account::Town, set.unwrap_or(job.cents_per_hour), book.treasury_cents / hired as i64)
        }
        _ => {
            let wage = town.wages.iter().find(|w| w.sector == workplace);
            let rate = set.or(wage.map(|w| w.cents_per_hour));
            (Account::World, rate.ok_or_else(|| EconomyError::NoWage(workplace.into()))?, i64::MAX)
        }
    };
    let amount = (rate * i64::from(minutes) / 60).min(most);
    Ok((amount > 0).then(|| {
        NewEvent::new(
            now,
            Body::CashMoved(CashMoved {
                from,
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

#[cfg(test)]
mod mayor_tests {
    use super::*;
    use crate::fold::{Job, MayorBook};
    use hamlet_log::EventId;

    #[test]
    fn a_job_the_mayor_posted_is_paid_from_the_treasury_at_its_wage_as_far_as_it_holds() {
        let town = Definition::parse("w.toml", crate::town::WILLOWMERE).unwrap();
        let mut state = Town::default();
        let bo = AgentId(1);
        state.agents.insert(bo, crate::fold::Agent { name: "Bo".into(), ..Default::default() });
        let job = |taken_by| Job {
            posted: EventId([1; 32]),
            sector: "Oak Hill bakery".into(),
            title: "baker".into(),
            cents_per_hour: 1_200,
            taken_by,
        };
        state.mayor = Some(MayorBook {
            treasury_cents: 1_000,
            jobs: vec![job(Some(bo))],
            ..Default::default()
        });
        let paid =
            |state: &Town, minutes| match pay_wage(&town, state, bo, "Oak Hill bakery", minutes, 0)
            {
                Ok(Some(e)) => match e.body {
                    Body::CashMoved(c) => (c.from, c.amount_cents),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            };
        assert_eq!(paid(&state, 30), (Account::Town, 600));
        assert_eq!(paid(&state, 120), (Account::Town, 1_000), "no more than the treasury holds");
        state.mayor.as_mut().unwrap().wages.insert("Oak Hill bakery".into(), 1_800);
        assert_eq!(paid(&state, 30), (Account::Town, 900), "a wage set since stands");
        state.mayor.as_mut().unwrap().treasury_cents = 0;
        assert!(pay_wage(&town, &state, bo, "Oak Hill bakery", 30, 0).unwrap().is_none());
        // Two hires: each draws at most half of what the treasury holds.
        let book = state.mayor.as_mut().unwrap();
        book.treasury_cents = 1_000;
        book.jobs.push(Job { taken_by: Some(AgentId(2)), ..job(None) });
        assert_eq!(paid(&state, 120), (Account::Town, 500));
        // Not its job: a sector the town file pays from outside, or none.
        state.mayor.as_mut().unwrap().jobs = vec![job(None)];
        state.mayor.as_mut().unwrap().wages.clear();
        assert!(pay_wage(&town, &state, bo, "Oak Hill bakery", 30, 0).is_err());
        let cafe = pay_wage(&town, &state, bo, "Marigold café", 60, 0).unwrap().unwrap();
        assert!(matches!(cafe.body, Body::CashMoved(c) if c.from == Account::World));
    }
}
