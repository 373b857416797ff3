//! The rulebook a run decides by: numbered, and recorded with the run.
//!
//! A recording must be made again as it was made, by any later engine (`hamlet resim`); yet
//! the engine learns to decide better. So a run records the rulebook it started with (the
//! `rulebook` setting of its `RunConfigured` event) and keeps to it for its whole life,
//! resumed, forked or re-simulated; only a new run takes the newest. A run recorded before
//! rulebooks were numbered names none and decides by [`Rulebook::FIRST`].
//!
//! Each change to what the engine decides, once recordings depend on the old way, is a new
//! number and a method here naming what it changes; the code that decides asks that method.
//! Nothing else reads the number.

use std::fmt;

/// The key of the setting in `RunConfigured` that records a run's rulebook.
pub const SETTING: &str = "rulebook";

/// The rulebook a run decides by (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rulebook(u32);

impl Rulebook {
    /// The rulebook of every run recorded before rulebooks were numbered.
    pub const FIRST: Rulebook = Rulebook(1);
    /// The rulebook this engine starts a new run with.
    pub const CURRENT: Rulebook = Rulebook(3);

    /// The rulebook numbered `n`, if this engine knows it.
    pub fn numbered(n: u32) -> Option<Rulebook> {
        (Rulebook::FIRST.0..=Rulebook::CURRENT.0).contains(&n).then_some(Rulebook(n))
    }

    /// The rulebook a run's settings (`RunConfigured::settings`) record: [`Rulebook::FIRST`]
    /// when they name none; an error in words when they name one this engine does not know
    /// (a newer Hamlet made the run) or no number at all.
    pub fn recorded(settings: &[(String, String)]) -> Result<Rulebook, String> {
        let Some((_, value)) = settings.iter().find(|(k, _)| k == SETTING) else {
            return Ok(Rulebook::FIRST);
        };
        let n: u32 = value
            .parse()
            .map_err(|_| format!("the run's `{SETTING}` setting is `{value}`, not a number"))?;
        Rulebook::numbered(n).ok_or_else(|| {
            format!(
                "the run decides by rulebook {n}, and this Hamlet knows rulebooks {} to {}: a \
                 newer Hamlet made it",
                Rulebook::FIRST.0,
                Rulebook::CURRENT.0
            )
        })
    }

    /// The setting that records this rulebook in a new run's `RunConfigured`; none for
    /// [`Rulebook::FIRST`], so a run made again by it starts with the same event.
    pub fn setting(self) -> Option<(String, String)> {
        (self != Rulebook::FIRST).then(|| (SETTING.to_owned(), self.0.to_string()))
    }

    /// The number.
    pub fn number(self) -> u32 {
        self.0
    }

    /// Rulebook 2: an everyday action (brushing teeth, a shower) keeps to its bound inside
    /// an hour's decomposition too. By rulebook 1 each action lasted until the next began, so
    /// a quarter-hour slot stretched brushing teeth past its 10 minutes.
    pub fn bounds_everyday_actions(self) -> bool {
        self >= Rulebook(2)
    }

    /// Rulebook 2: a line of dialogue loses every name of the two speakers that heads it
    /// with a colon, and a brace left from the answer's JSON (`respond::as_said`). By
    /// rulebook 1 only the speaker's own name went, so "Nnamdi Okafor: Sefa Okafor: Hey
    /// Nnamdi!…}" was said as it was written.
    pub fn cleans_transcript_layout(self) -> bool {
        self >= Rulebook(2)
    }

    /// Rulebook 3: the memories a retrieval puts in a prompt (what an agent remembers when it
    /// reacts, attends, speaks or is interviewed) are listed in the order they were made, not
    /// by score. Consecutive retrievals share most of their memories, so their prompts then
    /// share a longer opening, which the embedded model reads from its cache.
    pub fn lists_memories_in_time_order(self) -> bool {
        self >= Rulebook(3)
    }

    /// Rulebook 3: memories a retrieval scores equally are ranked by the order they were
    /// made (the later first), never by event id: an id hashes the recorded latencies and
    /// response ids, so two runs given the same answers could otherwise part at the first tie.
    pub fn breaks_retrieval_ties_by_creation(self) -> bool {
        self >= Rulebook(3)
    }

    /// Rulebook 3: the tokens a day plan may take per stroke of the day. By rulebooks 1 and 2
    /// it was 40, and a wordy plan could run out part way through its JSON (a fallback).
    pub fn day_plan_tokens_per_stroke(self) -> u32 {
        if self >= Rulebook(3) {
            56
        } else {
            40
        }
    }

    /// The version of the prompt template `name` this rulebook asks with: `None` for the
    /// newest. Rulebook 3 changed the layout of `turn` (v6: the conversation after what the
    /// speaker remembers, the time last), `react` (v4) and `attend` (v2) (memories first,
    /// then what is noticed; "What X is doing:" instead of "X is wakes up…"), so that
    /// consecutive calls share a longer opening; rulebooks 1 and 2 keep the versions they
    /// were recorded with.
    pub fn template_version(self, name: &str) -> Option<u32> {
        if self >= Rulebook(3) {
            return None;
        }
        match name {
            "turn" => Some(5),
            "react" => Some(3),
            "attend" => Some(1),
            _ => None,
        }
    }
}

impl fmt::Display for Rulebook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rulebook {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_run_that_names_no_rulebook_decides_by_the_first() {
        let old = settings(&[("town.start_secs", "25200")]);
        assert_eq!(Rulebook::recorded(&old), Ok(Rulebook::FIRST));
        assert_eq!(Rulebook::FIRST.setting(), None);
        assert!(!Rulebook::FIRST.bounds_everyday_actions());
        assert!(!Rulebook::FIRST.cleans_transcript_layout());
        assert!(!Rulebook::FIRST.lists_memories_in_time_order());
        assert_eq!(Rulebook::FIRST.template_version("turn"), Some(5));
    }

    #[test]
    fn the_current_rulebook_is_recorded_and_read_back() {
        let (k, v) = Rulebook::CURRENT.setting().expect("recorded");
        assert_eq!(Rulebook::recorded(&[(k, v)]), Ok(Rulebook::CURRENT));
        assert!(Rulebook::CURRENT.bounds_everyday_actions());
        assert!(Rulebook::CURRENT.cleans_transcript_layout());
        assert!(Rulebook::CURRENT.lists_memories_in_time_order());
        assert_eq!(Rulebook::CURRENT.template_version("turn"), None);
        assert!(
            Rulebook::CURRENT.day_plan_tokens_per_stroke()
                > Rulebook::FIRST.day_plan_tokens_per_stroke()
        );
    }

    #[test]
    fn a_rulebook_this_engine_does_not_know_is_refused_in_words() {
        let newer = Rulebook::recorded(&settings(&[("rulebook", "99")])).unwrap_err();
        assert!(newer.contains("newer Hamlet"), "{newer}");
        let garbled = Rulebook::recorded(&settings(&[("rulebook", "two")])).unwrap_err();
        assert!(garbled.contains("not a number"), "{garbled}");
        assert!(Rulebook::recorded(&settings(&[("rulebook", "0")])).is_err());
    }
}
