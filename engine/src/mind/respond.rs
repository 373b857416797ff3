//! Responding to the world and to the user: whether to react to what was just noticed
//! (from the two retrievals the paper names), one line of dialogue at a time, interview
//! answers, and inner-voice instructions.

use std::collections::BTreeMap;

use hamlet_gateway::answer::{Answer, Shape, Turn};
use hamlet_gateway::Gateway;
use hamlet_log::event::{AgentId, DialogueTurn, InterviewAnswered, MemoryKind};
use hamlet_log::{Body, EventId};

use super::memory::MemoryStream;
use super::prompt::{template, template_for, Style};
use super::retrieval::RetrievalSettings;
use super::think::{ask, recall, remember, ThinkError, Who};
use super::validate;
use crate::pending::{Cause, Pending, PendingId};
use crate::rulebook::Rulebook;

/// The descriptions of a retrieval's hits, joined, for a prompt: by score, or by rulebook 3
/// in the order they were made ([`Rulebook::lists_memories_in_time_order`]).
fn context(
    stream: &MemoryStream,
    hits: &[hamlet_log::event::RetrievalHit],
    rulebook: Rulebook,
) -> String {
    let mut found: Vec<(usize, &str)> = hits
        .iter()
        .filter_map(|h| {
            let at = stream.position(h.memory)?;
            Some((at, stream.memories()[at].description.as_str()))
        })
        .collect();
    if rulebook.lists_memories_in_time_order() {
        found.sort_by_key(|(at, _)| *at);
    }
    let lines: Vec<&str> = found.into_iter().map(|(_, text)| text).collect();
    if lines.is_empty() {
        "nothing in particular".to_owned()
    } else {
        lines.join("; ")
    }
}

/// What an agent is about to decide on.
#[derive(Clone, Debug)]
pub struct Situation<'a> {
    /// The town's name.
    pub town: &'a str,
    /// The agent.
    pub agent: AgentId,
    /// Its name.
    pub name: &'a str,
    /// Its summary description.
    pub summary: &'a str,
    /// The time, in words.
    pub time: &'a str,
    /// What it is doing, in words.
    pub status: &'a str,
    /// Its memory stream.
    pub stream: &'a MemoryStream,
    /// The rulebook its run decides by.
    pub rulebook: Rulebook,
}

impl Situation<'_> {
    /// Who the agent is, for its prompts' preamble.
    pub fn who(&self) -> Who<'_> {
        Who { town: self.town, agent: self.agent, name: self.name, summary: self.summary }
    }
}

/// Continue or react? Two retrievals, as the paper names them — what the agent remembers
/// of the observation, and of its relationship with who or what it concerns — give the
/// context (their memories joined, without a further summarising call); then a yes/no
/// question. Returns the decision and the position of the answer's last event.
#[allow(clippy::too_many_arguments)]
pub async fn should_react(
    gateway: &Gateway,
    style: Style,
    who: &Situation<'_>,
    observation: &str,
    subject: &str,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(bool, Option<PendingId>), ThinkError> {
    let (about, at1) =
        recall(gateway, who.agent, who.stream, observation, now, retrieval, pending).await?;
    // The loop knows a consideration by this query (`sim::state::RELATIONSHIP`).
    let relation = format!("{}'s relationship with {subject}", who.name);
    let (with, at2) =
        recall(gateway, who.agent, who.stream, &relation, now, retrieval, pending).await?;
    let mut hits = about.hits;
    for hit in with.hits {
        if !hits.iter().any(|h| h.memory == hit.memory) {
            hits.push(hit);
        }
    }
    let vars = BTreeMap::from([
        ("town", who.town.to_owned()),
        ("agent", who.name.to_owned()),
        ("summary", who.summary.to_owned()),
        ("time", who.time.to_owned()),
        ("status", who.status.to_owned()),
        ("observation", observation.to_owned()),
        ("context", context(who.stream, &hits, who.rulebook)),
        ("other", subject.to_owned()),
    ]);
    let mut call = template_for("react", who.rulebook)?.call(&vars, style, Shape::YesNo)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(16);
    let (answered, at) =
        ask(gateway, call, &[Cause::Pending(at1), Cause::Pending(at2)], now, pending).await?;
    Ok((matches!(answered.answer, Answer::YesNo(true)), at))
}

/// Stop to deal with something out of the ordinary just noticed (an object out of order)?
/// One retrieval — what the agent remembers about it — then a yes/no question. Returns the
/// decision and the position of the answer's last event.
pub async fn should_attend(
    gateway: &Gateway,
    style: Style,
    who: &Situation<'_>,
    observation: &str,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(bool, Option<PendingId>), ThinkError> {
    let (about, at) =
        recall(gateway, who.agent, who.stream, observation, now, retrieval, pending).await?;
    let mut vars = who.who().vars();
    vars.insert("time", who.time.to_owned());
    vars.insert("status", who.status.to_owned());
    vars.insert("observation", observation.to_owned());
    vars.insert("context", context(who.stream, &about.hits, who.rulebook));
    let mut call = template_for("attend", who.rulebook)?.call(&vars, style, Shape::YesNo)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(16);
    let (answered, asked) = ask(gateway, call, &[Cause::Pending(at)], now, pending).await?;
    Ok((matches!(answered.answer, Answer::YesNo(true)), asked))
}

/// How warm a line of dialogue is sampled: greedy decoding makes a small model say again
/// what was just said; a little randomness (from the run's seeded stream, so a re-run is
/// identical) lets the talk move on.
pub const TURN_TEMPERATURE: f32 = 0.7;

pub use crate::mind::validate::repeats;

/// How many times a line that fails a check ([`LineCheck`]) is asked for again, with what
/// was wrong, before the speaker is taken to have nothing to say.
pub const LINE_CORRECTIONS: usize = 2;

/// What a line is checked against before it is said (rulebook 4,
/// [`Mechanism::Validators`](crate::rulebook::Mechanism::Validators)).
#[derive(Clone, Debug, Default)]
pub struct LineCheck<'a> {
    /// The speaker's facts from the town file, when it has them.
    pub facts: Option<&'a validate::Facts>,
    /// The words of lines said in earlier conversations, and the lines.
    pub earlier: &'a [(std::collections::BTreeSet<String>, String)],
    /// Rulebook 7 ([`Rulebook::checks_speech`](hamlet_core::rulebook::Rulebook::checks_speech)):
    /// a line calling the one spoken to by another's name, or in the planner's words, is
    /// refused too ([`validate::check_speech`]).
    pub speech: bool,
}

impl LineCheck<'_> {
    /// What is wrong with `line`, said by `speaker` to `others`, if anything.
    fn fault(&self, line: &str, speaker: &str, others: &[&str]) -> Option<validate::LineFault> {
        validate::check_line(line, speaker, others, self.facts, self.earlier).or_else(|| {
            let everyone = self.facts.map_or(&[][..], |f| f.everyone.as_slice());
            self.speech.then(|| validate::check_speech(line, speaker, others, everyone)).flatten()
        })
    }
}

/// One line of a conversation: the speaker recalls what it remembers of the other (and of
/// what it wants from the talk, and the last thing said), then speaks. Adds the
/// `DialogueTurn` (caused by the answer and the retrieval) to the batch; silence from a
/// fallback ends the conversation, and so does a line that repeats an earlier one of the
/// conversation (it is recorded as silence, see [`Spoken::echo`]). With a `check` (rulebook
/// 4), a line that fails it ([`validate::check_line`]) or repeats one of the conversation is
/// asked for again with what was wrong, up to [`LINE_CORRECTIONS`] times (each try
/// recorded); one still failing is not said.
#[allow(clippy::too_many_arguments)]
pub async fn speak(
    gateway: &Gateway,
    style: Style,
    who: &Situation<'_>,
    other: &str,
    place: &str,
    conversation: EventId,
    dialogue: &[(String, String)],
    intent: Option<&str>,
    check: Option<&LineCheck<'_>>,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(Spoken, PendingId), ThinkError> {
    let last_said = dialogue.last().map_or_else(String::new, |(_, text)| text.clone());
    let query = match intent {
        Some(intent) => format!("{other} {intent} {last_said}"),
        None => format!("{other} {last_said}"),
    };
    let (recalled, at) =
        recall(gateway, who.agent, who.stream, query.trim(), now, retrieval, pending).await?;
    let so_far: Vec<String> =
        dialogue.iter().map(|(speaker, text)| format!("{speaker}: {text}")).collect();
    let cue = match dialogue.last() {
        Some((speaker, _)) => format!("What new thing does {} say back to {speaker}?", who.name),
        None => format!("{0} speaks first. What does {0} say to {other}?", who.name),
    };
    let mut vars = BTreeMap::from([
        ("town", who.town.to_owned()),
        ("agent", who.name.to_owned()),
        ("summary", who.summary.to_owned()),
        ("time", who.time.to_owned()),
        ("place", place.to_owned()),
        ("other", other.to_owned()),
        ("intent", intent.unwrap_or(super::social::NO_INTENTION).to_owned()),
        ("memories", context(who.stream, &recalled.hits, who.rulebook)),
        (
            "dialogue",
            if so_far.is_empty() { "(nothing yet)".to_owned() } else { so_far.join("\n") },
        ),
        ("cue", cue.clone()),
    ]);
    let mut causes = vec![Cause::Logged(conversation), Cause::Pending(at)];
    let mut corrections = 0;
    let (turn, echo, asked) = loop {
        let mut call = template_for("turn", who.rulebook)?.call(&vars, style, Shape::Turn)?;
        call.agent = Some(who.agent);
        call.temperature = Some(TURN_TEMPERATURE);
        call.max_tokens = Some(120);
        // What was already said weighs less in the answer: a small model otherwise copies
        // the last line nearly word for word.
        call.avoid = dialogue.iter().map(|(_, text)| text.clone()).collect();
        let (answered, asked) = ask(gateway, call, &causes, now, pending).await?;
        let mut turn = match answered.answer {
            Answer::Turn(t) => t,
            _ => Turn { say: String::new(), end: true },
        };
        turn.say = if who.rulebook.cleans_transcript_layout() {
            as_said(&turn.say, who.name, other).to_owned()
        } else {
            without_speaker(&turn.say, who.name).to_owned()
        };
        // A line that says again what was already said is not said: the speaker has nothing
        // new and the conversation ends there (the model's words stay in its recorded answer).
        let echo = dialogue.iter().any(|(_, earlier)| repeats(earlier, &turn.say));
        let Some(check) = check else { break (turn, echo, asked) };
        // A line without a word ("...") says nothing: the speaker falls silent.
        if !turn.say.chars().any(char::is_alphanumeric) {
            turn.say.clear();
            break (turn, false, asked);
        }
        let fault = if echo {
            Some("it says again what was already said in this conversation".to_owned())
        } else {
            check.fault(&turn.say, who.name, &[other]).map(|f| f.why(who.name))
        };
        let Some(why) = fault else { break (turn, false, asked) };
        if corrections == LINE_CORRECTIONS {
            // Still wrong: the speaker has nothing fit to say, and the talk ends.
            break (turn, true, asked);
        }
        corrections += 1;
        vars.insert(
            "cue",
            format!(
                "{cue}\n(The line \"{}\" was not used: {why}. Write a different line.)",
                turn.say
            ),
        );
        causes = vec![Cause::Logged(conversation), Cause::Pending(at)];
        causes.extend(asked.map(Cause::Pending));
    };
    let turn = if echo { Turn { say: String::new(), end: true } } else { turn };
    let mut causes = vec![Cause::Logged(conversation), Cause::Pending(at)];
    causes.extend(asked.map(Cause::Pending));
    let body = Body::DialogueTurn(DialogueTurn {
        conversation,
        speaker: who.agent,
        text: turn.say.clone(),
        ends: turn.end || turn.say.is_empty(),
    });
    let at = pending.push(now, body, &causes);
    Ok((Spoken { turn, echo }, at))
}

/// The lines a conversation's script asks for (rulebook 5,
/// [`Mechanism::Script`](crate::rulebook::Mechanism::Script)), fewer when the run allows
/// fewer.
pub const SCRIPT_LINES: usize = 6;

/// How many times a script with a faulty line is asked for again, with what was wrong.
pub const SCRIPT_CORRECTIONS: usize = 1;

/// One of the two speakers of a script: who it is, what it wants from the talk, and what its
/// lines are checked against (with validators).
#[derive(Clone, Debug)]
pub struct Side<'a> {
    /// The speaker.
    pub who: Situation<'a>,
    /// What it wants from the talk, when it decided.
    pub intent: Option<&'a str>,
    /// What its lines are checked against, by a run with validators.
    pub check: Option<LineCheck<'a>>,
}

/// A conversation written whole: its lines (the speaker's index among the two sides, and
/// the words), and how many lines of the script were left out as faulty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// The lines, in order.
    pub lines: Vec<(usize, String)>,
    /// The script's lines left out as faulty.
    pub dropped: usize,
}

/// The JSON Schema of a script's answer: `lines` lines (at most), taking turns, the first by
/// `names[0]`; each line an object whose one key is its speaker's name (so the model writes
/// the name before the words, and cannot give two lines running to one speaker).
pub fn script_schema(names: [&str; 2], lines: usize) -> serde_json::Value {
    let line = |name: &str| {
        serde_json::json!({
            "type": "object",
            "properties": { name: { "type": "string", "minLength": 1, "maxLength": LINE_CHARS } },
            "required": [name],
            "additionalProperties": false,
        })
    };
    let turns: Vec<serde_json::Value> = (0..lines).map(|i| line(names[i % 2])).collect();
    serde_json::json!({
        "type": "object",
        "properties": {
            // (a grammar takes the tuple whole; a server may answer fewer)
            "lines": { "type": "array", "prefixItems": turns, "minItems": 2, "maxItems": lines },
        },
        "required": ["lines"],
        "additionalProperties": false,
    })
}

/// The lines of a script's answer as they are said: each by the side it names (as its key,
/// or as `speaker` beside `say`; a line naming neither takes its turn), cleaned as
/// [`as_said`] cleans a line, a comma at its end made a full stop, empty lines left out,
/// consecutive lines of one speaker joined, at most `most`.
pub fn script_lines(
    answer: &serde_json::Value,
    names: [&str; 2],
    most: usize,
) -> Vec<(usize, String)> {
    let items = answer.get("lines").and_then(|l| l.as_array()).cloned().unwrap_or_default();
    let mut out: Vec<(usize, String)> = Vec::new();
    for item in items {
        let Some(fields) = item.as_object() else { continue };
        let text = |k: &str| fields.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let (speaker, say) = match fields.iter().next() {
            _ if fields.contains_key("say") => (text("speaker"), text("say")),
            Some((name, said)) => (name.as_str(), said.as_str().unwrap_or("")),
            None => continue,
        };
        let speaker = speaker.trim();
        let first = |n: &str| n.split_whitespace().next().unwrap_or(n).to_owned();
        let side = names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(speaker))
            .or_else(|| names.iter().position(|n| first(n).eq_ignore_ascii_case(speaker)))
            .unwrap_or_else(|| out.last().map_or(0, |(s, _)| 1 - s));
        let said = as_said(say, names[side], names[1 - side]);
        if !said.chars().any(char::is_alphanumeric) {
            continue;
        }
        let said = match said.strip_suffix(',') {
            Some(cut) => format!("{}.", cut.trim_end()),
            None => said.to_owned(),
        };
        let said = whole_sentences(&said, LINE_CHARS);
        match out.last_mut() {
            Some((s, text)) if *s == side => {
                text.push(' ');
                text.push_str(&said);
            }
            _ => out.push((side, said)),
        }
    }
    out.truncate(most);
    out
}

/// The longest line a script may write, in characters (its schema's `maxLength`).
pub const LINE_CHARS: usize = 300;

/// A line that ran to `most` characters (a small model runs on until the schema stops it)
/// without ending its sentence, cut back to the end of its last whole sentence, when that
/// keeps a third of it or more.
fn whole_sentences(line: &str, most: usize) -> String {
    let ended = line.trim_end().ends_with(['.', '!', '?', '"']);
    if line.chars().count() + 5 < most || ended {
        return line.to_owned();
    }
    match line.rfind(['.', '!', '?']) {
        Some(at) if at >= line.len() / 3 => line[..=at].to_owned(),
        _ => line.to_owned(),
    }
}

/// The faulty lines of a script, and why each is: a line that says again what a sound line
/// before it in the script said, or (for a side with a check) one that fails
/// [`validate::check_line`].
fn script_faults(lines: &[(usize, String)], sides: [&Side<'_>; 2]) -> Vec<(usize, String)> {
    let mut faults: Vec<(usize, String)> = Vec::new();
    for (i, (side, text)) in lines.iter().enumerate() {
        let name = sides[*side].who.name;
        let sound = |k: &usize| !faults.iter().any(|(f, _)| f == k);
        if (0..i).filter(sound).any(|k| repeats(&lines[k].1, text)) {
            faults.push((i, "it says again what was already said in this conversation".into()));
            continue;
        }
        let Some(check) = &sides[*side].check else { continue };
        let other = sides[1 - side].who.name;
        if let Some(f) = check.fault(text, name, &[other]) {
            faults.push((i, f.why(name)));
        }
    }
    faults
}

/// The sound lines of a script (its faulty ones left out, consecutive lines of one speaker
/// joined again).
fn sound_lines(lines: &[(usize, String)], faults: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (i, (side, text)) in lines.iter().enumerate() {
        if faults.iter().any(|(f, _)| *f == i) {
            continue;
        }
        match out.last_mut() {
            Some((s, said)) if s == side => {
                said.push(' ');
                said.push_str(text);
            }
            _ => out.push((*side, text.clone())),
        }
    }
    out
}

/// A conversation written whole (rulebook 5): each side recalls what it remembers of the
/// other and of what it wants from the talk; one `script` call writes [`SCRIPT_LINES`] lines,
/// taking turns, the first side first. A script with faulty lines ([`script_faults`]) is asked for again
/// with what was wrong, up to [`SCRIPT_CORRECTIONS`] times (each try recorded); of the
/// answers, the one with the most sound lines is said, its faulty lines left out. Adds each
/// line's `DialogueTurn` (caused by the answer and the speaker's retrieval, the last one
/// ending the talk) to the batch; returns the script and the position of the last event.
#[allow(clippy::too_many_arguments)]
pub async fn script(
    gateway: &Gateway,
    style: Style,
    sides: [&Side<'_>; 2],
    place: &str,
    conversation: EventId,
    most: usize,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(Script, Option<PendingId>), ThinkError> {
    let names = [sides[0].who.name, sides[1].who.name];
    let mut recalled = Vec::new();
    let mut causes = vec![Cause::Logged(conversation)];
    for (i, side) in sides.iter().enumerate() {
        let intent = side.intent.unwrap_or(super::social::NO_INTENTION);
        let query = format!("{} {intent}", names[1 - i]);
        let (found, at) =
            recall(gateway, side.who.agent, side.who.stream, &query, now, retrieval, pending)
                .await?;
        causes.push(Cause::Pending(at));
        recalled.push((context(side.who.stream, &found.hits, side.who.rulebook), at));
    }
    let most = most.clamp(2, SCRIPT_LINES);
    let mut vars = BTreeMap::from([
        ("a", names[0].to_owned()),
        ("b", names[1].to_owned()),
        ("a_summary", sides[0].who.summary.to_owned()),
        ("b_summary", sides[1].who.summary.to_owned()),
        ("town", sides[0].who.town.to_owned()),
        ("time", sides[0].who.time.to_owned()),
        ("place", place.to_owned()),
        ("a_intent", sides[0].intent.unwrap_or(super::social::NO_INTENTION).to_owned()),
        ("b_intent", sides[1].intent.unwrap_or(super::social::NO_INTENTION).to_owned()),
        ("a_memories", recalled[0].0.clone()),
        ("b_memories", recalled[1].0.clone()),
        ("count", most.to_string()),
        ("cue", String::new()),
    ]);
    let mut corrections = 0;
    let mut ask_causes = causes.clone();
    // The best script so far: its sound lines, how many were left out, and its answer.
    let mut best: Option<(Script, Option<PendingId>)> = None;
    loop {
        let shape = Shape::Json(script_schema(names, most));
        let mut call = template("script")?.call(&vars, style, shape)?;
        call.agent = Some(sides[0].who.agent);
        call.temperature = Some(TURN_TEMPERATURE);
        call.max_tokens = Some(90 * most as u32);
        let (answered, asked) = ask(gateway, call, &ask_causes, now, pending).await?;
        let lines = match answered.answer {
            Answer::Json(v) if !answered.fallback => script_lines(&v, names, most),
            _ => Vec::new(),
        };
        let faults = script_faults(&lines, sides);
        let sound = sound_lines(&lines, &faults);
        if best.as_ref().is_none_or(|(kept, _)| sound.len() >= kept.lines.len()) {
            best = Some((Script { lines: sound, dropped: faults.len() }, asked));
        }
        let Some((at, why)) = faults.first() else { break };
        if corrections == SCRIPT_CORRECTIONS {
            break;
        }
        corrections += 1;
        vars.insert(
            "cue",
            format!(
                "\n(A script was not used: the line \"{}\" by {}: {why}. Write it again \
                 without such a line.)",
                lines[*at].1, names[lines[*at].0]
            ),
        );
        ask_causes = causes.clone();
        ask_causes.extend(asked.map(Cause::Pending));
    }
    let (Script { lines, dropped }, asked) = best.unwrap_or_default();
    let mut last = asked;
    let count = lines.len();
    for (i, (side, text)) in lines.iter().enumerate() {
        let mut because = vec![Cause::Logged(conversation), Cause::Pending(recalled[*side].1)];
        because.extend(asked.map(Cause::Pending));
        let body = Body::DialogueTurn(DialogueTurn {
            conversation,
            speaker: sides[*side].who.agent,
            text: text.clone(),
            ends: i + 1 == count,
        });
        last = Some(pending.push(now, body, &because));
    }
    Ok((Script { lines, dropped }, last))
}

/// What one call to [`speak`] made of the model's answer.
#[derive(Clone, Debug)]
pub struct Spoken {
    /// The line as said (empty: silent) and whether it ends the conversation.
    pub turn: Turn,
    /// The answer said again what was already said, so nothing was said.
    pub echo: bool,
}

/// A line without the speaker's own name in front ("Sefa: Hello" → "Hello"): small models
/// copy the transcript's layout into the line. The first name counts too; quotes around
/// the rest go as well.
pub fn without_speaker<'a>(line: &'a str, speaker: &str) -> &'a str {
    let line = line.trim();
    let first = speaker.split_whitespace().next().unwrap_or(speaker);
    let rest = [speaker, first]
        .iter()
        .filter(|name| !name.is_empty())
        .find_map(|name| after_name(line, name))
        .unwrap_or(line)
        .trim();
    unquoted(rest)
}

/// `line` after `name` (any case) and a colon, if they head it.
fn after_name<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let head = line.get(..name.len())?;
    let tail = line.get(name.len()..)?.trim_start().strip_prefix(':')?;
    head.eq_ignore_ascii_case(name).then_some(tail)
}

/// `text` without the quotes around it (unless it holds quotes of its own), trimmed.
fn unquoted(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .filter(|inner| !inner.contains('"'))
        .unwrap_or(text)
        .trim()
}

/// A line as its speaker says it (rulebook 2, [`Rulebook::cleans_transcript_layout`]):
/// every name of the two speakers that heads it with a colon goes ("Nnamdi Okafor: Sefa
/// Okafor: Hey Nnamdi!" → "Hey Nnamdi!": small models copy the transcript's layout, the
/// other's name included), then a brace left over from the answer's JSON at either end, then
/// quotes around the rest.
pub fn as_said<'a>(line: &'a str, speaker: &str, other: &str) -> &'a str {
    let names: Vec<&str> = [speaker, other]
        .iter()
        .flat_map(|n| [*n, n.split_whitespace().next().unwrap_or(n)])
        .filter(|n| !n.is_empty())
        .collect();
    let mut rest = line.trim();
    while let Some(tail) = names.iter().find_map(|name| after_name(rest, name)) {
        rest = tail.trim_start();
    }
    if !rest.contains('{') {
        rest = rest.trim_end_matches('}').trim_end();
    }
    if !rest.contains('}') {
        rest = rest.trim_start_matches('{').trim_start();
    }
    unquoted(rest)
}

/// The first line of a model's text that says something, trimmed, without quotes around it
/// or a label in front ("Currently: …"): what a one-line answer is taken as.
pub fn one_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let line = line.strip_prefix("Currently:").unwrap_or(line).trim();
    unquoted(line).to_owned()
}

/// Answers an interviewer's question (the `Intervened` event `question`) from memory. The
/// answer is recorded; it enters the memory stream only if `remembered`.
#[allow(clippy::too_many_arguments)]
pub async fn answer_interview(
    gateway: &Gateway,
    style: Style,
    who: &Situation<'_>,
    question_event: EventId,
    question: &str,
    remembered: bool,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(String, PendingId), ThinkError> {
    let (recalled, at) =
        recall(gateway, who.agent, who.stream, question, now, retrieval, pending).await?;
    let vars = BTreeMap::from([
        ("town", who.town.to_owned()),
        ("agent", who.name.to_owned()),
        ("memories", context(who.stream, &recalled.hits, who.rulebook)),
        ("question", question.to_owned()),
    ]);
    let mut call = template("interview")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(160);
    let causes = [Cause::Logged(question_event), Cause::Pending(at)];
    let (answered, asked) = ask(gateway, call, &causes, now, pending).await?;
    let answer = match answered.answer {
        Answer::Text(t) if !answered.fallback => t,
        _ => String::new(),
    };
    let mut because = causes.to_vec();
    because.extend(asked.map(Cause::Pending));
    let body = Body::InterviewAnswered(InterviewAnswered {
        agent: who.agent,
        question: question_event,
        answer: answer.clone(),
    });
    let at = pending.push(now, body, &because);
    if remembered && !answer.is_empty() {
        let words = format!("{} was asked \"{question}\" and answered \"{answer}\"", who.name);
        remember(
            gateway,
            style,
            &who.who(),
            MemoryKind::Chat,
            &[words],
            &[],
            &[Cause::Pending(at)],
            now,
            pending,
        )
        .await?;
    }
    Ok((answer, at))
}

/// How far `who` has come toward its `goal`, from 1 to 10, as `judge` (a model the user
/// names, not the agent's own) rates it from the memories that bear on the goal; `None` when
/// the judge gave no rating. Its calls are `pending`'s, for a scratch branch.
#[allow(clippy::too_many_arguments)]
pub async fn judge_goal(
    gateway: &Gateway,
    judge: &Gateway,
    style: Style,
    who: &Situation<'_>,
    goal: &str,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<Option<u8>, ThinkError> {
    let (recalled, at) =
        recall(gateway, who.agent, who.stream, goal, now, retrieval, pending).await?;
    let vars = BTreeMap::from([
        ("town", who.town.to_owned()),
        ("agent", who.name.to_owned()),
        ("goal", goal.to_owned()),
        ("memories", context(who.stream, &recalled.hits, who.rulebook)),
    ]);
    let mut call = template("goal_judgement")?.call(&vars, style, Shape::Importance)?;
    call.agent = Some(who.agent);
    let (answered, _) = ask(judge, call, &[Cause::Pending(at)], now, pending).await?;
    Ok(match answered.answer {
        Answer::Importance(r) if !answered.fallback => Some(r),
        _ => None,
    })
}

/// An inner-voice instruction (the `Intervened` event `instruction_event`) becomes the
/// agent's own intention, remembered as a plan memory; the loop then re-plans from it.
pub async fn hear_inner_voice(
    gateway: &Gateway,
    style: Style,
    who: &Situation<'_>,
    instruction_event: EventId,
    instruction: &str,
    now: u64,
    pending: &mut Pending,
) -> Result<String, ThinkError> {
    let vars =
        BTreeMap::from([("agent", who.name.to_owned()), ("instruction", instruction.to_owned())]);
    let mut call = template("inner_voice")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(60);
    let (answered, asked) =
        ask(gateway, call, &[Cause::Logged(instruction_event)], now, pending).await?;
    let intention = match answered.answer {
        Answer::Text(t) if !answered.fallback => {
            format!("{} intends to {}", who.name, t.trim_end_matches('.'))
        }
        _ => format!("{} intends to follow the thought: {instruction}", who.name),
    };
    let mut causes = vec![Cause::Logged(instruction_event)];
    causes.extend(asked.map(Cause::Pending));
    remember(
        gateway,
        style,
        &who.who(),
        MemoryKind::Plan,
        std::slice::from_ref(&intention),
        &[],
        &causes,
        now,
        pending,
    )
    .await?;
    Ok(intention)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_loses_its_speakers_name_and_quotes() {
        let sefa = "Sefa Okafor";
        assert_eq!(without_speaker("Sefa: Good morning!", sefa), "Good morning!");
        assert_eq!(without_speaker("sefa okafor : \"Good morning!\"", sefa), "Good morning!");
        assert_eq!(without_speaker("\"Good morning!\"", sefa), "Good morning!");
        // Another name, a name inside the line, or quotes inside stay.
        assert_eq!(without_speaker("Nnamdi: hi", sefa), "Nnamdi: hi");
        assert_eq!(without_speaker("Sefant is here", sefa), "Sefant is here");
        assert_eq!(without_speaker("\"A\" and \"B\"", sefa), "\"A\" and \"B\"");
        assert_eq!(without_speaker("Séfa: x", "Séfa"), "x");
        assert_eq!(without_speaker("", sefa), "");
    }

    #[test]
    fn a_line_as_said_loses_both_speakers_names_and_the_jsons_braces() {
        let (sefa, nnamdi) = ("Sefa Okafor", "Nnamdi Okafor");
        // As the shipped day's model wrote it.
        assert_eq!(
            as_said("Nnamdi Okafor: Sefa Okafor: Hey Nnamdi! How was the bar?}", sefa, nnamdi),
            "Hey Nnamdi! How was the bar?"
        );
        assert_eq!(as_said("Nnamdi: hi", sefa, nnamdi), "hi");
        assert_eq!(as_said("sefa : \"Good morning!\"", sefa, nnamdi), "Good morning!");
        // A name inside the line, a brace that belongs, another name: they stay.
        assert_eq!(as_said("Nnamdi, are you coming?", sefa, nnamdi), "Nnamdi, are you coming?");
        assert_eq!(as_said("Use {braces} here", sefa, nnamdi), "Use {braces} here");
        assert_eq!(as_said("Tobias: hello", sefa, nnamdi), "Tobias: hello");
        assert_eq!(as_said("Sefa:", sefa, nnamdi), "");
        assert_eq!(as_said("", sefa, nnamdi), "");
    }

    #[test]
    fn a_line_repeats_when_most_words_are_shared() {
        assert!(repeats("Are you coming tonight?", "Tamsin, are you coming tonight?"));
        assert!(!repeats("Are you coming tonight?", "Yes, I will bring a cake."));
    }

    #[test]
    fn a_script_takes_turns_by_its_keys_and_joins_a_speakers_lines() {
        let names = ["Tobias Ashcombe", "Delphine Ashcombe"];
        let schema = script_schema(names, 4);
        let turns = schema["properties"]["lines"]["prefixItems"].as_array().unwrap();
        assert_eq!(turns.len(), 4);
        assert_eq!(turns[1]["required"][0], "Delphine Ashcombe");
        let answer = serde_json::json!({"lines": [
            {"Tobias Ashcombe": "Morning, love,"},
            {"Delphine Ashcombe": "Delphine Ashcombe: Come to the café at five!"},
            {"speaker": "Delphine", "say": "Bring Rowan."},
            {"Delphine Ashcombe": "..."},
            {"Tobias Ashcombe": "I will. Goodbye!"},
        ]});
        assert_eq!(
            script_lines(&answer, names, 6),
            vec![
                (0, "Morning, love.".to_owned()),
                (1, "Come to the café at five! Bring Rowan.".to_owned()),
                (0, "I will. Goodbye!".to_owned()),
            ]
        );
        assert_eq!(script_lines(&answer, names, 2).len(), 2);
        // A line the schema cut off ends at its last whole sentence.
        let long = format!("{} And I was thinking of cake, and", "We will have music. ".repeat(14));
        assert!(long.chars().count() > 295);
        let cut =
            script_lines(&serde_json::json!({"lines": [{"Tobias Ashcombe": long}]}), names, 6);
        assert!(cut[0].1.ends_with("music."), "{}", cut[0].1);
    }
}
