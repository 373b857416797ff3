//! `hamlet run`, the user's voice and changes, and the time-travel commands at the process
//! boundary, against an OpenAI-compatible test-double server on loopback that answers by
//! rule: a run stopped by Ctrl-C and resumed does what one that ran straight through did;
//! an interview leaves the run untouched unless it is to be remembered; the inner voice
//! makes the agent re-plan; forks go on, are changed and queried, and re-simulate, while
//! their parent stays as it was; the research tools measure a run.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use hamlet_engine::store::Store;
use hamlet_log::Body;

use crate::loopback::{LoopbackServer, Reply};
use crate::rules::over_http;

fn args(server: &LoopbackServer, store: &Path, rest: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = rest.iter().map(|s| (*s).to_owned()).collect();
    out.extend(
        [
            "--store",
            &store.display().to_string(),
            "--base-url",
            &server.base_url(),
            "--model",
            "rules",
            "--embed",
            "openai",
            "--embed-model",
            "letters",
        ]
        .map(str::to_owned),
    );
    out
}

fn command(args: &[String]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hamlet"));
    c.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_API_KEY", "sk-loopback")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("HAMLET_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent");
    c
}

async fn hamlet(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || command(&args).output().unwrap()).await.unwrap()
}

/// `hamlet ARGS --store STORE`, for the commands that need no model.
fn at_store(store: &Path, args: &[&str]) -> Output {
    let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    v.extend(["--store".to_owned(), store.to_str().unwrap().to_owned()]);
    command(&v).output().unwrap()
}

/// A rule-answering server, and a 0.01-hour run against it in a new store.
async fn short_run() -> (LoopbackServer, tempfile::TempDir, std::path::PathBuf, Output) {
    let server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("run");
    let out = hamlet(args(&server, &store, &["run", "--hours", "0.01"])).await;
    assert!(out.status.success(), "{}", text(&out));
    (server, tmp, store, out)
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn state_of(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.split("state ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap_or("").into()
}

fn events(store: &Path, branch: &str) -> Vec<hamlet_log::Event> {
    let store = Store::open(store).unwrap();
    let b = store.find_branch(branch).unwrap();
    store.events(b.id, 0, b.head_seq).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_by_ctrl_c_resumes_to_the_same_state() {
    let server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let tmp = tempfile::tempdir().unwrap();
    let (straight, stopped) = (tmp.path().join("straight"), tmp.path().join("stopped"));
    let hours = "0.1"; // 36 steps of 10 s

    let out = hamlet(args(&server, &straight, &["run", "--hours", hours])).await;
    assert!(out.status.success(), "{}", text(&out));
    let state = state_of(&out);
    assert!(state.starts_with("st_") && state.len() == 67, "{}", text(&out));

    // Ctrl-C a run, once it has begun, against a server that takes 100 ms per request (so
    // it cannot have finished, however fast the build): it stops after the step under way.
    let slow = LoopbackServer::start(
        vec![],
        Reply::Slow(Duration::from_millis(100), Box::new(Reply::Rules(over_http))),
    )
    .await;
    let a = args(&slow, &stopped, &["run", "--hours", hours]);
    let segments = stopped.join("segments");
    let child = tokio::task::spawn_blocking(move || {
        let child = command(&a).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        // Once the run has begun writing (however loaded the machine), and a little after.
        let begun = || {
            std::fs::read_dir(&segments)
                .map(|d| d.flatten().any(|f| f.metadata().is_ok_and(|m| m.len() > 0)))
                .unwrap_or(false)
        };
        for _ in 0..1200 {
            if begun() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
        let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let said = text(&child);
    assert!(child.status.success(), "{said}");
    assert!(said.contains("stopping after this step"), "{said}");
    assert!(!said.contains("stopped after 36 steps"), "{said}");
    assert!(said.contains("go on: hamlet run --resume"), "{said}");

    // Starting it again is refused; resuming finishes it, to the same state.
    let out = hamlet(args(&server, &stopped, &["run", "--hours", hours])).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--resume"), "{}", text(&out));
    let kept = events(&stopped, "main");
    let out = hamlet(args(&server, &stopped, &["run", "--resume", "--hours", hours])).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(state_of(&out).starts_with("st_"), "{}", text(&out));
    // Over real HTTP each answer's measured latency is in its event (and so in every id
    // after it): compare what happened, step by step, instead of ids.
    let resumed = events(&stopped, "main");
    assert!(resumed[..kept.len()].iter().zip(&kept).all(|(a, b)| a.id == b.id), "kept as it was");
    let what = |events: Vec<hamlet_log::Event>| -> Vec<String> {
        events
            .iter()
            .map(|e| {
                let detail = match &e.body {
                    Body::MemoryAdded(m) => m.description.clone(),
                    Body::DialogueTurn(t) => t.text.clone(),
                    Body::ClockStepped(c) => c.step.to_string(),
                    Body::LlmResponded(r) => r.text.clone(),
                    Body::LlmFailed(f) => format!("{:?} {}", f.kind, f.message),
                    Body::Moved(m) => format!("{:?}", m.to),
                    _ => String::new(),
                };
                format!(
                    "{} {} {detail}",
                    e.sim_time_secs(),
                    hamlet_log::event::kind_name(e.body.kind())
                )
            })
            .collect()
    };
    let (a, b) = (what(events(&straight, "main")), what(resumed));
    let differ = a.iter().zip(&b).position(|(x, y)| x != y);
    assert!(
        differ.is_none(),
        "differs at #{differ:?}: {:?} / {:?}",
        differ.map(|i| &a[i]),
        differ.map(|i| &b[i])
    );
    assert_eq!(a.len(), b.len(), "the same run, stopped and resumed");
    assert!(a.iter().any(|x| x.contains("ClockStepped 36")), "it ran to the end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interviews_leave_the_run_alone_unless_remembered_and_the_inner_voice_replans() {
    let (server, _tmp, store, _) = short_run().await;
    let before = events(&store, "main");

    // Why is she doing what she does? The tree goes from her action down to a prompt.
    let why = |rest: &[&str]| at_store(&store, &[&["why"], rest].concat());
    let out = why(&["--agent", "delphine ashcombe", "--details"]);
    assert!(out.status.success(), "{}", text(&out));
    let tree = text(&out);
    assert!(tree.lines().next().unwrap().contains("ActionStarted"), "{tree}");
    assert!(tree.contains("  LlmRequested") || tree.contains(" LlmRequested "), "{tree}");
    assert!(tree.contains("│ "), "prompts in full: {tree}");
    let out = why(&["--agent", "Delphine Ashcombe", "--format", "json"]);
    let graph: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(graph["nodes"].as_array().unwrap().len() > 2);
    assert!(graph["edges"].as_array().unwrap().iter().all(|e| e["from"].is_string()));
    let out = why(&["--agent", "Delphine Ashcombe", "--format", "dot"]);
    assert!(text(&out).starts_with("digraph why {"), "{}", text(&out));
    let out = why(&["--agent", "Nobody"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("the agents are: "), "{}", text(&out));
    assert_eq!(events(&store, "main").len(), before.len(), "asking why writes nothing");

    let question = "What are you doing today?";
    let out =
        hamlet(args(&server, &store, &["interview", "--agent", "delphine ashcombe", question]))
            .await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Delphine Ashcombe: I am minding the café"), "{}", text(&out));
    assert_eq!(events(&store, "main").len(), before.len(), "the run is untouched");
    let fork = events(&store, "main-interview-1");
    let answered = fork.iter().find_map(|e| match &e.body {
        Body::InterviewAnswered(a) => Some((e, a)),
        _ => None,
    });
    let (event, answer) = answered.expect("the answer is on the fork");
    assert!(answer.answer.contains("minding the café"));
    assert!(event.header.causes.contains(&answer.question), "the answer names its question");
    let remembered = |events: &[hamlet_log::Event]| {
        events
            .iter()
            .any(|e| matches!(&e.body, Body::MemoryAdded(m) if m.description.contains("was asked")))
    };
    assert!(!remembered(&fork));

    let out = hamlet(args(
        &server,
        &store,
        &["interview", "--agent", "Delphine Ashcombe", "--remember", question],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(remembered(&events(&store, "main")), "remembered on the run itself");

    let out = hamlet(args(
        &server,
        &store,
        &["inner-voice", "--agent", "Nobody Here", "You want to bake bread"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no agent named `Nobody Here`; the town has"), "{}", text(&out));
    let n = events(&store, "main").len();
    let out = hamlet(args(
        &server,
        &store,
        &["inner-voice", "--agent", "Delphine Ashcombe", "You want to bake bread"],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Delphine Ashcombe intends to bake bread"), "{}", text(&out));
    let after = events(&store, "main");
    let new = &after[n..];
    assert!(matches!(&new[0].body, Body::Intervened(_)));
    let intention = new.iter().any(|e| {
        matches!(&e.body, Body::MemoryAdded(m) if m.description.contains("intends to bake bread"))
    });
    assert!(intention, "the intention is remembered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_any_moment_goes_on_by_itself_and_leaves_its_parent_alone() {
    let (server, tmp, store, out) = short_run().await;
    let live = state_of(&out);
    let main = events(&store, "main");
    let plain = |rest: &[&str]| at_store(&store, rest);
    let out = plain(&["fork", "--at", "07:00:20", "--name", "what-if"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("hamlet run --resume"), "{}", text(&out));
    let out = plain(&["fork", "--at", "07:00:20", "--name", "what-if"]);
    assert_eq!(out.status.code(), Some(2), "a name is taken once: {}", text(&out));
    let out = plain(&["fork", "--branch", "nope", "--at", "end", "--name", "x"]);
    assert!(text(&out).contains("the store has: main"), "{}", text(&out));
    let out = plain(&["branches"]);
    let listing = text(&out);
    assert!(listing.lines().next().unwrap().starts_with("main "), "{listing}");
    assert!(listing.contains("  what-if") && listing.contains("forks `main` after #"), "{listing}");

    // The fork starts as its parent was at 07:00:20, and goes on by itself.
    let fork = events(&store, "what-if");
    let cut = fork.len() - 1; // its own BranchCreated
    assert_eq!(
        fork[..cut].iter().map(|e| e.id).collect::<Vec<_>>(),
        main[..cut].iter().map(|e| e.id).collect::<Vec<_>>()
    );
    assert!(fork[..cut].iter().all(|e| e.sim_time_secs() <= 7 * 3600 + 20));
    let out = hamlet(args(
        &server,
        &store,
        &["run", "--resume", "--branch", "what-if", "--hours", "0.02"],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let fork = events(&store, "what-if");
    assert!(fork.last().unwrap().sim_time_secs() >= 7 * 3600 + 70, "it ran on");
    assert_eq!(events(&store, "main").len(), main.len(), "the parent is untouched");
    // The branch and its fork side by side, measured to the same moment.
    let out = plain(&["research", "forks", "--spread", "party", "--format", "csv"]);
    assert!(out.status.success(), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "a header, main, what-if:\n{table}");
    assert_eq!(
        rows[0][..7],
        ["branch", "runs", "until", "agents", "conversations", "lines", "heard_1"]
    );
    assert_eq!((rows[1][0], rows[2][0]), ("main", "what-if"), "{table}");
    assert_eq!(rows[1][2], rows[2][2], "one moment for both: {table}");
    let out = plain(&["research", "forks", "--of", "what-if"]);
    assert!(text(&out).contains("1 branch measured to"), "a fork with no forks: {}", text(&out));
    let out = plain(&["research", "forks", "--spread", " , "]);
    assert!(text(&out).contains("names no word to follow"), "{}", text(&out));

    // The recording of the run replays to the state the live run ended in.
    let file = tmp.path().join("run.hamlet");
    let out = plain(&["export", "--branch", "main", "--out", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let out = command(&["replay".to_owned(), file.to_str().unwrap().to_owned()]).output().unwrap();
    assert!(text(&out).starts_with(&format!("state hash   {live}")), "{live} vs {}", text(&out));

    // The run, re-simulated over HTTP-recorded answers with no server: identical.
    let out = plain(&["resim"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("identical: the engine made the same {} events", main.len())),
        "{}",
        text(&out)
    );
    // And the fork, which went on with its own calls: its parent's part made again, the
    // fork made where it was, then its own steps.
    let out = plain(&["resim", "--branch", "what-if"]);
    assert!(out.status.success(), "{}", text(&out));
    let n = events(&store, "what-if").len();
    assert!(
        text(&out).contains(&format!("identical: the engine made the same {n} events")),
        "{}",
        text(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_is_changed_and_queried_at_the_command_line_while_its_parent_stays() {
    let (server, tmp, store, _) = short_run().await;
    let plain = |rest: &[&str]| at_store(&store, rest);
    let with_model = |rest: &[&str]| command(&args(&server, &store, rest)).output().unwrap();
    let main = events(&store, "main");
    assert!(plain(&["fork", "--at", "end", "--name", "changed"]).status.success());
    let machine = "Marigold café:counter:coffee machine";
    let out = with_model(&["set-object", machine, "out of order", "--branch", "changed"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = with_model(&["set-object", "Nowhere:x:y", "on", "--branch", "changed"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no object `Nowhere:x:y`"), "{}", text(&out));
    let alarm = "a fire alarm is ringing";
    let cafe = ["--place", "Marigold café", "--branch", "changed"];
    let out = with_model(&[&["happen", alarm, "--for", "2h"][..], &cafe].concat());
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("at Marigold café: a fire alarm is ringing"), "{}", text(&out));
    let out = with_model(&[&["happen", alarm, "--for", "2 weeks"][..], &cafe].concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is not a duration"), "{}", text(&out));
    let out = with_model(&["happen", alarm, "--place", "Nowhere", "--branch", "changed"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no place `Nowhere`"), "{}", text(&out));
    let out = with_model(&[
        "add-building",
        "--template",
        "Marigold café",
        "--name",
        "Second café",
        "--at",
        "73,1",
        "--branch",
        "changed",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("the map is"), "{}", text(&out));
    let out = with_model(&[
        "add-agent",
        "Ada Brook is a new student; Ada Brook wants to start a choir",
        "--name",
        "Ada Brook",
        "--home",
        "Reedbank dorm:common room",
        "--branch",
        "changed",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(events(&store, "main").len(), main.len(), "the parent is untouched");

    // The town at the fork's head shows the change; the parent's does not.
    let town = |branch: &str| {
        let out = plain(&["show", "--branch", branch, "--format", "json"]);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice::<hamlet_engine::query::TownView>(&out.stdout).unwrap()
    };
    let (changed, parent) = (town("changed"), town("main"));
    assert_eq!(changed.objects.get(machine).map(String::as_str), Some("out of order"));
    assert!(!parent.objects.contains_key(machine));
    assert!(changed.agents.iter().any(|a| a.name == "Ada Brook"));
    assert_eq!(changed.agents.len(), parent.agents.len() + 1);
    assert_eq!(changed.happenings.len(), 1);
    assert_eq!(changed.happenings[0].text, alarm);
    assert!(parent.happenings.is_empty());
    let out = plain(&["show", "--branch", "changed"]);
    assert!(
        text(&out).contains("out of order")
            && text(&out).contains("Ada Brook")
            && text(&out).contains("going on:\n  at Marigold café until"),
        "{}",
        text(&out)
    );

    // An agent as it was, in words and as JSON; a wrong name lists the agents.
    let out = plain(&["show", "--agent", "tamsin hale", "--memories", "0"]);
    assert!(out.status.success(), "{}", text(&out));
    for part in ["summary (day 0):", "memory stream:", "plans:", "spatial memory:"] {
        assert!(text(&out).contains(part), "{part}: {}", text(&out));
    }
    let out = plain(&["show", "--agent", "Tamsin Hale", "--at", "07:00:00", "--format", "json"]);
    let early: hamlet_engine::query::AgentView = serde_json::from_slice(&out.stdout).unwrap();
    let out = plain(&["show", "--agent", "Tamsin Hale", "--format", "json"]);
    let late: hamlet_engine::query::AgentView = serde_json::from_slice(&out.stdout).unwrap();
    assert!(early.memories.len() < late.memories.len(), "as it was then");
    let out = plain(&["show", "--agent", "Nobody"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("Tamsin Hale"), "{}", text(&out));

    // The model calls, each with its prompt and answer; events as JSON Lines.
    let out = plain(&["calls", "--template", "summary", "--format", "json"]);
    let calls: Vec<hamlet_engine::query::CallView> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(calls.len(), parent.agents.len(), "one summary each");
    assert!(calls
        .iter()
        .all(|c| c.answer.is_some() && c.prompt.contains(c.agent.as_deref().unwrap())));
    let out = plain(&["calls", "--agent", "Tamsin Hale", "--details"]);
    assert!(text(&out).contains("prompt:") && text(&out).contains("answer:"), "{}", text(&out));
    let out = plain(&["log", "--format", "jsonl"]);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), main.len());
    for (line, event) in lines.iter().zip(&main) {
        assert_eq!(line["id"].as_str(), Some(event.id.to_hex().as_str()));
        assert_eq!(line["seq"].as_u64(), Some(event.seq()));
        assert!(line["body"].is_object(), "{line}");
    }
    let requested = lines.iter().find(|l| l["kind"] == "LlmRequested").unwrap();
    assert_eq!(requested["body"]["request_hash"].as_str().map(str::len), Some(64));

    // Conversations as a Markdown transcript.
    let out = plain(&["transcript"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).starts_with("# Conversations in Willowmere"), "{}", text(&out));
    let _ = tmp;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn research_measures_a_run_and_asks_on_a_scratch_fork() {
    let (server, _tmp, store, _) = short_run().await;
    let plain = |rest: &[&str]| at_store(&store, rest);
    let main = events(&store, "main");
    let out = plain(&["research", "network", "--every", "30s", "--format", "csv"]);
    assert!(out.status.success(), "{}", text(&out));
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(csv.lines().next(), Some("time,agents,pairs_talked,density"));
    assert!(csv.lines().count() >= 3, "{csv}");
    let out = plain(&["research", "diffusion", "--keywords", "market,sunday"]);
    assert!(text(&out).starts_with("time "), "{}", text(&out));
    let out = plain(&["research", "network", "--every", "5d"]);
    assert_eq!(out.status.code(), Some(2));

    let out = command(&args(
        &server,
        &store,
        &["research", "battery", "--agents", "Tamsin Hale", "--format", "csv"],
    ))
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "agent,category,question,answer");
    assert_eq!(rows.len(), 11, "ten questions: {csv}");
    for category in ["self-knowledge", "memory", "plans", "reactions", "reflections"] {
        assert_eq!(rows.iter().filter(|r| r.contains(&format!(",{category},"))).count(), 2);
    }
    assert!(rows[1].starts_with("Tamsin Hale,self-knowledge,"));
    assert!(rows[1].ends_with("the market opens late on Sunday.\""), "{}", rows[1]);
    assert!(text(&out).contains("scratch branch `main-research-1`"), "{}", text(&out));

    let out =
        command(&args(&server, &store, &["research", "ask", "Do you know the market's hours?"]))
            .output()
            .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("of 10 answered yes"), "{}", text(&out));
    assert_eq!(events(&store, "main").len(), main.len(), "the run is untouched");
    assert!(events(&store, "main-research-2").len() > main.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_some_of_the_town_s_agents() {
    let server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("two");
    let two = ["run", "--hours", "0.01", "--agents", "tamsin hale,Rowan Ashcombe"];
    let out = hamlet(args(&server, &store, &two)).await;
    assert!(out.status.success(), "{}", text(&out));
    let joined: Vec<String> = events(&store, "main")
        .into_iter()
        .filter_map(|e| match e.body {
            Body::AgentJoined(j) => Some(j.name),
            _ => None,
        })
        .collect();
    assert_eq!(joined, vec!["Rowan Ashcombe", "Tamsin Hale"], "in the town's order");
    // The engine made again over it joins the same two (the town file recorded has ten).
    let out = at_store(&store, &["resim"]);
    assert!(out.status.success() && text(&out).contains("identical"), "{}", text(&out));
    let other = tmp.path().join("nobody");
    let out = hamlet(args(&server, &other, &["run", "--agents", "Nobody"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no persona `Nobody`") && text(&out).contains("Tamsin Hale"));
}

/// The recording `./hamlet-dev run` opens (a real morning, made by the embedded model): it
/// verifies, it holds what a real run must (plans, actions, moves, memories, a conversation, a
/// reflection, all from the embedded model), and the queries the viewer makes answer from it
/// with no model.
#[test]
fn the_shipped_recording_is_sound_and_answers_every_query() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings/willowmere-morning.hamlet");
    let file = file.to_str().unwrap();
    let run = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let out = command(&args).output().unwrap();
        assert!(out.status.success(), "hamlet {args:?}: {}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["verify", file]);

    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    let mut models = std::collections::BTreeSet::new();
    for line in run(&["log", file, "--format", "jsonl"]).lines() {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        *kinds.entry(event["kind"].as_str().unwrap().to_owned()).or_default() += 1;
        if let Some(model) = event["body"]["model"].as_str() {
            models.insert(model.to_owned());
        }
        if event["body"]["kind"] == "Reflection" {
            *kinds.entry("a reflection".to_owned()).or_default() += 1;
        }
    }
    for kind in
        ["PlanMade", "ActionStarted", "Moved", "MemoryAdded", "DialogueTurn", "a reflection"]
    {
        assert!(kinds.get(kind).copied().unwrap_or(0) > 0, "no {kind} in {kinds:?}");
    }
    assert!(
        models.iter().any(|m| m.starts_with("qwen2.5-coder")),
        "the embedded model made it: {models:?}"
    );

    let town: serde_json::Value =
        serde_json::from_str(&run(&["show", file, "--at", "day0 08:00", "--format", "json"]))
            .unwrap();
    assert_eq!(town["agents"].as_array().unwrap().len(), 5);
    assert!(town["state_hash"].as_str().unwrap().starts_with("st_"));

    let transcript = run(&["transcript", file]);
    assert!(transcript.contains("## Tobias Ashcombe and Delphine Ashcombe"), "{transcript}");

    let agent = run(&["show", file, "--agent", "Delphine Ashcombe", "--at", "day0 08:30"]);
    assert!(agent.contains("memory stream"), "{agent}");
    let why = run(&["why", file, "--agent", "Delphine Ashcombe", "--at", "day0 08:45"]);
    assert!(why.contains("LlmRequested") && why.contains("recalled"), "{why}");

    // Who was at the Ashcombes' house that morning: the two who live there, all morning.
    let at_home = |place: &str| {
        let csv = run(&[
            "research",
            "attendance",
            file,
            "--place",
            place,
            "--from",
            "day0 07:00",
            "--until",
            "day0 09:00",
            "--format",
            "csv",
        ]);
        csv.lines()
            .skip(1)
            .map(|l| l.split(',').map(str::to_owned).collect())
            .collect::<Vec<Vec<String>>>()
    };
    let rows = at_home("ashcombe house");
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["Delphine Ashcombe", "Tobias Ashcombe"], "{rows:?}");
    assert!(rows.iter().all(|r| r[1] == "day 0 07:00:00"), "{rows:?}");
    assert_eq!(at_home("Ashcombe house:bedroom").len(), 2, "an arena too");
    let out = command(&[
        "research".into(),
        "attendance".into(),
        file.into(),
        "--place".into(),
        "Nowhere".into(),
        "--from".into(),
        "7:00".into(),
        "--until".into(),
        "9:00".into(),
    ])
    .output()
    .unwrap();
    assert!(!out.status.success() && text(&out).contains("Marigold café"), "{}", text(&out));
}

/// The shipped town with its first persona thinking with the model named `model`.
fn town_naming(dir: &Path, model: &str) -> (std::path::PathBuf, String) {
    let source = hamlet_engine::town::WILLOWMERE.replacen(
        "strategy = \"full\"",
        &format!("strategy = \"full\"\nmodel = \"{model}\""),
        1,
    );
    let first =
        hamlet_engine::town::Definition::parse("t.toml", &source).unwrap().personas[0].name.clone();
    let path = dir.join(format!("town-{model}.toml"));
    std::fs::write(&path, source).unwrap();
    (path, first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persona_thinks_with_the_model_its_town_names_from_the_config_files_profile() {
    let run_server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let b_server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[models.b]\nbase_url = \"{}\"\nmodel = \"rules-b\"\napi_key_env = \"B_KEY\"\n",
            b_server.base_url()
        ),
    )
    .unwrap();
    let (town, first) = town_naming(tmp.path(), "b");
    let store = tmp.path().join("run");
    let mut a = args(&run_server, &store, &["run", "--hours", "0.05", "--town"]);
    a.insert(4, town.display().to_string());
    a.extend(["--config".to_owned(), config.display().to_string()]);

    // Its key is read from the environment, and a profile without one is refused up front.
    let out = tokio::task::spawn_blocking({
        let a = a.clone();
        move || command(&a).env_remove("B_KEY").output().unwrap()
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("reads its key from $B_KEY, which is not set"), "{}", text(&out));
    assert_eq!(b_server.count() + run_server.count(), 0, "nothing asked before the check");

    let out =
        tokio::task::spawn_blocking(move || command(&a).env("B_KEY", "sk-b").output().unwrap())
            .await
            .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("agents naming `b` think with rules-b"), "{}", text(&out));
    assert!(b_server.count() > 0 && run_server.count() > 0);
    for r in b_server.requests() {
        assert_eq!(r.body["model"], "rules-b", "{}", r.line);
        assert_eq!(r.authorization.as_deref(), Some("Bearer sk-b"), "its own key");
    }

    let log = events(&store, "main");
    let agent = log.iter().find_map(|e| match &e.body {
        Body::AgentJoined(j) if j.name == first => Some(j.agent),
        _ => None,
    });
    let (mut mine, mut others) = (0, 0);
    for e in &log {
        if let Body::LlmRequested(r) = &e.body {
            if r.agent.is_some() && r.agent == agent {
                assert_eq!(
                    (r.model.as_str(), r.server.as_str()),
                    ("rules-b", b_server.base_url().as_str())
                );
                mine += 1;
            } else {
                assert_eq!(r.model, "rules");
                others += 1;
            }
        }
    }
    assert!(mine > 0 && others > 0, "{mine} calls by b, {others} by the run's model");
    let to_b = b_server.requests().iter().filter(|r| r.line.contains("/chat/completions")).count();
    assert_eq!(to_b, mine, "every call of that agent's went to its server, and no other");

    // The costs, broken down by model; resumed, the agent still asks its own.
    let cost = at_store(&store, &["cost"]);
    let cost_text = text(&cost);
    let by_model = cost_text.split("by model").nth(1).unwrap_or_default();
    assert!(by_model.contains("rules-b") && by_model.contains("rules "), "{cost_text}");

    // Another agent is set to think with `b` by hand; resumed, its calls go there.
    let second = hamlet_engine::town::Definition::parse("t.toml", hamlet_engine::town::WILLOWMERE)
        .unwrap()
        .personas[1]
        .name
        .clone();
    let mut edit =
        args(&run_server, &store, &["edit-persona", "--agent", &second, "--thinks-with", "b"]);
    edit.extend(["--config".to_owned(), config.display().to_string()]);
    let out =
        tokio::task::spawn_blocking(move || command(&edit).env("B_KEY", "sk-b").output().unwrap())
            .await
            .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(&format!("{second} thinks with the model `b` from now on")));
    let asked_before = b_server.count();
    let mut resume = args(&run_server, &store, &["run", "--resume", "--hours", "1"]);
    resume.extend(["--config".to_owned(), config.display().to_string()]);
    let out = tokio::task::spawn_blocking(move || {
        command(&resume).env("B_KEY", "sk-b").output().unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(b_server.count() > asked_before);
    let log = events(&store, "main");
    let set_at = log
        .iter()
        .position(|e| matches!(&e.body, Body::Intervened(i)
            if matches!(&i.intervention, hamlet_log::event::Intervention::SetModel { model, .. } if model == "b")))
        .expect("the change is one event");
    let second_id = log.iter().find_map(|e| match &e.body {
        Body::AgentJoined(j) if j.name == second => Some(j.agent),
        _ => None,
    });
    let models_after: Vec<&str> = log[set_at..]
        .iter()
        .filter_map(|e| match &e.body {
            Body::LlmRequested(r) if r.agent.is_some() && r.agent == second_id => {
                Some(r.model.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(
        !models_after.is_empty() && models_after.iter().all(|m| *m == "rules-b"),
        "{models_after:?}"
    );

    // A name with no model is refused before the run starts, saying what names there are.
    let (lacking, _) = town_naming(tmp.path(), "c");
    let other = tmp.path().join("other");
    let mut a = args(&run_server, &other, &["run", "--hours", "0.01", "--town"]);
    a.insert(4, lacking.display().to_string());
    a.extend(["--config".to_owned(), config.display().to_string()]);
    let out = hamlet(a).await;
    assert!(!out.status.success());
    let said = text(&out);
    assert!(said.contains("no model named `c`") && said.contains("default, small, b"), "{said}");
    assert!(Store::open(&other).map_or(true, |s| s.branches().is_empty()), "no run was started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_rates_each_goal_on_a_scratch_fork_and_the_branch_stays_untouched() {
    let server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let tmp = tempfile::tempdir().unwrap();
    let source = hamlet_engine::town::WILLOWMERE.replacen(
        "strategy = \"full\"",
        "strategy = \"full\"\ngoal = \"she wants to open a second café\"",
        1,
    );
    let first =
        hamlet_engine::town::Definition::parse("t.toml", &source).unwrap().personas[0].name.clone();
    let town = tmp.path().join("goal.toml");
    std::fs::write(&town, source).unwrap();
    let store = tmp.path().join("run");
    let mut a = args(&server, &store, &["run", "--hours", "0.02", "--town"]);
    a.insert(4, town.display().to_string());
    let out = hamlet(a).await;
    assert!(out.status.success(), "{}", text(&out));
    let before = events(&store, "main").len();

    let out = hamlet(args(&server, &store, &["research", "judge-goals", "--format", "csv"])).await;
    assert!(out.status.success(), "{}", text(&out));
    let csv = String::from_utf8_lossy(&out.stdout).to_string();
    let row = format!("{first},she wants to open a second café,4");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert_eq!(lines[0], "time,agent,goal,rating");
    assert!(lines[1].starts_with("day 0 07:01") && lines[1].ends_with(&row), "{csv}");
    assert!(
        text(&out).contains("judged by rules on the scratch branch `main-research-1`"),
        "{}",
        text(&out)
    );
    assert_eq!(events(&store, "main").len(), before, "the branch measured is untouched");
    let scratch = events(&store, "main-research-1");
    assert!(scratch.iter().any(|e| matches!(&e.body,
        Body::LlmRequested(r) if r.purpose == "goal_judgement" && r.model == "rules")));

    // Over time: every 30 s from the start, each moment on a scratch fork of its own.
    let out = hamlet(args(
        &server,
        &store,
        &["research", "judge-goals", "--every", "30s", "--format", "csv"],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let csv = String::from_utf8_lossy(&out.stdout).to_string();
    let times: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(times.len(), 3, "{csv}");
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{csv}");
    assert_eq!(events(&store, "main").len(), before, "the branch measured is untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiz_asks_every_agent_on_scratch_forks_and_scores_each_answer_by_its_words() {
    let (server, tmp, store, _) = short_run().await;
    let quiz = tmp.path().join("quiz.toml");
    std::fs::write(
        &quiz,
        "[[question]]\nask = \"Where are you today?\"\nexpect = [\"Café\", \"market\"]\n\n\
         [[question]]\nask = \"Is there a party?\"\nexpect = [\"party\", \"market\"]\n\n\
         [[question]]\nask = \"How are you?\"\n",
    )
    .unwrap();
    let before = events(&store, "main").len();
    let q = quiz.display().to_string();
    let out =
        hamlet(args(&server, &store, &["research", "quiz", "--questions", &q, "--format", "csv"]))
            .await;
    assert!(out.status.success(), "{}", text(&out));
    let csv = String::from_utf8_lossy(&out.stdout).to_string();
    let agents = hamlet_engine::town::Definition::parse("t.toml", hamlet_engine::town::WILLOWMERE)
        .unwrap()
        .personas
        .len();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 3 * agents, "{csv}");
    // The test double answers "I am minding the café today, and the market opens late…".
    assert_eq!(rows.iter().filter(|r| r.ends_with(",1.00")).count(), agents, "{csv}");
    assert_eq!(rows.iter().filter(|r| r.ends_with(",0.50")).count(), agents, "{csv}");
    assert_eq!(rows.iter().filter(|r| r.ends_with(',')).count(), agents, "unscored: {csv}");
    assert_eq!(events(&store, "main").len(), before, "the branch asked is untouched");

    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "[[question]]\nask = \" \"\n").unwrap();
    let b = bad.display().to_string();
    let out = hamlet(args(&server, &store, &["research", "quiz", "--questions", &b])).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("question 1 asks nothing"), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_acts_as_mayor_from_the_command_line_and_the_town_reads_it() {
    let server = LoopbackServer::start(vec![], Reply::Rules(over_http)).await;
    let tmp = tempfile::tempdir().unwrap();
    let town = tmp.path().join("led.toml");
    std::fs::write(
        &town,
        format!(
            "{}\n[mayor]\nwho = \"player\"\nfunds_cents = 50000\nfound_cents = 40000\nsite = [{{ name = \"north lot\", at = [80, 1] }}]\n",
            hamlet_engine::town::WILLOWMERE
        ),
    )
    .unwrap();
    let store = tmp.path().join("run");
    let mut a = args(&server, &store, &["run", "--hours", "0.05", "--town"]);
    a.insert(4, town.display().to_string());
    let out = hamlet(a).await;
    assert!(out.status.success(), "{}", text(&out));
    let mayor = |rest: &[&str]| {
        let mut v = vec!["mayor"];
        v.extend_from_slice(rest);
        args(&server, &store, &v)
    };
    // Refused, with why, and nothing written.
    let before = events(&store, "main").len();
    for (rest, says) in [
        (
            vec!["found", "--template", "Marigold café", "--name", "Bakery", "--site", "south lot"],
            "no site `south lot`; the town's sites are north lot",
        ),
        (
            vec!["post-job", "--sector", "Nowhere", "--title", "baker", "--wage", "15"],
            "no sector `Nowhere`",
        ),
        (
            vec!["post-job", "--sector", "Marigold café", "--title", "baker", "--wage", "0"],
            "more than 0",
        ),
    ] {
        let out = hamlet(mayor(&rest)).await;
        assert!(!out.status.success(), "{rest:?}");
        assert!(text(&out).contains(says), "{rest:?}: {}", text(&out));
    }
    assert_eq!(events(&store, "main").len(), before);
    // Founded and paid; a job posted; a second founding the treasury cannot pay.
    let out = hamlet(mayor(&[
        "found",
        "--template",
        "Marigold café",
        "--name",
        "Oak Hill bakery",
        "--site",
        "north lot",
    ]))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("founds Oak Hill bakery on north lot"), "{}", text(&out));
    assert!(text(&out).contains("the treasury holds $100.00"), "{}", text(&out));
    let out = hamlet(mayor(&[
        "post-job",
        "--sector",
        "Oak Hill bakery",
        "--title",
        "baker",
        "--wage",
        "15.50",
    ]))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("baker at $15.50 an hour"), "{}", text(&out));
    // The run goes on: everyone reads the notices, and someone takes the job.
    let out = hamlet(args(&server, &store, &["run", "--resume", "--hours", "0.3"])).await;
    assert!(out.status.success(), "{}", text(&out));
    let log = events(&store, "main");
    let notices = log
        .iter()
        .filter(|e| matches!(&e.body, Body::MemoryAdded(m) if m.description.starts_with("A notice from the mayor")))
        .count();
    assert_eq!(notices, 2 * 10, "two acts, ten agents");
    assert!(log.iter().any(|e| matches!(e.body, Body::JobTaken(_))));
    let listed = at_store(&store, &["log", "--kind", "MayorActed,JobTaken"]);
    assert!(text(&listed).contains("takes a job the mayor posted"), "{}", text(&listed));
    // The mayor's book: the founding paid from the treasury, the job taken.
    let book = at_store(&store, &["research", "mayor", "--format", "csv"]);
    assert!(book.status.success(), "{}", text(&book));
    let last = text(&book).lines().last().unwrap_or_default().to_owned();
    assert!(last.contains(",2,1,1,1,") && last.ends_with(",$400.00"), "{}", text(&book));
    let jobs = at_store(&store, &["research", "mayor", "--jobs", "--format", "csv"]);
    let jobs = text(&jobs);
    assert!(jobs.starts_with("posted,by,job,at,wage,taken by,taken,wages paid,first paid\n"));
    assert!(jobs.contains(",the person,baker,Oak Hill bakery,$15.50,"), "{jobs}");
}
