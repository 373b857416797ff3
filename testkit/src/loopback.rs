//! A test double: an OpenAI-compatible server on loopback that plays a script of replies
//! (answers, 500s, 429s with `Retry-After`, slow answers, malformed JSON, dropped
//! connections) over real HTTP, and keeps every request it received. Test code only.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with this chat answer's content.
    Chat(String),
    /// 200 with these embedding vectors.
    Embed(Vec<Vec<f32>>),
    /// 200 with this body as it is.
    Json(String),
    /// A status, an optional `Retry-After` in seconds, and a body.
    Status(u16, Option<u32>, String),
    /// Wait, then give the reply.
    Slow(Duration, Box<Reply>),
    /// 503 for a request whose body hashes to a multiple of `n` the first time it comes,
    /// the reply the second time: failures that fall on the same calls whatever the order
    /// of arrival, each retried once.
    FailFirst(u64, Box<Reply>),
    /// Wait a time drawn for each request from `0..=max` by a hash of the seed and the
    /// request's arrival number, then give the reply: a server whose latencies vary.
    Jitter(Duration, u64, Box<Reply>),
    /// 200 with a body that is not JSON.
    Malformed,
    /// Read the request, then close the connection without a word.
    Drop,
    /// The reply this function makes of the request (a server that answers by rule).
    Rules(fn(&Received) -> Reply),
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Received {
    /// `POST /v1/chat/completions`, ….
    pub line: String,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The body, parsed.
    pub body: serde_json::Value,
}

/// The running server.
pub struct LoopbackServer {
    /// Where it listens.
    pub addr: SocketAddr,
    script: Arc<Mutex<VecDeque<Reply>>>,
    /// What it received, in order.
    pub received: Arc<Mutex<Vec<Received>>>,
    fallback: Reply,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: Arc<Mutex<(usize, usize)>>,
    /// The bodies [`Reply::FailFirst`] has failed once.
    failed: Arc<Mutex<std::collections::BTreeSet<[u8; 32]>>>,
    /// Requests received so far, kept or not.
    count: Arc<AtomicU64>,
    /// Whether to keep each request received (a long benchmark does not).
    keep: Arc<AtomicBool>,
}

impl LoopbackServer {
    /// Starts a server that plays `script`, then answers `fallback` forever.
    pub async fn start(script: Vec<Reply>, fallback: Reply) -> LoopbackServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("address");
        let server = LoopbackServer {
            addr,
            script: Arc::new(Mutex::new(script.into())),
            received: Arc::new(Mutex::new(Vec::new())),
            fallback,
            in_flight: Arc::new(Mutex::new((0, 0))),
            failed: Arc::default(),
            count: Arc::default(),
            keep: Arc::new(AtomicBool::new(true)),
        };
        let (script, received, fallback, in_flight, failed, count, keep) = (
            server.script.clone(),
            server.received.clone(),
            server.fallback.clone(),
            server.in_flight.clone(),
            server.failed.clone(),
            server.count.clone(),
            server.keep.clone(),
        );
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let (script, received, fallback, in_flight, failed, count, keep) = (
                    script.clone(),
                    received.clone(),
                    fallback.clone(),
                    in_flight.clone(),
                    failed.clone(),
                    count.clone(),
                    keep.clone(),
                );
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else { return };
                    {
                        let mut n = in_flight.lock().unwrap();
                        n.0 += 1;
                        n.1 = n.1.max(n.0);
                    }
                    let reply = script.lock().unwrap().pop_front().unwrap_or(fallback);
                    let arrival = count.fetch_add(1, Ordering::SeqCst) + 1;
                    if keep.load(Ordering::SeqCst) {
                        received.lock().unwrap().push(request.clone());
                    }
                    let reply = by_rule(reply, &request, arrival, &failed);
                    let _ = respond(&mut socket, reply).await;
                    in_flight.lock().unwrap().0 -= 1;
                });
            }
        });
        server
    }

    /// The most requests it was answering at once.
    pub fn max_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }

    /// The requests it is answering now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().0
    }

    /// How many requests it has received.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Keeps each request from now on (the default), or only counts them: a long benchmark's
    /// hundreds of thousands of prompts would weigh on the memory it measures.
    pub fn keep_requests(&self, keep: bool) {
        self.keep.store(keep, Ordering::SeqCst);
    }

    /// The base URL to give the client.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// A reply with its rules applied to the request, the `arrival`-th the server received.
fn by_rule(
    reply: Reply,
    request: &Received,
    arrival: u64,
    failed: &Mutex<std::collections::BTreeSet<[u8; 32]>>,
) -> Reply {
    match reply {
        Reply::Rules(rule) => rule(request),
        Reply::Slow(delay, then) => {
            Reply::Slow(delay, Box::new(by_rule(*then, request, arrival, failed)))
        }
        Reply::FailFirst(n, then) => {
            let hash = *blake3::hash(request.body.to_string().as_bytes()).as_bytes();
            let draw = u64::from_le_bytes(hash[..8].try_into().unwrap());
            if draw % n == 0 && failed.lock().unwrap().insert(hash) {
                Reply::Status(503, None, "{\"error\": \"busy, try again\"}".into())
            } else {
                by_rule(*then, request, arrival, failed)
            }
        }
        Reply::Jitter(max, seed, then) => {
            let mut hasher = blake3::Hasher::new();
            hasher.update(&seed.to_le_bytes()).update(&arrival.to_le_bytes());
            let draw = u64::from_le_bytes(hasher.finalize().as_bytes()[..8].try_into().unwrap());
            let delay = max.mul_f64((draw >> 11) as f64 / (1u64 << 53) as f64);
            Reply::Slow(delay, Box::new(by_rule(*then, request, arrival, failed)))
        }
        other => other,
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let line = lines.next().unwrap_or_default().to_owned();
    let mut length = 0usize;
    let mut authorization = None;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            if k.eq_ignore_ascii_case("authorization") {
                authorization = Some(v.trim().to_owned());
            }
        }
    }
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(serde_json::Value::Null);
    Some(Received { line, authorization, body })
}

fn respond(
    socket: &mut tokio::net::TcpStream,
    reply: Reply,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send + '_>> {
    Box::pin(async move {
        let (status, extra, body) = match reply {
            Reply::Chat(content) => (200, String::new(), chat_body(&content)),
            Reply::Embed(vectors) => (200, String::new(), embed_body(&vectors)),
            Reply::Json(body) => (200, String::new(), body),
            Reply::Status(code, retry, body) => {
                (code, retry.map(|s| format!("Retry-After: {s}\r\n")).unwrap_or_default(), body)
            }
            Reply::Slow(delay, then) => {
                tokio::time::sleep(delay).await;
                return respond(socket, *then).await;
            }
            Reply::Jitter(..) | Reply::FailFirst(..) => {
                (500, String::new(), "{\"error\": \"a rule made a rule\"}".into())
            }
            Reply::Malformed => (200, String::new(), "{\"id\": \"x\", \"choices\": [".to_owned()),
            Reply::Drop => return socket.shutdown().await,
            Reply::Rules(_) => (500, String::new(), "{\"error\": \"a rule made a rule\"}".into()),
        };
        let response = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(response.as_bytes()).await?;
        socket.shutdown().await
    })
}

/// A chat completion whose message content is `content`.
pub fn chat_body(content: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": "loopback-model",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": content },
            "finish_reason": "stop",
        }],
        "usage": { "prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25 },
    })
    .to_string()
}

fn embed_body(vectors: &[Vec<f32>]) -> String {
    let data: Vec<serde_json::Value> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| serde_json::json!({ "object": "embedding", "index": i, "embedding": v }))
        .collect();
    serde_json::json!({
        "object": "list",
        "model": "loopback-embed",
        "data": data,
        "usage": { "prompt_tokens": 7, "total_tokens": 7 },
    })
    .to_string()
}

/// A gateway whose language model (`loopback-model`) and embedder (`loopback-embed`) are
/// this server, sending `key` (empty: none).
pub fn gateway(
    server: &LoopbackServer,
    key: &str,
    policy: hamlet_gateway::RetryPolicy,
) -> hamlet_gateway::Gateway {
    use hamlet_gateway::openai::{Endpoint, OpenAi, OpenAiEmbed};
    let endpoint = |model: &str| Endpoint {
        base_url: server.base_url(),
        api_key: key.into(),
        model: model.into(),
    };
    hamlet_gateway::Gateway::new(
        Arc::new(OpenAi::new(endpoint("loopback-model")).unwrap()),
        Arc::new(OpenAiEmbed::new(endpoint("loopback-embed")).unwrap()),
        hamlet_gateway::Params::default(),
        policy,
        4,
    )
}
