//! The embedded model: llama.cpp in-process, through `llama-cpp-2`.
//!
//! One worker thread owns the model and one context with a few **streams**, one for each
//! call read or answered at once (each of a call's context: its own KV cells, so attention
//! reads only them). Calls in flight together are decoded in one batch, one token per
//! sequence per step; more wait in arrival order for a free stream.
//!
//! Prompts are cached in **slots**, many more than the streams: a slot holds what one agent's
//! kind of call last read, so the next call of that kind reads only the rest (an agent's
//! stable preamble is read once, not on every call). A slot's prefix stays in its stream
//! after the call; when the stream is needed for another slot, the prefix's keys and values
//! are set aside in memory (llama.cpp's sequence state: bytes in proportion to its tokens) and
//! brought back, in milliseconds, when the slot is next taken. Past the room for them
//! ([`LocalConfig::cache_bytes`]) the prefixes set aside longest ago are dropped.
//!
//! A slot is kept for the prompts that share at least [`MIN_SHARED`] tokens with it, first
//! for the calls of the agent and template that last took it; a call with no such slot takes
//! an empty one while there are any (so an agent's importance, location and plan calls each
//! keep their own cached prefix, preamble and instructions, instead of cutting one another's
//! back to the preamble), else the slot sharing the longest prefix, else the least recently
//! used, so one agent's calls do not evict another's preamble ([`pick`]). A slot so taken
//! is first given the prefix of another slot, free or busy, that shares at least
//! [`MIN_SHARED`] more of the prompt ([`copy_source`]): copied from its stream or from
//! memory, which costs milliseconds where reading the shared tokens costs seconds.
//!
//! Ratings asked item by item (`StructuredForm::Probabilities`) generate nothing: each item's
//! prompt is read, the answer's opening (`{"rating": `) added, and the rating is the expected
//! value of the model's probabilities over the answers 1 to 10 at that point — one forward
//! pass, plus one token where "1" may begin "10". The probabilities go back with the answer.
//!
//! Prompts go through the model's own chat template (ChatML for Qwen2.5). Structured
//! answers are held to the shape's GBNF grammar. At temperature 0 the greedy token is
//! checked against the grammar first and the whole vocabulary is filtered only when it is
//! refused, which gives the same tokens as filtering every step at a fraction of the cost.
//! Above 0, sampling (temperature, top-p) is done here with a ChaCha stream seeded from the
//! call's seed and request hash, so a fixed seed gives the same answer on every machine
//! whose llama.cpp computes the same logits.
//!
//! Words an answer has already used weigh less for the rest of it ([`REPEAT_PENALTY`], on
//! tokens of four letters or more): greedy decoding of a small model otherwise copies its
//! first plan step into every later one. So do the words of the texts a call names to avoid
//! (a line of dialogue: the conversation's earlier lines, which a small model otherwise
//! says again nearly word for word).

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::OnceLock;

use hamlet_log::event::{FailureKind, Prompt};
use llama_cpp_2::context::params::{KvCacheType, LlamaContextParams};
use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use std::collections::BTreeMap;

use hamlet_log::event::StructuredForm;

use crate::answer::Shape;
use crate::backend::{Attempt, BackendError, BoxFuture, Completion, LlmBackend};
use crate::footprint::{KvType, CONTEXT_PER_CALL};
use crate::rating::expected_rating;

/// The most slots (cached prefixes) the model keeps.
pub const MAX_SLOTS: u32 = 256;

/// Tokens a free slot must share with a prompt to be reused for it rather than an empty or
/// least recently used one: more than the chat template's opening and a few words.
pub const MIN_SHARED: usize = 32;

/// What [`pick`] knows of a slot.
#[derive(Clone, Copy, Debug, Default)]
struct SlotView {
    /// No call is using it.
    free: bool,
    /// It holds nothing.
    empty: bool,
    /// It was last taken by a call of the same affinity (agent and template).
    same: bool,
    /// Tokens it shares with the prompt.
    common: usize,
    /// When it was last taken (the worker's clock).
    used: u64,
}

/// The slot a prompt of `len` tokens takes, among the free ones, in this order: the slot
/// last used by the same agent and template, if it shares at least [`MIN_SHARED`] tokens
/// (or the whole prompt); an empty slot, so that each of an agent's kinds of call keeps its
/// own cached prefix (preamble and template) instead of cutting another's back to the
/// preamble; the slot sharing the longest prefix, if that is at least [`MIN_SHARED`]; the
/// least recently used.
fn pick(slots: &[SlotView], len: usize) -> Option<usize> {
    let enough = MIN_SHARED.min(len);
    let free = || slots.iter().enumerate().filter(|(_, s)| s.free);
    let longest = |same: bool| {
        free()
            .filter(|(_, s)| s.common >= enough && (s.same || !same))
            .max_by(|a, b| a.1.common.cmp(&b.1.common).then(b.1.used.cmp(&a.1.used)))
            .map(|(i, _)| i)
    };
    longest(true)
        .or_else(|| free().find(|(_, s)| s.empty).map(|(i, _)| i))
        .or_else(|| longest(false))
        .or_else(|| free().min_by_key(|(i, s)| (s.used, *i)).map(|(i, _)| i))
}

/// The slot whose cache is copied into `chosen` (picked by [`pick`]) before a prompt is read
/// there: another slot, free or busy, that shares at least [`MIN_SHARED`] more of the prompt
/// (the one sharing most; the lowest index on a tie). So a call keeps to its own slot and
/// still reads only what no slot holds: an agent's first hour plan starts from the preamble
/// its importance ratings left in another slot.
fn copy_source(slots: &[SlotView], chosen: usize) -> Option<usize> {
    let have = slots.get(chosen)?.common;
    slots
        .iter()
        .enumerate()
        .filter(|(j, s)| *j != chosen && s.common >= have + MIN_SHARED)
        .max_by(|a, b| a.1.common.cmp(&b.1.common).then(b.0.cmp(&a.0)))
        .map(|(j, _)| j)
}

/// What the model is given to say before a rating is read from its probabilities.
const RATING_LEAD: &str = "{\"rating\": ";

/// The answers a rating is read over, in order.
const RATINGS: [&str; 10] = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"];

/// How the embedded model runs.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// The model's name, as events record it.
    pub model_name: String,
    /// CPU threads for decoding.
    pub threads: u32,
    /// Slots: prompt prefixes kept cached (at most [`MAX_SLOTS`]).
    pub slots: u32,
    /// Most tokens one call holds, prompt and answer.
    pub context_per_slot: u32,
    /// Calls read or generating at once: each has a stream of `context_per_slot` KV cells,
    /// allocated when the model starts.
    pub streams: u32,
    /// Bytes of memory for the prefixes of idle slots, kept out of the streams
    /// ([`crate::footprint::plan`]); the least recently used go first when it is full.
    pub cache_bytes: u64,
    /// How keys and values are stored.
    pub kv: KvType,
}

impl LocalConfig {
    /// Defaults for a model file: every core, [`DEFAULT_SLOTS`](crate::config::DEFAULT_SLOTS)
    /// slots, calls of up to [`CONTEXT_PER_CALL`] tokens (a reflection lists up to a
    /// hundred recent memories: about 2,000 to 3,700 tokens with its template and answer), one
    /// stream, no room for idle prefixes, `f16`. The CLI sizes streams and room to its use and
    /// the memory budget ([`crate::config::llm_backend`]).
    pub fn new(model_path: &Path, model_name: &str) -> LocalConfig {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
        LocalConfig {
            model_path: model_path.to_owned(),
            model_name: model_name.to_owned(),
            threads,
            slots: crate::config::DEFAULT_SLOTS,
            context_per_slot: CONTEXT_PER_CALL,
            streams: 1,
            cache_bytes: 0,
            kv: KvType::F16,
        }
    }
}

/// Counters of the worker, for benchmarks and `--verbose` output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalStats {
    /// Prompt tokens evaluated.
    pub prompt_evaluated: u64,
    /// Prompt tokens found in the KV cache and not evaluated again.
    pub prompt_cached: u64,
    /// Tokens generated.
    pub generated: u64,
    /// Decode calls made.
    pub decodes: u64,
    /// Wall-clock milliseconds spent reading prompts.
    pub prompt_ms: u64,
    /// Wall-clock milliseconds spent generating (decoding and sampling).
    pub generate_ms: u64,
    /// Slots given another slot's cache before reading a prompt ([`copy_source`]).
    pub copies: u64,
    /// Idle prefixes dropped to keep within the memory for them, least recently used first.
    pub evictions: u64,
    /// Idle prefixes set aside from a stream into memory, and brought back into one.
    pub saved: u64,
    /// Prefixes brought back from memory into a stream.
    pub restored: u64,
    /// Calls that waited for a free stream before they were read.
    pub waited: u64,
}

struct Job {
    prompt: Prompt,
    grammar: Option<String>,
    max_tokens: u32,
    temperature: f32,
    top_p: f32,
    seed: u64,
    stop: Vec<String>,
    /// Ratings read from probabilities: each item's whole prompt, and whether the answer is
    /// a list (`ratings`) or one (`rating`). Nothing is generated.
    score: Option<(Vec<Prompt>, bool)>,
    /// Whose call and of which template: a slot last taken by the same keeps its prefix
    /// for it ([`pick`]).
    affinity: String,
    /// Texts whose words weigh less in the answer ([`Call::avoid`](crate::request::Call)).
    avoid: Vec<String>,
    reply: tokio::sync::oneshot::Sender<Result<Completion, BackendError>>,
}

enum Message {
    Job(Box<Job>),
    Stats(mpsc::Sender<LocalStats>),
    ClearCache,
}

/// The embedded model, served by its worker thread.
pub struct LocalLlm {
    jobs: mpsc::Sender<Message>,
    model_name: String,
}

/// llama.cpp, started once, its log lines sent to `tracing` (off) rather than standard error.
pub(crate) fn backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(
                llama_cpp_2::LogOptions::default().with_logs_enabled(false),
            );
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn other(message: impl Into<String>) -> BackendError {
    BackendError::new(FailureKind::Other, message)
}

impl LocalLlm {
    /// Loads the model and starts the worker; returns once the model is loaded.
    pub fn start(config: LocalConfig) -> Result<LocalLlm, BackendError> {
        if !config.model_path.is_file() {
            return Err(BackendError::new(
                FailureKind::Refused,
                format!(
                    "no model file at {} (run `hamlet models fetch`, or pass --model PATH to a GGUF file)",
                    config.model_path.display()
                ),
            ));
        }
        let (jobs, inbox) = mpsc::channel::<Message>();
        let (ready_tx, ready) = mpsc::channel::<Result<(), BackendError>>();
        let model_name = config.model_name.clone();
        std::thread::Builder::new()
            .name("hamlet-llama".into())
            .spawn(move || worker(config, inbox, ready_tx))
            .map_err(|e| other(format!("cannot start the model's thread: {e}")))?;
        match ready.recv() {
            Ok(Ok(())) => Ok(LocalLlm { jobs, model_name }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(other("the model's thread stopped while loading")),
        }
    }

    /// The worker's counters so far.
    pub fn stats(&self) -> LocalStats {
        let (tx, rx) = mpsc::channel();
        if self.jobs.send(Message::Stats(tx)).is_err() {
            return LocalStats::default();
        }
        rx.recv().unwrap_or_default()
    }

    /// Forgets every cached prefix (benchmarks use it to measure cold calls).
    pub fn clear_cache(&self) {
        let _ = self.jobs.send(Message::ClearCache);
    }
}

impl LlmBackend for LocalLlm {
    fn name(&self) -> &str {
        "local"
    }

    fn server(&self) -> String {
        String::new()
    }

    fn model(&self) -> String {
        self.model_name.clone()
    }

    fn counters(&self) -> Option<String> {
        let s = self.stats();
        Some(format!(
            "the embedded model: {} prompt tokens read, {} found cached; {} generated; {} \
             prefixes copied, {} set aside, {} brought back, {} dropped; {} calls waited for a \
             stream",
            s.prompt_evaluated,
            s.prompt_cached,
            s.generated,
            s.copies,
            s.saved,
            s.restored,
            s.evictions,
            s.waited
        ))
    }

    /// A grammar made from the schema constrains every token: nothing to negotiate. Ratings
    /// asked item by item are read from the model's probabilities.
    fn structured_forms(&self) -> &[StructuredForm] {
        &[StructuredForm::Probabilities, StructuredForm::Grammar]
    }

    fn complete<'a>(
        &'a self,
        attempt: Attempt<'a>,
    ) -> BoxFuture<'a, Result<Completion, BackendError>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let score = if attempt.structured == StructuredForm::Probabilities {
            let call = attempt.call;
            let many = match call.shape {
                Shape::Importance if call.items.len() == 1 => false,
                Shape::Ratings { count } if usize::from(count) == call.items.len() => true,
                _ => {
                    let refused = BackendError::new(
                        FailureKind::Refused,
                        format!(
                            "only ratings are read from probabilities, one per item: a `{}` \
                             answer with {} items",
                            call.shape.name(),
                            call.items.len()
                        ),
                    );
                    return Box::pin(async move { Err(refused) });
                }
            };
            Some(((0..call.items.len()).filter_map(|i| call.item_prompt(i)).collect(), many))
        } else {
            None
        };
        let job = Job {
            affinity: format!(
                "{}/{}",
                attempt.call.agent.map_or_else(String::new, |a| a.0.to_string()),
                attempt.call.template
            ),
            prompt: attempt.call.prompt.clone(),
            avoid: attempt.call.avoid.clone(),
            grammar: match &attempt.call.shape {
                Shape::Json(schema) => {
                    match llama_cpp_2::json_schema_to_grammar(&schema.to_string()) {
                        Ok(g) => Some(g),
                        Err(e) => {
                            let refused = BackendError::new(
                                FailureKind::Refused,
                                format!(
                                    "llama.cpp cannot turn the JSON Schema into a grammar: {e}"
                                ),
                            );
                            return Box::pin(async move { Err(refused) });
                        }
                    }
                }
                shape => shape.gbnf(),
            },
            max_tokens: attempt.max_tokens,
            temperature: attempt.params.temperature,
            top_p: attempt.params.top_p,
            seed: job_seed(attempt.params.seed.unwrap_or(0), attempt.request_hash, attempt.attempt),
            stop: attempt.params.stop.clone(),
            score,
            reply,
        };
        let sent = self.jobs.send(Message::Job(Box::new(job)));
        Box::pin(async move {
            sent.map_err(|_| other("the model's thread has stopped"))?;
            answer.await.map_err(|_| other("the model's thread dropped the call"))?
        })
    }
}

/// The sampling stream's seed: the configured seed, the request and the try.
fn job_seed(seed: u64, request_hash: [u8; 32], attempt: u32) -> u64 {
    let mut hasher = blake3::Hasher::new_derive_key("hamlet 2026-11-22 local sampling seed");
    hasher.update(&seed.to_le_bytes());
    hasher.update(&request_hash);
    hasher.update(&attempt.to_le_bytes());
    let bytes = hasher.finalize();
    u64::from_le_bytes(bytes.as_bytes()[..8].try_into().unwrap_or([0; 8]))
}

/// One sequence of the context: a stream of `context_per_slot` KV cells where a call is read
/// and answered.
struct Stream {
    /// The tokens whose keys and values the stream holds.
    cached: Vec<LlamaToken>,
    /// When it was last used, for least-recently-used choice.
    used: u64,
    /// The affinity of the call that last took it ([`Job::affinity`]).
    affinity: String,
    active: Option<Active>,
    /// The slot whose prefix it holds.
    slot: Option<usize>,
}

/// A cached prefix: what one agent's kind of call last read. A stream holds it while a call
/// uses it and after, until the stream is needed for another slot; then its keys and values
/// are set aside in memory (llama.cpp's sequence state), and brought back into a stream when
/// its slot is next taken. Idle prefixes beyond the memory for them are dropped, the least
/// recently used first.
#[derive(Default)]
struct Slot {
    /// The tokens of the prefix.
    cached: Vec<LlamaToken>,
    /// When it was last used.
    used: u64,
    /// The affinity of the call that last took it.
    affinity: String,
    /// The stream holding exactly `cached`, if one does.
    stream: Option<usize>,
    /// `cached`'s keys and values set aside; none while a stream holds newer ones.
    saved: Option<SeqState>,
}

struct Active {
    job: Box<Job>,
    grammar: Option<LlamaSampler>,
    rng: rand_chacha::ChaCha8Rng,
    prompt_tokens: u32,
    /// Of the prompt's tokens, those found in the cache.
    prompt_cached: u32,
    generated: Vec<LlamaToken>,
    /// The word tokens this answer has already used ([`REPEAT_PENALTY`]).
    said: std::collections::BTreeSet<i32>,
    bytes: Vec<u8>,
    /// Batch index of this sequence's last token, whose logits decide the next.
    logits_at: i32,
}

fn worker(
    config: LocalConfig,
    inbox: mpsc::Receiver<Message>,
    ready: mpsc::Sender<Result<(), BackendError>>,
) {
    let loaded = (|| {
        let backend = backend().map_err(other)?;
        let params = LlamaModelParams::default().with_use_mmap(false);
        let model =
            LlamaModel::load_from_file(backend, &config.model_path, &params).map_err(|e| {
                other(format!("llama.cpp cannot load {}: {e}", config.model_path.display()))
            })?;
        Ok((backend, model))
    })();
    let (backend, model) = match loaded {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let slots = config.slots.clamp(1, MAX_SLOTS);
    let streams = config.streams.clamp(1, slots);
    let per_slot = config.context_per_slot.max(256);
    let threads = config.threads.clamp(1, 256) as i32;
    let kv = match config.kv {
        KvType::F16 => KvCacheType::F16,
        KvType::Q8_0 => KvCacheType::Q8_0,
    };
    let mut params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(streams.saturating_mul(per_slot)))
        .with_n_batch(512)
        .with_n_ubatch(512)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_n_seq_max(streams)
        // One KV stream per sequence: attention reads only its own cells. (In one unified
        // pool every token's attention scans every cell of the pool: with a town's pool of
        // 40,960 cells the same slice of a town took 21% longer.)
        .with_kv_unified(false)
        .with_type_k(kv)
        .with_type_v(kv);
    if config.kv != KvType::F16 {
        // llama.cpp keeps quantized values only with flash attention.
        params = params.with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED);
    }
    let ctx = match model.new_context(backend, params) {
        Ok(ctx) => ctx,
        Err(e) => {
            let _ = ready.send(Err(other(format!("llama.cpp cannot make a context: {e}"))));
            return;
        }
    };
    let template = model.chat_template(None).or_else(|_| LlamaChatTemplate::new("chatml"));
    let template = match template {
        Ok(t) => t,
        Err(e) => {
            let _ = ready.send(Err(other(format!("no chat template: {e}"))));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let mut server = Server {
        model: &model,
        ctx,
        template,
        streams: (0..streams)
            .map(|_| Stream {
                cached: Vec::new(),
                used: 0,
                affinity: String::new(),
                active: None,
                slot: None,
            })
            .collect(),
        slots: (0..slots).map(|_| Slot::default()).collect(),
        clock: 0,
        per_slot: per_slot as usize,
        cache_bytes: usize::try_from(config.cache_bytes).unwrap_or(usize::MAX),
        saved_bytes: 0,
        pending: std::collections::VecDeque::new(),
        model_name: config.model_name,
        stats: LocalStats::default(),
    };
    server.run(inbox);
}

struct Server<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    template: LlamaChatTemplate,
    /// Where calls are read and answered, one at a time each.
    streams: Vec<Stream>,
    /// The cached prefixes.
    slots: Vec<Slot>,
    clock: u64,
    /// Most tokens one call holds.
    per_slot: usize,
    /// Bytes the prefixes set aside may take.
    cache_bytes: usize,
    /// Bytes they take.
    saved_bytes: usize,
    /// Calls waiting for a free stream, in arrival order.
    pending: std::collections::VecDeque<Box<Job>>,
    model_name: String,
    stats: LocalStats,
}

impl Server<'_> {
    fn run(&mut self, inbox: mpsc::Receiver<Message>) {
        let mut open = true;
        loop {
            // Wait for work when idle; otherwise take what has arrived.
            if open && !self.busy() && self.pending.is_empty() {
                match inbox.recv() {
                    Ok(message) => self.handle(message),
                    Err(_) => open = false,
                }
            }
            while open {
                match inbox.try_recv() {
                    Ok(message) => self.handle(message),
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => open = false,
                }
            }
            // Start what the free streams can take, in arrival order.
            while self.has_room() {
                let Some(job) = self.pending.pop_front() else { break };
                if job.score.is_some() {
                    self.score(job);
                } else {
                    self.admit(job);
                }
            }
            if self.busy() {
                self.step();
            } else if !open && self.pending.is_empty() {
                return;
            }
        }
    }

    /// Whether any call is generating.
    fn busy(&self) -> bool {
        self.streams.iter().any(|s| s.active.is_some())
    }

    /// Whether another call can start: a free stream.
    fn has_room(&self) -> bool {
        self.streams.iter().any(|s| s.active.is_none())
    }

    /// A job waits its turn; anything else is answered at once.
    fn handle(&mut self, message: Message) {
        match message {
            Message::Job(job) => {
                let free = self.streams.iter().filter(|s| s.active.is_none()).count();
                if free <= self.pending.len() {
                    self.stats.waited += 1;
                }
                self.pending.push_back(job);
            }
            Message::Stats(tx) => {
                let _ = tx.send(self.stats);
            }
            Message::ClearCache => {
                let _ = self.ctx.clear_kv_cache_seq(None, None, None);
                // Active sequences were cleared too: their work is lost; fail them cleanly.
                for stream in &mut self.streams {
                    if let Some(active) = stream.active.take() {
                        let _ = active.job.reply.send(Err(other("the cache was cleared mid-call")));
                    }
                    stream.cached.clear();
                    stream.slot = None;
                }
                for slot in &mut self.slots {
                    *slot = Slot::default();
                }
                self.saved_bytes = 0;
            }
        }
    }

    /// Renders a prompt as the model's template wants it.
    fn render(&self, prompt: &Prompt) -> Result<String, BackendError> {
        match prompt {
            Prompt::Text(text) => Ok(text.clone()),
            Prompt::Chat(messages) => {
                let messages = messages
                    .iter()
                    .map(|m| LlamaChatMessage::new(m.role.clone(), m.content.clone()))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        BackendError::new(
                            FailureKind::Refused,
                            format!("a message holds a NUL byte: {e}"),
                        )
                    })?;
                self.model
                    .apply_chat_template(&self.template, &messages, true)
                    .map_err(|e| other(format!("the chat template failed: {e}")))
            }
        }
    }

    /// Takes a job into the free slot that shares the longest prefix, and reads its prompt.
    fn admit(&mut self, job: Box<Job>) {
        let result = self.try_admit(job);
        if let Err((job, error)) = result {
            let _ = job.reply.send(Err(error));
        }
    }

    /// The word tokens ([`REPEAT_MIN_LETTERS`] letters or more) of `texts`, as the
    /// repetition penalty counts them.
    fn words_of(&self, texts: &[String]) -> std::collections::BTreeSet<i32> {
        let vocab = self.model.vocab();
        let mut words = std::collections::BTreeSet::new();
        let mut piece = Vec::new();
        for text in texts {
            for token in vocab.tokenize(text.as_bytes(), false, false) {
                piece.clear();
                vocab.token_to_piece_into(token, &mut piece, false, None);
                if is_word(&piece) {
                    words.insert(token.0);
                }
            }
        }
        words
    }

    fn try_admit(&mut self, job: Box<Job>) -> Result<(), (Box<Job>, BackendError)> {
        let text = match self.render(&job.prompt) {
            Ok(t) => t,
            Err(e) => return Err((job, e)),
        };
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(text.as_bytes(), true, true);
        if tokens.is_empty() {
            return Err((job, BackendError::new(FailureKind::Refused, "the prompt is empty")));
        }
        let budget = self.per_slot;
        if tokens.len() + job.max_tokens as usize > budget {
            let message = format!(
                "the prompt is {} tokens and may grow by {}: more than the {budget} tokens a slot holds",
                tokens.len(),
                job.max_tokens
            );
            return Err((job, BackendError::new(FailureKind::Refused, message)));
        }
        let grammar = match &job.grammar {
            Some(g) => match LlamaSampler::grammar(self.model, g, "root") {
                Ok(s) => Some(s),
                Err(e) => {
                    return Err((job, other(format!("the answer's grammar is refused: {e}"))))
                }
            },
            None => None,
        };
        let (index, common) = match self.take_slot(&tokens, &job.affinity) {
            Ok(taken) => taken,
            Err(e) => return Err((job, e)),
        };
        // At least one token must be evaluated to get logits for the first answer token.
        let keep = common.min(tokens.len() - 1);
        let seq = index as i32;
        if let Err(e) = self.ctx.clear_kv_cache_seq(Some(index as u32), Some(keep as u32), None) {
            return Err((job, other(format!("cannot trim the cache: {e}"))));
        }
        self.stats.prompt_cached += keep as u64;
        self.stats.prompt_evaluated += (tokens.len() - keep) as u64;
        let watch = crate::stopwatch::Stopwatch::start();
        let fed = self.feed(seq, keep, &tokens[keep..]);
        self.stats.prompt_ms += u64::from(watch.millis());
        let logits_at = match fed {
            Ok(at) => at,
            Err(e) => {
                let _ = self.ctx.clear_kv_cache_seq(Some(index as u32), None, None);
                self.streams[index].cached.clear();
                self.settle(index);
                return Err((job, e));
            }
        };
        self.clock += 1;
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(job.seed);
        let said = self.words_of(&job.avoid);
        let slot = &mut self.streams[index];
        slot.cached = tokens.clone();
        slot.used = self.clock;
        slot.affinity.clone_from(&job.affinity);
        slot.active = Some(Active {
            prompt_tokens: tokens.len() as u32,
            prompt_cached: keep as u32,
            job,
            grammar,
            rng,
            generated: Vec::new(),
            said,
            bytes: Vec::new(),
            logits_at,
        });
        self.settle(index);
        // Its first token comes from the prompt's last logits, sampled in the next step;
        // those logits are lost if another decode runs first, so sample now.
        self.sample_one(index);
        Ok(())
    }

    /// Takes the free slot for a prompt ([`pick`]), puts its prefix in a free stream, and says
    /// which stream and how many of the prompt's tokens it holds. When another slot shares at
    /// least [`MIN_SHARED`] more of them ([`copy_source`]), the stream is given that slot's
    /// prefix instead (from the stream holding it, or from memory), which costs milliseconds
    /// where reading the tokens again costs seconds. The caller records what the stream then
    /// holds ([`Server::settle`]).
    fn take_slot(
        &mut self,
        tokens: &[LlamaToken],
        affinity: &str,
    ) -> Result<(usize, usize), BackendError> {
        let views: Vec<SlotView> = self
            .slots
            .iter()
            .map(|s| SlotView {
                free: s.stream.is_none_or(|t| self.streams[t].active.is_none()),
                empty: s.cached.is_empty(),
                same: !s.cached.is_empty() && s.affinity == affinity,
                common: common_prefix(&s.cached, tokens),
                used: s.used,
            })
            .collect();
        let Some(i) = pick(&views, tokens.len()) else {
            return Err(other("no free slot (a bug: there are more slots than streams)"));
        };
        let from = copy_source(&views, i);
        // The stream: the one holding the slot's prefix, else an empty one, else the least
        // recently used; whatever prefix it held is set aside first.
        let stream = match self.slots[i].stream {
            Some(t) => t,
            None => (0..self.streams.len())
                .filter(|&t| self.streams[t].active.is_none())
                .min_by_key(|&t| (self.streams[t].slot.is_some(), self.streams[t].used, t))
                .ok_or_else(|| other("no free stream (a bug: calls wait for one)"))?,
        };
        let source = from.unwrap_or(i);
        self.set_aside(stream, [i, source]);
        if self.slots[source].stream != Some(stream) {
            self.bring(source, stream)?;
        }
        // What the stream holds of the prompt (a prefix set aside may have had to go).
        let shared = views[source].common.min(self.streams[stream].cached.len());
        if from.is_some() {
            self.stats.copies += 1;
            // The slot's own prefix gives way to the longer one it was given.
            self.drop_saved(i);
            self.streams[stream].cached.truncate(shared);
        }
        self.streams[stream].slot = Some(i);
        self.slots[i].stream = Some(stream);
        Ok((stream, shared))
    }

    /// Puts slot `source`'s prefix in `stream`: a copy of the stream holding it, or its keys
    /// and values from memory. On failure the stream is left empty.
    fn bring(&mut self, source: usize, stream: usize) -> Result<(), BackendError> {
        let _ = self.ctx.clear_kv_cache_seq(Some(stream as u32), None, None);
        self.streams[stream].cached.clear();
        let tokens = self.slots[source].cached.clone();
        if tokens.is_empty() {
            return Ok(());
        }
        let brought = match (self.slots[source].stream, &self.slots[source].saved) {
            (Some(held), _) => self
                .ctx
                .copy_kv_cache_seq(held as i32, stream as i32, None, None)
                .map_err(|e| other(format!("cannot copy the cache: {e}"))),
            (None, Some(state)) => {
                self.stats.restored += 1;
                self.ctx
                    .state_seq_set(state, stream as i32)
                    .map_err(|e| other(format!("cannot bring a prefix back: {e}")))
            }
            (None, None) => Ok(()),
        };
        match brought {
            Ok(()) if self.ctx.kv_cache_seq_pos_max(stream as i32) + 1 == tokens.len() as i32 => {
                self.streams[stream].cached = tokens;
                Ok(())
            }
            Ok(()) => {
                // What came back is not the prefix it stood for: forget both.
                let _ = self.ctx.clear_kv_cache_seq(Some(stream as u32), None, None);
                self.drop_saved(source);
                if self.slots[source].stream.is_none() {
                    self.slots[source].cached.clear();
                }
                Ok(())
            }
            Err(e) => {
                let _ = self.ctx.clear_kv_cache_seq(Some(stream as u32), None, None);
                Err(e)
            }
        }
    }

    /// Before `stream` is given to slot `taker` to hold `source`'s prefix (`[taker, source]`):
    /// the prefix it holds for another slot is set aside in memory (if there is room for it,
    /// never at the cost of `source`'s, and it is not there already), or forgotten.
    fn set_aside(&mut self, stream: usize, [taker, source]: [usize; 2]) {
        let Some(held) = self.streams[stream].slot.take() else { return };
        if held == taker {
            self.streams[stream].slot = Some(held);
            return;
        }
        self.slots[held].stream = None;
        if self.slots[held].saved.is_some() || self.slots[held].cached.is_empty() {
            return;
        }
        let size = self.ctx.state_seq_get_size_ext(stream as i32, LlamaStateSeqFlags::empty());
        if self.make_room(size, [held, taker, source]) {
            if let Ok(state) = self.ctx.state_seq_get(stream as i32, LlamaStateSeqFlags::empty()) {
                self.saved_bytes += state.byte_len();
                self.slots[held].saved = Some(state);
                self.stats.saved += 1;
                return;
            }
        }
        self.slots[held].cached.clear();
        self.stats.evictions += 1;
    }

    /// Drops the set-aside prefixes used longest ago (not those of the slots in `keep`) until
    /// `size` more bytes fit; false if they cannot.
    fn make_room(&mut self, size: usize, keep: [usize; 3]) -> bool {
        while self.saved_bytes + size > self.cache_bytes {
            let oldest = (0..self.slots.len())
                .filter(|j| !keep.contains(j) && self.slots[*j].saved.is_some())
                .min_by_key(|&j| (self.slots[j].used, j));
            let Some(j) = oldest else { return false };
            self.drop_saved(j);
            if self.slots[j].stream.is_none() {
                self.slots[j].cached.clear();
            }
            self.stats.evictions += 1;
        }
        true
    }

    /// Forgets slot `j`'s set-aside keys and values.
    fn drop_saved(&mut self, j: usize) {
        if let Some(state) = self.slots[j].saved.take() {
            self.saved_bytes = self.saved_bytes.saturating_sub(state.byte_len());
        }
    }

    /// Records what `stream` now holds in the slot it holds it for: its prefix grew or was cut,
    /// so what was set aside of it is out of date.
    fn settle(&mut self, stream: usize) {
        let Some(i) = self.streams[stream].slot else { return };
        self.drop_saved(i);
        let s = &self.streams[stream];
        let (cached, used, affinity) = (s.cached.clone(), s.used, s.affinity.clone());
        let slot = &mut self.slots[i];
        slot.cached = cached;
        slot.used = used;
        slot.affinity = affinity;
    }

    /// Answers a rating job from the model's probabilities, item by item.
    fn score(&mut self, job: Box<Job>) {
        let watch = crate::stopwatch::Stopwatch::start();
        let result = self.try_score(&job);
        self.stats.prompt_ms += u64::from(watch.millis());
        let _ = job.reply.send(result);
    }

    fn try_score(&mut self, job: &Job) -> Result<Completion, BackendError> {
        let Some((items, many)) = &job.score else {
            return Err(other("not a rating job (a bug)"));
        };
        let (mut tokens_prompt, mut tokens_cached) = (0u32, 0u32);
        let mut ratings = Vec::with_capacity(items.len());
        let mut probabilities = Vec::with_capacity(items.len());
        for item in items {
            let text = self.render(item)?;
            let vocab = self.model.vocab();
            let whole: Vec<Vec<LlamaToken>> = RATINGS
                .iter()
                .map(|answer| {
                    vocab.tokenize(format!("{text}{RATING_LEAD}{answer}").as_bytes(), true, true)
                })
                .collect();
            // The prompt is what every answer shares; each answer is what follows it.
            let shared =
                whole.iter().skip(1).map(|w| common_prefix(&whole[0], w)).min().unwrap_or(0);
            let prompt = whole[0].get(..shared).unwrap_or_default().to_vec();
            if prompt.is_empty() || whole.iter().any(|w| w.len() <= shared) {
                return Err(BackendError::new(FailureKind::Refused, "the rating prompt is empty"));
            }
            if prompt.len() + 4 > self.per_slot {
                let message = format!(
                    "the rating prompt is {} tokens: more than the {} tokens a slot holds",
                    prompt.len(),
                    self.per_slot
                );
                return Err(BackendError::new(FailureKind::Refused, message));
            }
            let answers: Vec<Vec<LlamaToken>> =
                whole.iter().map(|w| w[shared..].to_vec()).collect();
            let (index, common) = self.take_slot(&prompt, &job.affinity)?;
            let seq = index as i32;
            let keep = common.min(prompt.len() - 1);
            let trim = |ctx: &mut LlamaContext<'_>, at: usize| {
                ctx.clear_kv_cache_seq(Some(index as u32), Some(at as u32), None)
                    .map(|_| ())
                    .map_err(|e| other(format!("cannot trim the cache: {e}")))
            };
            trim(&mut self.ctx, keep)?;
            self.stats.prompt_cached += keep as u64;
            self.stats.prompt_evaluated += (prompt.len() - keep) as u64;
            tokens_prompt = tokens_prompt.saturating_add(prompt.len() as u32);
            tokens_cached = tokens_cached.saturating_add(keep as u32);
            let fed = self.feed(seq, keep, &prompt[keep..]);
            let at = match fed {
                Ok(at) => at,
                Err(e) => {
                    let _ = trim(&mut self.ctx, 0);
                    self.streams[index].cached.clear();
                    self.settle(index);
                    return Err(e);
                }
            };
            self.clock += 1;
            self.streams[index].cached = prompt.clone();
            self.streams[index].used = self.clock;
            self.streams[index].affinity.clone_from(&job.affinity);
            self.settle(index);
            // The next-token logits after the prompt, and after each answer's proper prefix.
            let mut next: BTreeMap<Vec<i32>, Vec<f32>> = BTreeMap::new();
            next.insert(Vec::new(), self.ctx.get_logits_ith(at).to_vec());
            let paths: std::collections::BTreeSet<Vec<LlamaToken>> =
                answers.iter().flat_map(|a| (1..a.len()).map(move |n| a[..n].to_vec())).collect();
            for path in paths {
                let fed = trim(&mut self.ctx, prompt.len())
                    .and_then(|()| self.feed(seq, prompt.len(), &path));
                match fed {
                    Ok(at) => {
                        let key = path.iter().map(|t| t.0).collect();
                        next.insert(key, self.ctx.get_logits_ith(at).to_vec());
                    }
                    Err(e) => {
                        let _ = trim(&mut self.ctx, 0);
                        self.streams[index].cached.clear();
                        self.settle(index);
                        return Err(e);
                    }
                }
            }
            if let Err(e) = trim(&mut self.ctx, prompt.len()) {
                self.streams[index].cached.clear();
                self.settle(index);
                return Err(e);
            }
            let answers: Vec<Vec<i32>> =
                answers.iter().map(|a| a.iter().map(|t| t.0).collect()).collect();
            let Some(p) = answer_probabilities(&answers, &next) else {
                return Err(other("the model gave no probability to any rating"));
            };
            let (rating, shares) = expected_rating(&p);
            ratings.push(rating);
            probabilities.push(shares);
        }
        let text = if *many {
            let listed: Vec<String> = ratings.iter().map(u8::to_string).collect();
            format!("{{\"ratings\": [{}]}}", listed.join(", "))
        } else {
            format!("{{\"rating\": {}}}", ratings.first().copied().unwrap_or(5))
        };
        Ok(Completion {
            text,
            tokens_prompt,
            tokens_completion: 0,
            finish_reason: "probabilities".into(),
            response_model: self.model_name.clone(),
            response_id: String::new(),
            probabilities,
            tokens_cached,
        })
    }

    /// Evaluates `tokens` for sequence `seq` from position `start`; returns the batch index
    /// of the last token (the only one with logits).
    fn feed(&mut self, seq: i32, start: usize, tokens: &[LlamaToken]) -> Result<i32, BackendError> {
        let n_batch = (self.ctx.n_batch() as usize).max(1);
        let mut batch = LlamaBatch::new(n_batch, 1);
        let mut pos = start as i32;
        let mut last = 0;
        let chunks = tokens.len().div_ceil(n_batch);
        for (c, chunk) in tokens.chunks(n_batch).enumerate() {
            batch.clear();
            for (i, &t) in chunk.iter().enumerate() {
                let logits = c + 1 == chunks && i + 1 == chunk.len();
                batch.add(t, pos, &[seq], logits).map_err(|e| other(format!("batch: {e}")))?;
                pos += 1;
            }
            self.decode(&mut batch)?;
            last = batch.n_tokens() - 1;
        }
        Ok(last)
    }

    /// Decodes a batch (a stream holds a call's whole context, so there is always room).
    fn decode(&mut self, batch: &mut LlamaBatch) -> Result<(), BackendError> {
        self.ctx.decode(batch).map_err(|e| other(format!("llama.cpp decode: {e}")))?;
        self.stats.decodes += 1;
        Ok(())
    }

    /// Picks the next token of slot `index` from its logits, and finishes the call if done.
    fn sample_one(&mut self, index: usize) {
        let n_vocab = self.model.n_vocab();
        let Some(active) = self.streams[index].active.as_mut() else { return };
        let logits = self.ctx.get_logits_ith(active.logits_at);
        let token = choose(logits, active, &self.ctx, n_vocab);
        let done = match token {
            None => Some(Err(other("the grammar allows no next token"))),
            Some(token) => {
                let vocab = self.model.vocab();
                if vocab.is_eog(token) {
                    Some(Ok("stop"))
                } else {
                    active.generated.push(token);
                    self.stats.generated += 1;
                    if (0..n_vocab).contains(&token.0) {
                        let from = active.bytes.len();
                        vocab.token_to_piece_into(token, &mut active.bytes, false, None);
                        if is_word(&active.bytes[from..]) {
                            active.said.insert(token.0);
                        }
                    }
                    let text = String::from_utf8_lossy(&active.bytes);
                    if let Some(stop) =
                        active.job.stop.iter().find(|s| !s.is_empty() && text.ends_with(s.as_str()))
                    {
                        let keep = active.bytes.len() - stop.len();
                        active.bytes.truncate(keep);
                        Some(Ok("stop"))
                    } else if active.generated.len() >= active.job.max_tokens as usize {
                        Some(Ok("length"))
                    } else if active.job.reply.is_closed() {
                        Some(Err(other("the caller stopped waiting")))
                    } else {
                        None
                    }
                }
            }
        };
        if let Some(outcome) = done {
            let slot = &mut self.streams[index];
            let Some(active) = slot.active.take() else { return };
            slot.cached.extend_from_slice(&active.generated);
            let reply = outcome.map(|finish| Completion {
                text: String::from_utf8_lossy(&active.bytes).into_owned(),
                tokens_prompt: active.prompt_tokens,
                tokens_completion: active.generated.len() as u32,
                finish_reason: finish.to_owned(),
                response_model: self.model_name.clone(),
                response_id: String::new(),
                probabilities: Vec::new(),
                tokens_cached: active.prompt_cached,
            });
            // The cache holds what was decoded: a token sampled last (the answer ended at a
            // stop string or at its length) never was, nor what an error cut short.
            let cached = self.ctx.kv_cache_seq_pos_max(index as i32) + 1;
            slot.cached.truncate(cached.max(0) as usize);
            let _ = active.job.reply.send(reply);
            self.settle(index);
        }
    }

    /// One decode of every active sequence's last token, then one sample each.
    fn step(&mut self) {
        let watch = crate::stopwatch::Stopwatch::start();
        self.step_untimed();
        self.stats.generate_ms += u64::from(watch.millis());
    }

    fn step_untimed(&mut self) {
        let active: Vec<usize> =
            (0..self.streams.len()).filter(|&i| self.streams[i].active.is_some()).collect();
        let mut batch = LlamaBatch::new(active.len().max(1), 1);
        for &i in &active {
            let Some(a) = self.streams[i].active.as_mut() else { continue };
            let Some(&last) = a.generated.last() else { continue };
            let pos = (a.prompt_tokens as usize + a.generated.len() - 1) as i32;
            a.logits_at = batch.n_tokens();
            if let Err(e) = batch.add(last, pos, &[i as i32], true) {
                self.fail(i, other(format!("batch: {e}")));
            }
        }
        if batch.n_tokens() == 0 {
            return;
        }
        if let Err(e) = self.decode(&mut batch) {
            for &i in &active {
                self.fail(i, e.clone());
            }
            return;
        }
        for &i in &active {
            self.sample_one(i);
        }
    }

    fn fail(&mut self, index: usize, error: BackendError) {
        let slot = &mut self.streams[index];
        if let Some(active) = slot.active.take() {
            let _ = self.ctx.clear_kv_cache_seq(Some(index as u32), None, None);
            slot.cached.clear();
            let _ = active.job.reply.send(Err(error));
            self.settle(index);
        }
    }
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The probability of each answer (token sequences after the prompt), from `next`: the
/// logits of the next token after the prompt followed by each answer's proper prefixes
/// (the empty prefix is the prompt itself). An answer that another extends ("1" of "10")
/// ends where the next token does not continue to that other. `None` if a needed
/// distribution is missing or none of the answers has any probability.
fn answer_probabilities(
    answers: &[Vec<i32>],
    next: &BTreeMap<Vec<i32>, Vec<f32>>,
) -> Option<Vec<f64>> {
    let prob = |path: &[i32], token: i32| -> Option<f64> {
        let logits = next.get(path)?;
        let max =
            logits.iter().copied().filter(|l| l.is_finite()).fold(f32::NEG_INFINITY, f32::max);
        if !max.is_finite() {
            return Some(0.0);
        }
        let sum: f64 =
            logits.iter().filter(|l| l.is_finite()).map(|&l| f64::from(l - max).exp()).sum();
        let l = *logits.get(usize::try_from(token).ok()?)?;
        Some(if l.is_finite() { f64::from(l - max).exp() / sum } else { 0.0 })
    };
    let mut out = Vec::with_capacity(answers.len());
    for answer in answers {
        if answer.is_empty() {
            return None;
        }
        let mut p = 1.0;
        for i in 0..answer.len() {
            p *= prob(&answer[..i], answer[i])?;
        }
        // Stops here only if the next token does not go on to a longer answer.
        let onward: std::collections::BTreeSet<i32> = answers
            .iter()
            .filter(|o| o.len() > answer.len() && o.starts_with(answer))
            .map(|o| o[answer.len()])
            .collect();
        let mut going_on = 0.0;
        for t in onward {
            going_on += prob(answer, t)?;
        }
        out.push(p * (1.0 - going_on).max(0.0));
    }
    let total: f64 = out.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return None;
    }
    Some(out.into_iter().map(|p| p / total).collect())
}

/// The next token: greedy at temperature 0 (the grammar consulted for the greedy token
/// first), otherwise temperature and top-p sampling from the ChaCha stream.
fn choose(
    logits: &[f32],
    active: &mut Active,
    ctx: &LlamaContext<'_>,
    n_vocab: i32,
) -> Option<LlamaToken> {
    let greedy = active.job.temperature <= 0.0;
    // Words already said weigh less (a penalised copy of the logits, when there are any).
    let penalised: Option<Vec<f32>> = (!active.said.is_empty()).then(|| {
        let mut l = logits.to_vec();
        for &t in &active.said {
            if let Some(x) = l.get_mut(t as usize) {
                *x = if *x > 0.0 { *x / REPEAT_PENALTY } else { *x * REPEAT_PENALTY };
            }
        }
        l
    });
    let logits = penalised.as_deref().unwrap_or(logits);
    let every = |active: &Active| -> LlamaTokenDataArray {
        if active.said.is_empty() {
            ctx.token_data_array_ith(active.logits_at)
        } else {
            LlamaTokenDataArray::from_iter(
                logits
                    .iter()
                    .enumerate()
                    .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0)),
                false,
            )
        }
    };
    let token = if greedy {
        let best = argmax(logits)?;
        match active.grammar.as_mut() {
            None => best,
            Some(grammar) => {
                let mut one = LlamaTokenDataArray::new(
                    vec![LlamaTokenData::new(best, logits[best.0 as usize], 0.0)],
                    false,
                );
                grammar.apply(&mut one);
                if one.data.first().is_some_and(|d| d.logit().is_finite()) {
                    best
                } else {
                    let mut all = every(active);
                    let grammar = active.grammar.as_mut()?;
                    grammar.apply(&mut all);
                    all.data
                        .iter()
                        .filter(|d| d.logit().is_finite())
                        .max_by(|a, b| {
                            a.logit().total_cmp(&b.logit()).then(b.id().0.cmp(&a.id().0))
                        })?
                        .id()
                }
            }
        }
    } else {
        let mut all = every(active);
        if let Some(grammar) = active.grammar.as_mut() {
            grammar.apply(&mut all);
        }
        let candidates: Vec<(LlamaToken, f32)> = all
            .data
            .iter()
            .filter(|d| d.logit().is_finite())
            .map(|d| (d.id(), d.logit()))
            .collect();
        sample(&candidates, active.job.temperature, active.job.top_p, &mut active.rng)?
    };
    if !(0..n_vocab).contains(&token.0) {
        return None;
    }
    if let Some(grammar) = active.grammar.as_mut() {
        // `apply` never accepts: accept exactly once per chosen token.
        grammar.accept(token);
    }
    Some(token)
}

/// How much less likely a word this answer already used becomes: its logit divided by this
/// (multiplied, when negative), as llama.cpp's repetition penalty does. Greedy decoding of a
/// 1.5B model otherwise copies its first plan step into every later one ("goes to work at
/// Marigold café" from 09:00 to 22:30) and its first sentence into a summary twice. Only
/// tokens with [`REPEAT_MIN_LETTERS`] letters count: JSON punctuation, numbers and short
/// words ("at", "the") are free to recur, and what the grammar forces is written anyway.
const REPEAT_PENALTY: f32 = 1.3;

/// The fewest letters a token needs to count as a word for [`REPEAT_PENALTY`].
const REPEAT_MIN_LETTERS: usize = 4;

/// Whether a token's text counts as a word for [`REPEAT_PENALTY`]: at least
/// [`REPEAT_MIN_LETTERS`] letters (any byte of a multi-byte character counts as one).
fn is_word(piece: &[u8]) -> bool {
    piece.iter().filter(|b| b.is_ascii_alphabetic() || **b >= 0x80).count() >= REPEAT_MIN_LETTERS
}

fn argmax(logits: &[f32]) -> Option<LlamaToken> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if l.is_finite() && best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    best.map(|(i, _)| LlamaToken(i as i32))
}

/// Temperature and nucleus sampling over finite candidates, from a pinned stream.
fn sample(
    candidates: &[(LlamaToken, f32)],
    temperature: f32,
    top_p: f32,
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Option<LlamaToken> {
    let max = candidates.iter().map(|c| c.1).fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return None;
    }
    let mut weighted: Vec<(LlamaToken, f64)> =
        candidates.iter().map(|&(t, l)| (t, f64::from((l - max) / temperature).exp())).collect();
    weighted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0 .0.cmp(&b.0 .0)));
    let total: f64 = weighted.iter().map(|w| w.1).sum();
    let p = f64::from(top_p.clamp(0.0, 1.0)).max(1e-9);
    let mut kept = 0.0;
    let mut cut = weighted.len();
    for (i, w) in weighted.iter().enumerate() {
        kept += w.1 / total;
        if kept >= p {
            cut = i + 1;
            break;
        }
    }
    weighted.truncate(cut);
    let mass: f64 = weighted.iter().map(|w| w.1).sum();
    let draw = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * mass;
    let mut acc = 0.0;
    for (t, w) in &weighted {
        acc += w;
        if draw < acc {
            return Some(*t);
        }
    }
    weighted.last().map(|w| w.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repetition_penalty_counts_tokens_of_four_letters_or_more() {
        assert!(is_word(b" Marigold") && is_word(b"work") && is_word("caf\u{e9}".as_bytes()));
        assert!(!is_word(b" the") && !is_word(b"\"}, ") && !is_word(b"2026") && !is_word(b""));
    }

    #[test]
    fn a_call_keeps_to_its_own_kinds_slot_then_an_empty_one() {
        let view = |same: bool, common: usize, used: u64| SlotView {
            free: true,
            empty: false,
            same,
            common,
            used,
        };
        let empty = SlotView { free: true, empty: true, ..SlotView::default() };
        // The same agent's other template shares more (its preamble), but the slot of the
        // same template is taken.
        let slots = [view(false, 300, 5), view(true, 250, 1), empty];
        assert_eq!(pick(&slots, 400), Some(1));
        // No slot of its own: an empty one, not the other template's.
        let slots = [view(false, 300, 5), empty];
        assert_eq!(pick(&slots, 400), Some(1));
        // No empty slot left: the longest sharer.
        let slots = [view(false, 300, 5), view(false, 100, 9)];
        assert_eq!(pick(&slots, 400), Some(0));
        // Its own slot sharing too little (another day's prompt) does not count as its own.
        let slots = [view(true, 10, 5), empty];
        assert_eq!(pick(&slots, 400), Some(1));
        // Nothing shares enough and nothing is empty: the least recently used.
        let slots = [view(false, 3, 7), view(false, 20, 2), view(true, 1, 4)];
        assert_eq!(pick(&slots, 400), Some(1));
        // A busy slot is never taken.
        let busy = SlotView { free: false, ..view(true, 300, 1) };
        assert_eq!(pick(&[busy, empty], 400), Some(1));
        assert_eq!(pick(&[busy], 400), None);
    }

    #[test]
    fn a_slot_taken_is_given_the_cache_of_one_that_shares_more() {
        let view = |free: bool, common: usize| SlotView { free, common, ..SlotView::default() };
        // The empty slot taken gets the preamble another slot (even a busy one) holds.
        let slots = [view(true, 0), view(false, 300), view(true, 120)];
        assert_eq!(copy_source(&slots, 0), Some(1));
        // Its own slot shares nearly as much: nothing to copy.
        let slots = [view(true, 280), view(false, 300)];
        assert_eq!(copy_source(&slots, 0), None);
        // At least MIN_SHARED more; the most; the lowest index on a tie.
        let slots = [view(true, 10), view(true, 10 + MIN_SHARED), view(true, 10 + MIN_SHARED)];
        assert_eq!(copy_source(&slots, 0), Some(1));
        assert_eq!(copy_source(&slots, 5), None, "no such slot");
        assert_eq!(copy_source(&[view(true, 50)], 0), None, "no other slot");
    }

    #[test]
    fn sampling_is_reproducible_and_respects_top_p() {
        let candidates: Vec<(LlamaToken, f32)> =
            (0..50).map(|i| (LlamaToken(i), -(i as f32) * 0.5)).collect();
        let draw = |seed| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            (0..20)
                .map(|_| sample(&candidates, 0.8, 0.5, &mut rng).map(|t| t.0))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        // With top-p 0.5 and these logits only the first few tokens can come out.
        assert!(draw(9).iter().all(|t| t.is_some_and(|t| t < 4)), "{:?}", draw(9));
        assert_eq!(argmax(&[0.1, f32::NAN, 3.0, 2.0]), Some(LlamaToken(2)));
        assert_eq!(argmax(&[f32::NEG_INFINITY]), None);
    }

    #[test]
    fn a_rating_is_the_expected_value_of_the_answers_probabilities() {
        // Tokens: 1..=9 are the digits, 0 is "0", 50 ends the answer. "10" is "1" then "0".
        let answers: Vec<Vec<i32>> =
            (1..=9).map(|d| vec![d]).chain(std::iter::once(vec![1, 0])).collect();
        let mut root = vec![f32::NEG_INFINITY; 64];
        root[3] = 0.0; // "3"
        root[1] = 0.0; // "1", which may go on to "10"
        let mut after_one = vec![f32::NEG_INFINITY; 64];
        after_one[0] = 0.0; // "10"
        after_one[50] = (3.0f32).ln(); // "1" and done: three times as likely
        let next = BTreeMap::from([(vec![], root.clone()), (vec![1], after_one)]);
        let p = answer_probabilities(&answers, &next).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(p[2], 0.5) && close(p[0], 0.375) && close(p[9], 0.125), "{p:?}");
        let (rating, shares) = expected_rating(&p);
        // 0.375 × 1 + 0.5 × 3 + 0.125 × 10 = 3.125
        assert_eq!(rating, 3);
        assert_eq!((shares[0], shares[2], shares[9]), (3750, 5000, 1250));
        // No probability anywhere, or a distribution missing: no rating.
        let dead = BTreeMap::from([(vec![], vec![f32::NEG_INFINITY; 64]), (vec![1], root)]);
        assert_eq!(answer_probabilities(&answers, &dead), None);
        assert_eq!(answer_probabilities(&answers, &BTreeMap::new()), None);
        // A confident 9 rates 9.
        let mut nine = vec![f32::NEG_INFINITY; 64];
        nine[9] = 0.0;
        let next = BTreeMap::from([(vec![], nine), (vec![1], vec![0.0; 64])]);
        assert_eq!(expected_rating(&answer_probabilities(&answers, &next).unwrap()).0, 9);
    }

    #[test]
    fn seeds_differ_by_request_and_try() {
        let a = job_seed(1, [0; 32], 1);
        assert_eq!(a, job_seed(1, [0; 32], 1));
        assert_ne!(a, job_seed(1, [0; 32], 2));
        assert_ne!(a, job_seed(1, [1; 32], 1));
        assert_ne!(a, job_seed(2, [0; 32], 1));
    }
}
