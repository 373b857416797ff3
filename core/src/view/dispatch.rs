//! The one door to the viewer's read commands: a command's name and its arguments as JSON
//! in, its answer as JSON out (or an error in words). The desktop window's commands and the
//! browser's WebAssembly build both answer through [`dispatch`], so the two cannot drift;
//! `viewer/COMMANDS.md` documents each command's arguments and answer.
//!
//! What only a host knows stays with the host: the prices of the desktop's config file (for
//! `research` of `cost`) come in as an argument; the time a frame took is measured around
//! the call, never inside it (a browser's WebAssembly has no clock to read here).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::session::{ResearchAsk, Session, ViewError};
use crate::cost::Price;
use crate::log::Log;

/// The read commands [`dispatch`] answers, in the order `viewer/COMMANDS.md` lists them.
pub const COMMANDS: [&str; 12] = [
    "opened", "branches", "timeline", "map", "frame", "tracks", "step", "agent", "why", "calls",
    "compare", "research",
];

#[derive(Deserialize)]
struct OnBranch {
    branch: String,
}

#[derive(Deserialize)]
struct TimelineArgs {
    branch: String,
    buckets: u64,
}

#[derive(Deserialize)]
struct FrameArgs {
    branch: String,
    seq: Option<u64>,
    secs: Option<u64>,
}

#[derive(Deserialize)]
struct StepArgs {
    branch: String,
    seq: u64,
    by: String,
    dir: i32,
}

#[derive(Deserialize)]
struct AgentArgs {
    branch: String,
    seq: u64,
    agent: u32,
}

#[derive(Deserialize)]
struct WhyArgs {
    branch: String,
    seq: Option<u64>,
    agent: Option<u32>,
    event: Option<String>,
}

#[derive(Deserialize)]
struct CallsArgs {
    branch: String,
    from: u64,
    to: u64,
    agent: Option<u32>,
}

#[derive(Deserialize)]
struct CompareArgs {
    a: String,
    b: String,
}

#[derive(Deserialize)]
struct ResearchArgs {
    branch: String,
    ask: ResearchAsk,
}

#[derive(Serialize)]
struct Stepped {
    seq: u64,
}

/// Answers read command `command` with `args` (a JSON object; `null` or empty for none)
/// over `log`, as JSON; `prices` price `research` of `cost`. An unknown command, arguments
/// that do not fit it, and what the session cannot answer are errors in words.
pub fn dispatch(
    session: &mut Session,
    log: &dyn Log,
    command: &str,
    args: &str,
    prices: &BTreeMap<String, Price>,
) -> Result<String, String> {
    fn parse<T: DeserializeOwned>(command: &str, args: &str) -> Result<T, String> {
        let args = if args.trim().is_empty() { "null" } else { args };
        serde_json::from_str(args).map_err(|e| format!("invalid arguments for `{command}`: {e}"))
    }
    fn answer<T: Serialize>(value: Result<T, ViewError>) -> Result<String, String> {
        let value = value.map_err(|e| e.to_string())?;
        serde_json::to_string(&value).map_err(|e| format!("the answer did not encode: {e}"))
    }
    match command {
        "opened" => answer(Ok(session.opened())),
        "branches" => answer(Ok(&session.opened().branches)),
        "timeline" => {
            let a: TimelineArgs = parse(command, args)?;
            let buckets = usize::try_from(a.buckets).unwrap_or(usize::MAX);
            answer(session.timeline(log, &a.branch, buckets))
        }
        "map" => {
            let a: OnBranch = parse(command, args)?;
            answer(session.map(log, &a.branch))
        }
        "frame" => {
            let a: FrameArgs = parse(command, args)?;
            let seq = match (a.seq, a.secs) {
                (Some(seq), _) => seq,
                (None, Some(secs)) => session.seq_at(log, &a.branch, secs).map_err(err)?,
                (None, None) => 0,
            };
            answer(session.frame(log, &a.branch, seq))
        }
        "tracks" => {
            let a: OnBranch = parse(command, args)?;
            answer(session.tracks(log, &a.branch))
        }
        "step" => {
            let a: StepArgs = parse(command, args)?;
            let by_step = match a.by.as_str() {
                "step" => true,
                "event" => false,
                other => return Err(format!("step by `{other}`: `step` or `event`")),
            };
            let seq = session.step(log, &a.branch, a.seq, by_step, a.dir);
            answer(seq.map(|seq| Stepped { seq }))
        }
        "agent" => {
            let a: AgentArgs = parse(command, args)?;
            answer(session.agent(log, &a.branch, a.seq, a.agent))
        }
        "why" => {
            let a: WhyArgs = parse(command, args)?;
            answer(match (a.event, a.seq, a.agent) {
                (Some(event), _, _) => session.why_event(log, &a.branch, &event),
                (None, Some(seq), Some(agent)) => session.why_action(log, &a.branch, seq, agent),
                _ => Err(ViewError::NoEvent(
                    "(none given: ask with an event, or a seq and an agent)".into(),
                )),
            })
        }
        "calls" => {
            let a: CallsArgs = parse(command, args)?;
            answer(session.calls(log, &a.branch, a.from, a.to, a.agent))
        }
        "compare" => {
            let a: CompareArgs = parse(command, args)?;
            answer(session.compare(log, &a.a, &a.b))
        }
        "research" => {
            let mut a: ResearchArgs = parse(command, args)?;
            if a.ask.what == "cost" {
                a.ask.prices = prices.clone();
            }
            answer(session.research(log, &a.branch, &a.ask))
        }
        other => Err(format!("no read command `{other}`; there are: {}", COMMANDS.join(", "))),
    }
}

fn err(e: ViewError) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn recording() -> Vec<u8> {
        let spec = crate::synth::SynthSpec { n_events: 3000, n_agents: 4, seed: 11 };
        crate::synth::write_recording(spec, Vec::new(), |_| {}).unwrap()
    }

    #[test]
    fn each_command_answers_as_the_session_does_and_wrong_asks_are_said() {
        let bytes = recording();
        let (rec, mut door) = Session::recording(&bytes, Path::new("day.hamlet")).unwrap();
        let (_, mut direct) = Session::recording(&bytes, Path::new("day.hamlet")).unwrap();
        let none = BTreeMap::new();
        let mut ask = |command: &str, args: &str| dispatch(&mut door, &rec, command, args, &none);
        let json = |v: &dyn erased::Json| v.json();
        let b = direct.opened().branch.clone();
        assert_eq!(ask("opened", "").unwrap(), json(&direct.opened()));
        assert_eq!(ask("branches", "{}").unwrap(), json(&direct.opened().branches));
        let args = format!(r#"{{"branch":"{b}","buckets":50}}"#);
        assert_eq!(ask("timeline", &args).unwrap(), json(&direct.timeline(&rec, &b, 50).unwrap()));
        let args = format!(r#"{{"branch":"{b}","seq":1200}}"#);
        assert_eq!(ask("frame", &args).unwrap(), json(&direct.frame(&rec, &b, 1200).unwrap()));
        let seq = direct.seq_at(&rec, &b, 7 * 3600 + 600).unwrap();
        let args = format!(r#"{{"branch":"{b}","secs":{}}}"#, 7 * 3600 + 600);
        assert_eq!(ask("frame", &args).unwrap(), json(&direct.frame(&rec, &b, seq).unwrap()));
        let args = format!(r#"{{"branch":"{b}","seq":1200,"by":"step","dir":1}}"#);
        let stepped = direct.step(&rec, &b, 1200, true, 1).unwrap();
        assert_eq!(ask("step", &args).unwrap(), format!(r#"{{"seq":{stepped}}}"#));
        let args = format!(r#"{{"branch":"{b}","seq":2000,"agent":1}}"#);
        assert_eq!(ask("agent", &args).unwrap(), json(&direct.agent(&rec, &b, 2000, 1).unwrap()));
        let args = format!(r#"{{"branch":"{b}","from":0,"to":500,"agent":null}}"#);
        let calls = direct.calls(&rec, &b, 0, 500, None).unwrap();
        assert_eq!(ask("calls", &args).unwrap(), json(&calls));
        let args = format!(r#"{{"branch":"{b}","ask":{{"what":"density"}}}}"#);
        let density =
            ResearchAsk { what: "density".into(), every_secs: 3600, ..Default::default() };
        assert_eq!(
            ask("research", &args).unwrap(),
            json(&direct.research(&rec, &b, &density).unwrap())
        );
        // Wrong asks, in words.
        let unknown = ask("fork", "{}").unwrap_err();
        assert!(
            unknown.starts_with("no read command `fork`; there are: opened, branches"),
            "{unknown}"
        );
        let bad = ask("timeline", r#"{"branch":1}"#).unwrap_err();
        assert!(bad.starts_with("invalid arguments for `timeline`: "), "{bad}");
        let by = format!(r#"{{"branch":"{b}","seq":1,"by":"hour","dir":1}}"#);
        assert_eq!(ask("step", &by).unwrap_err(), "step by `hour`: `step` or `event`");
        let why = ask("why", &format!(r#"{{"branch":"{b}"}}"#)).unwrap_err();
        assert!(why.contains("none given"), "{why}");
        let nowhere = ask("map", r#"{"branch":"nowhere"}"#).unwrap_err();
        assert!(nowhere.starts_with("no branch `nowhere`; there are: "), "{nowhere}");
    }

    mod erased {
        pub trait Json {
            fn json(&self) -> String;
        }
        impl<T: serde::Serialize> Json for T {
            fn json(&self) -> String {
                serde_json::to_string(self).unwrap()
            }
        }
    }
}
