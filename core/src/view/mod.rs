//! What the viewer draws, computed from any [`Log`](crate::log::Log): a frame of the map
//! ([`frame`]), the tracks the page replays itself ([`tracks`]), the timeline under the map
//! ([`timeline`]), the map ([`map`]) and the "why?" graph in columns ([`layout`]); a
//! [`session`] on what is open answers the window with them, through one door
//! ([`dispatch`]) for the desktop and the browser alike. The engine's `view` adds what only
//! a store allows.

pub mod dispatch;
pub mod frame;
pub mod layout;
pub mod map;
pub mod session;
pub mod timeline;
pub mod tracks;

use hamlet_log::event::decode_body;
use hamlet_log::format::StoredRef;
use hamlet_log::{BranchId, Event};

pub use frame::Frame;
pub use layout::WhyGraph;
pub use map::MapView;
pub use timeline::Timeline;
pub use tracks::Tracks;

/// Decodes a stored event whose kind is one of `kinds`; `None` for other kinds, or bytes
/// that do not decode (a frame draws less rather than failing).
pub fn decode_if(branch: BranchId, event: &StoredRef<'_>, kinds: &[u16]) -> Option<Event> {
    if !kinds.contains(&event.kind) {
        return None;
    }
    let body = decode_body(event.kind, event.schema, event.body).ok()?;
    Some(Event {
        id: event.id,
        parent: event.parent,
        branch,
        header: event.header.to_header(),
        body,
    })
}

/// The kind tags the viewer reads by hand, before decoding a body (a test holds them to the
/// log format's).
pub mod kinds {
    /// `RunConfigured`.
    pub const RUN_CONFIGURED: u16 = 2;
    /// `TownLoaded`.
    pub const TOWN_LOADED: u16 = 3;
    /// `AgentJoined`.
    pub const AGENT_JOINED: u16 = 4;
    /// `ClockStepped`.
    pub const CLOCK_STEPPED: u16 = 5;
    /// `Moved`.
    pub const MOVED: u16 = 6;
    /// `PlanMade`.
    pub const PLAN_MADE: u16 = 15;
    /// `ConversationStarted`.
    pub const CONVERSATION_STARTED: u16 = 17;
    /// `DialogueTurn`.
    pub const DIALOGUE_TURN: u16 = 18;
    /// `ReflectionStarted`.
    pub const REFLECTION_STARTED: u16 = 20;
    /// `Intervened`.
    pub const INTERVENED: u16 = 23;
    /// `MayorActed`.
    pub const MAYOR_ACTED: u16 = 28;
}

#[cfg(test)]
mod tests {
    use hamlet_log::event::kind_by_name;

    #[test]
    fn the_kind_tags_read_by_hand_are_the_log_formats() {
        use super::kinds::*;
        for (tag, name) in [
            (RUN_CONFIGURED, "RunConfigured"),
            (TOWN_LOADED, "TownLoaded"),
            (AGENT_JOINED, "AgentJoined"),
            (CLOCK_STEPPED, "ClockStepped"),
            (MOVED, "Moved"),
            (PLAN_MADE, "PlanMade"),
            (MAYOR_ACTED, "MayorActed"),
            (CONVERSATION_STARTED, "ConversationStarted"),
            (DIALOGUE_TURN, "DialogueTurn"),
            (REFLECTION_STARTED, "ReflectionStarted"),
            (INTERVENED, "Intervened"),
        ] {
            assert_eq!(kind_by_name(name), Some(tag), "{name}");
        }
    }
}
