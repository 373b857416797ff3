//! What a person does to a store, for the command line and the viewer alike: fork a branch
//! at a moment, rename a branch, import a recording, run a branch on until a step or until
//! told to stop.
//! Nothing here prints; each operation answers what it did, or an error in words ready to
//! show. The engine operations themselves live in `store` and `sim`: this module only joins
//! them the way both front ends need.

use std::sync::atomic::{AtomicBool, Ordering};

use hamlet_log::event::{AgentId, Tile};
use hamlet_log::{Body, BranchId, Event};

use crate::describe::sim_time;
use crate::history::{checkpoint_store, state_at, HistoryError, Moment};
use crate::sim::{stopped_mid_step, Sim, SimError};
use crate::store::{Branch, Storage, Store, StoreError};

/// Why an operation could not be done. Nothing was written unless it says so.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// No branch by that name (or id prefix); the store's branches are listed.
    #[error("no branch `{name}`; the store has: {has}")]
    NoBranch {
        /// The name asked for.
        name: String,
        /// The store's branch names, comma-separated.
        has: String,
    },
    /// The moment is not on the branch.
    #[error("{0}")]
    NoMoment(String),
    /// The store refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Checkpoints could not be written.
    #[error("cannot write checkpoints: {0}")]
    History(#[from] HistoryError),
    /// The simulation stopped; what was committed before it stays.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The model chosen cannot be used (what is wrong, in words).
    #[error("{0}")]
    Model(String),
    /// A change asked where the branch's last step stopped part way.
    #[error(
        "the branch's last step stopped part way: continue it first, so the change lands \
         between steps"
    )]
    MidStep,
    /// A step wrote nothing and is still not finished.
    #[error("the step wrote nothing and is still not finished; the store may be damaged")]
    Stuck,
    /// A change that cannot be made (nothing is written), and why.
    #[error("{0}")]
    Refused(String),
}

/// A branch by name or id prefix, or an error listing the store's branches.
pub fn branch_named<S: Storage>(store: &Store<S>, name: &str) -> Result<Branch, OpsError> {
    store.find_branch(name).map_err(|_| OpsError::NoBranch {
        name: name.to_owned(),
        has: store.branches().into_iter().map(|b| b.name).collect::<Vec<_>>().join(", "),
    })
}

/// `BASE-1`, `BASE-2`, …: the first that names no branch of the store.
pub fn unused_name<S: Storage>(store: &Store<S>, base: &str) -> String {
    let taken: Vec<String> = store.branches().into_iter().map(|b| b.name).collect();
    (1..).map(|n| format!("{base}-{n}")).find(|n| !taken.contains(n)).unwrap_or_default()
}

/// The seq of the last event of `from` at or before `at`.
pub fn seq_for<S: Storage>(store: &Store<S>, from: &Branch, at: Moment) -> Result<u64, OpsError> {
    match at {
        Moment::End => Ok(from.head_seq),
        Moment::Seq(s) if s <= from.head_seq => Ok(s),
        Moment::Seq(s) => Err(OpsError::NoMoment(format!(
            "#{s} is past the end of `{}` (#{})",
            from.name, from.head_seq
        ))),
        Moment::Time(t) => store.seq_at_time(from.id, t)?.ok_or_else(|| {
            OpsError::NoMoment(format!("`{}` has no event at or before {}", from.name, sim_time(t)))
        }),
    }
}

/// A fork made by [`fork_at`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Forked {
    /// The new branch.
    #[serde(skip)]
    pub id: BranchId,
    /// Its name.
    pub name: String,
    /// The branch forked, untouched.
    pub parent: String,
    /// The parent's last event the fork keeps.
    pub seq: u64,
    /// That event's simulated time.
    pub secs: u64,
    /// The fork point is inside a step: the fork leaves the rest of that step undone, and
    /// going on finishes it first (a fork at a time keeps whole steps).
    pub inside_step: bool,
}

/// Forks branch `from` after its last event at or before `at`, as a new branch `name`: one
/// event, made durable with the index. The parent is untouched.
pub fn fork_at<S: Storage>(
    store: &mut Store<S>,
    from: &str,
    at: Moment,
    name: &str,
) -> Result<Forked, OpsError> {
    let from = branch_named(store, from)?;
    let seq = seq_for(store, &from, at)?;
    let point = store.event_at(from.id, seq)?;
    // A step's events share its time: a fork inside one leaves the rest of that step undone
    // (a rename after it, at the same time, is no part of it).
    let inside_step = seq < from.head_seq && {
        let next = store.event_at(from.id, seq + 1)?;
        !matches!(next.body, Body::BranchRenamed(_))
            && next.sim_time_secs() == point.sim_time_secs()
    };
    let id = store.fork(from.id, seq, name)?;
    store.flush_index()?;
    Ok(Forked {
        id,
        name: name.to_owned(),
        parent: from.name,
        seq,
        secs: point.sim_time_secs(),
        inside_step,
    })
}

/// Makes the branch `id` run by other rules from its head on: a `RunConfigured` with its
/// run's settings and `changes` made ([`crate::rulebook::settings_with`]), appended to it.
/// For a fork just made (`hamlet fork --without`, `--strategy`): the fork then runs without
/// a mechanism, or as one of the paper's ablations, and re-simulates so.
pub fn reconfigure<S: Storage>(
    store: &mut Store<S>,
    id: BranchId,
    changes: &[(String, String)],
) -> Result<Vec<(String, String)>, OpsError> {
    let head = store.branch(id).map_or(0, |b| b.head_seq);
    let events = store.events(id, 0, head)?;
    let now = events.iter().rev().find_map(|e| match &e.body {
        Body::RunConfigured(c) => Some(c.clone()),
        _ => None,
    });
    let Some(now) = now else {
        return Err(OpsError::Refused("the branch holds no run to configure".into()));
    };
    let settings =
        crate::rulebook::settings_with(&now.settings, changes).map_err(OpsError::Refused)?;
    let at = events.last().map_or(0, |e| e.sim_time_secs());
    let body =
        Body::RunConfigured(hamlet_log::event::RunConfigured { settings: settings.clone(), ..now });
    store.append_durable(id, &[hamlet_log::event::NewEvent::new(at, body)])?;
    store.flush_index()?;
    Ok(settings)
}

/// A rename made by [`rename_branch`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Renamed {
    /// The branch (its id does not change).
    #[serde(skip)]
    pub id: BranchId,
    /// The name it had.
    pub old: String,
    /// The name it has now.
    pub name: String,
}

/// Renames branch `old` (a name or an id prefix) to `new`: a `BranchRenamed` event at its
/// head, made durable with the index. Refused, with nothing written, when the store refuses
/// the name (empty, another branch's, or its own already) or when the branch's head is part
/// way through a step (the rename would land inside it: continue the branch first). Its
/// forks keep their names.
pub fn rename_branch<S: Storage>(
    store: &mut Store<S>,
    old: &str,
    new: &str,
) -> Result<Renamed, OpsError> {
    let branch = branch_named(store, old)?;
    if head_mid_step(store, &branch)? {
        return Err(OpsError::MidStep);
    }
    let was = store.rename_branch(branch.id, new)?;
    store.flush_index()?;
    Ok(Renamed { id: branch.id, old: was, name: new.to_owned() })
}

/// Whether `branch`'s head is part way through a step ([`crate::sim::stopped_mid_step`]),
/// from its log: the fold to its head (from the nearest checkpoint) and its last events.
pub fn head_mid_step<S: Storage>(store: &Store<S>, branch: &Branch) -> Result<bool, OpsError> {
    let town =
        state_at(store, branch.id, Moment::End).map_err(|e| match HistoryError::from(e) {
            HistoryError::Store(e) => OpsError::Store(e),
            e => OpsError::History(e),
        })?;
    let mut seq = branch.head_seq;
    let last = loop {
        let event = store.event_at(branch.id, seq)?;
        match event.body {
            Body::BranchCreated(_) | Body::BranchRenamed(_) if seq > 0 => seq -= 1,
            Body::BranchCreated(_) | Body::BranchRenamed(_) => break None,
            body => break Some(body),
        }
    };
    Ok(stopped_mid_step(&town, last.as_ref()))
}

/// Imports a recording's bytes (verified first; events already held are skipped), writes
/// each branch's checkpoints and makes the index durable. Answers how many events were new.
pub fn import<S: Storage>(store: &mut Store<S>, bytes: &[u8]) -> Result<u64, OpsError> {
    let new = store.import(bytes)?;
    for branch in store.branches() {
        checkpoint_store(store, branch.id)?;
    }
    store.flush_index()?;
    Ok(new)
}

/// How a run goes, after each step: what [`run_until`] hands its caller.
pub struct Stepped<'a> {
    /// The events the step committed.
    pub events: &'a [Event],
    /// The step reached, and the step aimed at.
    pub step: u64,
    /// The step aimed at.
    pub target: u64,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The target step was reached (and no step is left part way).
    Done,
    /// `stop` was set: the run stopped after the step under way; nothing is lost, and
    /// running again goes on identically.
    Stopped,
}

/// How far a run goes, in simulated hours: the one meaning of "hours" in both front ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hours {
    /// Up to this hour, counted from the town's start (`hamlet run --hours`, with
    /// `--resume` too).
    Until(f64),
    /// This many more hours from where the branch stands (the window's Continue).
    For(f64),
}

/// The step a run of `hours` ends at: at least one step past the town's start for
/// [`Hours::Until`], at least one step past the branch's for [`Hours::For`].
pub fn target_step<S: Storage>(sim: &Sim<S>, hours: Hours) -> u64 {
    let per_step = u64::from(sim.definition().seconds_per_step.max(1));
    let steps = |h: f64| ((h * 3600.0) / per_step as f64).ceil().max(1.0) as u64;
    match hours {
        Hours::Until(h) => steps(h),
        Hours::For(h) => sim.state().step + steps(h),
    }
}

/// What a run has cost so far — calls, tokens and money, from the events its steps
/// committed: one tally for the CLI's bar and the window's progress line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunCost {
    /// Calls, tokens and money, as `hamlet cost` counts them.
    pub total: hamlet_core::cost::Tally,
    /// Models with no price: while any is here the cost is unknown.
    pub unpriced: std::collections::BTreeSet<String>,
}

impl RunCost {
    /// Adds a step's committed events.
    pub fn add(
        &mut self,
        events: &[Event],
        prices: &std::collections::BTreeMap<String, hamlet_core::cost::Price>,
    ) {
        let report =
            hamlet_core::cost::report(events.iter().map(|e| (e.sim_time_secs(), &e.body)), prices);
        self.total.add(&report.total);
        self.unpriced.extend(report.unpriced);
    }

    /// Tokens, prompt and completion.
    pub fn tokens(&self) -> u64 {
        self.total.prompt_tokens + self.total.completion_tokens
    }

    /// The money, unless a model had no price.
    pub fn money(&self) -> Option<f64> {
        self.unpriced.is_empty().then_some(self.total.money)
    }
}

/// Wall seconds a run has left at its pace so far: `wall_secs` took it `done` simulated
/// seconds, and `left` remain; `None` before any simulated time has passed.
pub fn eta(wall_secs: f64, done: u64, left: u64) -> Option<f64> {
    (done > 0).then(|| wall_secs * left as f64 / done as f64)
}

/// Steps `sim` until its step reaches `target` (and a step stopped part way is finished),
/// or until `stop` is set, which is checked between steps. After each step `stepped` is
/// told the events it committed. On an error, what was committed before it stays.
pub async fn run_until<S: Storage>(
    sim: &mut Sim<S>,
    target: u64,
    stop: &AtomicBool,
    mut stepped: impl FnMut(&Sim<S>, Stepped<'_>),
) -> Result<RunEnd, OpsError> {
    while sim.state().step < target || sim.mid_step() {
        if stop.load(Ordering::SeqCst) {
            return Ok(RunEnd::Stopped);
        }
        let before = head(sim);
        sim.step().await?;
        if head(sim) == before && sim.mid_step() {
            return Err(OpsError::Stuck);
        }
        let events = sim.store().events(sim.branch(), before + 1, head(sim))?;
        let step = sim.state().step;
        stepped(sim, Stepped { events: &events, step, target });
    }
    Ok(RunEnd::Done)
}

/// The last seq of the branch a simulation writes.
pub fn head<S: Storage>(sim: &Sim<S>) -> u64 {
    sim.store().branch(sim.branch()).map_or(0, |b| b.head_seq)
}

/// The model a change or a run from the window asks: the embedded `default` or `small`
/// model, or an OpenAI-compatible server. The key is held in memory only: it is never
/// serialized, printed or written to the store.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ModelSpec {
    /// `default` or `small` (the embedded models), or `server`.
    pub backend: String,
    /// The server's base URL (`server` only).
    #[serde(default)]
    pub base_url: String,
    /// The server's model (`server` only).
    #[serde(default)]
    pub model: String,
    /// The server's key (`server` only; may be empty for a local server).
    #[serde(default)]
    pub api_key: String,
    /// Embeddings from `local` (the embedded model) or `server`.
    #[serde(default = "local")]
    pub embed: String,
    /// The server's embedding model (`embed = server` only).
    #[serde(default)]
    pub embed_model: String,
}

fn local() -> String {
    "local".into()
}

impl std::fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSpec")
            .field("backend", &self.backend)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &if self.api_key.is_empty() { "none" } else { "set, hidden" })
            .field("embed", &self.embed)
            .field("embed_model", &self.embed_model)
            .finish()
    }
}

impl ModelSpec {
    /// The embedded default model, with the embedded embeddings.
    pub fn embedded() -> ModelSpec {
        ModelSpec {
            backend: "default".into(),
            base_url: String::new(),
            model: String::new(),
            api_key: String::new(),
            embed: local(),
            embed_model: String::new(),
        }
    }

    /// The gateway this asks through (the embedded model is loaded now: seconds, and its
    /// memory), or what is wrong with the choice, in words for the user.
    pub fn gateway(&self) -> Result<hamlet_gateway::Gateway, OpsError> {
        use hamlet_gateway::config;
        let (_, settings) = self.settings()?;
        let wrong = |why: String| OpsError::Model(why);
        let llm = config::llm_backend(&settings).map_err(|e| wrong(e.0))?;
        let embedder = config::embed_backend(&settings).map_err(|e| wrong(e.0))?;
        Ok(config::gateway(&settings, llm, embedder))
    }

    /// Gives `gateway` (this choice's) the models in `names` it lacks: the embedded `default`
    /// or `small`, or profiles of the config file — what a branch's agents think with.
    pub fn add_models(
        &self,
        gateway: &hamlet_gateway::Gateway,
        names: &[String],
    ) -> Result<(), OpsError> {
        use hamlet_gateway::config;
        if names.iter().all(|n| gateway.has_model(n)) {
            return Ok(());
        }
        let (file, settings) = self.settings()?;
        let embedder = config::embed_backend(&settings).map_err(|e| OpsError::Model(e.0))?;
        config::add_models(gateway, &settings, &file, names, &embedder)
            .map_err(|e| OpsError::Model(e.0))
    }

    /// The config file and the settings this choice resolves to, loading nothing.
    fn settings(
        &self,
    ) -> Result<(hamlet_gateway::config::ConfigFile, hamlet_gateway::config::Settings), OpsError>
    {
        use hamlet_gateway::config::{self, Env, FileSettings, Flags, Kind};
        let wrong = |why: String| OpsError::Model(why);
        let embed = match self.embed.as_str() {
            "local" => Kind::Local,
            "server" => Kind::OpenAi,
            other => return Err(wrong(format!("embeddings from `{other}`: `local` or `server`"))),
        };
        let mut flags = Flags { embed: Some(embed), ..Flags::default() };
        match self.backend.as_str() {
            "default" | "small" => {
                flags.backend = Some(Kind::Local);
                flags.model = Some(self.backend.clone());
            }
            "server" => {
                if self.base_url.trim().is_empty() {
                    return Err(wrong(
                        "a server needs its base URL (e.g. http://localhost:11434/v1)".into(),
                    ));
                }
                if self.model.trim().is_empty() {
                    return Err(wrong("which model should the server run? Give its name".into()));
                }
                flags.backend = Some(Kind::OpenAi);
                flags.base_url = Some(self.base_url.trim().to_owned());
                flags.model = Some(self.model.trim().to_owned());
            }
            other => {
                return Err(wrong(format!("the model `{other}`: `default`, `small` or `server`")))
            }
        }
        if embed == Kind::OpenAi {
            if self.base_url.trim().is_empty() {
                return Err(wrong("embeddings from a server need its base URL".into()));
            }
            flags.base_url = Some(self.base_url.trim().to_owned());
            if !self.embed_model.trim().is_empty() {
                flags.embed_model = Some(self.embed_model.trim().to_owned());
            }
        }
        // The window says what it asks; from the config file it takes only what sizes the
        // embedded model to this machine (`memory`, `kv_cache`), as `hamlet run` does, and the
        // defaults read the memory available as they do there.
        let file = config::ConfigFile::discover(None, &Env::from_process())
            .map_err(|e| wrong(format!("the config file: {}", e.0)))?;
        let sizing = FileSettings {
            memory: file.llm.memory.clone(),
            kv_cache: file.llm.kv_cache.clone(),
            ..FileSettings::default()
        };
        let mut settings =
            config::resolve(&sizing, &Env::default(), &flags).map_err(|e| wrong(e.0))?;
        settings.api_key.clone_from(&self.api_key);
        Ok((file, settings))
    }
}

/// A gateway that asks no model: for changes that need none (an object's state, a
/// happening, a building), so the window does not load one to make them. A call through
/// it fails, saying nothing was recorded for it.
pub fn no_model() -> hamlet_gateway::Gateway {
    let none = std::sync::Arc::new(hamlet_gateway::replay::Replay::from_events(std::iter::empty()));
    hamlet_gateway::Gateway::new(
        none.clone(),
        none,
        hamlet_gateway::Params::default(),
        hamlet_gateway::RetryPolicy::default(),
        1,
    )
}

/// An intervention a person makes at a branch's head, as the window's forms ask it (its
/// Intervene tab, and the page's `change` command): each is recorded as the log's
/// `Intervention` of the same name (`hamlet inner-voice`, `interview`,
/// `edit-persona`, `add-agent`, `add-building`, `set-object`, `happen`).
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Intervention {
    /// A thought put in an agent's mind, which it acts on.
    InnerVoice {
        /// The agent.
        agent: u32,
        /// The thought.
        text: String,
    },
    /// A question the agent answers from memory.
    Interview {
        /// The agent.
        agent: u32,
        /// The question.
        question: String,
        /// Whether the agent keeps the exchange as a memory.
        #[serde(default)]
        remember: bool,
    },
    /// The agent's seed paragraph rewritten, or the model it thinks with changed, or both.
    EditPersona {
        /// The agent.
        agent: u32,
        /// The new paragraph (empty: kept as it is, when a model is given).
        persona: String,
        /// The model it thinks with from now on, by name.
        #[serde(default)]
        model: Option<String>,
    },
    /// A new neighbour.
    AddAgent {
        /// Its name.
        name: String,
        /// Its seed paragraph.
        persona: String,
        /// Its home, a `sector:arena`.
        home: String,
        /// Its strategy.
        strategy: String,
        /// Its cash, in cents.
        cash_cents: i64,
        /// The model it thinks with, by name (`None`: the run's).
        #[serde(default)]
        model: Option<String>,
    },
    /// A copy of a building.
    AddBuilding {
        /// The sector copied.
        template: String,
        /// The new sector's name.
        name: String,
        /// The north-west corner of its walls.
        x: u16,
        /// The north-west corner of its walls.
        y: u16,
    },
    /// An object's state set by hand.
    SetObject {
        /// `sector:arena:object`.
        address: String,
        /// Its new state.
        state: String,
    },
    /// Something going on at a place for a while.
    Happen {
        /// A sector or `sector:arena`.
        place: String,
        /// What is happening.
        text: String,
        /// For how many simulated minutes from now.
        minutes: u64,
    },
    /// The person as mayor posts a job (`hamlet mayor post-job`).
    MayorJob {
        /// Where the work is.
        sector: String,
        /// The job.
        title: String,
        /// The wage per hour, in dollars.
        dollars: u32,
    },
    /// The person as mayor founds a business (`hamlet mayor found`).
    MayorFound {
        /// The sector copied.
        template: String,
        /// Its name.
        name: String,
        /// The town file's site.
        site: String,
    },
    /// The person as mayor sets a wage (`hamlet mayor set-wage`).
    MayorWage {
        /// The sector.
        sector: String,
        /// The wage per hour, in dollars.
        dollars: u32,
    },
    /// The person as mayor calls a meeting (`hamlet mayor meeting`).
    MayorMeeting {
        /// About what.
        what: String,
        /// A sector or `sector:arena`.
        place: String,
        /// Starts in how many simulated minutes from now.
        in_minutes: u64,
        /// Lasts how many minutes.
        minutes: u32,
    },
    /// The person as mayor gives an agent a task (`hamlet mayor task`).
    MayorTask {
        /// The agent.
        agent: u32,
        /// The task.
        what: String,
        /// A sector or `sector:arena`.
        place: String,
        /// Starts in how many simulated minutes from now.
        in_minutes: u64,
        /// Lasts how many minutes.
        minutes: u32,
    },
}

/// What an intervention did: in words, and the events it wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct InterventionMade {
    /// What happened, as the window says it (an interview's answer, the new statements…).
    pub said: String,
    /// The first and last seq written.
    pub from_seq: u64,
    /// The last seq written.
    pub to_seq: u64,
}

impl Intervention {
    /// Whether making it asks a model (the others are written as they are).
    pub fn needs_model(&self) -> bool {
        !matches!(
            self,
            Intervention::AddBuilding { .. }
                | Intervention::SetObject { .. }
                | Intervention::Happen { .. }
                | Intervention::MayorJob { .. }
                | Intervention::MayorFound { .. }
                | Intervention::MayorWage { .. }
                | Intervention::MayorMeeting { .. }
                | Intervention::MayorTask { .. }
        )
    }

    /// The mayor's act it is, as of `sim`'s head, if it is one.
    fn mayor_act<S: Storage>(&self, sim: &Sim<S>) -> Option<hamlet_log::event::MayorAct> {
        use hamlet_log::event::MayorAct;
        let now = sim.state().sim_time_secs;
        let at = |minutes: u64| (now + minutes.saturating_mul(60)).div_ceil(60) * 60;
        Some(match self {
            Intervention::MayorJob { sector, title, dollars } => MayorAct::PostJob {
                sector: sector.clone(),
                title: title.clone(),
                cents_per_hour: i64::from(*dollars) * 100,
            },
            Intervention::MayorFound { template, name, site } => MayorAct::Found {
                template: template.clone(),
                name: name.clone(),
                site: site.clone(),
                cost_cents: sim.definition().mayor.as_ref().map_or(0, |m| m.found_cents),
            },
            Intervention::MayorWage { sector, dollars } => MayorAct::SetWage {
                sector: sector.clone(),
                cents_per_hour: i64::from(*dollars) * 100,
            },
            Intervention::MayorMeeting { what, place, in_minutes, minutes } => {
                MayorAct::CallMeeting {
                    what: what.clone(),
                    place: place.clone(),
                    start_secs: at(*in_minutes),
                    duration_secs: minutes.saturating_mul(60),
                }
            }
            Intervention::MayorTask { agent, what, place, in_minutes, minutes } => {
                MayorAct::AssignTask {
                    agent: AgentId(*agent),
                    what: what.clone(),
                    place: place.clone(),
                    start_secs: at(*in_minutes),
                    duration_secs: minutes.saturating_mul(60),
                }
            }
            _ => return None,
        })
    }

    /// The model it names for an agent, if any (an added agent's, or an edited one's).
    pub fn model(&self) -> Option<&str> {
        match self {
            Intervention::AddAgent { model, .. } | Intervention::EditPersona { model, .. } => {
                model.as_deref()
            }
            _ => None,
        }
    }

    /// Whether it would be refused at the head of `sim`'s branch, and why (the field at
    /// fault is in [`SimError::Refused`]). Nothing is written.
    pub fn check<S: Storage>(&self, sim: &Sim<S>) -> Result<(), SimError> {
        // The engine's field names, as this change's fields are named.
        self.checked(sim).map_err(|e| match (self, e) {
            (Intervention::Interview { .. }, SimError::Refused { field: "text", why }) => {
                SimError::Refused { field: "question", why }
            }
            (Intervention::Happen { .. }, SimError::Refused { field: "until", why }) => {
                SimError::Refused { field: "minutes", why }
            }
            (Intervention::AddBuilding { .. }, SimError::Refused { field: "origin", why }) => {
                SimError::Refused { field: "x", why }
            }
            (_, e) => e,
        })
    }

    fn checked<S: Storage>(&self, sim: &Sim<S>) -> Result<(), SimError> {
        let now = sim.state().sim_time_secs;
        match self {
            Intervention::InnerVoice { agent, text } => sim.check_voice(AgentId(*agent), text),
            Intervention::Interview { agent, question, .. } => {
                sim.check_voice(AgentId(*agent), question)
            }
            Intervention::EditPersona { agent, persona, model } => {
                if let Some(m) = model {
                    sim.check_set_model(AgentId(*agent), m)?;
                }
                if model.is_none() || !persona.trim().is_empty() {
                    sim.check_edit_persona(AgentId(*agent), persona)?;
                }
                Ok(())
            }
            Intervention::AddAgent { name, persona, home, strategy, cash_cents, model } => sim
                .check_add_agent(name, persona, home, strategy, *cash_cents, model.as_deref())
                .map(|_| ()),
            Intervention::AddBuilding { template, name, x, y } => {
                sim.check_add_building(template, name, Tile { x: *x, y: *y })
            }
            Intervention::SetObject { address, state } => sim.check_set_object(address, state),
            Intervention::Happen { place, text, minutes } => {
                sim.check_happen(place, text, now.saturating_add(minutes.saturating_mul(60)))
            }
            _ => match self.mayor_act(sim) {
                Some(act) => sim.check_mayor_act(act).map(|_| ()),
                None => Ok(()),
            },
        }
    }

    /// Makes it at the head of `sim`'s branch: checked first (nothing is written for a
    /// refused change), then written as the engine's intervention.
    pub async fn make<S: Storage>(&self, sim: &mut Sim<S>) -> Result<InterventionMade, OpsError> {
        self.check(sim)?;
        if !sim.settle_quiet_step().await {
            return Err(OpsError::MidStep);
        }
        let from_seq = head(sim) + 1;
        let now = sim.state().sim_time_secs;
        let name = |sim: &Sim<S>, a: u32| {
            sim.state().agents.get(&AgentId(a)).map_or_else(String::new, |x| x.name.clone())
        };
        let said = match self {
            Intervention::InnerVoice { agent, text } => {
                let (intention, replanned) = sim.inner_voice(AgentId(*agent), text).await?;
                // The intention names the agent ("Tamsin Hale will bake bread…").
                let then = if replanned { "re-planned now" } else { "from the next plan on" };
                format!("{intention} ({then})")
            }
            Intervention::Interview { agent, question, remember } => {
                let answer = sim.interview(AgentId(*agent), question, *remember).await?;
                format!("{}: {answer}", name(sim, *agent))
            }
            Intervention::EditPersona { agent, persona, model } => {
                let mut said = Vec::new();
                if let Some(m) = model {
                    sim.set_model(AgentId(*agent), m)?;
                    said.push(format!("{} thinks with the model `{m}`", name(sim, *agent)));
                }
                if model.is_none() || !persona.trim().is_empty() {
                    let new = sim.edit_persona(AgentId(*agent), persona).await?;
                    said.push(format!(
                        "{}'s persona is rewritten: {} new seed memories",
                        name(sim, *agent),
                        new.len()
                    ));
                }
                said.join("; ")
            }
            Intervention::AddAgent { name, persona, home, strategy, cash_cents, model } => {
                let id = sim
                    .add_agent(name, persona, home, strategy, *cash_cents, model.as_deref())
                    .await?;
                format!("{name} joins the town at {home} (agent {})", id.0)
            }
            Intervention::AddBuilding { template, name, x, y } => {
                sim.add_building(template, name, Tile { x: *x, y: *y })?;
                format!("{name}, a copy of {template}, stands at ({x}, {y})")
            }
            Intervention::SetObject { address, state } => {
                sim.set_object(address, state)?;
                format!("{address} is now {state}")
            }
            Intervention::Happen { place, text, minutes } => {
                let until = now.saturating_add(minutes.saturating_mul(60));
                sim.happen(place, text, until)?;
                format!("at {place} until {}: {}", sim_time(until), text.trim())
            }
            other => {
                let Some(act) = other.mayor_act(sim) else {
                    return Ok(InterventionMade {
                        said: String::new(),
                        from_seq,
                        to_seq: head(sim),
                    });
                };
                sim.mayor_act(act.clone())?;
                let body = hamlet_log::Body::MayorActed(hamlet_log::event::MayorActed {
                    mayor: None,
                    act,
                });
                let said = crate::describe::summary(&body, &|a| name(sim, a.0));
                let treasury = sim.state().mayor.as_ref().map_or(0, |b| b.treasury_cents);
                format!("{said}; the treasury holds {}", crate::describe::cents(treasury))
            }
        };
        Ok(InterventionMade { said, from_seq, to_seq: head(sim) })
    }
}
