//! Subcommands over stores: import, export, store rebuild, store check.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use hamlet_engine::history::{checkpoint_store, export_until_with_checkpoints};
use hamlet_engine::store::Store;

use super::recording::{read_file, write_file};
use super::Outcome;

fn open_store(dir: &std::path::Path) -> anyhow::Result<Store> {
    super::store_at(dir).with_context(|| format!("cannot open store {}", dir.display()))
}

/// `hamlet import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The recording to import
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The store directory (created if missing)
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
}

pub fn import(a: ImportArgs) -> anyhow::Result<Outcome> {
    let bytes = read_file(&a.file)?;
    let mut store = open_store(&a.store)?;
    let n_new = hamlet_engine::ops::import(&mut store, &bytes).with_context(|| {
        format!("cannot import {} into {}", a.file.display(), a.store.display())
    })?;
    println!("imported {n_new} new events into {}", a.store.display());
    for b in store.branches() {
        println!("  {:<12} {}  head #{}", b.name, b.id, b.head_seq);
    }
    Ok(Outcome::Done)
}

/// `hamlet export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The store directory
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The branch to export with its ancestry [default: every branch]
    #[arg(long)]
    branch: Option<String>,
    /// Where to write the recording
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Export the branch only up to this moment (`day0 14:30`, `#1234`): the
    /// recording ends with its last event at or before it [needs --branch]
    #[arg(long, value_name = "MOMENT", requires = "branch")]
    until: Option<String>,
}

pub fn export(a: ExportArgs) -> anyhow::Result<Outcome> {
    let store = super::store_read_only(&a.store)
        .with_context(|| format!("cannot open store {}", a.store.display()))?;
    let info = a.branch.as_deref().map(|n| store.find_branch(n)).transpose()?;
    let until = match (&a.until, &info) {
        (Some(moment), Some(info)) => {
            let at = super::moment::parse_moment(moment).map_err(anyhow::Error::msg)?;
            Some(hamlet_engine::ops::seq_for(&store, info, at)?)
        }
        _ => None,
    };
    let branch = info.map(|b| b.id);
    let bytes = export_until_with_checkpoints(&store, branch, until, Vec::new())
        .context("cannot export")?;
    write_file(&a.out, &bytes)?;
    println!("wrote {} ({} bytes)", a.out.display(), bytes.len());
    Ok(Outcome::Done)
}

/// `hamlet store …`.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Rebuild the sled index (and checkpoints) from the segment files
    #[command(after_help = "The segment files are the truth; the index is derived. Rebuilding \
cuts a torn tail left by a crash (keeping the cut bytes beside the segment, as \
`<segment>.cut-<offset>`), then re-indexes every chunk.\n\nExample:\n  hamlet store rebuild --store run/")]
    Rebuild {
        /// The store directory
        #[arg(long, value_name = "DIR")]
        store: PathBuf,
    },
    /// Check that the segments are sound and the index agrees with them
    #[command(after_help = "Nothing in the store is written: the segments are scanned and \
the index read. Damage or a torn tail is reported with the repair a command that writes would \
make (and exit status 1); an index out of date is said (any command that writes rebuilds it).\n\nExample:\n  hamlet store check --store run/")]
    Check {
        /// The store directory
        #[arg(long, value_name = "DIR")]
        store: PathBuf,
    },
}

pub fn store(c: StoreCommand) -> anyhow::Result<Outcome> {
    match c {
        StoreCommand::Rebuild { store: dir } => {
            let mut store = open_store(&dir)?;
            store.rebuild_index()?;
            store.clear_checkpoints()?;
            for branch in store.branches() {
                checkpoint_store(&store, branch.id).context("cannot write checkpoints")?;
            }
            store.flush_index()?;
            println!("rebuilt the index of {} from its segments", dir.display());
            for b in store.branches() {
                println!(
                    "  {:<12} {}  head #{}  {} events of its own",
                    b.name, b.id, b.head_seq, b.own_events
                );
            }
            Ok(Outcome::Done)
        }
        StoreCommand::Check { store: dir } => {
            // Read-only first: what opening would repair is said, not done.
            let repairs = hamlet_engine::store::inspect(&dir)
                .with_context(|| format!("cannot check store {}", dir.display()))?;
            if !repairs.is_empty() {
                let n = match repairs.len() {
                    1 => "a repair".to_owned(),
                    n => format!("{n} repairs"),
                };
                println!("{}: the segments need {n}:", dir.display());
                for repair in &repairs {
                    let lost = if repair.loses_acknowledged() { " — events lost" } else { "" };
                    println!("  would repair {repair}{lost}");
                }
                println!(
                    "nothing was changed; `hamlet store rebuild --store {}` makes them, and \
                     keeps every byte it cuts beside its segment",
                    dir.display()
                );
                return Ok(Outcome::ProblemsFound);
            }
            let store = super::store_read_only(&dir)
                .with_context(|| format!("cannot open store {}", dir.display()))?;
            if store.was_rebuilt() {
                // Derived data out of date is not damage: any command that writes rebuilds it.
                println!(
                    "{}: segments sound; the index is out of date (read from the segments \
                     instead; the next command that writes, or `hamlet store rebuild`, \
                     rebuilds it)",
                    dir.display()
                );
                return Ok(Outcome::Done);
            }
            match store.check_index() {
                Ok(()) => {
                    println!("{}: segments sound, index agrees", dir.display());
                    Ok(Outcome::Done)
                }
                Err(problem) => {
                    println!("{}: {problem}", dir.display());
                    Ok(Outcome::ProblemsFound)
                }
            }
        }
    }
}
