//! `hamlet town check`, `hamlet town show` and `hamlet town generate`: validate a town file,
//! summarise it with its map, or write one of any size from a seed.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use clap::Subcommand;
use hamlet_engine::describe::sim_time;
use hamlet_engine::town::{Definition, TownError};

use super::Outcome;

/// `hamlet town …`.
#[derive(Debug, Subcommand)]
pub enum TownCommand {
    /// Validate a town file: every problem, with its line and key (exit 1 if any)
    #[command(after_help = "Example:\n  hamlet town check engine/towns/willowmere.toml")]
    Check {
        /// The town file (TOML; see engine/towns/README.md)
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Write a town of any size from a seed: homes, workplaces, shops and parks on a grid
    /// of streets, personas with jobs, households, neighbours, colleagues and friends, and
    /// the seeded situations (a party for every hundred residents, a council candidacy)
    #[command(
        after_help = "The same --agents and --seed give the same file, byte for byte; the file passes `hamlet town check`. Run it with `hamlet run --town FILE`.\n\nExamples:\n  hamlet town generate --agents 1000 --out thousand.toml\n  hamlet town generate --agents 100 --seed 7 --name Fenwick --out fenwick.toml"
    )]
    Generate {
        /// How many personas (1 to 5000)
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=hamlet_engine::town::generate::MAX_AGENTS as u64))]
        agents: u64,
        /// The seed: another seed, another town of the same size
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The town's name
        #[arg(long, default_value = "Greater Willowmere")]
        name: String,
        /// Where to write the town file (refused if it exists)
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Print a town's summary: sectors, arenas, objects, personas, economy, and its map
    #[command(after_help = "On the map, `#` is wall, `.` open ground, letters arena floors, and \
digits the personas' spawn tiles (in the order listed).\n\nExample:\n  hamlet town show engine/towns/willowmere.toml")]
    Show {
        /// The town file
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

fn print_problems(err: &TownError) {
    println!("{}: {} problem(s)", err.file, err.problems.len());
    for p in &err.problems {
        match p.line {
            Some(line) => println!("  {}:{line}: {}: {}", err.file, p.key, p.message),
            None => println!("  {}: {}: {}", err.file, p.key, p.message),
        }
    }
}

pub fn town(c: TownCommand) -> anyhow::Result<Outcome> {
    match c {
        TownCommand::Generate { agents, seed, name, out } => {
            if name.trim().is_empty() || name.contains(['"', '\\', ':']) {
                anyhow::bail!("--name must be a plain name: no quotes, backslashes or `:`");
            }
            let spec = hamlet_engine::town::generate::Spec { agents: agents as usize, seed, name };
            let text = hamlet_engine::town::generate::generate(&spec);
            // Checked before it is written: a generated town that fails is a bug to report.
            let town = Definition::parse(&out.display().to_string(), &text).map_err(|e| {
                anyhow::anyhow!("the generated town fails its own check: {:?}", e.problems)
            })?;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&out)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            println!(
                "{}: {} personas, {} sectors, {} arenas, {} objects, a {}×{} map (seed {seed})",
                out.display(),
                town.personas.len(),
                town.sectors.len(),
                town.sectors.iter().map(|s| s.arenas.len()).sum::<usize>(),
                town.n_objects(),
                town.grid.width(),
                town.grid.height()
            );
            Ok(Outcome::Done)
        }
        TownCommand::Check { file } => match hamlet_engine::town::load(&file) {
            Ok(town) => {
                println!(
                    "{}: sound — {} sectors, {} arenas, {} objects, {} personas, a {}×{} map",
                    file.display(),
                    town.sectors.len(),
                    town.sectors.iter().map(|s| s.arenas.len()).sum::<usize>(),
                    town.n_objects(),
                    town.personas.len(),
                    town.grid.width(),
                    town.grid.height()
                );
                Ok(Outcome::Done)
            }
            Err(err) => {
                print_problems(&err);
                Ok(Outcome::ProblemsFound)
            }
        },
        TownCommand::Show { file } => {
            let town = match hamlet_engine::town::load(&file) {
                Ok(town) => town,
                Err(err) => {
                    print_problems(&err);
                    return Ok(Outcome::ProblemsFound);
                }
            };
            let mut out = BufWriter::new(std::io::stdout().lock());
            writeln!(out, "town       {} ({})", town.name, file.display())?;
            writeln!(
                out,
                "starts     {}, {} s per step",
                sim_time(town.start_secs),
                town.seconds_per_step
            )?;
            let p = town.perception;
            writeln!(
                out,
                "perception vision {} tiles, attention {} things, retention {} steps",
                p.vision_radius_tiles, p.attention_bandwidth, p.retention_steps
            )?;
            writeln!(
                out,
                "sectors    {}, {} objects in all",
                town.sectors.len(),
                town.n_objects()
            )?;
            for s in &town.sectors {
                let arenas: Vec<String> = s
                    .arenas
                    .iter()
                    .map(|a| format!("{} ({} objects)", a.name, a.objects.len()))
                    .collect();
                writeln!(out, "  {:<24} {:<8} {}", s.name, s.kind, arenas.join(", "))?;
            }
            writeln!(out, "personas   {}", town.personas.len())?;
            for (i, p) in town.personas.iter().enumerate() {
                writeln!(
                    out,
                    "  {} {:<22} {:>3}  {:<32} → {:<32} ${:>7.2}  {}",
                    i % 10,
                    p.name,
                    p.age,
                    p.home,
                    p.workplace.as_deref().unwrap_or("-"),
                    p.cash_cents as f64 / 100.0,
                    p.strategy
                )?;
                if let Some(m) = &p.model {
                    writeln!(out, "      thinks with the model `{m}`")?;
                }
                if let Some(g) = &p.goal {
                    writeln!(out, "      life goal: {g}")?;
                }
                use hamlet_engine::town::{MEMORY_MODULES, PLANNING_MODULES};
                if p.planning != PLANNING_MODULES[0] || p.memory != MEMORY_MODULES[0] {
                    writeln!(out, "      plans by `{}`, remembers by `{}`", p.planning, p.memory)?;
                }
                for h in &p.hosts {
                    let end = h.start_secs + u64::from(h.duration_secs);
                    writeln!(
                        out,
                        "      hosts {} at {}, day {} {:02}:{:02}–{:02}:{:02}",
                        h.what,
                        h.place,
                        h.start_secs / 86_400,
                        h.start_secs / 3600 % 24,
                        h.start_secs / 60 % 60,
                        end / 3600 % 24,
                        end / 60 % 60
                    )?;
                }
            }
            writeln!(out, "economy    {} prices, {} wages", town.prices.len(), town.wages.len())?;
            // One letter per arena, in order, for the map.
            let letters: Vec<char> = ('a'..='z').chain('A'..='Z').collect();
            let mut index = Vec::new();
            for (si, s) in town.sectors.iter().enumerate() {
                for (ai, a) in s.arenas.iter().enumerate() {
                    index.push((si, ai, format!("{}:{}", s.name, a.name)));
                }
            }
            let letter = |si: usize, ai: usize| {
                index
                    .iter()
                    .position(|(s, a, _)| *s == si && *a == ai)
                    .map_or('?', |k| letters[k % letters.len()])
            };
            let marks: Vec<_> = town
                .personas
                .iter()
                .enumerate()
                .map(|(i, p)| (p.spawn, char::from_digit((i % 10) as u32, 10).unwrap_or('*')))
                .collect();
            writeln!(out, "map        {}×{}", town.grid.width(), town.grid.height())?;
            write!(out, "{}", town.grid.render(letter, &marks))?;
            for (k, (_, _, name)) in index.iter().enumerate() {
                writeln!(out, "  {} {name}", letters[k % letters.len()])?;
            }
            out.flush()?;
            Ok(Outcome::Done)
        }
    }
}
