//! The prompt templates of `engine/prompts/`, compiled into the binary: parsed, checked and
//! rendered in chat style (system and user messages) or completion style (one text, for
//! base models).
//!
//! An agent's templates (`preamble = true`) open with the agent's preamble (`preamble.toml`:
//! who the agent is), the same words for every template, and then the template's own
//! instructions and question. Consecutive calls for one agent so share their longest part,
//! which the embedded model keeps in its cache instead of reading it again.

use std::collections::BTreeMap;

use hamlet_gateway::answer::Shape;
use hamlet_gateway::request::Scored;
use hamlet_gateway::Call;
use hamlet_log::event::{ChatMessage, Prompt};
use serde::Deserialize;

use crate::rulebook::Rulebook;

/// How the model takes its prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// System and user messages, for instruction models.
    Chat,
    /// One text ending in an answer cue, for base models.
    Completion,
}

/// One template.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// Its name, also the call's purpose.
    pub name: String,
    /// Bumped whenever its words change.
    pub version: u32,
    /// The answer's shape, by name ("importance", "day_plan", "choice", …).
    pub shape: String,
    /// Who the model is being, and the rules.
    pub system: String,
    /// The question, with `{placeholders}`.
    pub user: String,
    /// True for an agent's template: the agent's preamble comes first (the system message),
    /// then `system` and `user` together (the user message).
    #[serde(default)]
    pub preamble: bool,
}

/// The opening every agent template shares (`engine/prompts/preamble.toml`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preamble {
    /// "preamble".
    pub name: String,
    /// Bumped whenever its words change (and with it every agent template's version).
    pub version: u32,
    /// The words, with `{agent}` and `{summary}`.
    pub text: String,
}

/// The agents' preamble.
pub fn preamble() -> &'static Preamble {
    static ONE: std::sync::OnceLock<Preamble> = std::sync::OnceLock::new();
    ONE.get_or_init(|| {
        toml::from_str(include_str!("../../prompts/preamble.toml"))
            .unwrap_or_else(|e| panic!("engine/prompts/preamble.toml: {e}"))
    })
}

/// A template that cannot be rendered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// No template by that name.
    #[error("no prompt template `{0}`")]
    Unknown(String),
    /// A placeholder without a value.
    #[error("prompt template `{template}` needs a value for `{{{name}}}`")]
    Missing {
        /// The template.
        template: String,
        /// The placeholder.
        name: String,
    },
    /// The call's shape is not the template's.
    #[error("prompt template `{template}` answers a `{expected}`, not a `{given}`")]
    WrongShape {
        /// The template.
        template: String,
        /// Its shape.
        expected: String,
        /// The shape given.
        given: String,
    },
}

const FILES: &[(&str, &str)] = &[
    ("importance", include_str!("../../prompts/importance.toml")),
    ("ratings", include_str!("../../prompts/ratings.toml")),
    ("day_plan", include_str!("../../prompts/day_plan.toml")),
    ("hour_parts", include_str!("../../prompts/hour_parts.toml")),
    ("hour_plan", include_str!("../../prompts/hour_plan.toml")),
    ("location", include_str!("../../prompts/location.toml")),
    ("react", include_str!("../../prompts/react.toml")),
    ("attend", include_str!("../../prompts/attend.toml")),
    ("turn", include_str!("../../prompts/turn.toml")),
    ("reflection_questions", include_str!("../../prompts/reflection_questions.toml")),
    ("insights", include_str!("../../prompts/insights.toml")),
    ("summary", include_str!("../../prompts/summary.toml")),
    ("interview", include_str!("../../prompts/interview.toml")),
    ("inner_voice", include_str!("../../prompts/inner_voice.toml")),
    ("currently", include_str!("../../prompts/currently.toml")),
    ("intention", include_str!("../../prompts/intention.toml")),
    ("talk_notes", include_str!("../../prompts/talk_notes.toml")),
    ("script", include_str!("../../prompts/script.toml")),
    ("invitation", include_str!("../../prompts/invitation.toml")),
    ("goal_judgement", include_str!("../../prompts/goal_judgement.toml")),
    ("goal_questions", include_str!("../../prompts/goal_questions.toml")),
    ("goal_answers", include_str!("../../prompts/goal_answers.toml")),
    ("goal_purpose", include_str!("../../prompts/goal_purpose.toml")),
    ("picture", include_str!("../../prompts/picture.toml")),
    ("job_offer", include_str!("../../prompts/job_offer.toml")),
    ("mayor_where", include_str!("../../prompts/mayor_where.toml")),
    ("mayor_act", include_str!("../../prompts/mayor_act.toml")),
    ("mayor_details", include_str!("../../prompts/mayor_details.toml")),
];

/// Versions of templates that newer ones replaced, kept for the runs whose rulebook asks with
/// them ([`crate::rulebook::Rulebook::template_version`]): such a run is resumed, forked and
/// re-simulated with the words it was recorded with.
const RETIRED: &[(&str, &str)] = &[
    ("turn-v5", include_str!("../../prompts/retired/turn-v5.toml")),
    ("turn-v6", include_str!("../../prompts/retired/turn-v6.toml")),
    ("react-v3", include_str!("../../prompts/retired/react-v3.toml")),
    ("attend-v1", include_str!("../../prompts/retired/attend-v1.toml")),
];

/// The retired templates, by name and version.
pub fn retired() -> &'static BTreeMap<(String, u32), Template> {
    static ALL: std::sync::OnceLock<BTreeMap<(String, u32), Template>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        RETIRED
            .iter()
            .map(|(file, text)| {
                let t = parse(&format!("retired/{file}"), text);
                assert_eq!(format!("{}-v{}", t.name, t.version), *file, "retired/{file}.toml");
                ((t.name.clone(), t.version), t)
            })
            .collect()
    })
}

/// Every template, by name.
pub fn templates() -> &'static BTreeMap<String, Template> {
    static ALL: std::sync::OnceLock<BTreeMap<String, Template>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        FILES
            .iter()
            .map(|(file, text)| {
                let t = parse(file, text);
                assert_eq!(&t.name, file, "engine/prompts/{file}.toml names itself");
                (t.name.clone(), t)
            })
            .collect()
    })
}

/// A template file compiled in (`engine/prompts/{file}.toml`); a file that does not parse is
/// a bug of this build.
fn parse(file: &str, text: &str) -> Template {
    toml::from_str(text).unwrap_or_else(|e| panic!("engine/prompts/{file}.toml: {e}"))
}

/// The names of a text's `{placeholders}`, in order of first appearance.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            if !out.iter().any(|n| n == name) {
                out.push(name.to_owned());
            }
            rest = &after[close + 1..];
        } else {
            rest = after;
        }
    }
    out
}

fn fill(template: &str, text: &str, vars: &BTreeMap<&str, String>) -> Result<String, PromptError> {
    let mut out = text.trim().to_owned();
    for name in placeholders(text) {
        let value = vars.get(name.as_str()).ok_or_else(|| PromptError::Missing {
            template: template.to_owned(),
            name: name.clone(),
        })?;
        out = out.replace(&format!("{{{name}}}"), value.trim());
    }
    Ok(out)
}

impl Template {
    /// The rendered prompt.
    pub fn render(
        &self,
        vars: &BTreeMap<&str, String>,
        style: Style,
    ) -> Result<Prompt, PromptError> {
        let (system, user) = if self.preamble {
            let instructions = fill(&self.name, &self.system, vars)?;
            let question = fill(&self.name, &self.user, vars)?;
            (fill(&self.name, &preamble().text, vars)?, format!("{instructions}\n\n{question}"))
        } else {
            (fill(&self.name, &self.system, vars)?, fill(&self.name, &self.user, vars)?)
        };
        Ok(match style {
            Style::Chat => Prompt::Chat(vec![
                ChatMessage { role: "system".into(), content: system },
                ChatMessage { role: "user".into(), content: user },
            ]),
            Style::Completion => {
                let cue = if self.shape == "text" { "Answer:" } else { "Answer (JSON):" };
                Prompt::Text(format!("{system}\n\n{user}\n{cue}"))
            }
        })
    }

    /// A gateway call of this template with `shape`, which must be the template's.
    pub fn call(
        &self,
        vars: &BTreeMap<&str, String>,
        style: Style,
        shape: Shape,
    ) -> Result<Call, PromptError> {
        let given = match &shape {
            Shape::Plan { min_minutes: 30, .. } => "day_plan",
            // Times given, at any level of a plan.
            Shape::Schedule { .. }
                if matches!(self.shape.as_str(), "day_plan" | "hour_parts" | "hour_plan") =>
            {
                self.shape.as_str()
            }
            Shape::Schedule { .. } => "schedule",
            Shape::Plan { min_minutes: 15, .. } => "hour_parts",
            Shape::Plan { .. } => "hour_plan",
            Shape::YesNo => "yes_no",
            other => other.name(),
        };
        if given != self.shape {
            return Err(PromptError::WrongShape {
                template: self.name.clone(),
                expected: self.shape.clone(),
                given: given.to_owned(),
            });
        }
        Ok(Call {
            purpose: self.name.clone(),
            agent: None,
            template: self.name.clone(),
            template_version: self.version,
            prompt: self.render(vars, style)?,
            shape,
            max_tokens: None,
            temperature: None,
            items: Vec::new(),
            scored: None,
            avoid: Vec::new(),
        })
    }

    /// This template asked item by item: its rendered prompt, shared by the items, each of
    /// which the backend adds to the end of it (see [`Call::scored`]).
    pub fn scored(
        &self,
        vars: &BTreeMap<&str, String>,
        style: Style,
        items: Vec<String>,
    ) -> Result<Scored, PromptError> {
        let mut prompt = self.render(vars, style)?;
        // In completion style the answer cue goes after the item, so it is left off here.
        if let Prompt::Text(text) = &mut prompt {
            if let Some(cut) = text.rfind('\n') {
                text.truncate(cut);
            }
        }
        Ok(Scored { prompt, items })
    }
}

/// A template by name (its newest version).
pub fn template(name: &str) -> Result<&'static Template, PromptError> {
    templates().get(name).ok_or_else(|| PromptError::Unknown(name.to_owned()))
}

/// A template by name, in the version `rulebook` asks with.
pub fn template_for(name: &str, rulebook: Rulebook) -> Result<&'static Template, PromptError> {
    match rulebook.template_version(name) {
        Some(version) if version != template(name)?.version => retired()
            .get(&(name.to_owned(), version))
            .ok_or_else(|| PromptError::Unknown(format!("{name} v{version}"))),
        _ => template(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_names_itself_and_has_a_known_shape() {
        assert_eq!(templates().len(), FILES.len());
        for t in templates().values() {
            assert!(t.version >= 1, "{}", t.name);
            let known = [
                "importance",
                "ratings",
                "day_plan",
                "hour_parts",
                "hour_plan",
                "choice",
                "yes_no",
                "turn",
                "text",
                "insights",
                "json",
            ];
            assert!(known.contains(&t.shape.as_str()), "{}: {}", t.name, t.shape);
            assert!(!placeholders(&format!("{}{}", t.system, t.user)).is_empty(), "{}", t.name);
        }
    }

    #[test]
    fn rendering_fills_every_placeholder_or_says_which_is_missing() {
        let t = template("importance").unwrap();
        let mut vars = BTreeMap::new();
        vars.insert("agent", "Mei Lin".to_owned());
        assert_eq!(
            t.render(&vars, Style::Chat),
            Err(PromptError::Missing { template: "importance".into(), name: "town".into() })
        );
        vars.insert("town", "Oak Hill".to_owned());
        assert_eq!(
            t.render(&vars, Style::Chat),
            Err(PromptError::Missing { template: "importance".into(), name: "summary".into() })
        );
        vars.insert("summary", "Mei Lin teaches at the college.".to_owned());
        let Ok(Prompt::Chat(messages)) = t.render(&vars, Style::Chat) else { panic!() };
        assert!(messages[0].content.starts_with("This is about Mei Lin"), "{messages:?}");
        assert!(messages[0].content.contains("the small town of Oak Hill."), "{messages:?}");
        assert!(messages[0].content.ends_with("Mei Lin teaches at the college."), "{messages:?}");
        assert!(messages[1].content.ends_with("The moment Mei Lin remembers:"), "{messages:?}");
        assert!(!messages[0].content.contains('{'));
        let Ok(Prompt::Text(text)) = t.render(&vars, Style::Completion) else { panic!() };
        assert!(text.ends_with("Mei Lin remembers:\nAnswer (JSON):"), "{text}");
        let call = t.call(&vars, Style::Chat, Shape::Importance).unwrap();
        assert_eq!((call.template.as_str(), call.template_version), ("importance", 2));
        assert!(t.call(&vars, Style::Chat, Shape::YesNo).is_err());
    }

    #[test]
    fn an_agents_templates_share_the_preamble_word_for_word() {
        let vars = BTreeMap::from([
            ("town", "Willowmere".to_owned()),
            ("agent", "Mei Lin".to_owned()),
            ("summary", "Mei Lin teaches at the college.".to_owned()),
        ]);
        let mut firsts = Vec::new();
        for t in templates().values().filter(|t| t.preamble) {
            let mut all = vars.clone();
            for name in placeholders(&format!("{}{}", t.system, t.user)) {
                all.entry(Box::leak(name.into_boxed_str())).or_insert_with(|| "x".to_owned());
            }
            let Ok(Prompt::Chat(messages)) = t.render(&all, Style::Chat) else { panic!() };
            firsts.push(messages[0].content.clone());
        }
        assert!(firsts.len() >= 8, "the agent's templates open with the preamble");
        assert!(firsts.windows(2).all(|w| w[0] == w[1]), "{firsts:?}");
        // Item by item: the shared prompt without the answer cue in completion style.
        let t = template("importance").unwrap();
        let scored = t.scored(&vars, Style::Completion, vec!["the stove is idle".into()]).unwrap();
        let Prompt::Text(text) = scored.prompt else { panic!() };
        assert!(text.ends_with("The moment Mei Lin remembers:"), "{text}");
    }

    #[test]
    fn each_rulebook_asks_with_the_template_versions_it_was_recorded_with() {
        assert!(!retired().is_empty());
        for ((name, version), old) in retired() {
            let newest = template(name).unwrap();
            assert!(old.version < newest.version, "{name} v{version}");
            assert_eq!(
                (old.shape.as_str(), old.preamble),
                (newest.shape.as_str(), newest.preamble)
            );
        }
        let first = template_for("turn", Rulebook::FIRST).unwrap();
        assert_eq!(first.version, 5);
        assert!(first.user.starts_with("It is {time}"), "{}", first.user);
        let current = template_for("turn", Rulebook::CURRENT).unwrap();
        assert_eq!(current.version, template("turn").unwrap().version);
        assert!(current.user.trim_start().ends_with("It is {time}. {cue}"), "{}", current.user);
        // A template no rulebook changed is the same for all.
        assert_eq!(
            template_for("location", Rulebook::FIRST).unwrap(),
            template_for("location", Rulebook::CURRENT).unwrap()
        );
    }

    #[test]
    fn json_braces_are_not_placeholders() {
        assert_eq!(placeholders(r#"Reply {"rating": <1-10>} for {agent} and {agent}"#), ["agent"]);
    }
}
