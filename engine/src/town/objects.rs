//! Objects change state through agents' actions ("coffee machine: brewing coffee"), as
//! `ObjectStateChanged` events, and return to their resting state when the action ends.

use hamlet_log::event::{AgentId, Body, NewEvent, ObjectStateChanged};

use super::{Definition, Object};

/// Why an object cannot take a state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// No object at that address.
    #[error("no object `{0}` (expected sector:arena:object)")]
    NoObject(String),
    /// The object has no such state.
    #[error("{address} can be {states}, not `{state}`")]
    NoState {
        /// The object.
        address: String,
        /// What was asked.
        state: String,
        /// What it can be.
        states: String,
    },
}

/// The object at `sector:arena:object`.
pub fn object<'t>(town: &'t Definition, address: &str) -> Option<&'t Object> {
    let mut parts = address.splitn(3, ':');
    let (sector, arena, name) = (parts.next()?, parts.next()?, parts.next()?);
    let sector = town.sectors.iter().find(|s| s.name == sector)?;
    let arena = sector.arenas.iter().find(|a| a.name == arena)?;
    arena.objects.iter().find(|o| o.name == name)
}

/// `by` puts the object into `state` (one of its declared states) at `now`.
pub fn set_state(
    town: &Definition,
    address: &str,
    state: &str,
    by: Option<AgentId>,
    now: u64,
) -> Result<NewEvent, ObjectError> {
    let object = object(town, address).ok_or_else(|| ObjectError::NoObject(address.into()))?;
    if !object.states.iter().any(|s| s == state) {
        return Err(ObjectError::NoState {
            address: address.into(),
            state: state.into(),
            states: object.states.join(", "),
        });
    }
    Ok(NewEvent::new(
        now,
        Body::ObjectStateChanged(ObjectStateChanged {
            address: address.into(),
            state: state.into(),
            by,
        }),
    ))
}

/// The object returns to its resting state (the first it declares) at `now`.
pub fn rest(
    town: &Definition,
    address: &str,
    by: Option<AgentId>,
    now: u64,
) -> Result<NewEvent, ObjectError> {
    let resting = object(town, address)
        .and_then(|o| o.states.first())
        .ok_or_else(|| ObjectError::NoObject(address.into()))?
        .clone();
    set_state(town, address, &resting, by, now)
}

/// The state an object at `address` takes while used: the first it declares after its
/// resting one ("cooking" for a stove, "being slept in" for a bed); `None` when the address
/// is not an object or the object has only one state.
pub fn in_use<'t>(town: &'t Definition, address: &str) -> Option<&'t str> {
    object(town, address).and_then(|o| o.states.get(1)).map(String::as_str)
}
