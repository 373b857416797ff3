//! `ScriptedServer`: a TEST DOUBLE of an OpenAI-compatible model server, for the window's
//! end-to-end tests. It is not a model and not a part of Hamlet: it listens on an
//! ephemeral port of 127.0.0.1, on threads of its own (so a test blocked in a WebDriver
//! call never stalls it), and answers what Hamlet's gateway asks of a server during a run:
//!
//! - `POST /v1/chat/completions` (and `/v1/completions`, the same for text prompts): when
//!   the request carries `response_format` with a JSON Schema, the answer is an instance of
//!   that schema made from the schema alone — every required property, numbers at 5 (or
//!   the nearest bound), the `i`-th value of an `enum` for the `i`-th item of a list (a
//!   schedule's steps come out distinct and in order), `HH:MM` times rising by the quarter
//!   hour, lists of `minItems` items, and strings that are short English phrases picked by
//!   a counter, so consecutive lines of dialogue differ. Without a schema the answer is a
//!   plain phrase, which Hamlet's free-text parser takes. A rating asked with `logprobs`
//!   gets an answer with no `logprobs`, as many servers give: the gateway then generates
//!   its ratings instead.
//! - `GET /v1/models`: the one model it pretends to serve. A completion asked of any other
//!   model is refused with 404 and "model '…' not found", as servers refuse one.
//!
//! Embeddings are not served (the tests embed with the local model). Each answer can be
//! held back by a delay set at any time, so that a continuation lasts long enough to be
//! cancelled or killed part way; the server counts the answers it gave, and stops when
//! dropped.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::webdriver::unchunk;

/// The model the double says it serves.
pub const MODEL: &str = "scripted-town";

/// What the server's threads share.
#[derive(Default)]
struct Shared {
    /// Set when the server is dropped.
    stop: AtomicBool,
    /// How long each model answer is held back, in milliseconds.
    delay_ms: AtomicU64,
    /// Requests received (each answer's phrases are picked by its number).
    received: AtomicU64,
    /// Model answers given.
    answered: AtomicU64,
}

/// The test double: an OpenAI-compatible server that answers by rule (see the module).
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accepting: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Starts the double on an ephemeral port of 127.0.0.1, answering at once.
    pub fn start() -> ScriptedServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("the scripted server binds");
        let addr = listener.local_addr().expect("the scripted server's address");
        let shared = Arc::new(Shared::default());
        let theirs = shared.clone();
        let accepting = std::thread::Builder::new()
            .name("scripted-server".into())
            .spawn(move || accept(&listener, &theirs))
            .expect("the scripted server's thread starts");
        ScriptedServer { addr, shared, accepting: Some(accepting) }
    }

    /// The base URL to give Hamlet (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Holds each model answer back by `delay` from now on.
    pub fn set_delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.shared.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Model answers given so far.
    pub fn answered(&self) -> u64 {
        self.shared.answered.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // The accepting thread waits in `accept`: a connection wakes it to see the stop.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.accepting.take() {
            let _ = thread.join();
        }
    }
}

/// Takes connections until the server is dropped; each is answered on a thread of its own
/// (the gateway asks several at once).
fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let shared = shared.clone();
        let _ = std::thread::Builder::new()
            .name("scripted-answer".into())
            .spawn(move || serve(stream, &shared));
    }
}

/// Answers one request on `stream`, then closes it.
fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let Some((line, body)) = read_request(&mut stream) else { return };
    let n = shared.received.fetch_add(1, Ordering::SeqCst);
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let path = path.split('?').next().unwrap_or_default();
    let asked_for = body.get("model").and_then(Value::as_str).unwrap_or(MODEL);
    let (status, reply, model_answer) = match (method, path) {
        // A model it does not serve is refused as servers refuse one.
        ("POST", p) if p.ends_with("completions") && asked_for != MODEL => (
            404,
            json!({ "error": { "message": format!("model '{asked_for}' not found"), "type": "invalid_request_error" } }),
            false,
        ),
        ("POST", p) if p.ends_with("/chat/completions") => {
            (200, chat_completion(&body, &answer_text(&body, n), n), true)
        }
        ("POST", p) if p.ends_with("/completions") => {
            (200, text_completion(&body, &answer_text(&body, n), n), true)
        }
        ("GET", p) if p.ends_with("/models") => (
            200,
            json!({ "object": "list", "data": [{ "id": MODEL, "object": "model", "owned_by": "scripted" }] }),
            false,
        ),
        _ => (
            404,
            json!({ "error": { "message": format!("the scripted server has no endpoint {method} {path}") } }),
            false,
        ),
    };
    if model_answer {
        hold_back(shared);
    }
    if shared.stop.load(Ordering::SeqCst) {
        return;
    }
    if respond(&mut stream, status, &reply.to_string()).is_ok() && model_answer {
        shared.answered.fetch_add(1, Ordering::SeqCst);
    }
}

/// Waits the delay set, in short slices so that a dropped server stops waiting.
fn hold_back(shared: &Shared) {
    let mut left = shared.delay_ms.load(Ordering::SeqCst);
    while left > 0 && !shared.stop.load(Ordering::SeqCst) {
        let slice = left.min(20);
        std::thread::sleep(Duration::from_millis(slice));
        left -= slice;
    }
}

/// One HTTP/1.1 request: its first line and its body as JSON (`null` if it has none).
fn read_request(stream: &mut TcpStream) -> Option<(String, Value)> {
    let mut raw = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&chunk[..n]);
    };
    let mut body = raw.split_off(head_end);
    let head = String::from_utf8_lossy(&raw).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default().to_owned();
    let mut length = 0usize;
    let mut chunked = false;
    for header in lines {
        let Some((name, value)) = header.split_once(':') else { continue };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().unwrap_or(0);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let complete = |b: &[u8]| {
        if chunked {
            b.ends_with(b"0\r\n\r\n")
        } else {
            b.len() >= length
        }
    };
    while !complete(body.as_slice()) {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = if chunked { unchunk(&body) } else { body.into_iter().take(length).collect() };
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some((line, value))
}

fn respond(stream: &mut TcpStream, status: u16, body: &str) -> std::io::Result<()> {
    let reason = if status == 200 { "OK" } else { "Not Found" };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()?;
    stream.shutdown(Shutdown::Write)
}

/// About a token per four characters: enough for the cost line to count something.
fn tokens(chars: usize) -> u64 {
    u64::try_from(chars / 4).unwrap_or(u64::MAX).max(1)
}

fn chat_completion(request: &Value, text: &str, n: u64) -> Value {
    let asked: usize = request["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["content"].as_str()).map(str::len).sum())
        .unwrap_or(0);
    let (prompt, completion) = (tokens(asked), tokens(text.len()));
    json!({
        "id": format!("chatcmpl-scripted-{n}"),
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": text },
            "finish_reason": "stop",
        }],
        "usage": { "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion },
    })
}

fn text_completion(request: &Value, text: &str, n: u64) -> Value {
    let (prompt, completion) =
        (tokens(request["prompt"].as_str().map_or(0, str::len)), tokens(text.len()));
    json!({
        "id": format!("cmpl-scripted-{n}"),
        "object": "text_completion",
        "created": 0,
        "model": MODEL,
        "choices": [{ "index": 0, "text": text, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion },
    })
}

/// What the double says to a request (the `n`-th it received).
fn answer_text(request: &Value, n: u64) -> String {
    let form = &request["response_format"];
    let schema = form["json_schema"].get("schema").or_else(|| form.get("schema"));
    if let Some(schema) = schema {
        return instance(schema, n, 0, "").to_string();
    }
    // A rating asked item by item for its probabilities: answered, but with no `logprobs`.
    if request.get("logprobs").is_some_and(|l| !l.is_null() && *l != json!(false)) {
        return json!({ "rating": 5 }).to_string();
    }
    pick(PHRASES, n, 0).to_owned()
}

/// One of `list`, by the request's number and the item's place.
fn pick(list: &'static [&'static str], n: u64, index: usize) -> &'static str {
    let at = usize::try_from(n % list.len() as u64).unwrap_or(0);
    list[(at + index) % list.len()]
}

/// An instance of `schema` (the `index`-th item of a list, under the property `name`) for
/// the `n`-th request.
fn instance(schema: &Value, n: u64, index: usize, name: &str) -> Value {
    if let Some(options) = schema.get("enum").and_then(Value::as_array).filter(|o| !o.is_empty()) {
        return options.get(index).unwrap_or(&options[0]).clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.iter().find_map(Value::as_str).unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "string",
    };
    match kind {
        "object" => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (key, property) in properties {
                    if required.is_empty() || required.contains(&key.as_str()) {
                        out.insert(key.clone(), instance(property, n, index, key));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            let least = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1);
            let most = schema.get("maxItems").and_then(Value::as_u64).unwrap_or(u64::MAX);
            let count = usize::try_from(least.max(1).min(most)).unwrap_or(1);
            let item = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array((0..count).map(|i| instance(&item, n, i, name)).collect())
        }
        "integer" | "number" => {
            let low = schema.get("minimum").and_then(Value::as_i64).unwrap_or(1);
            let high = schema.get("maximum").and_then(Value::as_i64).unwrap_or(low.max(5)).max(low);
            json!(5i64.clamp(low, high))
        }
        // A line of dialogue ends the talk now and then.
        "boolean" => json!(n % 4 == 3),
        "null" => Value::Null,
        _ => Value::String(words(schema, n, index, name)),
    }
}

/// A string for the property `name`: a time of day where the schema's pattern asks one
/// (rising by the quarter hour from 08:00 with the item's place), else a phrase that fits.
fn words(schema: &Value, n: u64, index: usize, name: &str) -> String {
    if schema.get("pattern").and_then(Value::as_str).is_some_and(|p| p.contains("[0-5][0-9]")) {
        let minute = (8 * 60 + 15 * index) % (24 * 60);
        return format!("{:02}:{:02}", minute / 60, minute % 60);
    }
    let list = match name {
        "say" => LINES,
        "activity" => ACTIVITIES,
        "insight" => INSIGHTS,
        _ => PHRASES,
    };
    let text = pick(list, n, index);
    let most = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .and_then(|m| usize::try_from(m).ok())
        .unwrap_or(usize::MAX);
    text.chars().take(most.max(1)).collect()
}

/// Free text: what an agent means to do, or thinks (an inner voice's intention is "NAME
/// intends to" and one of these).
const PHRASES: &[&str] = &[
    "take a slow walk around the square and greet the neighbours",
    "finish the chores at home first and then visit a friend",
    "stop by the café for a coffee and a chat",
    "spend the afternoon in the garden planting herbs",
    "write a letter to an old friend about the week",
    "help out at the market stall for an hour",
    "read quietly by the window until lunch",
    "ask around town whether anyone needs a hand today",
];

/// Lines of dialogue: no two share many words, so a talk does not end at once.
const LINES: &[&str] = &[
    "Good morning! Did you sleep well?",
    "I am baking bread later, would you like a loaf?",
    "The weather looks lovely for a walk by the river.",
    "Have you heard about the party at the café tonight?",
    "My garden finally has tomatoes ripening.",
    "Let us meet at the market around noon.",
    "I still need to fix that squeaky door upstairs.",
    "Thank you, that sounds wonderful. See you soon!",
];

/// Steps of a plan.
const ACTIVITIES: &[&str] = &[
    "reads the morning paper at home",
    "tidies the kitchen and washes the dishes",
    "walks to the market for fresh bread",
    "writes letters at the desk",
    "waters the plants in the garden",
    "stops by the café for a coffee",
    "reads a book by the window",
    "chats with a neighbour outside",
];

/// A reflection's insights.
const INSIGHTS: &[&str] = &[
    "cares a great deal about the neighbours",
    "enjoys the quiet routine of the mornings",
    "looks forward to seeing friends at the café",
    "likes to keep busy with small tasks",
];
