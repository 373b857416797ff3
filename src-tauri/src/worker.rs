//! The thread that holds what the window has open: a recording's bytes (and the
//! `Viewer` borrowing them) or a store. Commands send it jobs; it runs them one at a time,
//! in the order they came, each under `catch_unwind`: a bug in one panel's query answers
//! that panel with an error and harms nothing else (the recording is only read).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc;

use hamlet_engine::view::{Opened, ViewError, Viewer};

/// A query to run against what is open (`None`: nothing is; with the last failure to open).
type Job = Box<dyn for<'v, 'a> FnOnce(Result<&'v mut Viewer<'a>, Option<&str>>) + Send>;

/// What the worker can be asked.
enum Message {
    /// Open a recording (a file) or a store (a folder), replacing what was open.
    Open { path: PathBuf, store: bool, reply: mpsc::Sender<Result<Opened, String>> },
    /// Run a query.
    Ask(Job),
}

/// The handle commands hold.
pub struct Worker {
    tx: mpsc::Sender<Message>,
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
        std::thread::Builder::new()
            .name("hamlet-viewer-worker".into())
            .spawn(move || serve(&rx))
            .expect("the viewer's worker thread starts");
        Worker { tx }
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

/// The worker's loop: with nothing open, then with each file opened in turn. What is open
/// lives on this thread's stack, so a recording's bytes outlive the viewer borrowing them.
fn serve(rx: &mpsc::Receiver<Message>) {
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
            Message::Open { path, store, reply } => {
                let opened = if store {
                    Viewer::store(&path).map(|viewer| serve_open(viewer, rx, &reply))
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

/// Answers queries against `viewer` until another file is to be opened (returned) or the
/// window is gone (`None`).
fn serve_open(
    mut viewer: Viewer<'_>,
    rx: &mpsc::Receiver<Message>,
    reply: &mpsc::Sender<Result<Opened, String>>,
) -> Option<Message> {
    let _ = reply.send(Ok(viewer.opened().clone()));
    loop {
        match rx.recv() {
            Ok(Message::Ask(job)) => job(Ok(&mut viewer)),
            Ok(open @ Message::Open { .. }) => return Some(open),
            Err(_) => return None,
        }
    }
}
