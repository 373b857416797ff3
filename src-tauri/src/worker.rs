//! The thread that holds what the window has open: a recording's bytes (and the
//! `Viewer` borrowing them) or a store. Commands send it jobs; it runs them one at a time,
//! in the order they came, each under `catch_unwind`: a bug in one panel's query answers
//! that panel with an error and harms nothing else.
//!
//! A store can also be changed from the window. A change (an intervention) or a
//! continuation takes the store out of the viewer, lends it to a `Sim` on the branch, and
//! gives it back when done. While a continuation runs, the queries that come meanwhile are
//! answered between its steps, over the store the run holds; a Cancel stops it after the
//! step under way. The log is the only truth: the viewer reads the branches again after
//! every change.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use hamlet_engine::hints::hints;
use hamlet_engine::ops::{self, Intervention, ModelSpec, OpsError, RunEnd};
use hamlet_engine::sim::{Sim, SimError, SimSettings};
use hamlet_engine::store::FsStorage;
use hamlet_engine::view::{Opened, ViewError, ViewState, Viewer};
use hamlet_gateway::Gateway;
use serde::Serialize;

/// A query to run against what is open (`None`: nothing is; with the last failure to open).
type Job = Box<dyn for<'v, 'a> FnOnce(Result<&'v mut Viewer<'a>, Option<&str>>) + Send>;

/// Told how a continuation goes, after each step.
pub type OnProgress = Box<dyn FnMut(&RunProgress) + Send>;

/// What the worker can be asked.
enum Message {
    /// Open a recording (a file) or a store (a folder), replacing what was open.
    Open { path: PathBuf, store: bool, reply: mpsc::Sender<Result<Opened, String>> },
    /// Run a query.
    Ask(Job),
    /// Make an intervention at a branch's head.
    Intervene {
        branch: String,
        change: Intervention,
        model: Option<ModelSpec>,
        reply: mpsc::Sender<Result<ops::InterventionMade, Failure>>,
    },
    /// Run a branch on.
    Continue {
        branch: String,
        hours: f64,
        model: ModelSpec,
        progress: OnProgress,
        reply: mpsc::Sender<Result<RunProgress, Failure>>,
    },
}

/// Why a change or a continuation failed: in words, the form's field at fault when there is
/// one, and how to go on when the engine knows.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// What went wrong.
    pub message: String,
    /// The field of the form at fault (`agent`, `text`, `name`, …).
    pub field: Option<&'static str>,
    /// How to go on.
    pub hint: Option<String>,
}

impl Failure {
    fn said(message: impl Into<String>) -> Failure {
        Failure { message: message.into(), field: None, hint: None }
    }

    /// `e` in words, with the first of its hints ([`hamlet_engine::hints`], the CLI's too).
    fn with_hint(e: &(dyn std::error::Error + 'static)) -> Failure {
        Failure { message: e.to_string(), field: None, hint: hints(e).into_iter().next() }
    }

    fn of_sim(e: &SimError) -> Failure {
        match e {
            SimError::Refused { field, why } => {
                Failure { message: why.clone(), field: Some(field), hint: None }
            }
            _ => Failure::with_hint(e),
        }
    }

    fn of_ops(e: &OpsError) -> Failure {
        match e {
            OpsError::Sim(e) => Failure::of_sim(e),
            OpsError::Model(why) => {
                Failure { message: why.clone(), field: Some("model"), hint: None }
            }
            _ => Failure::with_hint(e),
        }
    }
}

impl From<Failure> for String {
    fn from(f: Failure) -> String {
        f.message
    }
}

/// How a continuation goes (sent after each step, and as its answer when it ends).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunProgress {
    /// The branch run.
    pub branch: String,
    /// The simulated time reached.
    pub secs: u64,
    /// The simulated time it started from, and the one it runs to.
    pub from_secs: u64,
    /// The simulated time it runs to.
    pub to_secs: u64,
    /// Its last event.
    pub head_seq: u64,
    /// Model calls made by this continuation.
    pub calls: u64,
    /// Prompt and completion tokens of those calls.
    pub tokens: u64,
    /// Their price, by the config file's price table (0 for the embedded models; `None`
    /// when a model used has no price there).
    pub cost_usd: Option<f64>,
    /// Wall seconds so far.
    pub wall_secs: f64,
    /// Wall seconds still to go, at the pace so far.
    pub eta_secs: Option<f64>,
    /// `running`, `done` or `stopped`.
    pub state: &'static str,
}

/// The handle commands hold.
pub struct Worker {
    tx: mpsc::Sender<Message>,
    cancel: Arc<AtomicBool>,
}

/// The text a panel shows when its query panicked.
pub const BUG: &str = "this panel hit a bug in Hamlet; the recording is unharmed (the viewer \
                       never writes to it)";

/// The text a panel shows when nothing is open.
pub const NOTHING_OPEN: &str =
    "no recording is open: File ▸ Open… (Ctrl+O), or drop a .hamlet file on the window";

impl Worker {
    /// Starts the worker thread.
    pub fn start() -> Worker {
        let (tx, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = cancel.clone();
        std::thread::Builder::new()
            .name("hamlet-viewer-worker".into())
            .spawn(move || serve(&rx, &stop))
            .expect("the viewer's worker thread starts");
        Worker { tx, cancel }
    }

    /// Sends the worker `path` to open (a store when `store`) now; the answer comes on the
    /// receiver (see [`wait`]).
    pub fn open(
        &self,
        path: PathBuf,
        store: bool,
    ) -> Result<mpsc::Receiver<Result<Opened, String>>, String> {
        let (reply, answer) = mpsc::channel();
        self.tx.send(Message::Open { path, store, reply }).map_err(|_| gone())?;
        Ok(answer)
    }

    /// Sends the worker `query`, to run against what is open (`Ok(None)` if nothing is,
    /// the last failure to open as the error if one did).
    pub fn ask_optional<T, F>(
        &self,
        query: F,
    ) -> Result<mpsc::Receiver<Result<Option<T>, String>>, String>
    where
        T: Send + 'static,
        F: for<'v, 'a> FnOnce(&'v mut Viewer<'a>) -> Result<T, ViewError> + Send + 'static,
    {
        let (reply, answer) = mpsc::channel();
        let job: Job = Box::new(move |viewer| {
            let result = match viewer {
                Ok(viewer) => match catch_unwind(AssertUnwindSafe(|| query(viewer))) {
                    Ok(answer) => answer.map(Some).map_err(|e| e.to_string()),
                    Err(_) => Err(BUG.to_owned()),
                },
                Err(None) => Ok(None),
                Err(Some(failure)) => Err(failure.to_owned()),
            };
            let _ = reply.send(result);
        });
        self.tx.send(Message::Ask(job)).map_err(|_| gone())?;
        Ok(answer)
    }

    /// Runs `query` against what is open and answers its result.
    pub async fn run<T, F>(&self, query: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: for<'v, 'a> FnOnce(&'v mut Viewer<'a>) -> Result<T, ViewError> + Send + 'static,
    {
        let answer = self.ask_optional(query)?;
        wait(answer).await??.ok_or_else(|| NOTHING_OPEN.to_owned())
    }

    /// Makes `change` at the head of `branch` of the open store, asking `model` if it needs
    /// one.
    pub async fn change(
        &self,
        branch: String,
        change: Intervention,
        model: Option<ModelSpec>,
    ) -> Result<ops::InterventionMade, Failure> {
        let (reply, answer) = mpsc::channel();
        let message = Message::Intervene { branch, change, model, reply };
        self.tx.send(message).map_err(|_| Failure::said(gone()))?;
        wait(answer).await.map_err(Failure::said)?
    }

    /// Runs `branch` of the open store on for `hours` simulated hours with `model`;
    /// `progress` hears after each step. Answers how it ended.
    pub async fn continue_run(
        &self,
        branch: String,
        hours: f64,
        model: ModelSpec,
        progress: OnProgress,
    ) -> Result<RunProgress, Failure> {
        let (reply, answer) = mpsc::channel();
        self.cancel.store(false, Ordering::SeqCst);
        let message = Message::Continue { branch, hours, model, progress, reply };
        self.tx.send(message).map_err(|_| Failure::said(gone()))?;
        wait(answer).await.map_err(Failure::said)?
    }

    /// Asks a continuation under way to stop after the step it is in.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }
}

fn gone() -> String {
    "the viewer's worker stopped; restart the viewer".to_owned()
}

/// Waits for the worker's answer without holding up the async runtime.
pub async fn wait<T: Send + 'static>(answer: mpsc::Receiver<T>) -> Result<T, String> {
    tauri::async_runtime::spawn_blocking(move || answer.recv().map_err(|_| gone()))
        .await
        .map_err(|e| e.to_string())?
}

/// What the worker keeps between changes: the runtime the engine's async operations run
/// on, and the last model loaded (the embedded model takes seconds and gigabytes to load).
struct Desk<'s> {
    rx: &'s mpsc::Receiver<Message>,
    cancel: &'s AtomicBool,
    runtime: Option<tokio::runtime::Runtime>,
    model: Option<(ModelSpec, Gateway)>,
}

impl Desk<'_> {
    fn runtime(&mut self) -> Result<&tokio::runtime::Runtime, Failure> {
        if self.runtime.is_none() {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| Failure::said(format!("cannot start the engine's runtime: {e}")))?;
            self.runtime = Some(rt);
        }
        self.runtime.as_ref().ok_or_else(|| Failure::said("no runtime"))
    }

    /// The gateway for `spec`: the one loaded last if it is the same model.
    fn gateway(&mut self, spec: &ModelSpec) -> Result<Gateway, Failure> {
        if let Some((held, gateway)) = &self.model {
            if held == spec {
                return Ok(gateway.clone());
            }
        }
        self.model = None;
        let gateway = spec.gateway().map_err(|e| Failure::of_ops(&e))?;
        self.model = Some((spec.clone(), gateway.clone()));
        Ok(gateway)
    }
}

/// The worker's loop: with nothing open, then with each file opened in turn. What is open
/// lives on this thread's stack, so a recording's bytes outlive the viewer borrowing them.
fn serve(rx: &mpsc::Receiver<Message>, cancel: &AtomicBool) {
    let mut desk = Desk { rx, cancel, runtime: None, model: None };
    let mut next: Option<Message> = None;
    let mut failure: Option<String> = None;
    loop {
        let message = match next.take() {
            Some(m) => m,
            None => match rx.recv() {
                Ok(m) => m,
                Err(_) => return,
            },
        };
        match message {
            Message::Ask(job) => job(Err(failure.as_deref())),
            Message::Intervene { reply, .. } => {
                let _ = reply.send(Err(Failure::said(NOTHING_OPEN)));
            }
            Message::Continue { reply, .. } => {
                let _ = reply.send(Err(Failure::said(NOTHING_OPEN)));
            }
            Message::Open { path, store, reply } => {
                // A model learns the embedding size of the store it served: not another's.
                desk.model = None;
                let opened = if store {
                    Viewer::store(&path).map(|viewer| serve_store(viewer, &path, &mut desk, &reply))
                } else {
                    match std::fs::read(&path) {
                        Ok(bytes) => Viewer::recording(&bytes, &path)
                            .map(|viewer| serve_open(viewer, rx, &reply)),
                        Err(e) => {
                            let message = format!("cannot read {}: {e}", path.display());
                            let _ = reply.send(Err(message.clone()));
                            failure = Some(message);
                            continue;
                        }
                    }
                };
                match opened {
                    Ok(then) => {
                        failure = None;
                        next = then;
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e.to_string()));
                        failure = Some(e.to_string());
                    }
                }
            }
        }
    }
}

/// Answers queries against a recording until another file is to be opened (returned) or
/// the window is gone (`None`). A recording is read-only: changes are refused.
fn serve_open(
    mut viewer: Viewer<'_>,
    rx: &mpsc::Receiver<Message>,
    reply: &mpsc::Sender<Result<Opened, String>>,
) -> Option<Message> {
    let _ = reply.send(Ok(viewer.opened().clone()));
    let read_only = || Failure::said(ViewError::ReadOnly.to_string());
    loop {
        match rx.recv() {
            Ok(Message::Ask(job)) => job(Ok(&mut viewer)),
            Ok(Message::Intervene { reply, .. }) => {
                let _ = reply.send(Err(read_only()));
            }
            Ok(Message::Continue { reply, .. }) => {
                let _ = reply.send(Err(read_only()));
            }
            Ok(open @ Message::Open { .. }) => return Some(open),
            Err(_) => return None,
        }
    }
}

/// Answers queries against a store, and makes changes and continuations on it, until
/// another file is to be opened (returned) or the window is gone (`None`).
fn serve_store(
    viewer: Viewer<'static>,
    path: &std::path::Path,
    desk: &mut Desk<'_>,
    reply: &mpsc::Sender<Result<Opened, String>>,
) -> Option<Message> {
    let _ = reply.send(Ok(viewer.opened().clone()));
    let mut viewer = Some(viewer);
    let mut next: Option<Message> = None;
    loop {
        let message = match next.take() {
            Some(m) => m,
            None => match desk.rx.recv() {
                Ok(m) => m,
                Err(_) => return None,
            },
        };
        let mut held = viewer.take()?;
        match message {
            Message::Ask(job) => {
                job(Ok(&mut held));
                viewer = Some(held);
            }
            open @ Message::Open { .. } => return Some(open),
            Message::Intervene { branch, change, model, reply } => {
                let (back, answer) = guarded(held, path, |held| {
                    make_change(held, desk, &branch, &change, model.as_ref())
                });
                viewer = back;
                let _ = reply.send(answer);
            }
            Message::Continue { branch, hours, model, progress, reply } => {
                let mut deferred = None;
                let (back, answer) = guarded(held, path, |held| {
                    continue_run(held, path, desk, &branch, hours, &model, progress, &mut deferred)
                });
                viewer = back;
                let _ = reply.send(answer);
                next = deferred;
            }
        }
        viewer.as_ref()?;
    }
}

/// Runs a change under `catch_unwind`: after a panic the store is opened again from its
/// path (opening repairs what a torn write left) and the change answers that it hit a bug.
fn guarded<T>(
    held: Viewer<'static>,
    path: &std::path::Path,
    f: impl FnOnce(Viewer<'static>) -> (Viewer<'static>, Result<T, Failure>),
) -> (Option<Viewer<'static>>, Result<T, Failure>) {
    match catch_unwind(AssertUnwindSafe(|| f(held))) {
        Ok((viewer, answer)) => (Some(viewer), answer),
        Err(_) => {
            let bug = Failure::said(
                "this change hit a bug in Hamlet; what was committed before it is kept, and the \
                 store was opened again",
            );
            match Viewer::store(path) {
                Ok(viewer) => (Some(viewer), Err(bug)),
                Err(e) => {
                    (None, Err(Failure::said(format!("{}; reopening failed: {e}", bug.message))))
                }
            }
        }
    }
}

/// A run that could not be opened: the viewer, its store given back, and why.
type Refused = Box<(Viewer<'static>, Failure)>;

/// Opens the run on `branch` over the viewer's store; on failure the store goes back to the
/// viewer.
fn open_run(
    held: Viewer<'static>,
    desk: &mut Desk<'_>,
    branch: &str,
    gateway: Gateway,
) -> Result<(Sim<FsStorage>, ViewState), Refused> {
    let (store, state) = match held.into_parts() {
        Ok(parts) => parts,
        Err(viewer) => {
            return Err(Box::new((*viewer, Failure::said(ViewError::ReadOnly.to_string()))))
        }
    };
    let id = match ops::branch_named(&store, branch) {
        Ok(b) => b.id,
        Err(e) => return Err(Box::new((Viewer::from_parts(store, state), Failure::of_ops(&e)))),
    };
    let rt = match desk.runtime() {
        Ok(rt) => rt,
        Err(f) => return Err(Box::new((Viewer::from_parts(store, state), f))),
    };
    match rt.block_on(Sim::resume_or_return(store, id, gateway, SimSettings::default())) {
        Ok(sim) => Ok((sim, state)),
        Err((e, store)) => Err(Box::new((Viewer::from_parts(store, state), Failure::of_sim(&e)))),
    }
}

fn make_change(
    held: Viewer<'static>,
    desk: &mut Desk<'_>,
    branch: &str,
    change: &Intervention,
    model: Option<&ModelSpec>,
) -> (Viewer<'static>, Result<ops::InterventionMade, Failure>) {
    let gateway = if change.needs_model() {
        let Some(spec) = model else {
            let f = Failure {
                field: Some("model"),
                ..Failure::said("this change asks a model: choose one")
            };
            return (held, Err(f));
        };
        match desk.gateway(spec) {
            Ok(g) => g,
            Err(f) => return (held, Err(f)),
        }
    } else {
        ops::no_model()
    };
    let (mut sim, state) = match open_run(held, desk, branch, gateway.clone()) {
        Ok(x) => x,
        Err(failed) => {
            let (viewer, f) = *failed;
            return (viewer, Err(f));
        }
    };
    // The models the branch's agents (and an added one) think with, besides the one chosen.
    if let Some(spec) = model.filter(|_| change.needs_model()) {
        let mut names = sim.models_named();
        names.extend(change.model().map(str::to_owned));
        if let Err(e) = spec.add_models(&gateway, &names) {
            let f = Failure { field: Some("model"), ..Failure::of_ops(&e) };
            return (Viewer::from_parts(sim.into_store(), state), Err(f));
        }
        if let Err(e) = sim.relearn() {
            return (Viewer::from_parts(sim.into_store(), state), Err(Failure::of_sim(&e)));
        }
    }
    let answer = match desk.runtime() {
        Ok(rt) => rt.block_on(change.make(&mut sim)).map_err(|e| Failure::of_ops(&e)),
        Err(f) => Err(f),
    };
    (Viewer::from_parts(sim.into_store(), state), answer)
}

#[expect(
    clippy::disallowed_methods,
    reason = "a continuation's pace for its ETA, shown to the user; decides nothing"
)]
fn now() -> std::time::Instant {
    std::time::Instant::now()
}

#[expect(clippy::too_many_arguments, reason = "one continuation's parts, each used once")]
fn continue_run(
    held: Viewer<'static>,
    path: &std::path::Path,
    desk: &mut Desk<'_>,
    branch: &str,
    hours: f64,
    spec: &ModelSpec,
    mut progress: OnProgress,
    deferred: &mut Option<Message>,
) -> (Viewer<'static>, Result<RunProgress, Failure>) {
    if !(hours > 0.0 && hours <= 24.0 * 7.0) {
        let f = Failure {
            field: Some("hours"),
            ..Failure::said("continue for more than 0 and at most 168 simulated hours")
        };
        return (held, Err(f));
    }
    let gateway = match desk.gateway(spec) {
        Ok(g) => g,
        Err(f) => return (held, Err(f)),
    };
    let (mut sim, state) = match open_run(held, desk, branch, gateway.clone()) {
        Ok(x) => x,
        Err(failed) => {
            let (viewer, f) = *failed;
            return (viewer, Err(f));
        }
    };
    // The models the branch's agents think with, besides the one chosen.
    if let Err(e) = spec.add_models(&gateway, &sim.models_named()) {
        let f = Failure { field: Some("model"), ..Failure::of_ops(&e) };
        return (Viewer::from_parts(sim.into_store(), state), Err(f));
    }
    if let Err(e) = sim.relearn() {
        return (Viewer::from_parts(sim.into_store(), state), Err(Failure::of_sim(&e)));
    }
    let per_step = u64::from(sim.definition().seconds_per_step.max(1));
    let target = ops::target_step(&sim, ops::Hours::For(hours));
    let steps = target - sim.state().step;
    let from_secs = sim.state().sim_time_secs;
    let prices = hamlet_gateway::config::ConfigFile::discover(
        None,
        &hamlet_gateway::config::Env::from_process(),
    )
    .map(|f| f.prices)
    .unwrap_or_default();
    let mut shown = RunProgress {
        branch: branch.to_owned(),
        secs: from_secs,
        from_secs,
        to_secs: from_secs + steps * per_step,
        head_seq: ops::head(&sim),
        cost_usd: Some(0.0),
        state: "running",
        ..RunProgress::default()
    };
    progress(&shown);
    let started = now();
    let mut spent = ops::RunCost::default();
    let mut state = Some(state);
    let (rx, cancel) = (desk.rx, desk.cancel);
    let ran = match desk.runtime() {
        Ok(rt) => rt.block_on(ops::run_until(&mut sim, target, cancel, |sim, stepped| {
            spent.add(stepped.events, &prices);
            shown.calls = spent.total.calls;
            shown.tokens = spent.tokens();
            shown.cost_usd = spent.money();
            shown.secs = sim.state().sim_time_secs;
            shown.head_seq = ops::head(sim);
            shown.wall_secs = started.elapsed().as_secs_f64();
            shown.eta_secs = ops::eta(
                shown.wall_secs,
                shown.secs.saturating_sub(from_secs),
                shown.to_secs.saturating_sub(shown.secs),
            );
            progress(&shown);
            // What the window asked meanwhile, answered over the store the run holds.
            while let Ok(message) = rx.try_recv() {
                match message {
                    Message::Ask(job) => {
                        let Some(s) = state.take() else { continue };
                        let mut viewer = Viewer::borrowing(sim.store(), s);
                        job(Ok(&mut viewer));
                        state = Some(viewer.into_state());
                    }
                    open @ Message::Open { .. } => {
                        // Another file is to be shown: stop after this step, then open it.
                        cancel.store(true, Ordering::SeqCst);
                        *deferred = Some(open);
                    }
                    Message::Intervene { reply, .. } => {
                        let _ = reply.send(Err(Failure::said(ViewError::Busy.to_string())));
                    }
                    Message::Continue { reply, .. } => {
                        let _ = reply.send(Err(Failure::said(ViewError::Busy.to_string())));
                    }
                }
            }
        })),
        Err(f) => Err(OpsError::Model(f.message)),
    };
    shown.wall_secs = started.elapsed().as_secs_f64();
    shown.head_seq = ops::head(&sim);
    shown.secs = sim.state().sim_time_secs;
    let answer = match ran {
        Ok(RunEnd::Done) => Ok(RunProgress { state: "done", eta_secs: Some(0.0), ..shown }),
        Ok(RunEnd::Stopped) => Ok(RunProgress { state: "stopped", eta_secs: None, ..shown }),
        Err(e) => {
            let mut f = Failure::of_ops(&e);
            f.hint.get_or_insert_with(|| {
                "what was committed before it is kept: Continue again goes on from there".into()
            });
            Err(f)
        }
    };
    match state {
        Some(state) => (Viewer::from_parts(sim.into_store(), state), answer),
        // Only if a query's viewer was lost to a panic: start the viewer afresh.
        None => {
            drop(sim);
            match Viewer::store(path) {
                Ok(viewer) => (viewer, answer),
                Err(e) => panic!("the store {} cannot be opened again: {e}", path.display()),
            }
        }
    }
}
