//! `hamlet fork`, `hamlet branches`, `hamlet rename-branch` and `hamlet delete-branch`:
//! branches of a store, new ones from any moment, a new name, a fork gone.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use hamlet_engine::describe::sim_time;
use hamlet_engine::history::Moment;
use hamlet_engine::ops;
use hamlet_engine::store::Store;

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
}

pub fn fork(a: ForkArgs) -> anyhow::Result<Outcome> {
    if !a.store.is_dir() {
        anyhow::bail!("no store at {}", a.store.display());
    }
    let mut store = Store::open(&a.store)
        .with_context(|| format!("cannot open store {}", a.store.display()))?;
    let forked = ops::fork_at(&mut store, &a.branch, a.at, &a.name)?;
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
    let store = Store::open(&a.store)
        .with_context(|| format!("cannot open store {}", a.store.display()))?;
    let all = store.branches();
    // Depth first, each branch under its parent (children in the store's order: by fork
    // point, then name); orphans (a missing parent) at the top level.
    let known: std::collections::BTreeSet<_> = all.iter().map(|b| b.id).collect();
    let mut stack: Vec<(&hamlet_engine::store::BranchInfo, usize)> = all
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
            b.n_events
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
    let mut store = Store::open(&a.store)
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
    let mut store = Store::open(&a.store)
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
