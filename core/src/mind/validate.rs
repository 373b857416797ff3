//! What makes a line or an action not sound like a person, checked without a model: a line
//! that repeats a line of an earlier conversation, a speaker naming itself or narrating, a
//! line that names the wrong spouse, workplace or home; an action that copies a persona
//! statement, or sits at an hour it contradicts (waking up in the afternoon, dinner at ten in
//! the morning). The loop asks again with what was wrong (rulebook 4,
//! [`Mechanism::Validators`](crate::rulebook::Mechanism::Validators)); `hamlet research
//! believability` counts the same things in a recording. Pure functions: no model, no clock.

use std::collections::BTreeSet;

/// The fewest words a line must have to count as repeating another: "Thank you!" or "See
/// you later!" said twice in a day is not a copied line.
pub const REPEAT_MIN_WORDS: usize = 4;

/// The lower-case words of a text (letters and digits), in a set.
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// True when `line` says again what `earlier` said: at least 60% of their words in common
/// (shared over all, Jaccard). Used by the loop to end a stalled conversation and by
/// `hamlet research dialogue` to count repeats.
pub fn repeats(earlier: &str, line: &str) -> bool {
    let (a, b) = (words(earlier), words(line));
    let all = a.union(&b).count();
    all > 0 && a.intersection(&b).count() * 10 >= all * 6
}

/// The share of words two texts have in common, over all their words (Jaccard), in 0..=1.
pub fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    let all = a.union(b).count();
    if all == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / all as f32
}

/// True when `line` repeats `earlier`: both of at least [`REPEAT_MIN_WORDS`] words and at
/// least 60% of their words in common.
pub fn repeats_line(earlier: &BTreeSet<String>, line: &BTreeSet<String>) -> bool {
    earlier.len() >= REPEAT_MIN_WORDS
        && line.len() >= REPEAT_MIN_WORDS
        && overlap(earlier, line) >= 0.6
}

/// The first name of a full name.
fn first_name(name: &str) -> &str {
    name.split_whitespace().next().unwrap_or(name)
}

/// True when `word` is in `text` as a whole word (any case).
fn has_word(text: &str, word: &str) -> bool {
    let word = word.to_lowercase();
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| w.trim_matches('\'').to_lowercase() == word)
}

/// What is wrong with a line of dialogue, in words the model is told when asked again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineFault {
    /// It repeats, nearly word for word, a line said in an earlier conversation.
    Repeats(String),
    /// The speaker names itself.
    NamesItself,
    /// It narrates (stage directions, or someone described in the third person).
    Narrates,
    /// It names the wrong spouse, workplace or home for the speaker.
    IdentitySlip(String),
    /// It speaks as an assistant, not as the person ("I'm sorry, but I can't help with that").
    OutOfCharacter,
    /// Rulebook 7: it calls the one spoken to by another resident's name ("Hi, Sefa!" to
    /// Nnamdi): the wrong name.
    Misnames(String),
    /// Rulebook 7: it speaks in the planner's words ("I'll have 540 minutes free", "at
    /// 07:01"): the words.
    PlannerWords(String),
}

/// What an assistant says and a person in a town does not.
const ASSISTANT_SPEAK: &[&str] = &[
    "can't help with that",
    "cannot help with that",
    "can't assist with",
    "cannot assist with",
    "as an ai",
    "an ai language model",
    "i'm an ai",
    "i am an ai",
    "how can i assist you",
    "how may i assist you",
    "i'm sorry, but i can't",
    "i'm sorry, but i cannot",
];

/// True when a line speaks as an assistant ([`ASSISTANT_SPEAK`]).
pub fn out_of_character(line: &str) -> bool {
    let lower = line.to_lowercase().replace('’', "'");
    ASSISTANT_SPEAK.iter().any(|p| lower.contains(p))
}

impl LineFault {
    /// Why the line was not used, for the corrective question.
    pub fn why(&self, speaker: &str) -> String {
        match self {
            LineFault::Repeats(earlier) => {
                format!("it repeats a line already said in another conversation (\"{earlier}\")")
            }
            LineFault::NamesItself => {
                format!("{speaker} would not say their own name: {speaker} is the one speaking")
            }
            LineFault::Narrates => {
                "it describes actions like a story; write only the words spoken aloud".into()
            }
            LineFault::IdentitySlip(what) => format!("it gets {speaker}'s own life wrong: {what}"),
            LineFault::OutOfCharacter => {
                format!("it sounds like an assistant, not like {speaker} talking to a neighbour")
            }
            LineFault::Misnames(wrong) => {
                format!("it calls the person {speaker} is talking to \"{wrong}\", which is not their name")
            }
            LineFault::PlannerWords(words) => format!(
                "\"{words}\" reads a schedule aloud; say times and lengths the way people do"
            ),
        }
    }

    /// The fault's name in a table.
    pub fn name(&self) -> &'static str {
        match self {
            LineFault::Repeats(_) => "repeats",
            LineFault::NamesItself => "names itself",
            LineFault::Narrates => "narrates",
            LineFault::IdentitySlip(_) => "identity slip",
            LineFault::OutOfCharacter => "out of character",
            LineFault::Misnames(_) => "misnames",
            LineFault::PlannerWords(_) => "planner words",
        }
    }
}

/// True when the speaker names itself in its own line ("Hi, Delphine!" in Delphine's mouth).
pub fn names_itself(line: &str, speaker: &str) -> bool {
    has_word(line, first_name(speaker))
}

/// Verbs a narrated line describes someone doing ("Tobias looks up and smiles").
const NARRATION_VERBS: &[&str] = &[
    "smiles", "nods", "looks", "laughs", "sighs", "grins", "shrugs", "waves", "gives", "turns",
    "walks", "glances", "pauses", "chuckles", "leans", "beams", "frowns", "winks",
];

/// True when a line narrates instead of speaking: a stage direction between asterisks or
/// brackets ("*smiles*", "(laughs)"), or a sentence that opens with a name, "he" or "she" and
/// a verb of description ("Tobias looks up from his bed and gives a small smile").
pub fn narrates(line: &str, names: &[&str]) -> bool {
    let stage = |open: char, close: char| {
        line.find(open).is_some_and(|i| line[i + open.len_utf8()..].contains(close))
    };
    if stage('*', '*') || stage('(', ')') || stage('[', ']') {
        return true;
    }
    let subjects: Vec<String> = names
        .iter()
        .flat_map(|n| [n.to_lowercase(), first_name(n).to_lowercase()])
        .chain(["he".to_owned(), "she".to_owned()])
        .collect();
    line.split(['.', '!', '?']).any(|sentence| {
        let words: Vec<String> = sentence
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
            .collect();
        subjects.iter().any(|s| {
            let n = s.split_whitespace().count();
            words.len() > n
                && words[..n].join(" ") == *s
                && NARRATION_VERBS.contains(&words[n].as_str())
                // "Tobias, looks like rain" is spoken: a comma after the name.
                && !sentence.trim_start()[s.len().min(sentence.trim_start().len())..]
                    .starts_with(',')
        })
    })
}

/// What the town file says of a persona that a line can get wrong.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// The persona's name.
    pub name: String,
    /// Whom it is married to (from "X is married to Y").
    pub spouse: Option<String>,
    /// Its workplace's sector.
    pub workplace: Option<String>,
    /// Its home's sector.
    pub home: String,
    /// Every persona's name in the town.
    pub everyone: Vec<String>,
    /// Every sector's name in the town.
    pub sectors: Vec<String>,
}

impl Facts {
    /// The facts of persona `name` from its seed statements, home and workplace
    /// (`sector:arena`), among `everyone` and `sectors`.
    pub fn of(
        name: &str,
        seed: &[&str],
        home: &str,
        workplace: Option<&str>,
        everyone: &[String],
        sectors: &[String],
    ) -> Facts {
        let married = format!("{name} is married to ");
        let spouse = seed.iter().find_map(|s| {
            let rest = s.strip_prefix(&married)?;
            everyone.iter().find(|p| rest.starts_with(p.as_str())).cloned()
        });
        let sector = |address: &str| address.split(':').next().unwrap_or(address).to_owned();
        Facts {
            name: name.to_owned(),
            spouse,
            workplace: workplace.map(sector),
            home: sector(home),
            everyone: everyone.to_vec(),
            sectors: sectors.to_vec(),
        }
    }

    /// What `line`, said by this persona, gets wrong about its own life, if the facts can
    /// tell: a spouse ("my husband Oskar" when married to someone else), a workplace ("I
    /// work at the bar"), a home ("I live at Varga house") that is another's.
    pub fn slip(&self, line: &str) -> Option<String> {
        let lower = line.to_lowercase();
        // A spouse named after "my husband" / "my wife".
        for title in ["my husband ", "my wife "] {
            let Some(i) = lower.find(title) else { continue };
            let after = &line[i + title.len()..];
            let named = self
                .everyone
                .iter()
                .find(|p| after.starts_with(p.as_str()) || after.starts_with(first_name(p)));
            if let Some(named) = named {
                if self.spouse.as_deref() != Some(named.as_str()) {
                    return Some(format!("{named} is not {}'s spouse", self.name));
                }
            }
        }
        // A workplace or home that is a sector of the town.
        for (lead, own, what) in [
            ("i work at ", self.workplace.as_deref(), "workplace"),
            ("i work in ", self.workplace.as_deref(), "workplace"),
            ("i live at ", Some(self.home.as_str()), "home"),
            ("i live in ", Some(self.home.as_str()), "home"),
        ] {
            let Some(i) = lower.find(lead) else { continue };
            let after = lower[i + lead.len()..].trim_start_matches("the ");
            let named = self.sectors.iter().find(|s| after.starts_with(&s.to_lowercase()));
            if let Some(named) = named {
                if own != Some(named.as_str()) {
                    return Some(format!("{named} is not {}'s {what}", self.name));
                }
            }
        }
        None
    }
}

/// Words that open a line or sentence before the name of the one spoken to ("Hi, Sefa",
/// "Thanks Oskar").
const GREETINGS: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "morning",
    "evening",
    "afternoon",
    "thanks",
    "thank you",
    "oh",
    "well",
    "yes",
    "no",
    "sure",
    "sorry",
    "welcome",
    "bye",
    "goodbye",
    "ah",
    "good morning",
    "good afternoon",
    "good evening",
    "good night",
    "nice to see you",
    "good to see you",
    "see you",
    "dear",
];

/// The name `line` calls the one spoken to, when it is another resident's: a first name of
/// `everyone` but neither the speaker's nor one of `others` (those in the conversation), said
/// as an address — opening a sentence before a comma ("Sefa, have you…"), after a greeting
/// ("Hi Sefa!", "Good morning, Sefa."), or closing one after a comma ("How are you, Sefa?").
/// A resident only spoken of ("Have you seen Sefa?", "Thanks, Sefa told me") is not one.
pub fn misnames(line: &str, speaker: &str, others: &[&str], everyone: &[String]) -> Option<String> {
    let present: Vec<&str> =
        std::iter::once(speaker).chain(others.iter().copied()).map(first_name).collect();
    let absent: Vec<&str> = everyone
        .iter()
        .map(|n| first_name(n))
        .filter(|n| !present.iter().any(|p| p.eq_ignore_ascii_case(n)))
        .collect();
    // Sentences, each with the mark that ends it.
    let mut sentences = Vec::new();
    let mut start = 0;
    for (i, c) in line.char_indices() {
        if matches!(c, '.' | '!' | '?' | '\n') {
            sentences.push(&line[start..i]);
            start = i + c.len_utf8();
        }
    }
    sentences.push(&line[start..]);
    for sentence in sentences {
        let sentence = sentence.trim().trim_start_matches(['"', '\'', '-', '—', ' ']);
        // "…, Name" closing the sentence.
        if let Some((_, last)) = sentence.rsplit_once(',') {
            let last = last.trim();
            if let Some(n) = absent.iter().find(|n| last == **n) {
                return Some((*n).to_owned());
            }
        }
        // "Name, …" or "Name" alone opening it, or after a greeting.
        let mut rests = vec![sentence];
        for g in GREETINGS {
            let greets = sentence.get(..g.len()).is_some_and(|s| s.eq_ignore_ascii_case(g));
            let Some(tail) = sentence.get(g.len()..).filter(|_| greets) else { continue };
            if !tail.starts_with(char::is_alphanumeric) {
                rests.push(tail.trim_start_matches([',', ' ']));
            }
        }
        for rest in rests {
            for n in &absent {
                let Some(after) = rest.strip_prefix(n) else { continue };
                let after = after.trim_start();
                if after.is_empty() || after.starts_with([',', ';', ':']) {
                    return Some((*n).to_owned());
                }
            }
        }
    }
    None
}

/// The planner's words in a line, if it speaks them: a clock time on an odd minute ("at
/// 07:01"; people round to five minutes), a length of a hundred minutes or more ("540
/// minutes"; people say hours), or "minutes free". A plan reads as `HH:MM what (N min)`, and
/// a small model reads it aloud.
pub fn planner_words(line: &str) -> Option<String> {
    let lower = line.to_lowercase();
    if let Some(i) = lower.find("minutes free") {
        let from = lower[..i].trim_end().rfind(' ').map_or(0, |j| j + 1);
        return Some(lower[from..i + "minutes free".len()].trim().to_owned());
    }
    let bytes = line.as_bytes();
    for (i, _) in line.match_indices(':') {
        let digits = |r: std::ops::Range<usize>| {
            r.end <= bytes.len() && bytes[r].iter().all(u8::is_ascii_digit)
        };
        if i >= 1 && digits(i - 1..i) && digits(i + 1..i + 3) && !digits(i + 3..i + 4) {
            let minute = (bytes[i + 1] - b'0') * 10 + (bytes[i + 2] - b'0');
            if !minute.is_multiple_of(5) && minute < 60 {
                let from = if i >= 2 && digits(i - 2..i) { i - 2 } else { i - 1 };
                return Some(line[from..i + 3].to_owned());
            }
        }
    }
    let tokens: Vec<&str> = line.split_whitespace().collect();
    for pair in tokens.windows(2) {
        let unit = pair[1].trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        let n: Option<u32> = pair[0].trim_start_matches('(').parse().ok();
        if matches!(unit.as_str(), "min" | "minutes" | "mins") && n.is_some_and(|n| n >= 100) {
            return Some(format!("{} {}", pair[0].trim_start_matches('('), unit));
        }
    }
    None
}

/// Checks a line the way rulebook 7 adds to [`check_line`]: the wrong name for the one
/// spoken to ([`misnames`]) and the planner's words ([`planner_words`]).
pub fn check_speech(
    line: &str,
    speaker: &str,
    others: &[&str],
    everyone: &[String],
) -> Option<LineFault> {
    if let Some(wrong) = misnames(line, speaker, others, everyone) {
        return Some(LineFault::Misnames(wrong));
    }
    planner_words(line).map(LineFault::PlannerWords)
}

/// Checks a line of dialogue by `speaker` to `others` before it is said: the first fault
/// found, if any. `earlier` are the words of lines said in earlier conversations (with the
/// line itself), most recent last.
pub fn check_line(
    line: &str,
    speaker: &str,
    others: &[&str],
    facts: Option<&Facts>,
    earlier: &[(BTreeSet<String>, String)],
) -> Option<LineFault> {
    if line.trim().is_empty() {
        return None;
    }
    if names_itself(line, speaker) {
        return Some(LineFault::NamesItself);
    }
    if out_of_character(line) {
        return Some(LineFault::OutOfCharacter);
    }
    let mut names = vec![speaker];
    names.extend_from_slice(others);
    if narrates(line, &names) {
        return Some(LineFault::Narrates);
    }
    if let Some(slip) = facts.and_then(|f| f.slip(line)) {
        return Some(LineFault::IdentitySlip(slip));
    }
    let mine = words(line);
    earlier
        .iter()
        .rev()
        .find(|(w, _)| repeats_line(w, &mine))
        .map(|(_, text)| LineFault::Repeats(text.clone()))
}

/// What is wrong with a planned action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionFault {
    /// It copies a statement of the persona's seed paragraph.
    CopiesPersona(String),
    /// It is at an hour it contradicts.
    OddHour(String),
}

impl ActionFault {
    /// Why the action was not used, for the corrective question.
    pub fn why(&self) -> String {
        match self {
            ActionFault::CopiesPersona(s) => {
                format!("it copies a fact about the person (\"{s}\") instead of saying what they do then")
            }
            ActionFault::OddHour(why) => why.clone(),
        }
    }

    /// The fault's name in a table.
    pub fn name(&self) -> &'static str {
        match self {
            ActionFault::CopiesPersona(_) => "copies persona",
            ActionFault::OddHour(_) => "odd hour",
        }
    }
}

/// True when `action` copies one of `seed` statements: at least 60% of its words (the
/// persona's name aside) in common with one of at least [`REPEAT_MIN_WORDS`] words.
pub fn copies_persona<'a>(action: &str, name: &str, seed: &[&'a str]) -> Option<&'a str> {
    let drop_name = |mut w: BTreeSet<String>| {
        for part in name.split_whitespace() {
            w.remove(&part.to_lowercase());
        }
        w
    };
    let act = drop_name(words(action));
    if act.len() < REPEAT_MIN_WORDS {
        return None;
    }
    seed.iter().copied().find(|s| {
        let statement = drop_name(words(s));
        statement.len() >= REPEAT_MIN_WORDS && overlap(&act, &statement) >= 0.6
    })
}

/// Activities bound to a time of day, and the minutes after midnight they may start in.
const HOURS: &[(&[&str], u16, u16, &str)] = &[
    (&["wakes up", "wake up", "waking up", "gets out of bed"], 4 * 60, 12 * 60, "waking up"),
    (&["breakfast"], 5 * 60, 11 * 60 + 30, "breakfast"),
    (&["lunch"], 11 * 60, 15 * 60 + 30, "lunch"),
    (&["dinner", "supper"], 16 * 60 + 30, 23 * 60, "dinner"),
    (&["goes to bed", "go to bed", "goes to sleep", "falls asleep"], 19 * 60, 27 * 60, "bedtime"),
];

/// True when `action`, starting at `minute` after midnight, is at an hour it contradicts
/// (waking up in the afternoon, dinner at 10:00, going to bed at noon): the reason in words.
pub fn odd_hour(action: &str, minute: u16) -> Option<String> {
    let lower = action.to_lowercase();
    for (phrases, from, until, what) in HOURS {
        if !phrases.iter().any(|p| lower.contains(p)) {
            continue;
        }
        // Bedtime runs past midnight: 01:00 is 25:00 of the day before.
        let m = if *until > 24 * 60 && minute < 4 * 60 { minute + 24 * 60 } else { minute };
        if m < *from || m >= *until {
            return Some(format!(
                "{what} at {:02}:{:02} is at the wrong time of day",
                minute / 60 % 24,
                minute % 60
            ));
        }
    }
    None
}

/// Checks a planned action of persona `name` (with its seed statements) starting at `minute`.
pub fn check_action(action: &str, minute: u16, name: &str, seed: &[&str]) -> Option<ActionFault> {
    if let Some(s) = copies_persona(action, name, seed) {
        return Some(ActionFault::CopiesPersona(s.to_owned()));
    }
    odd_hour(action, minute).map(ActionFault::OddHour)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speaker_naming_itself_or_narrating_is_caught_and_plain_speech_is_not() {
        assert!(names_itself("Hi, Delphine! How are you?", "Delphine Ashcombe"));
        assert!(!names_itself("Hi, Tobias! How are you?", "Delphine Ashcombe"));
        assert!(!names_itself("Delphines are flowers", "Delphine Ashcombe"));
        let names = ["Delphine Ashcombe", "Tobias Ashcombe"];
        assert!(narrates("Tobias Ashcombe looks up from his bed and gives a small smile.", &names));
        assert!(narrates("*smiles* Good to see you.", &names));
        assert!(narrates("Well. She nods slowly.", &names));
        assert!(!narrates("Tobias, looks like rain today!", &names));
        assert!(!narrates("Looks like rain. Are you coming tonight?", &names));
        assert!(out_of_character("I'm sorry, but I can't help with that."));
        assert!(!out_of_character("Sorry, I can't come tonight."));
    }

    #[test]
    fn a_line_repeats_an_earlier_one_only_when_both_are_long_enough_and_mostly_shared() {
        let earlier = vec![(
            words("Oh, Tamsin, it's been a long time without you. How are you?"),
            "Oh, Tamsin, it's been a long time without you. How are you?".to_owned(),
        )];
        let fault = check_line(
            "Oh Tamsin, it's been a long time without you! How are you?",
            "Rowan Ashcombe",
            &["Tamsin Hale"],
            None,
            &earlier,
        );
        assert!(matches!(fault, Some(LineFault::Repeats(_))), "{fault:?}");
        assert_eq!(
            check_line(
                "Will you come to the party tomorrow?",
                "Rowan Ashcombe",
                &[],
                None,
                &earlier
            ),
            None
        );
        let bye = vec![(words("See you!"), "See you!".to_owned())];
        assert_eq!(check_line("See you!", "Rowan Ashcombe", &[], None, &bye), None);
    }

    #[test]
    fn identity_slips_are_told_from_the_town_file() {
        let everyone: Vec<String> =
            ["Tobias Ashcombe", "Delphine Ashcombe", "Oskar Lindqvist"].map(String::from).to_vec();
        let sectors: Vec<String> =
            ["Fernside market", "Marigold café", "Ashcombe house"].map(String::from).to_vec();
        let facts = Facts::of(
            "Tobias Ashcombe",
            &["Tobias Ashcombe is married to Delphine Ashcombe"],
            "Ashcombe house:bedroom",
            Some("Fernside market:pharmacy"),
            &everyone,
            &sectors,
        );
        assert_eq!(facts.spouse.as_deref(), Some("Delphine Ashcombe"));
        assert!(facts.slip("I told my husband Oskar about it.").is_some());
        assert_eq!(facts.slip("My wife Delphine runs the café."), None);
        assert!(facts.slip("I work at Marigold café these days.").is_some());
        assert_eq!(facts.slip("I work at Fernside market."), None);
        assert_eq!(facts.slip("I live in Ashcombe house."), None);
        assert!(facts.slip("I live at the Fernside market.").is_some());
    }

    #[test]
    fn the_wrong_name_for_the_one_spoken_to_is_caught_and_a_name_spoken_of_is_not() {
        let everyone: Vec<String> =
            ["Oskar Lindqvist", "Nnamdi Okafor", "Sefa Mensah"].map(String::from).to_vec();
        let to_nnamdi =
            |line: &str| misnames(line, "Oskar Lindqvist", &["Nnamdi Okafor"], &everyone);
        assert_eq!(to_nnamdi("Hi Sefa! Good to see you.").as_deref(), Some("Sefa"));
        assert_eq!(to_nnamdi("Good morning, Sefa.").as_deref(), Some("Sefa"));
        assert_eq!(to_nnamdi("How are you, Sefa?").as_deref(), Some("Sefa"));
        assert_eq!(to_nnamdi("Sefa, have you heard about the party?").as_deref(), Some("Sefa"));
        assert_eq!(to_nnamdi("Hi Nnamdi! Good to see you."), None);
        assert_eq!(to_nnamdi("Have you seen Sefa today?"), None);
        assert_eq!(to_nnamdi("Thanks, Sefa told me about it."), None);
        assert_eq!(to_nnamdi("Sefa and I went to the market."), None);
        assert_eq!(to_nnamdi("Hey, Oskar here."), None, "the speaker's own name is another check");
    }

    #[test]
    fn the_planners_words_in_a_line_are_caught_and_a_persons_are_not() {
        assert_eq!(
            planner_words("I'll have 540 minutes free.").as_deref(),
            Some("540 minutes free")
        );
        assert_eq!(planner_words("See you at 07:01 then!").as_deref(), Some("07:01"));
        assert_eq!(planner_words("I'm reading (120 min) now.").as_deref(), Some("120 min"));
        assert_eq!(planner_words("The party starts at 17:00, see you there."), None);
        assert_eq!(planner_words("Let's meet at 5:30."), None);
        assert_eq!(planner_words("I walked for 20 minutes."), None);
        assert_eq!(planner_words("Ratio 3:1 is fine"), None);
        assert!(matches!(
            check_speech(
                "Hi Sefa!",
                "Oskar Lindqvist",
                &["Nnamdi Okafor"],
                &["Sefa Mensah".into()]
            ),
            Some(LineFault::Misnames(_))
        ));
    }

    #[test]
    fn actions_that_copy_the_persona_or_contradict_their_hour_are_caught() {
        let seed = ["Ilona Varga opens Thistle supply store at 08:00 every morning"];
        let copied = "opens Thistle supply store at 08:00 every morning";
        assert!(matches!(
            check_action(copied, 17 * 60 + 15, "Ilona Varga", &seed),
            Some(ActionFault::CopiesPersona(_))
        ));
        assert_eq!(check_action("restocks the paint shelf", 600, "Ilona Varga", &seed), None);
        assert!(odd_hour("wakes up and stretches", 17 * 60 + 45).is_some());
        assert!(odd_hour("wakes up and stretches", 7 * 60).is_none());
        assert!(odd_hour("eats dinner with Tobias", 10 * 60).is_some());
        assert!(odd_hour("eats dinner with Tobias", 19 * 60).is_none());
        assert!(odd_hour("goes to bed", 12 * 60).is_some());
        assert!(odd_hour("goes to bed", 23 * 60).is_none());
        assert!(odd_hour("goes to bed", 60).is_none(), "past midnight is still bedtime");
        assert!(odd_hour("reads a book", 3 * 60).is_none());
    }
}
