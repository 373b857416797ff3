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
//!
//! From rulebook 4 a rulebook also names [`Mechanism`]s switched off (the setting
//! `rulebook.off`): the paper's social mechanisms can each be left out of a run, so what
//! each one buys is measured by running without it. Rulebook 5 adds two: a conversation
//! written whole, in one call ([`Mechanism::Script`]), and invitations that write a
//! commitment when accepted ([`Mechanism::Invitations`]). Rulebook 6 adds two more: the
//! events a persona hosts kept as its own appointments ([`Mechanism::Hosting`]), and an
//! agent who means to invite starting the talk itself ([`Mechanism::Inviting`]).
//! Rulebook 7 adds no mechanism: its validators also refuse a line that calls the one
//! spoken to by another's name or reads the plan aloud ([`Rulebook::checks_speech`]).
//! Rulebook 8 adds none either: an object seen in one of the states its town declares is a
//! routine sight, rated by rule rather than by a call ([`Rulebook::rates_routine_sights`]).
//! Rulebook 9 adds none: an activity that names a place the agent knows is done there
//! without asking ([`Rulebook::goes_where_named`]), and the open ground has words in
//! prompts and memories ([`Rulebook::words_the_open_ground`]).

use std::fmt;

/// The key of the setting in `RunConfigured` that records a run's rulebook.
pub const SETTING: &str = "rulebook";

/// The key of the setting that names the mechanisms a run leaves out (comma-separated).
pub const OFF_SETTING: &str = "rulebook.off";

/// A social mechanism of rulebook 4 or later that a run may leave out (see
/// [`Rulebook::without`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mechanism {
    /// Each persona's `currently` line in every prompt's identity, renewed each morning.
    Currently,
    /// After each conversation, each participant's planning note and the commitments it
    /// agreed to, which its day and hour plans keep as fixed appointments.
    Commitments,
    /// A first step before a conversation: what each speaker wants to tell or ask, which
    /// each of its lines is conditioned on.
    Intentions,
    /// Lines and actions checked (a line repeating an earlier conversation, a speaker naming
    /// itself or narrating, an action copying a persona statement or at an hour it
    /// contradicts) and asked again with what was wrong.
    Validators,
    /// Rulebook 5: a conversation written whole by one call (both speakers' intentions and
    /// memories in its prompt, six lines taking turns), as the paper's first code did, instead
    /// of a call per line; a small model otherwise ends a talk after its first line.
    Script,
    /// Rulebook 5: an intention that names a place and a time is an invitation; after the
    /// talk the one invited says whether it goes (one call), and a yes is a commitment. A
    /// small model's planning note otherwise seldom writes down what was accepted.
    Invitations,
    /// Rulebook 6: each event a persona hosts (the town file's `hosts`) is its own fixed
    /// appointment on its day, kept over any commitment that overlaps it. A host otherwise
    /// keeps a promise made the day before and misses her own party.
    Hosting,
    /// Rulebook 6: an agent who hosts an event still to come, or has promised to go to one,
    /// starts a talk with each free agent it meets who has not promised to go and has not
    /// been invited by it; the talk's intention is the invitation, and the one invited says
    /// whether it goes. The talk is otherwise left to the model's yes or no, which a small
    /// model seldom gives to a passer-by.
    Inviting,
}

impl Mechanism {
    /// Every mechanism, in order.
    pub const ALL: [Mechanism; 8] = [
        Mechanism::Currently,
        Mechanism::Commitments,
        Mechanism::Intentions,
        Mechanism::Validators,
        Mechanism::Script,
        Mechanism::Invitations,
        Mechanism::Hosting,
        Mechanism::Inviting,
    ];

    /// Its name, as settings and the command line write it.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Currently => "currently",
            Mechanism::Commitments => "commitments",
            Mechanism::Intentions => "intentions",
            Mechanism::Validators => "validators",
            Mechanism::Script => "script",
            Mechanism::Invitations => "invitations",
            Mechanism::Hosting => "hosting",
            Mechanism::Inviting => "inviting",
        }
    }

    /// The first rulebook that has it.
    pub fn since(self) -> u32 {
        match self {
            Mechanism::Script | Mechanism::Invitations => 5,
            Mechanism::Hosting | Mechanism::Inviting => 6,
            _ => 4,
        }
    }

    /// The mechanism named `name`.
    pub fn named(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name.trim())
    }

    fn bit(self) -> u8 {
        // (Eight fit; a ninth widens the set.)
        1 << (self as u8)
    }
}

/// The rulebook a run decides by (see the module's documentation): a number, and from
/// rulebook 4 the mechanisms it leaves out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rulebook(u32, u8);

impl Rulebook {
    /// The rulebook of every run recorded before rulebooks were numbered.
    pub const FIRST: Rulebook = Rulebook(1, 0);
    /// The rulebook this engine starts a new run with.
    pub const CURRENT: Rulebook = Rulebook(9, 0);

    /// The rulebook numbered `n`, if this engine knows it.
    pub fn numbered(n: u32) -> Option<Rulebook> {
        (Rulebook::FIRST.0..=Rulebook::CURRENT.0).contains(&n).then_some(Rulebook(n, 0))
    }

    /// This rulebook with `mechanism` left out (an error in words before the rulebook that
    /// has it, [`Mechanism::since`]).
    pub fn without(self, mechanism: Mechanism) -> Result<Rulebook, String> {
        if self.0 < mechanism.since() {
            return Err(format!("{self} has no mechanism `{}` to leave out", mechanism.name()));
        }
        Ok(Rulebook(self.0, self.1 | mechanism.bit()))
    }

    /// Whether this rulebook uses `mechanism`: from the rulebook that has it
    /// ([`Mechanism::since`]), unless it leaves it out.
    pub fn uses(self, mechanism: Mechanism) -> bool {
        self.0 >= mechanism.since() && self.1 & mechanism.bit() == 0
    }

    /// The mechanisms this rulebook leaves out.
    pub fn left_out(self) -> Vec<Mechanism> {
        Mechanism::ALL.into_iter().filter(|m| self.1 & m.bit() != 0).collect()
    }

    /// The rulebook a run's settings (`RunConfigured::settings`) record: [`Rulebook::FIRST`]
    /// when they name none; an error in words when they name one this engine does not know
    /// (a newer Hamlet made the run), no number at all, or a mechanism it does not know.
    pub fn recorded(settings: &[(String, String)]) -> Result<Rulebook, String> {
        let Some((_, value)) = settings.iter().find(|(k, _)| k == SETTING) else {
            return Ok(Rulebook::FIRST);
        };
        let n: u32 = value
            .parse()
            .map_err(|_| format!("the run's `{SETTING}` setting is `{value}`, not a number"))?;
        let mut rulebook = Rulebook::numbered(n).ok_or_else(|| {
            format!(
                "the run decides by rulebook {n}, and this Hamlet knows rulebooks {} to {}: a \
                 newer Hamlet made it",
                Rulebook::FIRST.0,
                Rulebook::CURRENT.0
            )
        })?;
        if let Some((_, off)) = settings.iter().find(|(k, _)| k == OFF_SETTING) {
            for name in off.split(',').filter(|n| !n.trim().is_empty()) {
                let m = Mechanism::named(name).ok_or_else(|| {
                    format!(
                        "the run leaves out `{}`, a mechanism this Hamlet does not know",
                        name.trim()
                    )
                })?;
                rulebook = rulebook.without(m)?;
            }
        }
        Ok(rulebook)
    }

    /// The setting that records this rulebook in a new run's `RunConfigured`; none for
    /// [`Rulebook::FIRST`], so a run made again by it starts with the same event.
    pub fn setting(self) -> Option<(String, String)> {
        (self != Rulebook::FIRST).then(|| (SETTING.to_owned(), self.0.to_string()))
    }

    /// The settings that record this rulebook: [`Rulebook::setting`], and the mechanisms it
    /// leaves out when it leaves any out.
    pub fn settings(self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self.setting().into_iter().collect();
        let off = self.left_out();
        if !off.is_empty() {
            let names: Vec<&str> = off.iter().map(|m| m.name()).collect();
            out.push((OFF_SETTING.to_owned(), names.join(",")));
        }
        out
    }

    /// The number.
    pub fn number(self) -> u32 {
        self.0
    }

    /// Rulebook 2: an everyday action (brushing teeth, a shower) keeps to its bound inside
    /// an hour's decomposition too. By rulebook 1 each action lasted until the next began, so
    /// a quarter-hour slot stretched brushing teeth past its 10 minutes.
    pub fn bounds_everyday_actions(self) -> bool {
        self >= Rulebook(2, 0)
    }

    /// Rulebook 2: a line of dialogue loses every name of the two speakers that heads it
    /// with a colon, and a brace left from the answer's JSON (`respond::as_said`). By
    /// rulebook 1 only the speaker's own name went, so "Nnamdi Okafor: Sefa Okafor: Hey
    /// Nnamdi!…}" was said as it was written.
    pub fn cleans_transcript_layout(self) -> bool {
        self >= Rulebook(2, 0)
    }

    /// Rulebook 3: the memories a retrieval puts in a prompt (what an agent remembers when it
    /// reacts, attends, speaks or is interviewed) are listed in the order they were made, not
    /// by score. Consecutive retrievals share most of their memories, so their prompts then
    /// share a longer opening, which the embedded model reads from its cache.
    pub fn lists_memories_in_time_order(self) -> bool {
        self >= Rulebook(3, 0)
    }

    /// Rulebook 3: memories a retrieval scores equally are ranked by the order they were
    /// made (the later first), never by event id: an id hashes the recorded latencies and
    /// response ids, so two runs given the same answers could otherwise part at the first tie.
    pub fn breaks_retrieval_ties_by_creation(self) -> bool {
        self >= Rulebook(3, 0)
    }

    /// Rulebook 3: the tokens a day plan may take per stroke of the day. By rulebooks 1 and 2
    /// it was 40, and a wordy plan could run out part way through its JSON (a fallback).
    pub fn day_plan_tokens_per_stroke(self) -> u32 {
        if self >= Rulebook(3, 0) {
            56
        } else {
            40
        }
    }

    /// Rulebook 5: the simulated seconds before the same two agents may start talking again,
    /// given the run's setting: at least three hours. A conversation written whole is
    /// several lines long, and two agents who share a room would otherwise talk it through
    /// again every hour.
    pub fn talk_cooldown_secs(self, configured: u64) -> u64 {
        if self.uses(Mechanism::Script) {
            configured.max(3 * 3600)
        } else {
            configured
        }
    }

    /// Rulebook 7: with [`Mechanism::Validators`], a line is also refused when it calls the
    /// one spoken to by another resident's name ("Hi, Sefa!" to Nnamdi) or speaks in the
    /// planner's words ("I'll have 540 minutes free", "at 07:01")
    /// (`validate::check_speech`). By rulebook 6 such lines were said.
    pub fn checks_speech(self) -> bool {
        self.0 >= 7 && self.uses(Mechanism::Validators)
    }

    /// Rulebook 8: what an agent sees of an object in one of the states the town declares
    /// for it (a bed made, a stove idle, a coffee machine brewing) is remembered at
    /// [`ROUTINE_IMPORTANCE`], as the importance prompt's own scale rates "an object standing
    /// idle", without a call. By rulebook 7 the model rated each one, about 5 of 10 on
    /// average for the small model — a third of its single ratings, and a sum of importance
    /// that made agents reflect every few hours. An object in a state its town does not
    /// declare (out of order, on fire) is still rated by the model.
    pub fn rates_routine_sights(self) -> bool {
        self >= Rulebook(8, 0)
    }

    /// Rulebook 9: an activity that names a place the agent knows, after "at", "in", "to",
    /// "into" or "inside" ("works at Hearth café"), is done there, and the place is not
    /// asked. Before, the small model picked another: asked where to go for "works at
    /// Hearth café", with a bakery copied from the café offered first, it went to the bakery
    /// all day.
    pub fn goes_where_named(self) -> bool {
        self >= Rulebook(9, 0)
    }

    /// Rulebook 9: the open ground, which has no address, is "the roadside" where a talk
    /// is held there and "the street" where an agent stands in it. Before, the words were
    /// empty: "talked with Tobias at .", "is in , .".
    pub fn words_the_open_ground(self) -> bool {
        self >= Rulebook(9, 0)
    }

    /// The version of the prompt template `name` this rulebook asks with: `None` for the
    /// newest. Rulebook 3 changed the layout of `turn` (v6: the conversation after what the
    /// speaker remembers, the time last), `react` (v4) and `attend` (v2) (memories first,
    /// then what is noticed; "What X is doing:" instead of "X is wakes up…"), so that
    /// consecutive calls share a longer opening; rulebooks 1 and 2 keep the versions they
    /// were recorded with.
    ///
    /// Rulebook 4 changed `turn` (v7: what the speaker wants from the talk, and the rules
    /// against narration and naming oneself); rulebook 3 keeps v6. Rulebook 5 added `script`
    /// and `invitation` and changed no template; rulebooks 6, 7 and 8 none.
    pub fn template_version(self, name: &str) -> Option<u32> {
        if self >= Rulebook(4, 0) {
            return None;
        }
        if self >= Rulebook(3, 0) {
            return (name == "turn").then_some(6);
        }
        match name {
            "turn" => Some(5),
            "react" => Some(3),
            "attend" => Some(1),
            _ => None,
        }
    }
}

/// The importance of a routine sight by rulebook 8 ([`Rulebook::rates_routine_sights`]):
/// the importance prompt's "routine, forgotten by tomorrow".
pub const ROUTINE_IMPORTANCE: u8 = 2;

/// The key of the setting that gives every agent one strategy (a fork of the paper's
/// ablations: `no_reflection`, `no_reflection_no_planning`), over the town file's.
pub const STRATEGY_SETTING: &str = "strategy";

/// A run's settings with `changes` made (each key set to its value, the rest kept, sorted
/// by key): what a fork that runs by other rules records in its own `RunConfigured`. An
/// error in words when the result names a rulebook, a mechanism or a strategy this engine
/// does not know.
pub fn settings_with(
    settings: &[(String, String)],
    changes: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    let mut out: std::collections::BTreeMap<String, String> = settings.iter().cloned().collect();
    for (k, v) in changes {
        out.insert(k.clone(), v.clone());
    }
    let out: Vec<(String, String)> = out.into_iter().collect();
    Rulebook::recorded(&out)?;
    if let Some((_, s)) = out.iter().find(|(k, _)| k == STRATEGY_SETTING) {
        if !crate::town::STRATEGIES.contains(&s.as_str()) {
            return Err(format!(
                "`{s}` is not a strategy; the strategies are {}",
                crate::town::STRATEGIES.join(", ")
            ));
        }
    }
    Ok(out)
}

impl fmt::Display for Rulebook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rulebook {}", self.0)?;
        let off = self.left_out();
        if !off.is_empty() {
            let names: Vec<&str> = off.iter().map(|m| m.name()).collect();
            write!(f, " without {}", names.join(", "))?;
        }
        Ok(())
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
        let eight = Rulebook::numbered(8).unwrap();
        assert!(Rulebook::CURRENT.goes_where_named() && !eight.goes_where_named());
        assert!(Rulebook::CURRENT.words_the_open_ground() && !eight.words_the_open_ground());
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
        let unknown = Rulebook::recorded(&settings(&[("rulebook", "4"), ("rulebook.off", "x")]));
        assert!(unknown.unwrap_err().contains("does not know"));
        let early =
            Rulebook::recorded(&settings(&[("rulebook", "3"), ("rulebook.off", "currently")]));
        assert!(early.unwrap_err().contains("no mechanism"));
        let before =
            Rulebook::recorded(&settings(&[("rulebook", "4"), ("rulebook.off", "script")]));
        assert!(before.unwrap_err().contains("no mechanism"));
    }

    #[test]
    fn a_mechanism_left_out_is_recorded_and_read_back() {
        assert!(Mechanism::ALL.iter().all(|m| Rulebook::CURRENT.uses(*m)));
        assert!(Mechanism::ALL.iter().all(|m| !Rulebook::numbered(3).unwrap().uses(*m)));
        let four = Rulebook::numbered(4).unwrap();
        assert!(four.uses(Mechanism::Intentions) && !four.uses(Mechanism::Script));
        let without = Rulebook::CURRENT
            .without(Mechanism::Commitments)
            .and_then(|r| r.without(Mechanism::Currently))
            .unwrap();
        assert!(!without.uses(Mechanism::Commitments) && !without.uses(Mechanism::Currently));
        assert!(without.uses(Mechanism::Intentions));
        let recorded = without.settings();
        assert_eq!(recorded[1], ("rulebook.off".to_owned(), "currently,commitments".to_owned()));
        assert_eq!(Rulebook::recorded(&recorded), Ok(without));
        let words =
            format!("rulebook {} without currently, commitments", Rulebook::CURRENT.number());
        assert_eq!(without.to_string(), words);
        let five = Rulebook::numbered(5).unwrap();
        assert!(five.uses(Mechanism::Invitations) && !five.uses(Mechanism::Hosting));
        assert!(five.without(Mechanism::Inviting).unwrap_err().contains("no mechanism"));
        let all_off = Mechanism::ALL.into_iter().try_fold(Rulebook::CURRENT, |r, m| r.without(m));
        assert_eq!(all_off.unwrap().left_out(), Mechanism::ALL.to_vec());
        // What an older rulebook decides is decided the same way.
        assert!(without.lists_memories_in_time_order());
        // Rulebook 7's check of speech is a part of the validators.
        assert!(
            Rulebook::CURRENT.checks_speech() && !Rulebook::numbered(6).unwrap().checks_speech()
        );
        assert!(!Rulebook::CURRENT.without(Mechanism::Validators).unwrap().checks_speech());
        assert_eq!(Rulebook::CURRENT.settings().len(), 1);
        assert!(
            Rulebook::CURRENT.rates_routine_sights()
                && !Rulebook::numbered(7).unwrap().rates_routine_sights()
        );
    }
}
