//! The paper's social mechanisms around a conversation (rulebook 4): before it, what each
//! speaker wants from it (its *intention*, which each of its lines is conditioned on); after
//! it, each participant's planning note and the *commitments* it agreed to (who, what, when,
//! where), which its day and hour plans keep as fixed appointments; by rulebook 5, an
//! intention that names a place and a time is an *invitation*, and the one invited says
//! whether it goes.
//! Must not: run the conversation (the loop's `converse.rs` does) or write a plan.

use std::collections::BTreeMap;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::Gateway;
use hamlet_log::EventId;
use serde_json::{json, Value};

use super::memory::MemoryStream;
use super::plan::currently_query;
use super::prompt::{template, Style};
use super::respond::{one_line, Situation};
use super::retrieval::RetrievalSettings;
use super::think::{ask, recall, ThinkError, Who};
use crate::pending::{Cause, Pending, PendingId};

/// What a speaker wants from a conversation when it decided nothing (or the run leaves the
/// mechanism out).
pub const NO_INTENTION: &str = "to talk about whatever comes up";

/// The memories of hits in `found`, in the order they were made, joined for a prompt.
fn joined(stream: &MemoryStream, found: &[hamlet_log::event::RetrievalHit]) -> String {
    let mut at: Vec<usize> = found.iter().filter_map(|h| stream.position(h.memory)).collect();
    at.sort_unstable();
    at.dedup();
    let lines: Vec<&str> =
        at.into_iter().map(|i| stream.memories()[i].description.as_str()).collect();
    if lines.is_empty() {
        "nothing in particular".to_owned()
    } else {
        lines.join("; ")
    }
}

/// Decides what `who` wants from the conversation `conversation` with `other` at `place`:
/// two retrievals (what it remembers of `other`, and what it is busy with), then one
/// `intention` call. Returns the intention in words (one sentence; [`NO_INTENTION`] from a
/// fallback) and the position of the answer's last event. The request is caused by the
/// conversation, which is how the loop folds it back.
#[allow(clippy::too_many_arguments)]
pub async fn intention(
    gateway: &Gateway,
    style: Style,
    who: &Situation<'_>,
    other: &str,
    place: &str,
    conversation: EventId,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(String, Option<PendingId>), ThinkError> {
    let about = format!("{}'s news and plans for {other}", who.name);
    let (with, at1) =
        recall(gateway, who.agent, who.stream, &about, now, retrieval, pending).await?;
    let busy = currently_query(who.name);
    let (mine, at2) =
        recall(gateway, who.agent, who.stream, &busy, now, retrieval, pending).await?;
    let mut hits = with.hits;
    hits.extend(mine.hits);
    let mut vars = who.who().vars();
    vars.insert("other", other.to_owned());
    vars.insert("place", place.to_owned());
    vars.insert("time", who.time.to_owned());
    vars.insert("status", who.status.to_owned());
    vars.insert("memories", joined(who.stream, &hits));
    let mut call = template("intention")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(60);
    let causes = [Cause::Logged(conversation), Cause::Pending(at1), Cause::Pending(at2)];
    let (answered, asked) = ask(gateway, call, &causes, now, pending).await?;
    let text = match answered.answer {
        Answer::Text(t) if !answered.fallback => as_intention(&t, who.name),
        _ => String::new(),
    };
    Ok((if text.is_empty() { NO_INTENTION.to_owned() } else { text }, asked))
}

/// A model's intention as the turn prompt takes it: its first line, without "NAME wants" in
/// front (the prompt says whose it is): "to invite Tobias to the party tomorrow at 17:00".
pub fn as_intention(text: &str, name: &str) -> String {
    let line = one_line(text);
    let first = name.split_whitespace().next().unwrap_or(name);
    for head in [format!("{name} wants "), format!("{first} wants "), "wants ".to_owned()] {
        if let Some(rest) =
            line.strip_prefix(&head).filter(|_| !name.is_empty() || head == "wants ")
        {
            return rest.trim().to_owned();
        }
    }
    // Someone else's name in front ("She wants to …", a first name alone): within the
    // first few words.
    match line.find(" wants ") {
        Some(i) if line[..i].split_whitespace().count() <= 3 => line[i + 7..].trim().to_owned(),
        _ => line,
    }
}

/// One thing a participant agreed to in a conversation, as `talk_notes` answered it and the
/// loop checked it: what, where (a sector), from when and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agreed {
    /// What, in words.
    pub what: String,
    /// The sector.
    pub sector: String,
    /// When it starts, simulated seconds since midnight of day 0.
    pub start_secs: u64,
    /// How long it lasts, in seconds.
    pub duration_secs: u32,
}

/// What the days of a commitment may be, in `talk_notes`' answer, and how many days ahead.
const DAYS: [(&str, u64); 3] = [("today", 0), ("tomorrow", 1), ("the day after tomorrow", 2)];

/// The longest a commitment lasts; one without a sensible end lasts [`DEFAULT_MINUTES`].
const MAX_MINUTES: u64 = 4 * 60;
const DEFAULT_MINUTES: u64 = 60;

/// The JSON Schema of `talk_notes`' answer, the places named from `places`.
pub fn notes_schema(places: &[String]) -> Value {
    let time = json!({ "type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$" });
    let days: Vec<&str> = DAYS.iter().map(|(d, _)| *d).collect();
    let promise = json!({
        "type": "object",
        "properties": {
            "activity": { "type": "string", "minLength": 3, "maxLength": 100 },
            "day": { "type": "string", "enum": days },
            "from": time,
            "place": { "type": "string", "enum": places },
            "until": time,
        },
        "required": ["activity", "day", "from", "place", "until"],
        "additionalProperties": false,
    });
    json!({
        "type": "object",
        "properties": {
            "note": { "type": "string", "maxLength": 300 },
            "promised": { "type": "array", "items": promise, "maxItems": 2 },
        },
        "required": ["note", "promised"],
        "additionalProperties": false,
    })
}

/// "HH:MM" as minutes after midnight.
fn minutes(hhmm: &str) -> Option<u64> {
    let (h, m) = hhmm.split_once(':')?;
    let (h, m): (u64, u64) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// The times of day a text names, in minutes after midnight: "17:00", "5:30", "5 pm",
/// "5pm", "five o'clock", "at 5" (a bare hour or an hour word is taken both ways, morning
/// and evening).
pub fn times_named(text: &str) -> Vec<u64> {
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    let lower = text.to_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',' || c == '!' || c == '?' || c == ';')
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = Vec::new();
    let both = |out: &mut Vec<u64>, h: u64, m: u64| {
        out.push((h % 12) * 60 + m);
        out.push((h % 12 + 12) * 60 + m);
    };
    for (i, raw) in tokens.iter().enumerate() {
        let t = raw.trim_matches(|c: char| c == '.' || c == '(' || c == ')' || c == '"');
        let next = tokens.get(i + 1).map_or("", |n| n.trim_matches('.'));
        let prev = if i > 0 { tokens[i - 1] } else { "" };
        let (clock, suffix) = match t.find(|c: char| !(c.is_ascii_digit() || c == ':')) {
            Some(at) => (&t[..at], &t[at..]),
            None => (t, ""),
        };
        let pm = matches!(suffix, "pm" | "p.m") || matches!(next, "pm" | "p.m" | "p.m.");
        let am = matches!(suffix, "am" | "a.m") || matches!(next, "am" | "a.m" | "a.m.");
        if let Some((h, m)) = clock.split_once(':') {
            let (Ok(h), Ok(m)) = (h.parse::<u64>(), m.parse::<u64>()) else { continue };
            if h < 24 && m < 60 {
                out.push(if pm && h < 12 { (h + 12) * 60 + m } else { h * 60 + m });
            }
        } else if let Ok(h) = clock.parse::<u64>() {
            if !(1..=12).contains(&h) {
                continue;
            }
            if pm {
                out.push((h % 12 + 12) * 60);
            } else if am {
                out.push((h % 12) * 60);
            } else if next.starts_with("o'clock") || prev == "at" || prev == "from" {
                both(&mut out, h, 0);
            }
        } else if let Some(h) = WORDS.iter().position(|w| *w == t) {
            let h = h as u64 + 1;
            if pm {
                out.push((h % 12 + 12) * 60);
            } else if next.starts_with("o'clock") || prev == "at" || prev == "from" || am {
                both(&mut out, h, 0);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Which of the coming days a text names: `days` are their words, today first ("Friday 13
/// February 2026", …); a day is named by its weekday, its date ("14 February"), or for
/// today "today", "tonight", "this morning/afternoon/evening", for tomorrow "tomorrow". The
/// days' offsets from today, in order.
pub fn days_named(text: &str, days: &[String]) -> Vec<u64> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    for (i, words) in days.iter().enumerate() {
        let w: Vec<String> = words.split_whitespace().map(str::to_lowercase).collect();
        let weekday = w.first().filter(|d| d.ends_with("day"));
        let date = (w.len() >= 3).then(|| format!("{} {}", w[1], w[2]));
        let mut named = weekday.is_some_and(|d| has_word(&lower, d))
            || date.as_ref().is_some_and(|d| lower.contains(d.as_str()));
        named |= match i {
            0 => ["today", "tonight", "this morning", "this afternoon", "this evening"]
                .iter()
                .any(|p| lower.contains(p)),
            1 => has_word(&lower, "tomorrow"),
            _ => false,
        };
        if named {
            out.push(i as u64);
        }
    }
    out
}

fn has_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric()).any(|w| w == word)
}

/// The commitments of a `talk_notes` answer that hold up: an activity of two words or more;
/// a place among `places` that the conversation (`said`) names (a word of four letters or
/// more of it, any case) — a small model otherwise "agrees" to what nobody mentioned; the
/// activity's own place when it names one —; the day the talk names when it names one (or
/// the answer's, among several named; none when the answer's is not among them); a start
/// the conversation names
/// ([`times_named`]; the time in the activity's own words when the answer's start is not,
/// since a small model writes the time it is now), after `now`, and an end after the start
/// (else [`DEFAULT_MINUTES`], at most [`MAX_MINUTES`]).
pub fn agreed(
    answer: &Value,
    places: &[String],
    said: &str,
    days: &[String],
    now: u64,
) -> Vec<Agreed> {
    let said = said.to_lowercase();
    let named = |sector: &str| {
        sector
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4)
            .any(|w| said.contains(&w.to_lowercase()))
    };
    let today = now / 86_400;
    let promised = answer.get("promised").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for p in promised {
        let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").trim().to_owned();
        let (what, place) = (text("activity"), text("place"));
        let Some(ahead) = DAYS.iter().find(|(d, _)| *d == text("day")).map(|(_, n)| *n) else {
            continue;
        };
        // The day the talk names, when it names one only ("on Saturday 14 February" read as
        // "today" by a small model).
        // Several days named, the answer's among none of them: which one is not known.
        let said_days = days_named(&said, days);
        let ahead = match said_days.as_slice() {
            [] => ahead,
            [one] => *one,
            many if many.contains(&ahead) => ahead,
            _ => continue,
        };
        // "Meet", "help": too little to keep as an appointment.
        if what.split_whitespace().filter(|w| w.chars().any(char::is_alphabetic)).count() < 2 {
            continue;
        }
        // The place the activity's own words name, when the talk names it too ("meet at the
        // pharmacy in Fernside market" answered with another place).
        let own = places.iter().find(|p| what.to_lowercase().contains(&p.to_lowercase()));
        let place = match own {
            Some(p) if named(p) => p.clone(),
            _ => place,
        };
        let told = times_named(&said);
        let from = minutes(&text("from")).filter(|m| told.contains(m));
        // The activity's own time ("meet Sefa at 12:00"), when the talk names it.
        let from = from.or_else(|| times_named(&what).into_iter().find(|m| told.contains(m)));
        let Some(from) = from else { continue };
        let start = (today + ahead) * 86_400 + from * 60;
        let length = match minutes(&text("until")) {
            Some(until) if until > from => (until - from).min(MAX_MINUTES),
            _ => DEFAULT_MINUTES,
        };
        if what.is_empty() || !places.contains(&place) || !named(&place) || start <= now {
            continue;
        }
        out.push(Agreed {
            what,
            sector: place,
            start_secs: start,
            duration_secs: length as u32 * 60,
        });
    }
    out
}

/// After a conversation, `who`'s planning note and what it agreed to: one `talk_notes` call
/// over the conversation's lines (`dialogue`: "Name: words" each). `places` are the sectors
/// it may name; `days` the words of today and the next two days (see [`days_named`]).
/// Returns the note (empty from a fallback), the commitments that hold up ([`agreed`]), and
/// the position of the answer's last event.
#[allow(clippy::too_many_arguments)]
pub async fn talk_notes(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    other: &str,
    place: &str,
    time: &str,
    dialogue: &[String],
    places: &[String],
    days: &[String],
    causes: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<(String, Vec<Agreed>, Option<PendingId>), ThinkError> {
    let mut vars: BTreeMap<&str, String> = who.vars();
    vars.insert("other", other.to_owned());
    vars.insert("place", place.to_owned());
    vars.insert("time", time.to_owned());
    vars.insert("dialogue", dialogue.join("\n"));
    vars.insert("places", places.join(", "));
    let shape = Shape::Json(notes_schema(places));
    let mut call = template("talk_notes")?.call(&vars, style, shape)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(220);
    let (answered, asked) = ask(gateway, call, causes, now, pending).await?;
    let value = match answered.answer {
        Answer::Json(v) if !answered.fallback => v,
        _ => Value::Null,
    };
    let note = value.get("note").and_then(Value::as_str).map(one_line).unwrap_or_default();
    let promised = agreed(&value, places, &dialogue.join("\n"), days, now);
    Ok((note, promised, asked))
}

/// The invitation an intention carries (rulebook 5,
/// [`Mechanism::Invitations`](crate::rulebook::Mechanism::Invitations)): the place among
/// `places` it names (the longest name found, any case), the time it names (a bare hour
/// taken in the afternoon or evening when it could be either), until the next time it names
/// when that is later (else [`DEFAULT_MINUTES`], at most [`MAX_MINUTES`]), on the day it
/// names (`days`, today first, as [`days_named`] reads them; today when it names none; none
/// when it names several), after `now`. `what` is the intention's words.
pub fn invitation_in(intent: &str, places: &[String], days: &[String], now: u64) -> Option<Agreed> {
    let lower = intent.to_lowercase();
    let sector = places
        .iter()
        .filter(|p| lower.contains(&p.to_lowercase()))
        .max_by_key(|p| p.len())?
        .clone();
    let mut times = times_named(intent);
    // "at five": 05:00 and 17:00 both read; the later is meant.
    let twins: Vec<u64> =
        times.iter().filter(|t| times.contains(&(*t + 12 * 60))).copied().collect();
    times.retain(|t| !twins.contains(t));
    let from = *times.first()?;
    let length = match times.get(1) {
        Some(&until) if until > from => (until - from).min(MAX_MINUTES),
        _ => DEFAULT_MINUTES,
    };
    let ahead = match days_named(intent, days).as_slice() {
        [] => 0,
        [one] => *one,
        _ => return None,
    };
    let start = (now / 86_400 + ahead) * 86_400 + from * 60;
    (start > now).then(|| Agreed {
        what: intent.trim().to_owned(),
        sector,
        start_secs: start,
        duration_secs: length as u32 * 60,
    })
}

/// The JSON Schema of `invitation`'s answer.
pub fn going_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "going": { "type": "string", "enum": ["yes", "no"] },
            "activity": { "type": "string", "minLength": 3, "maxLength": 80 },
        },
        "required": ["going", "activity"],
        "additionalProperties": false,
    })
}

/// After a conversation in which `other` invited `who` ([`invitation_in`]): does `who` go?
/// One `invitation` call over the talk's lines. Returns the commitment when it goes (the
/// invitation, named by the answer's activity when that has two words or more), and the
/// position of the answer's last event.
#[allow(clippy::too_many_arguments)]
pub async fn accept_invitation(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    other: &str,
    invitation: &Agreed,
    day: &str,
    place: &str,
    time: &str,
    dialogue: &[String],
    causes: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<(Option<Agreed>, Option<PendingId>), ThinkError> {
    let end = invitation.start_secs + u64::from(invitation.duration_secs);
    let words = format!(
        "{} (at {}, on {day}, from {:02}:{:02} to {:02}:{:02})",
        invitation.what.trim_end_matches('.'),
        invitation.sector,
        invitation.start_secs / 3600 % 24,
        invitation.start_secs / 60 % 60,
        end / 3600 % 24,
        end / 60 % 60
    );
    let mut vars: BTreeMap<&str, String> = who.vars();
    vars.insert("other", other.to_owned());
    vars.insert("invitation", words);
    vars.insert("place", place.to_owned());
    vars.insert("time", time.to_owned());
    vars.insert("dialogue", dialogue.join("\n"));
    let mut call = template("invitation")?.call(&vars, style, Shape::Json(going_schema()))?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(60);
    let (answered, asked) = ask(gateway, call, causes, now, pending).await?;
    let value = match answered.answer {
        Answer::Json(v) if !answered.fallback => v,
        _ => Value::Null,
    };
    if value.get("going").and_then(Value::as_str) != Some("yes") {
        return Ok((None, asked));
    }
    let activity = value.get("activity").and_then(Value::as_str).map(one_line).unwrap_or_default();
    let named = activity.split_whitespace().filter(|w| w.chars().any(char::is_alphabetic)).count();
    let what = if named >= 2 { activity } else { format!("meet {other} at {}", invitation.sector) };
    Ok((Some(Agreed { what, ..invitation.clone() }), asked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_intention_loses_the_name_in_front() {
        assert_eq!(
            as_intention("Delphine wants to invite Tobias to the party.", "Delphine Ashcombe"),
            "to invite Tobias to the party."
        );
        assert_eq!(
            as_intention("\"to ask about his day\"", "Delphine Ashcombe"),
            "to ask about his day"
        );
    }

    #[test]
    fn times_are_read_as_people_write_them() {
        assert_eq!(times_named("the party at 17:00, till 19:00!"), vec![1020, 1140]);
        assert_eq!(times_named("come at 5 pm"), vec![1020]);
        assert_eq!(times_named("come at 5pm or 6:30"), vec![390, 1020]);
        assert_eq!(times_named("see you at five"), vec![300, 1020]);
        assert_eq!(times_named("at 9 a.m. sharp"), vec![540]);
        assert_eq!(times_named("I have 5 cats and 2 dogs"), Vec::<u64>::new());
    }

    #[test]
    fn a_start_the_talk_never_named_is_not_agreed() {
        let places = vec!["Okafor house".to_owned()];
        // As the 1.5B model answered at 07:01: the time it was, not the one agreed.
        let answer = json!({"note": "", "promised": [
            {"activity": "meet Sefa Okafor at 12:00 tomorrow morning", "day": "tomorrow",
             "from": "07:01", "place": "Okafor house", "until": "12:00"}]});
        let said = "Nnamdi: let us meet at 12:00 tomorrow at the Okafor house";
        let got = agreed(&answer, &places, said, &[], 7 * 3600 + 60);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].start_secs, 86_400 + 12 * 3600, "the activity's own time");
        assert_eq!(got[0].duration_secs, 3600);
        let vague = json!({"note": "", "promised": [
            {"activity": "meet Sefa", "day": "tomorrow", "from": "07:01",
             "place": "Okafor house", "until": "12:00"}]});
        assert!(agreed(&vague, &places, "see you at the Okafor house", &[], 0).is_empty());
    }

    #[test]
    fn the_day_a_talk_names_stands_over_the_answers() {
        let days: Vec<String> =
            ["Friday 13 February 2026", "Saturday 14 February 2026", "Sunday 15 February 2026"]
                .map(String::from)
                .to_vec();
        assert_eq!(days_named("the party on Saturday 14 February from 17:00", &days), vec![1]);
        assert_eq!(days_named("see you tonight, or on Sunday?", &days), vec![0, 2]);
        assert_eq!(days_named("what a lovely day", &days), Vec::<u64>::new());
        let places = vec!["Marigold café".to_owned()];
        // As the 1.5B model answered: "today", for a party the talk set on Saturday.
        let answer = json!({"note": "", "promised": [{"activity": "help at the party",
            "day": "today", "from": "17:00", "place": "Marigold café", "until": "19:00"}]});
        let said =
            "Delphine: our party at Marigold Café on Saturday 14 February from 17:00 to 19:00";
        let got = agreed(&answer, &places, said, &days, 7 * 3600);
        assert_eq!(got[0].start_secs, 86_400 + 17 * 3600);
        // Two days named, the answer's neither: not kept.
        let both = "see you on Saturday or Sunday at 17:00 at Marigold café";
        assert!(agreed(&answer, &places, both, &days, 7 * 3600).is_empty());
        // Too little to keep, and a place the activity names over the answer's.
        let vague = json!({"note": "", "promised": [{"activity": "meet", "day": "today",
            "from": "17:00", "place": "Marigold café", "until": "19:00"}]});
        assert!(agreed(&vague, &places, said, &days, 7 * 3600).is_empty());
        let two = vec!["Marigold café".to_owned(), "Fernside market".to_owned()];
        let elsewhere = json!({"note": "", "promised": [{"activity": "meet Tobias at Fernside market",
            "day": "tomorrow", "from": "17:00", "place": "Marigold café", "until": "18:00"}]});
        let talk = "the party at Marigold café, or Fernside market, tomorrow at 17:00";
        assert_eq!(agreed(&elsewhere, &two, talk, &days, 7 * 3600)[0].sector, "Fernside market");
    }

    #[test]
    fn only_commitments_to_a_named_place_in_the_future_hold_up() {
        let places = vec!["Marigold café".to_owned(), "Millbrook park".to_owned()];
        let answer = json!({"note": "x", "promised": [
            {"activity": "goes to Delphine's party", "day": "tomorrow", "from": "17:00",
             "place": "Marigold café", "until": "19:00"},
            {"activity": "walks in the park", "day": "today", "from": "18:00",
             "place": "Millbrook park", "until": "18:30"},
            {"activity": "earlier", "day": "today", "from": "08:00",
             "place": "Marigold café", "until": "09:00"},
        ]});
        let said = "Delphine: Come to my party at the café tomorrow at five!";
        let now = 10 * 3600;
        let got = agreed(&answer, &places, said, &[], now);
        assert_eq!(
            got,
            vec![Agreed {
                what: "goes to Delphine's party".into(),
                sector: "Marigold café".into(),
                start_secs: 86_400 + 17 * 3600,
                duration_secs: 2 * 3600,
            }],
            "the park was never mentioned, and 08:00 today is past"
        );
        let endless = json!({"promised": [{"activity": "meets Tobias", "day": "today",
            "from": "15:00", "place": "Millbrook park", "until": "14:00"}]});
        let got = agreed(&endless, &places, "see you in the park at 15:00", &[], now);
        assert_eq!(got[0].duration_secs, 3600, "an end before the start: an hour");
    }

    #[test]
    fn an_intention_that_names_a_place_and_a_time_is_an_invitation() {
        let places = vec!["Marigold café".to_owned(), "Millbrook park".to_owned()];
        let days: Vec<String> =
            ["Friday 13 February 2026", "Saturday 14 February 2026", "Sunday 15 February 2026"]
                .map(String::from)
                .to_vec();
        let now = 9 * 3600;
        let party = "to invite Tobias to her party at Marigold café on Saturday 14 February \
                     from 17:00 to 19:00";
        let got = invitation_in(party, &places, &days, now).unwrap();
        assert_eq!((got.sector.as_str(), got.start_secs), ("Marigold café", 86_400 + 17 * 3600));
        assert_eq!(got.duration_secs, 2 * 3600);
        // A bare hour is the afternoon's; no day named is today.
        let walk =
            invitation_in("to ask Sefa to walk in Millbrook park at five", &places, &days, now);
        assert_eq!(walk.unwrap().start_secs, 17 * 3600);
        // No place, no time, a time past, or two days: no invitation.
        assert!(invitation_in("to ask about the party at 17:00", &places, &days, now).is_none());
        assert!(invitation_in("to chat at Marigold café", &places, &days, now).is_none());
        assert!(
            invitation_in("to say Marigold café opened at 08:00", &places, &days, now).is_none()
        );
        let two = "to meet at Marigold café on Saturday or Sunday at 17:00";
        assert!(invitation_in(two, &places, &days, now).is_none());
    }
}
