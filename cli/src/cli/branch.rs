//! `hamlet fork`, `hamlet branches`, `hamlet rename-branch` and `hamlet delete-branch`:
//! branches of a store, new ones from any moment, a new name, a fork gone.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use hamlet_engine::describe::sim_time;
use hamlet_engine::history::Moment;
use hamlet_engine::ops;
use hamlet_engine::rulebook::{settings_with, Mechanism, OFF_SETTING, STRATEGY_SETTING};

use super::{parse_moment, Outcome};

/// `hamlet fork`.
#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The store directory
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The branch to fork from
    #[arg(long, default_value = "main")]
    branch: String,
    /// Where to fork: after the last event at or before this moment (`day<N> <HH:MM>`,
    /// `<HH:MM>`, `#<seq>`, `end`)
    #[arg(long, value_parser = parse_moment)]
    at: Moment,
    /// The new branch's name
    #[arg(long)]
    name: String,
    /// The fork runs without these social mechanisms (comma-separated: currently,
    /// commitments, intentions, validators, script, invitations, hosting, inviting), recorded on it: what each
    /// one buys, measured against its parent
    #[arg(long, value_delimiter = ',')]
    without: Vec<String>,
    /// Every agent of the fork runs this strategy (the paper's ablations: no_reflection,
    /// no_reflection_no_planning; or full), recorded on it
    #[arg(long)]
    strategy: Option<String>,
}

pub fn fork(a: ForkArgs) -> anyhow::Result<Outcome> {
    if !a.store.is_dir() {
        anyhow::bail!("no store at {}", a.store.display());
    }
    let mut store = super::store_at(&a.store)
        .with_context(|| format!("cannot open store {}", a.store.display()))?;
    // What the fork runs by, checked before anything is written: its parent's rules, with
    // the mechanisms named left out too.
    let parent_settings = {
        let from = ops::branch_named(&store, &a.branch)?;
        let events = store.events(from.id, 0, from.head_seq)?;
        events.iter().rev().find_map(|e| match &e.body {
            hamlet_log::Body::RunConfigured(c) => Some(c.settings.clone()),
            _ => None,
        })
    };
    let mut changes: Vec<(String, String)> = Vec::new();
    if !a.without.is_empty() {
        let already = parent_settings.iter().flatten().find(|(k, _)| k == OFF_SETTING);
        let mut off: Vec<Mechanism> = already
            .map(|(_, v)| v.split(',').filter_map(Mechanism::named).collect())
            .unwrap_or_default();
        for name in &a.without {
            let m = Mechanism::named(name).ok_or_else(|| {
                let known: Vec<&str> = Mechanism::ALL.iter().map(|m| m.name()).collect();
                anyhow::anyhow!("no mechanism `{name}`; the mechanisms are {}", known.join(", "))
            })?;
            off.push(m);
        }
        off.sort();
        off.dedup();
        let names: Vec<&str> = off.iter().map(|m| m.name()).collect();
        changes.push((OFF_SETTING.to_owned(), names.join(",")));
    }
    if let Some(s) = &a.strategy {
        changes.push((STRATEGY_SETTING.to_owned(), s.clone()));
    }
    if !changes.is_empty() {
        // (A mistake is refused before the fork is made.)
        let now = parent_settings
            .ok_or_else(|| anyhow::anyhow!("`{}` holds no run to fork by other rules", a.branch))?;
        settings_with(&now, &changes).map_err(anyhow::Error::msg)?;
    }
    let forked = ops::fork_at(&mut store, &a.branch, a.at, &a.name)?;
    if !changes.is_empty() {
        let settings = ops::reconfigure(&mut store, forked.id, &changes)?;
        let shown: Vec<String> = settings
            .iter()
            .filter(|(k, _)| k.starts_with("rulebook") || k == STRATEGY_SETTING)
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        println!("`{}` runs by: {}", forked.name, shown.join("; "));
    }
    let (seq, at) = (forked.seq, sim_time(forked.secs));
    println!(
        "forked `{}` from `{}` after #{seq} ({at}); `{}` is untouched",
        forked.name, forked.parent, forked.parent
    );
    println!("  id {}", forked.id);
    if forked.inside_step {
        println!(
            "  note: #{seq} is inside the step at {at}; the fork leaves the rest of that step \
             undone (fork at a time to keep whole steps)"
        );
    }
    println!(
        "go on with it: hamlet run --resume --store '{}' --branch '{}' --hours N",
        a.store.display(),
        a.name
    );
    Ok(Outcome::Done)
}

/// `hamlet branches`.
#[derive(Debug, Args)]
pub struct BranchesArgs {
    /// The store directory
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
}

pub fn branches(a: BranchesArgs) -> anyhow::Result<Outcome> {
    if !a.store.is_dir() {
        anyhow::bail!("no store at {}", a.store.display());
    }
    let store = super::store_read_only(&a.store)
        .with_context(|| format!("cannot open store {}", a.store.display()))?;
    let all = store.branches();
    // Depth first, each branch under its parent (children in the store's order: by fork
    // point, then name); orphans (a missing parent) at the top level.
    let known: std::collections::BTreeSet<_> = all.iter().map(|b| b.id).collect();
    let mut stack: Vec<(&hamlet_engine::store::Branch, usize)> = all
        .iter()
        .rev()
        .filter(|b| b.parent.is_none_or(|p| !known.contains(&p)))
        .map(|b| (b, 0))
        .collect();
    while let Some((b, depth)) = stack.pop() {
        let from = match (b.parent.and_then(|p| store.branch(p)), b.fork_seq) {
            (Some(p), Some(s)) => format!("forks `{}` after #{s}", p.name),
            (None, Some(s)) => format!("forks a missing branch after #{s}"),
            _ => "root".to_owned(),
        };
        println!(
            "{}{:<20} {}  {from}; head #{} at {}; {} events of its own",
            "  ".repeat(depth),
            b.name,
            b.id,
            b.head_seq,
            sim_time(b.head_time),
            b.own_events
        );
        stack.extend(all.iter().rev().filter(|c| c.parent == Some(b.id)).map(|c| (c, depth + 1)));
    }
    Ok(Outcome::Done)
}

/// `hamlet rename-branch`.
#[derive(Debug, Args)]
pub struct RenameBranchArgs {
    /// The branch to rename (by name, or a prefix of its id)
    branch: String,
    /// Its new name (not another branch's, not empty)
    name: String,
    /// The store directory
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
}

pub fn rename_branch(a: RenameBranchArgs) -> anyhow::Result<Outcome> {
    if !a.store.is_dir() {
        anyhow::bail!("no store at {}", a.store.display());
    }
    let mut store = super::store_at(&a.store)
        .with_context(|| format!("cannot open store {}", a.store.display()))?;
    let renamed = ops::rename_branch(&mut store, &a.branch, &a.name)
        .with_context(|| format!("cannot rename `{}`", a.branch))?;
    println!(
        "renamed `{}` to `{}` (one event at its head; its id {} and its forks' names stay)",
        renamed.old, renamed.name, renamed.id
    );
    Ok(Outcome::Done)
}

/// `hamlet delete-branch`.
#[derive(Debug, Args)]
pub struct DeleteBranchArgs {
    /// The fork to delete (by name)
    branch: String,
    /// The store directory
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
}

pub fn delete_branch(a: DeleteBranchArgs) -> anyhow::Result<Outcome> {
    if !a.store.is_dir() {
        anyhow::bail!("no store at {}", a.store.display());
    }
    let mut store = super::store_at(&a.store)
        .with_context(|| format!("cannot open store {}", a.store.display()))?;
    let Ok(branch) = store.find_branch(&a.branch) else {
        let names: Vec<String> = store.branches().into_iter().map(|b| b.name).collect();
        anyhow::bail!("no branch `{}`; the store has: {}", a.branch, names.join(", "));
    };
    let gone = store.delete_branch(branch.id)?;
    println!(
        "deleted `{}` and its {gone} events of its own; the history it shared stays with its parent",
        branch.name
    );
    Ok(Outcome::Done)
}
