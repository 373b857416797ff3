//! `hamlet-viewer`: the desktop viewer. A Tauri window whose page (`viewer/`) draws what the
//! engine's `view` module answers about a recording or a store. This crate is the only one
//! that knows Tauri: its commands are thin (each one line of engine code run on the worker
//! thread, see `worker.rs`); menus, drag-and-drop, the file dialog and the settings and
//! recent files (tauri-plugin-store) live here too. `viewer/COMMANDS.md` is the contract
//! with the page.

mod settings;
mod worker;

use std::path::PathBuf;

use clap::Parser;
use hamlet_engine::history::Moment;
use hamlet_engine::log::Branch;
use hamlet_engine::ops::{Forked, Intervention, InterventionMade, ModelSpec};
use hamlet_engine::view::Opened;
use serde::Serialize;
use serde_json::json;
use tauri::ipc::Response;
use tauri::menu::{MenuBuilder, MenuItemBuilder, SubmenuBuilder};
use tauri::{AppHandle, DragDropEvent, Emitter, Manager, State, WindowEvent};
use tauri_plugin_dialog::DialogExt;

use settings::{Recent, Settings};
use worker::{Failure, RunProgress, Worker};

/// Hamlet's viewer: open a recording (or a store) and scrub its day, watch the town, and
/// ask why an agent did what it did.
#[derive(Debug, Parser)]
#[command(
    name = "hamlet-viewer",
    version,
    after_help = "Examples:\n  \
hamlet-viewer recordings/willowmere-day.hamlet\n  hamlet-viewer --store run/\n\n\
In the window: File ▸ Open… (Ctrl+O), or drop a .hamlet file on it. Space plays and pauses, \
← → step, Home/End jump; click an agent for its panel and \"why?\"."
)]
struct Args {
    /// A recording to open (`.hamlet`)
    file: Option<PathBuf>,
    /// A store to open instead (a directory made by `hamlet run --store`)
    #[arg(long, conflicts_with = "file")]
    store: Option<PathBuf>,
}

/// What was opened, and where this file was left last time.
#[derive(Clone, Debug, Serialize)]
struct OpenedView {
    #[serde(flatten)]
    opened: Opened,
    /// The moment this file was shown at when it was last closed.
    last_seq: Option<u64>,
}

/// Opens `path` (a folder is a store), remembers it, and tells the page.
async fn open(app: AppHandle, path: PathBuf) -> Result<OpenedView, String> {
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let store = path.is_dir();
    let answer = app.state::<Worker>().open(path.clone(), store)?;
    match worker::wait(answer).await? {
        Ok(opened) => {
            let last_seq = settings::moment(&app, &opened.path);
            settings::remember(
                &app,
                Recent { path: opened.path.clone(), title: opened.title.clone() },
            );
            refresh_recent_menu(&app);
            if let Some(window) = app.get_webview_window("main") {
                let _ = window.set_title(&format!("{} — Hamlet", opened.title));
            }
            let view = OpenedView { opened, last_seq };
            let _ = app.emit("opened", &view);
            Ok(view)
        }
        Err(message) => {
            let _ =
                app.emit("open-failed", serde_json::json!({ "path": path, "message": message }));
            Err(message)
        }
    }
}

/// Where the window may write, as the person chose it: no command takes a path from the
/// page. A path comes from a native dialog this window opened (kept here until used), from
/// the recent files the viewer itself remembered, or is under the viewer's data directory.
#[derive(Default)]
struct Chosen {
    /// The folder picked for Fork here's store (`pick_store`), until another is picked or
    /// the default taken again.
    store: std::sync::Mutex<Option<PathBuf>>,
    /// A test build's stand-in for the next dialog's answer (`answer_next_dialog`).
    #[cfg(feature = "e2e")]
    next_dialog: std::sync::Mutex<Option<PathBuf>>,
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a native dialog answered (`ask` shows it; `None`: cancelled). In a test build
/// (`--features e2e`) an answer set with `answer_next_dialog` is taken instead, once.
fn dialog(
    app: &AppHandle,
    ask: impl FnOnce() -> Option<tauri_plugin_dialog::FilePath>,
) -> Option<PathBuf> {
    #[cfg(feature = "e2e")]
    if let Some(path) = lock(&app.state::<Chosen>().next_dialog).take() {
        return Some(path);
    }
    let _ = app;
    ask().and_then(|p| p.into_path().ok())
}

/// A test build's stand-in for a person at a dialog: the next native dialog answers `path`
/// without showing (`null` forgets an answer not taken). Not in a release build, which has
/// no command that takes a path; the page installs its test hooks only where this answers.
#[cfg(feature = "e2e")]
#[tauri::command]
fn answer_next_dialog(app: AppHandle, path: Option<String>) {
    *lock(&app.state::<Chosen>().next_dialog) = path.map(PathBuf::from);
}

/// Opens one of the recent files and stores (by its place in `recent`, newest first): the
/// path is the one the viewer remembered, never the page's.
#[tauri::command]
async fn open_recent(app: AppHandle, index: usize) -> Result<OpenedView, String> {
    let Some(recent) = settings::recent(&app).into_iter().nth(index) else {
        return Err(format!("no recent file #{index}"));
    };
    open(app, PathBuf::from(recent.path)).await
}

/// Asks for a recording with the file dialog and opens it; `null` if cancelled.
#[tauri::command]
async fn pick_and_open(app: AppHandle) -> Result<Option<OpenedView>, String> {
    let asked = app.clone();
    let picked = tauri::async_runtime::spawn_blocking(move || {
        dialog(&asked, || {
            asked.dialog().file().add_filter("Hamlet recording", &["hamlet"]).blocking_pick_file()
        })
    })
    .await
    .map_err(|e| e.to_string())?;
    match picked {
        Some(path) => open(app, path).await.map(Some),
        None => Ok(None),
    }
}

/// A folder for a store, picked in the folder dialog: where Fork here imports a recording
/// when the person would rather not use the default under the data directory. Answers the
/// folder (to show), or `null` if cancelled; a folder that holds files but no store is
/// refused in words. `default: true` forgets the folder picked and shows no dialog.
#[tauri::command]
async fn pick_store(app: AppHandle, default: Option<bool>) -> Result<Option<String>, String> {
    if default == Some(true) {
        *lock(&app.state::<Chosen>().store) = None;
        return Ok(None);
    }
    tauri::async_runtime::spawn_blocking(move || {
        let Some(dir) = dialog(&app, || app.dialog().file().blocking_pick_folder()) else {
            return Ok(None);
        };
        store_folder_fits(&dir)?;
        let shown = dir.display().to_string();
        *lock(&app.state::<Chosen>().store) = Some(dir);
        Ok(Some(shown))
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Whether `dir` can take a store: empty, missing, or a store already (`segments/`).
fn store_folder_fits(dir: &std::path::Path) -> Result<(), String> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
    };
    if entries.next().is_none() || dir.join("segments").is_dir() {
        return Ok(());
    }
    Err(format!(
        "{} holds other files and no store: pick an empty folder or a store",
        dir.display()
    ))
}

/// What is open now (a file given on the command line opens before the page loads), or
/// `null`; an error if the last open failed.
#[tauri::command]
async fn current(app: AppHandle, worker: State<'_, Worker>) -> Result<Option<OpenedView>, String> {
    let opened = worker.ask_optional(|v| Ok(v.opened().clone()))?;
    Ok(worker::wait(opened).await??.map(|opened| {
        let last_seq = settings::moment(&app, &opened.path);
        OpenedView { opened, last_seq }
    }))
}

/// Recently opened files and stores, newest first.
#[tauri::command]
fn recent(app: AppHandle) -> Vec<Recent> {
    settings::recent(&app)
}

/// The viewer's settings.
#[tauri::command]
fn settings(app: AppHandle) -> Settings {
    settings::load(&app)
}

/// Saves the viewer's settings.
#[tauri::command]
fn save_settings(app: AppHandle, settings: Settings) -> Result<(), String> {
    settings::save(&app, &settings)
}

/// Remembers the moment shown for what is open, to come back to it next time.
#[tauri::command]
async fn remember_moment(
    app: AppHandle,
    worker: State<'_, Worker>,
    seq: u64,
) -> Result<(), String> {
    let path = worker.run(|v| Ok(v.opened().path.clone())).await?;
    settings::set_moment(&app, &path, seq)
}

/// Asks read command `command` of what is open, through the one door the browser's build
/// answers through too (`Viewer::dispatch`): the answer's JSON goes to the page as it is,
/// with `micros`, the time the worker took, added to a frame and tracks.
async fn read(
    worker: &Worker,
    command: &'static str,
    args: serde_json::Value,
) -> Result<Response, String> {
    // The config file's prices are the desktop's own (research of cost).
    let priced = args.pointer("/ask/what").and_then(|w| w.as_str()) == Some("cost");
    let prices = if priced { prices() } else { Default::default() };
    let args = args.to_string();
    let answer = worker
        .run(move |v| {
            let started = stopwatch();
            let answer = v.dispatch(command, &args, &prices);
            Ok(answer.map(|json| match command {
                "frame" | "tracks" => with_micros(json, elapsed_micros(started)),
                _ => json,
            }))
        })
        .await??;
    Ok(Response::new(answer))
}

/// A JSON object with `"micros"` added last.
fn with_micros(json: String, micros: u64) -> String {
    match json.strip_suffix('}') {
        Some(body) if body.len() > 1 => format!("{body},\"micros\":{micros}}}"),
        _ => json,
    }
}

/// A branch's timeline with its density in `buckets` columns.
#[tauri::command]
async fn timeline(
    worker: State<'_, Worker>,
    branch: String,
    buckets: u64,
) -> Result<Response, String> {
    read(&worker, "timeline", json!({ "branch": branch, "buckets": buckets })).await
}

/// The town's map.
#[tauri::command]
async fn map(worker: State<'_, Worker>, branch: String) -> Result<Response, String> {
    read(&worker, "map", json!({ "branch": branch })).await
}

/// The town at a seq, or at a simulated time (the last event at or before it).
#[tauri::command]
async fn frame(
    worker: State<'_, Worker>,
    branch: String,
    seq: Option<u64>,
    secs: Option<u64>,
) -> Result<Response, String> {
    read(&worker, "frame", json!({ "branch": branch, "seq": seq, "secs": secs })).await
}

/// Everything the map draws as it changes along a branch: the page keeps it and draws a
/// scrubbed moment from it without asking again.
#[tauri::command]
async fn tracks(worker: State<'_, Worker>, branch: String) -> Result<Response, String> {
    read(&worker, "tracks", json!({ "branch": branch })).await
}

/// The moment one event or one clock step away from `seq`.
#[tauri::command]
async fn step(
    worker: State<'_, Worker>,
    branch: String,
    seq: u64,
    by: String,
    dir: i32,
) -> Result<Response, String> {
    read(&worker, "step", json!({ "branch": branch, "seq": seq, "by": by, "dir": dir })).await
}

/// An agent as it was at `seq`.
#[tauri::command]
async fn agent(
    worker: State<'_, Worker>,
    branch: String,
    seq: u64,
    agent: u32,
) -> Result<Response, String> {
    read(&worker, "agent", json!({ "branch": branch, "seq": seq, "agent": agent })).await
}

/// "Why?" for an agent's action at `seq`, or for any event by id.
#[tauri::command]
async fn why(
    worker: State<'_, Worker>,
    branch: String,
    seq: Option<u64>,
    agent: Option<u32>,
    event: Option<String>,
) -> Result<Response, String> {
    let args = json!({ "branch": branch, "seq": seq, "agent": agent, "event": event });
    read(&worker, "why", args).await
}

/// The branches of what is open, read again (a store may have changed).
#[tauri::command]
async fn branches(worker: State<'_, Worker>) -> Result<Response, String> {
    read(&worker, "branches", json!({})).await
}

/// A fork made from the window, and the branches after it.
#[derive(Serialize)]
struct ForkedView {
    #[serde(flatten)]
    forked: Forked,
    branches: Vec<Branch>,
    /// When a recording was open: the store it was imported into first (the recording is
    /// untouched), and how many of its events were new there.
    imported: Option<Imported>,
}

#[derive(Serialize)]
struct Imported {
    store: String,
    events: u64,
}

/// The store a recording is imported into to be forked: `stores/NAME` (the file's name
/// without `.hamlet`) under the viewer's data directory.
fn default_store(app: &AppHandle, recording: &std::path::Path) -> Result<PathBuf, String> {
    let data = app
        .path()
        .app_data_dir()
        .map_err(|e| format!("no data directory to import the recording into: {e}"))?;
    Ok(data.join("stores").join(store_name(recording)))
}

/// A store's name from a recording's path: its file name without `.hamlet`, without path
/// separators, control characters or leading dots, so that it names one new directory
/// inside `stores/` — never `.`, `..` or a hidden one (`...hamlet` is `recording`).
fn store_name(recording: &std::path::Path) -> String {
    let stem = recording.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
    let name: String =
        stem.chars().filter(|c| !matches!(c, '/' | '\\') && !c.is_control()).collect();
    match name.trim_start_matches('.').trim() {
        "" => "recording".to_owned(),
        name => name.to_owned(),
    }
}

/// Imports the recording at `path` into the store `dir` (made if missing; events it holds
/// already are skipped), on a blocking thread.
async fn import_into(path: PathBuf, dir: PathBuf) -> Result<u64, String> {
    tauri::async_runtime::spawn_blocking(move || {
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot make the store {}: {e}", dir.display()))?;
        let mut store = hamlet_engine::store::Store::open(&dir)
            .map_err(|e| format!("cannot open the store {}: {e}", dir.display()))?;
        hamlet_engine::ops::import(&mut store, &bytes)
            .map_err(|e| format!("cannot import {} into {}: {e}", path.display(), dir.display()))
    })
    .await
    .map_err(|e| format!("the import stopped: {e}"))?
}

/// Forks `branch` after the event at `seq`, or after the last event at or before `secs`
/// (whole steps), as `name` (by default `BRANCH-what-if-N`). A recording is read-only: it
/// is first imported into a store (the folder picked with `pick_store`, or `stores/NAME`
/// under the data directory), which is then what the window shows.
#[tauri::command]
async fn fork(
    app: AppHandle,
    worker: State<'_, Worker>,
    branch: String,
    seq: Option<u64>,
    secs: Option<u64>,
    name: Option<String>,
) -> Result<ForkedView, String> {
    let store = lock(&app.state::<Chosen>().store).clone();
    let at = match (seq, secs) {
        (Some(seq), _) => Moment::Seq(seq),
        (None, Some(secs)) => Moment::Time(secs),
        (None, None) => Moment::End,
    };
    let (writable, path) =
        worker.run(|v| Ok((v.writable(), PathBuf::from(&v.opened().path)))).await?;
    let imported = if writable {
        None
    } else {
        let dir = match store {
            Some(dir) => {
                // Checked again: the folder may have changed since it was picked.
                store_folder_fits(&dir)?;
                dir
            }
            None => default_store(&app, &path)?,
        };
        let events = import_into(path, dir.clone()).await?;
        open(app.clone(), dir.clone()).await?;
        Some(Imported { store: dir.display().to_string(), events })
    };
    worker
        .run(move |v| {
            let forked = v.fork(&branch, at, name.as_deref())?;
            Ok(ForkedView { forked, branches: v.opened().branches.clone(), imported })
        })
        .await
}

/// Renames a branch of a store (a `BranchRenamed` at its head, as `hamlet rename-branch`
/// does); a recording is read-only, and the store refuses a name taken or empty (and a
/// branch whose last step is part way), saying why. Answers the name taken (spaces around
/// it dropped) and the branches read again.
#[tauri::command]
async fn rename_branch(
    worker: State<'_, Worker>,
    branch: String,
    name: String,
) -> Result<serde_json::Value, String> {
    worker
        .run(move |v| {
            let renamed = v.rename_branch(&branch, &name)?;
            Ok(serde_json::json!({
                "old": renamed.old,
                "name": renamed.name,
                "branches": v.opened().branches,
            }))
        })
        .await
}

/// Deletes a fork; the store refuses a root or a branch others fork from, and says why.
#[tauri::command]
async fn delete_branch(
    worker: State<'_, Worker>,
    branch: String,
) -> Result<serde_json::Value, String> {
    worker
        .run(move |v| {
            let deleted = v.delete_branch(&branch)?;
            Ok(serde_json::json!({ "deleted": deleted, "branches": v.opened().branches }))
        })
        .await
}

/// Makes a change at the head of `branch` (an intervention: inner voice, interview, edit
/// persona, add an agent or a building, set an object, a happening), asking `model` when
/// it needs one. Refused changes write nothing and name the field at fault.
#[tauri::command]
async fn change(
    worker: State<'_, Worker>,
    branch: String,
    change: Intervention,
    model: Option<ModelSpec>,
) -> Result<InterventionMade, Failure> {
    worker.change(branch, change, model).await
}

/// Runs `branch` on for `hours` simulated hours with `model`; the page hears
/// `run-progress` after each step, and the answer says how it ended.
#[tauri::command]
async fn continue_run(
    app: AppHandle,
    worker: State<'_, Worker>,
    branch: String,
    hours: f64,
    model: ModelSpec,
) -> Result<RunProgress, Failure> {
    let progress: worker::OnProgress = Box::new(move |p| {
        let _ = app.emit("run-progress", p);
    });
    worker.continue_run(branch, hours, model, progress).await
}

/// Stops a continuation after the step under way (nothing is lost; Continue goes on).
#[tauri::command]
fn cancel_run(worker: State<'_, Worker>) {
    worker.cancel();
}

/// Two branches side by side from where they part, each agent with when its days differ.
#[tauri::command]
async fn compare(worker: State<'_, Worker>, a: String, b: String) -> Result<Response, String> {
    read(&worker, "compare", json!({ "a": a, "b": b })).await
}

/// One of the paper's measurements over a branch, with its table as CSV (`ask` as
/// `ResearchAsk` reads it).
#[tauri::command]
async fn research(
    worker: State<'_, Worker>,
    branch: String,
    ask: serde_json::Value,
) -> Result<Response, String> {
    read(&worker, "research", json!({ "branch": branch, "ask": ask })).await
}

/// The config file's price table (empty without one).
fn prices() -> std::collections::BTreeMap<String, hamlet_gateway::cost::Price> {
    let env = hamlet_gateway::config::Env::from_process();
    hamlet_gateway::config::ConfigFile::discover(None, &env).map(|f| f.prices).unwrap_or_default()
}

/// Writes `bytes` to `path` whole or not at all: a temporary file beside it, synced, then
/// renamed over it.
fn write_whole(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let failed = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = std::fs::File::create(&tmp).map_err(failed)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(failed)?;
    std::fs::rename(&tmp, path).map_err(failed)
}

/// Where to save, as the save dialog says (`None`: cancelled); `name` is only suggested.
fn save_path(app: &AppHandle, name: &str, filter: (&str, &str)) -> Option<PathBuf> {
    dialog(app, || {
        app.dialog()
            .file()
            .set_file_name(name)
            .add_filter(filter.0, &[filter.1])
            .blocking_save_file()
    })
}

/// Saves a chart's table as CSV where the save dialog says (`name` suggested); answers the
/// path written, or `null` if the dialog was cancelled.
#[tauri::command]
async fn save_csv(app: AppHandle, name: String, text: String) -> Result<Option<String>, String> {
    tauri::async_runtime::spawn_blocking(move || {
        let Some(path) = save_path(&app, &name, ("CSV", "csv")) else { return Ok(None) };
        write_whole(&path, text.as_bytes())?;
        Ok(Some(path.display().to_string()))
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Exports `branch` with its ancestry (cut after the last event at or before `until_secs`
/// if given) as a recording where the save dialog says; answers `{ path, bytes, events }`,
/// or `null` if the dialog was cancelled.
#[tauri::command]
async fn export(
    app: AppHandle,
    worker: State<'_, Worker>,
    branch: String,
    until_secs: Option<u64>,
) -> Result<Option<serde_json::Value>, String> {
    let name = format!("{branch}.hamlet");
    let bytes = worker
        .run(move |v| {
            let until = until_secs.map(|secs| v.seq_at(&branch, secs)).transpose()?;
            v.export(&branch, until)
        })
        .await?;
    tauri::async_runtime::spawn_blocking(move || {
        let Some(path) = save_path(&app, &name, ("Hamlet recording", "hamlet")) else {
            return Ok(None);
        };
        // What is written verifies: checked before it replaces anything.
        let (rec, report) = hamlet_engine::log::open_checked(&bytes)
            .map_err(|e| format!("the export does not read back (a bug in Hamlet): {e}"))?;
        if !report.is_clean() {
            return Err(format!(
                "the export does not verify (a bug in Hamlet; nothing was written): {}",
                report.problems.first().map(ToString::to_string).unwrap_or_default()
            ));
        }
        let events = rec.branches().iter().map(|b| b.n_events).sum::<u64>();
        write_whole(&path, &bytes)?;
        Ok(Some(serde_json::json!({
            "path": path.display().to_string(),
            "bytes": bytes.len(),
            "events": events,
        })))
    })
    .await
    .map_err(|e| e.to_string())?
}

/// The model calls made in `from..=to` (seqs), by one agent or all.
#[tauri::command]
async fn calls(
    worker: State<'_, Worker>,
    branch: String,
    from: u64,
    to: u64,
    agent: Option<u32>,
) -> Result<Response, String> {
    read(&worker, "calls", json!({ "branch": branch, "from": from, "to": to, "agent": agent }))
        .await
}

#[expect(
    clippy::disallowed_methods,
    reason = "measures the engine's time per frame for the status bar; decides nothing"
)]
fn stopwatch() -> std::time::Instant {
    std::time::Instant::now()
}

fn elapsed_micros(started: std::time::Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// The File ▸ Open Recent submenu's items, made again from the recent list.
fn refresh_recent_menu(app: &AppHandle) {
    let Some(menu) = app.menu() else { return };
    let Some(tauri::menu::MenuItemKind::Submenu(file)) = menu.get("file") else { return };
    let Some(tauri::menu::MenuItemKind::Submenu(recent)) = file.get("recent") else { return };
    while recent.remove_at(0).ok().flatten().is_some() {}
    for (i, r) in settings::recent(app).iter().enumerate() {
        // `&` marks a mnemonic in a menu label.
        let label = r.path.replace('&', "&&");
        if let Ok(item) = MenuItemBuilder::with_id(format!("recent:{i}"), label).build(app) {
            let _ = recent.append(&item);
        }
    }
}

fn menu(app: &tauri::App) -> tauri::Result<tauri::menu::Menu<tauri::Wry>> {
    let item = |id: &str, label: &str, accelerator: Option<&str>| {
        let b = MenuItemBuilder::with_id(id, label);
        match accelerator {
            Some(a) => b.accelerator(a).build(app),
            None => b.build(app),
        }
    };
    let recent = SubmenuBuilder::with_id(app, "recent", "Open &Recent").build()?;
    let file = SubmenuBuilder::with_id(app, "file", "&File")
        .item(&item("open", "&Open…", Some("CmdOrCtrl+O"))?)
        .item(&item("open-store", "Open &Store…", Some("CmdOrCtrl+Shift+O"))?)
        .item(&recent)
        .separator()
        .item(&item("quit", "&Quit", Some("CmdOrCtrl+Q"))?)
        .build()?;
    let view = SubmenuBuilder::new(app, "&View")
        .item(&item("zoom-in", "Zoom &In\t+", None)?)
        .item(&item("zoom-out", "Zoom &Out\t−", None)?)
        .item(&item("zoom-fit", "&Fit the Town\t0", None)?)
        .separator()
        .item(&item("toggle-bubbles", "Speech &Bubbles\tB", None)?)
        .item(&item("toggle-paths", "Walking &Paths\tP", None)?)
        .build()?;
    let time = SubmenuBuilder::new(app, "&Timeline")
        .item(&item("play", "&Play / Pause\tSpace", None)?)
        .item(&item("step-forward", "Step &Forward\t→", None)?)
        .item(&item("step-back", "Step &Back\t←", None)?)
        .item(&item("event-forward", "Next &Event\t.", None)?)
        .item(&item("event-back", "Previous E&vent\t,", None)?)
        .separator()
        .item(&item("home", "To the &Start\tHome", None)?)
        .item(&item("end", "To the &End\tEnd", None)?)
        .build()?;
    let agent = SubmenuBuilder::new(app, "&Agent")
        .item(&item("why", "&Why?\tW", None)?)
        .item(&item("close-panel", "&Close the Panel\tEsc", None)?)
        .build()?;
    MenuBuilder::new(app).items(&[&file, &view, &time, &agent]).build()
}

/// The window's configuration and the page, embedded at build time.
#[expect(
    clippy::disallowed_types,
    reason = "tauri's generated asset table uses a HashMap; nothing of it is encoded, hashed or folded"
)]
fn context() -> tauri::Context<tauri::Wry> {
    tauri::generate_context!()
}

fn spawn_open(app: &AppHandle, path: PathBuf) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let _ = open(app, path).await;
    });
}

fn main() {
    let args = Args::parse();
    let first = args.store.or(args.file);
    tauri::Builder::default()
        .plugin(tauri_plugin_store::Builder::new().build())
        .plugin(tauri_plugin_dialog::init())
        .manage(Worker::start())
        .manage(Chosen::default())
        .setup(move |app| {
            app.set_menu(menu(app)?)?;
            refresh_recent_menu(app.handle());
            if let Some(path) = first.clone() {
                // Sent to the worker now, before the page loads and asks what is open.
                spawn_open(app.handle(), path);
            }
            Ok(())
        })
        .on_menu_event(|app, event| match event.id().as_ref() {
            "quit" => app.exit(0),
            "open" | "open-store" => {
                let app2 = app.clone();
                let dialog = app.dialog().file();
                if event.id().as_ref() == "open" {
                    dialog.add_filter("Hamlet recording", &["hamlet"]).pick_file(move |p| {
                        if let Some(path) = p.and_then(|p| p.into_path().ok()) {
                            spawn_open(&app2, path);
                        }
                    });
                } else {
                    dialog.pick_folder(move |p| {
                        if let Some(path) = p.and_then(|p| p.into_path().ok()) {
                            spawn_open(&app2, path);
                        }
                    });
                }
            }
            id => {
                if let Some(i) = id.strip_prefix("recent:").and_then(|i| i.parse::<usize>().ok()) {
                    if let Some(r) = settings::recent(app).get(i) {
                        spawn_open(app, PathBuf::from(&r.path));
                    }
                } else {
                    let _ = app.emit("menu", serde_json::json!({ "id": id }));
                }
            }
        })
        .on_window_event(|window, event| {
            if let WindowEvent::DragDrop(DragDropEvent::Drop { paths, .. }) = event {
                if let Some(path) = paths.first() {
                    spawn_open(window.app_handle(), path.clone());
                }
            }
        })
        .invoke_handler(commands())
        .run(context())
        .unwrap_or_else(|e| {
            eprintln!("error: the viewer's window could not run: {e}");
            std::process::exit(2);
        });
}

/// Every command the page may call, and `$extra` (`build.rs` lists the same names in the
/// app manifest, and `capabilities/` grants them): none takes a path.
macro_rules! page_commands {
    ($($extra:ident),*) => {
        tauri::generate_handler![
            $($extra,)*
            open_recent,
            pick_and_open,
            pick_store,
            current,
            recent,
            settings,
            save_settings,
            remember_moment,
            timeline,
            map,
            frame,
            tracks,
            step,
            agent,
            why,
            calls,
            branches,
            fork,
            rename_branch,
            delete_branch,
            change,
            continue_run,
            cancel_run,
            compare,
            research,
            save_csv,
            export
        ]
    };
}

/// A release build's commands.
#[cfg(not(feature = "e2e"))]
fn commands() -> impl Fn(tauri::ipc::Invoke) -> bool {
    page_commands!()
}

/// A test build's commands: the release build's and `answer_next_dialog`.
#[cfg(feature = "e2e")]
fn commands() -> impl Fn(tauri::ipc::Invoke) -> bool {
    page_commands!(answer_next_dialog)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::store_name;

    /// The window's end-to-end tests (`tests/e2e/`) need the test build; without it cargo
    /// skips them without a word: this says so instead.
    #[cfg(not(feature = "e2e"))]
    #[test]
    fn the_window_tests_need_the_test_build() {
        panic!(
            "the window's end-to-end tests did not run: they need the test build, \
             `--features hamlet-viewer/e2e` (`./hamlet-dev test` gives it; docs/tests.md)"
        );
    }

    /// The commands `commands()` registers are the ones `build.rs`'s app manifest lists (a
    /// command missing there is refused to the page; one missing here is not a command).
    #[test]
    fn the_app_manifest_lists_every_command_and_nothing_else() {
        /// The names in the first `open … ]` after `from`.
        fn names(text: &str, from: &str, open: &str) -> Vec<String> {
            let start = text.find(from).unwrap_or_else(|| panic!("no `{from}`"));
            let body = &text[start..];
            let body = &body[body.find(open).unwrap() + open.len()..];
            let body = &body[..body.find(']').unwrap()];
            let mut out: Vec<String> = body
                .split(',')
                .map(|n| n.trim().trim_matches('"').to_owned())
                .filter(|n| !n.is_empty())
                .collect();
            out.sort();
            out
        }
        let main = include_str!("main.rs");
        let build = include_str!("../build.rs");
        let registered = names(main, "macro_rules! page_commands", "$($extra,)*");
        assert_eq!(registered.len(), 27, "{registered:?}");
        assert_eq!(registered, names(build, "const PAGE", "= &["));
        let test_build = &main[main.find("#[cfg(feature = \"e2e\")]\nfn commands()").unwrap()..];
        assert!(test_build[..120].contains("page_commands!(answer_next_dialog)"), "{test_build}");
        assert!(build.contains("[&[\"answer_next_dialog\"], PAGE].concat()"));
        assert!(!registered.iter().any(|c| c == "answer_next_dialog"));
    }

    #[test]
    fn a_store_is_named_inside_stores_never_above_it() {
        for (file, name) in [
            ("/tmp/willowmere-day.hamlet", "willowmere-day"),
            ("...hamlet", "recording"),
            ("/x/..hamlet", "recording"),
            (".hamlet", "hamlet"),
            (".hidden.hamlet", "hidden"),
            ("a\u{7}b.hamlet", "ab"),
            ("/", "recording"),
        ] {
            let got = store_name(Path::new(file));
            assert_eq!(got, name, "{file}");
            assert_eq!(Path::new("stores").join(&got).parent(), Some(Path::new("stores")));
        }
    }
}
