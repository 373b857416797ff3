//! Test doubles for the model, shared by the loop's tests (in process) and the command
//! line's (over HTTP): every prompt template answered by a rule, instantly, and embeddings
//! made from a text's letters. Test code only.

use hamlet_engine::mind::prompt::templates;
use hamlet_gateway::backend::{
    Attempt, BackendError, BoxFuture, Completion, EmbedBackend, LlmBackend, Vectors,
};
use hamlet_gateway::EmbedCall;
use hamlet_log::event::Prompt;

use crate::loopback::{Received, Reply};

fn between(text: &str) -> (u32, u32) {
    // "From HH:MM to HH:MM"
    let from = text.find("From ").map(|i| &text[i + 5..i + 10]).unwrap_or("07:00");
    let to = text.find(" to ").map(|i| &text[i + 4..i + 9]).unwrap_or("08:00");
    let m = |s: &str| {
        let (h, m) = s.split_once(':').unwrap_or(("7", "0"));
        h.parse::<u32>().unwrap_or(7) * 60 + m.parse::<u32>().unwrap_or(0)
    };
    (m(from), m(to))
}

fn hhmm(m: u32) -> String {
    format!("{:02}:{:02}", m / 60, m % 60)
}

/// The answer to a call of `template` whose question (the user part) is `user`: a fixed
/// day, hour parts and quarter-hour actions filling the times asked, the first option of
/// every choice, yes to every reaction, one summary for everyone, three-line conversations about the market.
pub fn answer(template: &str, user: &str) -> String {
    match template {
        "importance" => r#"{"rating": 3}"#.to_owned(),
        "goal_judgement" => r#"{"rating": 4}"#.to_owned(),
        "ratings" => {
            let numbered = |l: &&str| {
                l.split_once(". ").is_some_and(|(k, _)| k.parse::<u32>().is_ok())
            };
            let n = user.lines().filter(numbered).count();
            format!(r#"{{"ratings": [{}]}}"#, vec!["3"; n].join(","))
        }
        "react" | "attend" | "job_offer" => r#"{"answer": "yes"}"#.to_owned(),
        "turn" => {
            let said = user.split("The conversation so far:").nth(1).unwrap_or("");
            let said = said.split("\nIt is ").next().unwrap_or(said);
            let lines = said.lines().filter(|l| l.contains(": ")).count();
            // Three different lines, then the third ends it; each opens with words drawn
            // from the prompt's hash, so that no line repeats one of an earlier conversation.
            let say = [
                "Good morning, the market opens late on Sunday.",
                "Then I will bake bread at home instead, ready at 15:00.",
                "Come by for a slice this afternoon, bye!",
            ][lines.min(2)];
            format!(r#"{{"say": "{} {say}", "end": {}}}"#, drawn_words(user), lines >= 2)
        }
        "script" => {
            // The turn rule's three lines, taking turns, in one answer.
            let [a, b] = script_names(user);
            let says = [
                "Good morning, the market opens late on Sunday.",
                "Then I will bake bread at home instead, ready at 15:00.",
                "Come by for a slice this afternoon, bye!",
            ];
            let lines: Vec<serde_json::Value> = says
                .iter()
                .enumerate()
                .map(|(i, say)| {
                    let words = drawn_words(&format!("{user}{i}"));
                    let speaker = if i % 2 == 0 { &a } else { &b };
                    serde_json::json!({ speaker.as_str(): format!("{words} {say}") })
                })
                .collect();
            serde_json::json!({ "lines": lines }).to_string()
        }
        "currently" => {
            let name = user.trim_end().strip_suffix(" currently:").and_then(|r| r.lines().last());
            format!("{} is minding the market and looking forward to Sunday.", name.unwrap_or("Someone"))
        }
        "intention" => "Someone wants to tell the other that the market opens late on Sunday.".into(),
        "talk_notes" => {
            // Meet two hours from now at the first place the conversation names.
            let places = user.lines().find_map(|l| l.split_once(" may name: ")).map(|(_, p)| p);
            let places: Vec<&str> =
                places.unwrap_or("").trim_end_matches('.').split(", ").collect();
            let lower = user.to_lowercase();
            let place = places.iter().find(|p| {
                p.split(' ').any(|w| w.len() >= 4 && lower.contains(&format!("the {}", w.to_lowercase())))
            });
            // At the first time the talk names, for half an hour.
            let talk = user.split(" talked with ").last().unwrap_or("");
            let time = talk
                .split(|c: char| !(c.is_ascii_digit() || c == ':'))
                .find(|w| w.len() == 5 && w.as_bytes()[2] == b':');
            let promised = match (place, time) {
                (Some(place), Some(time)) => format!(
                    r#"[{{"activity": "meets at the {place}", "day": "today", "from": "{time}",
                        "place": "{place}", "until": "{}:30"}}]"#,
                    &time[..2]
                ),
                _ => "[]".into(),
            };
            format!(r#"{{"note": "Remember that the market opens late on Sunday.", "promised": {promised}}}"#)
        }
        "invitation" => r#"{"going": "yes", "activity": "goes where it was invited"}"#.into(),
        "day_plan" => r#"{"steps":[{"start":"07:00","activity":"get ready for the day","minutes":60},
            {"start":"08:00","activity":"work","minutes":240},{"start":"12:00","activity":"lunch","minutes":60},
            {"start":"13:00","activity":"work","minutes":240},{"start":"17:00","activity":"free time","minutes":300}]}"#
            .to_owned(),
        "hour_parts" => {
            let (from, to) = between(user);
            format!(
                r#"{{"steps":[{{"start":"{}","activity":"the first part","minutes":{}}}]}}"#,
                hhmm(from),
                // (a stretch may end at midnight, "00:00")
                (if to > from { to - from } else { to + 1440 - from }).clamp(15, 120)
            )
        }
        "hour_plan" => {
            let (from, _) = between(user);
            let steps: Vec<String> = (0..4)
                .map(|i| {
                    format!(
                        r#"{{"start":"{}","activity":"step {i}","minutes":15}}"#,
                        hhmm(from + 15 * i)
                    )
                })
                .collect();
            format!(r#"{{"steps":[{}]}}"#, steps.join(","))
        }
        "location" => {
            let options = user.lines().find_map(|l| l.strip_prefix("Options: ")).unwrap_or("");
            let first = options.split(" | ").next().unwrap_or("");
            let first = first.split(" [").next().unwrap_or(first);
            format!(r#"{{"choice": {}}}"#, serde_json::to_string(first).unwrap())
        }
        "reflection_questions" => {
            "What matters to them?\nWho do they see?\nWhat do they do?".into()
        }
        "insights" => {
            // As many insights as asked for, each citing the first statement.
            let count = user
                .rsplit_once("Give ")
                .and_then(|(_, rest)| rest.split_whitespace().next()?.parse::<usize>().ok())
                .unwrap_or(1);
            let one = r#"{"insight": "they care for the market and its people", "evidence": [1]}"#;
            format!(r#"{{"insights": [{}]}}"#, vec![one; count].join(", "))
        }
        "summary" => "A neighbour who keeps the café and cares about the market.".into(),
        "interview" => "I am minding the café today, and the market opens late on Sunday.".into(),
        "inner_voice" => "bake bread for the neighbours".into(),
        "goal_questions" => {
            "1. What does my goal need next?\n2. Who could help me with it?\n3. Where should I go now?"
                .into()
        }
        "goal_answers" => "I should go where the work is and get on with it.".into(),
        "picture" => "Friendly and busy; we talk about the market most days.".into(),
        "mayor_where" => {
            // Found on a free site first, then post a job at the newest workplace, then
            // nothing.
            let line = |key: &str| user.lines().find_map(|l| l.split_once(key)).map(|(_, v)| v.to_owned());
            let options: Vec<String> =
                line("Options: ").unwrap_or_default().split(" | ").map(str::to_owned).collect();
            let no_jobs = line("Jobs open: ").is_some_and(|v| v.starts_with("none."))
                && line("Jobs taken: ").is_some_and(|v| v.starts_with("none"));
            let site = options.iter().find(|o| o.ends_with("(a free site)"));
            let standing = options.iter().rfind(|o| o.ends_with("that stands)"));
            let choice = match (site, standing) {
                (Some(site), _) => site.clone(),
                (None, Some(place)) if no_jobs => place.clone(),
                _ => options.last().cloned().unwrap_or_default(),
            };
            serde_json::json!({ "choice": choice }).to_string()
        }
        "mayor_act" => serde_json::json!({ "choice": "post a job" }).to_string(),
        "mayor_details" => {
            if user.contains("\"like\"") {
                let line = |key: &str| user.lines().find_map(|l| l.split_once(key)).map(|(_, v)| v.to_owned());
                let places = line("Workplaces: ").unwrap_or_default();
                let first = places.split(", ").next().unwrap_or("").to_owned();
                serde_json::json!({ "like": first, "name": "Rule bakery" }).to_string()
            } else {
                serde_json::json!({ "title": "baker", "dollars_per_hour": 15 }).to_string()
            }
        }
        "goal_purpose" => {
            // The last place offered (the first is where the agent is), for an hour.
            let places = user.lines().find_map(|l| l.split_once(" knows: ")).map(|(_, p)| p);
            let last = places.unwrap_or("").split(", ").last().unwrap_or("");
            serde_json::json!({"place": last, "purpose": "works toward the goal there", "minutes": 60})
                .to_string()
        }
        _ => "not an answer".into(),
    }
}

/// The two speakers a `script` prompt names ("Who NAME is: …"), the first first.
pub fn script_names(user: &str) -> [String; 2] {
    let mut names = user
        .lines()
        .filter_map(|l| l.strip_prefix("Who ").and_then(|r| r.split_once(" is: ")))
        .map(|(name, _)| name.to_owned());
    [names.next().unwrap_or_default(), names.next().unwrap_or_default()]
}

/// Eight words drawn from a text's hash (the double's way of never saying a line twice).
fn drawn_words(text: &str) -> String {
    const WORDS: [&str; 32] = [
        "amber", "birch", "cobalt", "dune", "ember", "fjord", "grove", "heron", "iris", "juniper",
        "kestrel", "lichen", "maple", "nettle", "orchid", "pebble", "quartz", "rowan", "sorrel",
        "thistle", "umber", "violet", "willow", "yarrow", "zephyr", "aspen", "bracken", "clover",
        "dahlia", "elder", "fennel", "gorse",
    ];
    let hash = blake3::hash(text.as_bytes());
    let picked: Vec<&str> =
        hash.as_bytes()[..8].iter().map(|b| WORDS[usize::from(*b) % 32]).collect();
    let mut out = picked.join(" ");
    if let Some(first) = out.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    out + ","
}

/// The template whose system part `system` is: every fixed piece of the template's system
/// text (between its placeholders) is found in order.
pub fn template_of(system: &str) -> String {
    let matches = |template: &str| {
        let mut rest = system;
        for piece in template.trim().split(['{', '}']) {
            let placeholder =
                !piece.is_empty() && piece.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if placeholder || piece.trim().is_empty() {
                continue;
            }
            match rest.find(piece.trim()) {
                Some(i) => rest = &rest[i + piece.trim().len()..],
                None => return false,
            }
        }
        true
    };
    templates().values().find(|t| matches(&t.system)).map(|t| t.name.clone()).unwrap_or_default()
}

/// A test double: answers each prompt template by rule, instantly.
pub struct RuleModel;

impl LlmBackend for RuleModel {
    fn name(&self) -> &str {
        "rule-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "rules".into()
    }
    // The double answers at once; it says 0 ms so that two runs compare byte for byte.
    fn recorded_latency_ms(&self, _: [u8; 32]) -> Option<u32> {
        Some(0)
    }
    fn complete<'a>(&'a self, a: Attempt<'a>) -> BoxFuture<'a, Result<Completion, BackendError>> {
        let user = last_message(&a.call.prompt);
        let text = answer(&a.call.template, &user);
        Box::pin(async move { Ok(completion(text)) })
    }
}

/// A test double: [`RuleModel`]'s rules, except the answers its function gives (by template
/// and the prompt's last message) — a test's own twist on the rules in a line or two.
pub struct RulesExcept(pub fn(&str, &str) -> Option<String>);

impl LlmBackend for RulesExcept {
    fn name(&self) -> &str {
        "rules-except-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "rules".into()
    }
    fn recorded_latency_ms(&self, _: [u8; 32]) -> Option<u32> {
        Some(0)
    }
    fn complete<'a>(&'a self, a: Attempt<'a>) -> BoxFuture<'a, Result<Completion, BackendError>> {
        let user = last_message(&a.call.prompt);
        let Some(text) = (self.0)(&a.call.template, &user) else { return RuleModel.complete(a) };
        Box::pin(async move { Ok(completion(text)) })
    }
}

/// A second model for runs that mix models: [`RuleModel`]'s rules under another model's
/// name (`rules-b`), so each call's model tells which one answered.
pub struct SecondRuleModel;

impl LlmBackend for SecondRuleModel {
    fn name(&self) -> &str {
        "rule-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "rules-b".into()
    }
    fn recorded_latency_ms(&self, _: [u8; 32]) -> Option<u32> {
        Some(0)
    }
    fn complete<'a>(&'a self, a: Attempt<'a>) -> BoxFuture<'a, Result<Completion, BackendError>> {
        RuleModel.complete(a)
    }
}

/// A prompt's last message (its question), or its whole text.
fn last_message(prompt: &Prompt) -> String {
    match prompt {
        Prompt::Chat(m) => m.last().map(|m| m.content.clone()).unwrap_or_default(),
        Prompt::Text(t) => t.clone(),
    }
}

/// The doubles' completion of `text`: fixed token counts, finished.
fn completion(text: String) -> Completion {
    Completion {
        tokens_prompt: 50,
        tokens_completion: 10,
        text,
        finish_reason: "stop".into(),
        response_model: "rules".into(),
        response_id: String::new(),
        probabilities: Vec::new(),
        tokens_cached: 0,
    }
}

/// A 4-dimensional embedding from a text's length and letters.
pub fn letters(text: &str) -> Vec<f32> {
    let n = |c: char| text.chars().filter(|x| x.eq_ignore_ascii_case(&c)).count() as f32;
    vec![n('a') + 1.0, n('e'), n('o'), text.len() as f32 / 10.0]
}

/// A test double: embeddings from letters.
pub struct LetterEmbedder;

impl EmbedBackend for LetterEmbedder {
    fn name(&self) -> &str {
        "letters-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "letters".into()
    }
    fn recorded_latency_ms(&self, _: [u8; 32]) -> Option<u32> {
        Some(0)
    }
    fn embed<'a>(
        &'a self,
        call: &'a EmbedCall,
        _: [u8; 32],
    ) -> BoxFuture<'a, Result<Vectors, BackendError>> {
        let vectors = call.texts.iter().map(|t| letters(t)).collect();
        Box::pin(async move { Ok(Vectors { vectors, tokens: 4, pooled: false }) })
    }
}

/// The same rules over HTTP, for [`crate::loopback::LoopbackServer`]: chat completions are
/// answered by the template their system message is, embeddings from letters.
pub fn over_http(request: &Received) -> Reply {
    if request.line.contains("/embeddings") {
        let input = &request.body["input"];
        let texts: Vec<String> = match input {
            serde_json::Value::Array(items) => {
                items.iter().map(|t| t.as_str().unwrap_or_default().to_owned()).collect()
            }
            other => vec![other.as_str().unwrap_or_default().to_owned()],
        };
        return Reply::Embed(texts.iter().map(|t| letters(t)).collect());
    }
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let content = |i: usize| {
        messages.get(i).and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
    };
    // An agent's template opens with the preamble as the system message: its own words
    // are in the user message.
    let mut template = template_of(&content(0));
    if template.is_empty() {
        template = template_of(&content(1));
    }
    Reply::Chat(answer(&template, &content(1)))
}

/// A test double: the rules, except that every line of dialogue is the same greeting (as a
/// small model answering greedily tends to do).
pub const ECHOING_RULES: RulesExcept = RulesExcept(echoing);

/// [`ECHOING_RULES`]' answer to a call of `template`, when it is not the rules'.
fn echoing(template: &str, user: &str) -> Option<String> {
    let line = "I'm doing well, thanks! How about you?";
    match template {
        "turn" => Some(serde_json::json!({"say": line, "end": false}).to_string()),
        "script" => {
            let [x, y] = script_names(user);
            let (x, y) = (x.as_str(), y.as_str());
            Some(serde_json::json!({"lines": [{ x: line }, { y: line }, { x: line }]}).to_string())
        }
        _ => None,
    }
}

/// [`ECHOING_RULES`] as a server's replies ([`over_http`]'s, but every line the same
/// greeting): a second model over HTTP that answers differently.
pub fn echoing_over_http(request: &Received) -> Reply {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let content = |i: usize| {
        messages.get(i).and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
    };
    let mut template = template_of(&content(0));
    if template.is_empty() {
        template = template_of(&content(1));
    }
    match echoing(&template, &content(1)) {
        Some(text) if !request.line.contains("/embeddings") => Reply::Chat(text),
        _ => over_http(request),
    }
}

/// A test double for a town's own scenario: the rules of [`answer`], except that a speaker
/// wants to pass on its `currently` line (as its prompts' identity gives it), says it, and
/// the one who hears agrees to what the line sets: the day ("tomorrow" or "today"), the first
/// two times and the first place it names. A speaker who means to invite (its intention
/// given, "to invite … to …") says so in a written conversation, and the other agrees.
/// Nothing in it knows what the scenario is.
pub struct ScenarioRules;

fn scenario_answer(template: &str, system: &str, user: &str) -> String {
    let currently = system.split("Currently: ").nth(1).map(|c| c.trim().to_owned());
    match template {
        "intention" => match currently {
            Some(c) => format!("Someone wants to pass on that {c}"),
            None => answer(template, user),
        },
        "turn" => {
            let wants =
                user.lines().find_map(|l| l.split_once(" wants from this talk: ")).map(|x| x.1);
            let said = user.split("The conversation so far:").nth(1).unwrap_or("");
            let said = said.split("\nIt is ").next().unwrap_or(said);
            let lines = said.lines().filter(|l| l.contains(": ")).count();
            match wants.and_then(|w| w.strip_prefix("to pass on that ")) {
                Some(news) if lines < 2 => {
                    // In the first person: "Sefa Okafor is organising …" → "I am organising …".
                    let news = news
                        .split_once(" is ")
                        .map_or(news.to_owned(), |(_, r)| format!("I am {r}"));
                    format!(r#"{{"say": "{} Listen: {news}", "end": false}}"#, drawn_words(user))
                }
                _ => format!(
                    r#"{{"say": "{} Yes, I will be there.", "end": {}}}"#,
                    drawn_words(user),
                    lines >= 1
                ),
            }
        }
        "script" => {
            // Whoever wants to pass on news says it, and the other agrees.
            let names = script_names(user);
            let news = |name: &str| {
                let head = format!("What {name} wants from this talk: ");
                let wants = user.lines().find_map(|l| l.strip_prefix(head.as_str()))?;
                if let Some(news) = wants.strip_prefix("to pass on that ") {
                    // In the first person: "Sefa Okafor is organising …" → "I am organising …".
                    return Some(
                        news.split_once(" is ")
                            .map_or(news.to_owned(), |(_, r)| format!("I am {r}")),
                    );
                }
                // An invitation (rulebook 6): "to invite Nnamdi Okafor to …" → "come to …".
                let invite = wants.strip_prefix("to invite ")?;
                invite.split_once(" to ").map(|(_, rest)| format!("come to {rest}"))
            };
            let first = match news(&names[0]) {
                Some(n) => vec![(0, format!("Listen: {n}")), (1, "Yes, I will be there.".into())],
                None => match news(&names[1]) {
                    Some(n) => vec![
                        (0, "Hello there.".into()),
                        (1, format!("Listen: {n}")),
                        (0, "Yes, I will be there.".into()),
                    ],
                    None => return answer(template, user),
                },
            };
            let lines: Vec<serde_json::Value> = first
                .into_iter()
                .enumerate()
                .map(|(i, (side, say))| {
                    let words = drawn_words(&format!("{user}{i}"));
                    serde_json::json!({ names[side].as_str(): format!("{words} {say}") })
                })
                .collect();
            serde_json::json!({ "lines": lines }).to_string()
        }
        "talk_notes" => {
            let places = user.lines().find_map(|l| l.split_once(" may name: ")).map(|(_, p)| p);
            let places: Vec<&str> =
                places.unwrap_or("").trim_end_matches('.').split(", ").collect();
            let talk = user.split(" talked with ").last().unwrap_or("");
            let talk = talk.split("\nPlaces ").next().unwrap_or(talk);
            let place = places.iter().find(|p| talk.contains(*p));
            let times: Vec<&str> = talk
                .split(|c: char| !(c.is_ascii_digit() || c == ':'))
                .filter(|w| w.len() == 5 && w.as_bytes()[2] == b':')
                .collect();
            let day = if talk.contains("tomorrow") { "tomorrow" } else { "today" };
            let promised = match (place, times.as_slice()) {
                (Some(place), [from, until, ..]) => format!(
                    r#"[{{"activity": "goes to what was agreed at {place}", "day": "{day}",
                        "from": "{from}", "place": "{place}", "until": "{until}"}}]"#
                ),
                _ => "[]".into(),
            };
            format!(r#"{{"note": "Keep the day free.", "promised": {promised}}}"#)
        }
        _ => answer(template, user),
    }
}

impl LlmBackend for ScenarioRules {
    fn name(&self) -> &str {
        "scenario-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "scenario-rules".into()
    }
    fn recorded_latency_ms(&self, _: [u8; 32]) -> Option<u32> {
        Some(0)
    }
    fn complete<'a>(&'a self, a: Attempt<'a>) -> BoxFuture<'a, Result<Completion, BackendError>> {
        let (system, user) = match &a.call.prompt {
            Prompt::Chat(m) => (
                m.first().map(|m| m.content.clone()).unwrap_or_default(),
                m.last().map(|m| m.content.clone()).unwrap_or_default(),
            ),
            Prompt::Text(t) => (t.clone(), t.clone()),
        };
        let text = scenario_answer(&a.call.template, &system, &user);
        Box::pin(async move { Ok(completion(text)) })
    }
}
