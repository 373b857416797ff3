//! `hamlet resim`: run the engine again over a recording, with no model, and say whether it
//! makes the same history.

use anyhow::Context;
use clap::Args;
use hamlet_engine::describe::{printable, sim_time, summary};
use hamlet_engine::resim::{resimulate, Verdict};
use hamlet_engine::why::CauseIndex;
use hamlet_log::event::{kind_name, AgentId};
use hamlet_log::Event;

use super::recording::source_events;
use super::{Outcome, Source};

/// `hamlet resim`.
#[derive(Debug, Args)]
pub struct ResimArgs {
    #[command(flatten)]
    source: Source,
}

pub fn resim(a: ResimArgs) -> anyhow::Result<Outcome> {
    let events = source_events(&a.source)?;
    let history = CauseIndex::new(&events);
    let name = |id: AgentId| history.name(id);
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    let bar = indicatif::ProgressBar::new(events.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "re-simulating [{bar:30}] {pos}/{len} events · {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let verdict = rt.block_on(resimulate(&events, scratch.path(), |done, _| {
        bar.set_position(done as u64);
    }));
    bar.finish_and_clear();
    match verdict? {
        Verdict::Identical { events } => {
            println!("identical: the engine made the same {events} events, every id equal, with no model call");
            Ok(Outcome::Done)
        }
        Verdict::Diverged(d) => {
            let at = d
                .expected
                .as_ref()
                .or(d.produced.as_ref())
                .map(|e| format!(" ({})", sim_time(e.sim_time_secs())))
                .unwrap_or_default();
            println!("diverges at #{}{at}, after {} identical events", d.index, d.index);
            let line = |e: &Event| {
                format!("{} {}", kind_name(e.body.kind()), printable(&summary(&e.body, &name)))
            };
            match &d.expected {
                Some(e) => println!("  recorded: {}", line(e)),
                None => println!("  recorded: nothing (the recording ends here)"),
            }
            match &d.produced {
                Some(e) => println!("  produced: {}", line(e)),
                None => println!("  produced: nothing (the engine stopped)"),
            }
            if let (Some(e), Some(p)) = (&d.expected, &d.produced) {
                if e.header == p.header && e.body == p.body {
                    println!(
                        "\n  the same event read back, with another id: this build writes {} at \
                         event schema {}, and the recording holds it at an older schema (read \
                         and upcast, log-format/FORMAT.md §7.3). The engine decided the same up \
                         to here; a recording made before this schema cannot be re-simulated id \
                         for id past it: record it again to have one that can.",
                        kind_name(p.body.kind()),
                        hamlet_log::event::schema_version(p.body.kind())
                    );
                    return Ok(Outcome::ProblemsFound);
                }
                println!("\n  what differs (- recorded, + produced):");
                for l in diff(&debug(e), &debug(p)) {
                    println!("    {l}");
                }
            }
            if let Some(cause) = &d.cause {
                println!("\n  why: {}", printable(cause));
            }
            Ok(Outcome::ProblemsFound)
        }
    }
}

/// An event's time, causes and body, one field a line.
fn debug(e: &Event) -> Vec<String> {
    format!("{:#?}\n{:#?}", e.header, e.body).lines().map(printable).collect()
}

/// The lines that differ, between the common start and the common end.
fn diff(a: &[String], b: &[String]) -> Vec<String> {
    let start = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let end =
        a[start..].iter().rev().zip(b[start..].iter().rev()).take_while(|(x, y)| x == y).count();
    let mut out: Vec<String> = Vec::new();
    out.extend(a[start..a.len() - end].iter().map(|l| format!("- {}", l.trim())));
    out.extend(b[start..b.len() - end].iter().map(|l| format!("+ {}", l.trim())));
    out
}
