//! Which backend, which model, which settings: from flags, the environment, a config file
//! and defaults, in that precedence (a flag beats the environment, which beats the file,
//! which beats the default).
//!
//! | setting | flag | environment | file (`[llm]`) | default |
//! |---|---|---|---|---|
//! | backend | `--llm local\|openai` | — | `backend` | `openai` if a base URL is set anywhere, else `local` |
//! | base URL | `--base-url` | `OPENAI_BASE_URL` | `base_url` | `https://api.openai.com/v1` |
//! | API key | — (never a flag: it would show in `ps`) | `OPENAI_API_KEY` | `api_key` | none |
//! | model | `--model` | `HAMLET_MODEL` | `model` | `default` (local); required for a server other than OpenAI's (whose default is `gpt-4o-mini`) |
//! | embeddings | `--embed local\|openai` | — | `embed` | `local` |
//! | embedding model | `--embed-model` | — | `embed_model` | all-MiniLM-L6-v2 (local), `text-embedding-3-small` (openai) |
//! | temperature | `--temperature` | — | `temperature` | 0 |
//! | top-p | — | — | `top_p` | 1 |
//! | max tokens | `--max-tokens` | — | `max_tokens` | 256 |
//! | seed | `--seed` | — | `seed` | 0 |
//! | structured form | `--structured` | — | `structured` | `auto`: negotiated per server |
//! | timeout | `--timeout` (seconds) | — | `timeout_secs` | 120 (a remote server), 900 (the embedded model, or a server on this machine) |
//! | concurrency | `--concurrency` | — | `concurrency` | 8 (openai), 4 or the slots if fewer (local) |
//! | threads (local) | `--threads` | — | `threads` | every core |
//! | slots (local) | `--slots` | — | `slots` | 64 ([`DEFAULT_SLOTS`]); 1 for `hamlet llm complete` |
//! | memory budget (local) | `--memory` | — | `memory` | half of the memory available ([`crate::footprint`]) |
//! | KV cache type (local) | `--kv-cache` | — | `kv_cache` | `f16` |
//!
//! The config file is `--config FILE`, else `$HAMLET_CONFIG`, else
//! `$XDG_CONFIG_HOME/hamlet/config.toml` (or `~/.config/hamlet/config.toml`) if it exists.
//! A price table for `hamlet cost` lives in the same file (see [`crate::cost`]), and the
//! models personas may name besides the embedded ones (`[models.NAME]`, [`Profile`];
//! [`add_models`] gives a run's gateway each one its town names).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::backend::{EmbedBackend, LlmBackend};
use crate::cost::Price;
use crate::embed::LocalEmbed;
use crate::footprint::{self, Budget, KvType, ModelShape};
use crate::gateway::{Gateway, RetryPolicy};
use crate::local::{LocalConfig, LocalLlm, MAX_SLOTS};
use crate::models::{self, ModelChoice};
use crate::openai::{Endpoint, OpenAi, OpenAiEmbed};
use crate::request::Params;
use hamlet_log::event::StructuredForm;

/// Sequence slots of the embedded model unless set: an agent of the shipped town makes a
/// dozen kinds of call, each with its own cached prefix after the preamble, and with 40
/// slots they cut one another's back. `hamlet bench town --hours 1.5` by rulebook 3 with 64
/// slots reuses 70% of the loop's prompt tokens (72% with the seed ratings) where the shipped
/// day's same morning, by rulebook 2 with 40, reused 64–67%. A slot costs memory only for
/// the tokens it holds: in a stream while a call uses it, set aside in memory after
/// ([`crate::footprint`]).
pub const DEFAULT_SLOTS: u32 = 64;

/// OpenAI's own API.
pub const OPENAI_BASE: &str = "https://api.openai.com/v1";

/// Which kind of backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The embedded model.
    Local,
    /// An OpenAI-compatible server.
    OpenAi,
}

impl std::str::FromStr for Kind {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Kind, ConfigError> {
        match s {
            "local" => Ok(Kind::Local),
            "openai" => Ok(Kind::OpenAi),
            other => Err(ConfigError(format!(
                "unknown backend `{other}`: choose `local` (the embedded model) or `openai` \
                 (any OpenAI-compatible server)"
            ))),
        }
    }
}

/// A setting that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// The `[llm]` table of the config file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    /// `local` or `openai`.
    pub backend: Option<String>,
    /// The server's base URL.
    pub base_url: Option<String>,
    /// The API key (prefer `OPENAI_API_KEY`).
    pub api_key: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// `local` or `openai`.
    pub embed: Option<String>,
    /// The embedding model.
    pub embed_model: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling's p.
    pub top_p: Option<f32>,
    /// Most tokens per answer.
    pub max_tokens: Option<u32>,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// Seconds one try may take.
    pub timeout_secs: Option<u64>,
    /// Calls at once.
    pub concurrency: Option<usize>,
    /// CPU threads of the embedded model.
    pub threads: Option<u32>,
    /// Sequence slots of the embedded model.
    pub slots: Option<u32>,
    /// The embedded model's memory budget, e.g. `3G`.
    pub memory: Option<String>,
    /// How the embedded model's KV cache stores keys and values: `f16` or `q8_0`.
    pub kv_cache: Option<String>,
    /// How to ask a server for structured answers: `auto` (negotiated), `json_schema`,
    /// `json_object_schema`, `json_object` or `prompt`.
    pub structured: Option<String>,
}

/// The whole config file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Backend settings.
    #[serde(default)]
    pub llm: FileSettings,
    /// Prices by model name.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    /// Models personas may name besides the embedded `default` and `small` (`[models.NAME]`).
    #[serde(default)]
    pub models: BTreeMap<String, Profile>,
}

/// A model a persona may name (`model = "NAME"` in a town file, `add-agent --thinks-with`): an
/// OpenAI-compatible server and the model it serves. Its key is read from the environment
/// variable `api_key_env` names, never from the file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The server's base URL.
    pub base_url: String,
    /// The model it serves.
    pub model: String,
    /// The environment variable holding its API key, if it needs one.
    pub api_key_env: Option<String>,
    /// Calls at once [default: 8, or 4 for a server on this machine].
    pub concurrency: Option<usize>,
    /// Seconds one try may take [default: 120, or 900 for a server on this machine].
    pub timeout_secs: Option<u64>,
}

/// The embedded models a persona may name without a profile.
pub const EMBEDDED_MODELS: &[&str] = &["default", "small"];

/// The settings of the model a persona names: `default` or `small` (the embedded models,
/// with the run's memory, slots and threads), or a profile of `file`. Sampling and retries
/// are the run's. A name that is neither is an error saying what names there are.
pub fn model_settings(
    run: &Settings,
    file: &ConfigFile,
    name: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, ConfigError> {
    if let Some(problem) = hamlet_core::town::model_name_problem(name) {
        return Err(ConfigError(problem));
    }
    if EMBEDDED_MODELS.contains(&name) {
        let concurrency =
            if run.backend == Kind::Local { run.concurrency } else { (run.slots as usize).min(4) };
        let policy = RetryPolicy { timeout: Duration::from_secs(900), ..run.policy.clone() };
        return Ok(Settings {
            backend: Kind::Local,
            model: name.to_owned(),
            concurrency,
            policy,
            structured: None,
            ..run.clone()
        });
    }
    let Some(p) = file.models.get(name) else {
        let mut known: Vec<String> = EMBEDDED_MODELS.iter().map(|m| (*m).to_owned()).collect();
        known.extend(file.models.keys().cloned());
        return Err(ConfigError(format!(
            "no model named `{name}`: the names are {} — add `[models.{name}]` with its base_url \
             and model to the config file",
            known.join(", ")
        )));
    };
    if p.model.trim().is_empty() || p.base_url.trim().is_empty() {
        return Err(ConfigError(format!("[models.{name}] needs both base_url and model")));
    }
    let api_key = match &p.api_key_env {
        None => String::new(),
        Some(v) => var(v).filter(|k| !k.trim().is_empty()).ok_or_else(|| {
            ConfigError(format!("[models.{name}] reads its key from ${v}, which is not set"))
        })?,
    };
    let here = is_this_machine(&p.base_url);
    let timeout = p.timeout_secs.unwrap_or(if here { 900 } else { 120 }).max(1);
    Ok(Settings {
        backend: Kind::OpenAi,
        base_url: p.base_url.clone(),
        api_key,
        model: p.model.clone(),
        policy: RetryPolicy { timeout: Duration::from_secs(timeout), ..run.policy.clone() },
        concurrency: p.concurrency.unwrap_or(if here { 4 } else { 8 }).max(1),
        structured: None,
        ..run.clone()
    })
}

/// Whether the run's own model is the one `name` names (no second model to start).
pub fn is_run_model(run: &Settings, name: &str) -> bool {
    run.backend == Kind::Local && run.model == name
}

/// Gives `gateway` (the run's) a gateway for each model in `names` that is not the run's
/// own, each started once; an error, before any is started, for a name it cannot resolve.
pub fn add_models(
    gateway: &Gateway,
    run: &Settings,
    file: &ConfigFile,
    names: &[String],
    embedder: &Arc<dyn EmbedBackend>,
) -> Result<(), ConfigError> {
    let var = |k: &str| std::env::var(k).ok();
    let mut wanted = Vec::new();
    for name in names {
        if is_run_model(run, name) {
            gateway.call_own([name.clone()]);
        } else if !gateway.has_model(name) && !wanted.iter().any(|(n, _)| n == name) {
            wanted.push((name.clone(), model_settings(run, file, name, &var)?));
        }
    }
    for (name, settings) in wanted {
        let llm = llm_backend(&settings)?;
        gateway.add_model(&name, self::gateway(&settings, llm, embedder.clone()));
    }
    Ok(())
}

impl ConfigFile {
    /// Reads a config file.
    pub fn read(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
    }

    /// The file named by `--config`, `$HAMLET_CONFIG`, or the user's config folder (only if
    /// it exists there).
    pub fn discover(flag: Option<&Path>, env: &Env) -> Result<ConfigFile, ConfigError> {
        if let Some(path) = flag.map(Path::to_owned).or_else(|| env.config.clone()) {
            return ConfigFile::read(&path);
        }
        let default = env
            .xdg_config_home
            .clone()
            .or_else(|| env.home.as_ref().map(|h| h.join(".config")))
            .map(|d| d.join("hamlet").join("config.toml"));
        match default {
            Some(path) if path.is_file() => ConfigFile::read(&path),
            _ => Ok(ConfigFile::default()),
        }
    }
}

/// The environment variables that matter, read once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Env {
    /// `OPENAI_API_KEY`.
    pub api_key: Option<String>,
    /// `OPENAI_BASE_URL`.
    pub base_url: Option<String>,
    /// `HAMLET_MODEL`.
    pub model: Option<String>,
    /// `HAMLET_CONFIG`.
    pub config: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
}

impl Env {
    /// This process's environment (empty values count as unset).
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Env {
            api_key: var("OPENAI_API_KEY"),
            base_url: var("OPENAI_BASE_URL"),
            model: var("HAMLET_MODEL"),
            config: var("HAMLET_CONFIG").map(PathBuf::from),
            xdg_config_home: var("XDG_CONFIG_HOME").map(PathBuf::from),
            home: var("HOME").map(PathBuf::from),
        }
    }
}

/// Settings given as command-line flags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Flags {
    /// `--llm`.
    pub backend: Option<Kind>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--embed`.
    pub embed: Option<Kind>,
    /// `--embed-model`.
    pub embed_model: Option<String>,
    /// `--temperature`.
    pub temperature: Option<f32>,
    /// `--max-tokens`.
    pub max_tokens: Option<u32>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--timeout`, seconds.
    pub timeout_secs: Option<u64>,
    /// `--concurrency`.
    pub concurrency: Option<usize>,
    /// `--threads`.
    pub threads: Option<u32>,
    /// `--slots`.
    pub slots: Option<u32>,
    /// `--memory`, as written.
    pub memory: Option<String>,
    /// `--kv-cache`.
    pub kv_cache: Option<String>,
    /// `--structured`: `auto`, or a form's name.
    pub structured: Option<String>,
}

/// Everything resolved.
#[derive(Clone, PartialEq)]
pub struct Settings {
    /// The language model's backend.
    pub backend: Kind,
    /// The server, for `openai`.
    pub base_url: String,
    /// The key, for `openai` (never printed).
    pub api_key: String,
    /// `default`, `small` or a GGUF path (local), or the server's model name.
    pub model: String,
    /// The embedding backend.
    pub embed: Kind,
    /// The embedding model (for `openai`).
    pub embed_model: String,
    /// Sampling.
    pub params: Params,
    /// Retries and timeouts.
    pub policy: RetryPolicy,
    /// Calls at once.
    pub concurrency: usize,
    /// Embedded model threads.
    pub threads: Option<u32>,
    /// Embedded model slots.
    pub slots: u32,
    /// The embedded model's memory budget in bytes; `None`: a share of what is available.
    pub memory: Option<u64>,
    /// How the embedded model's KV cache stores keys and values.
    pub kv: KvType,
    /// The structured form set by the user; `None` negotiates it per server.
    pub structured: Option<StructuredForm>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("backend", &self.backend)
            .field("base_url", &crate::openai::public_address(&self.base_url))
            .field("api_key", &if self.api_key.is_empty() { "none" } else { "set, hidden" })
            .field("model", &self.model)
            .field("embed", &self.embed)
            .field("embed_model", &self.embed_model)
            .field("params", &self.params)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

/// Resolves flags over the environment over the file over the defaults.
pub fn resolve(file: &FileSettings, env: &Env, flags: &Flags) -> Result<Settings, ConfigError> {
    let file_backend = file.backend.as_deref().map(str::parse::<Kind>).transpose()?;
    let base_url =
        flags.base_url.clone().or_else(|| env.base_url.clone()).or_else(|| file.base_url.clone());
    let backend = flags.backend.or(file_backend).unwrap_or(if base_url.is_some() {
        Kind::OpenAi
    } else {
        Kind::Local
    });
    let base_url = base_url.unwrap_or_else(|| OPENAI_BASE.to_owned());
    let api_key = env.api_key.clone().or_else(|| file.api_key.clone()).unwrap_or_default();
    let model = flags.model.clone().or_else(|| env.model.clone()).or_else(|| file.model.clone());
    let model = match (backend, model) {
        (_, Some(m)) => m,
        (Kind::Local, None) => "default".to_owned(),
        (Kind::OpenAi, None) if base_url.trim_end_matches('/') == OPENAI_BASE => {
            "gpt-4o-mini".into()
        }
        (Kind::OpenAi, None) => {
            return Err(ConfigError(format!(
                "which model should {} serve? Pass --model NAME (e.g. `qwen2.5:1.5b` for Ollama, \
                 the model path or alias for vLLM and llama.cpp's server), or set HAMLET_MODEL",
                crate::openai::public_address(&base_url)
            )))
        }
    };
    let file_embed = file.embed.as_deref().map(str::parse::<Kind>).transpose()?;
    let embed = flags.embed.or(file_embed).unwrap_or(Kind::Local);
    let embed_model =
        flags.embed_model.clone().or_else(|| file.embed_model.clone()).unwrap_or_else(
            || match embed {
                Kind::Local => crate::embed::MODEL_NAME.to_owned(),
                Kind::OpenAi => "text-embedding-3-small".to_owned(),
            },
        );
    let temperature = flags.temperature.or(file.temperature).unwrap_or(0.0);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(ConfigError(format!("temperature {temperature} is outside 0..=2")));
    }
    let top_p = file.top_p.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(ConfigError(format!("top_p {top_p} is outside (0, 1]")));
    }
    let max_tokens = flags.max_tokens.or(file.max_tokens).unwrap_or(256);
    if max_tokens == 0 {
        return Err(ConfigError("max tokens must be at least 1".into()));
    }
    // Enough slots for each agent's kinds of call to keep their cached prefixes (see
    // DEFAULT_SLOTS; 112 MiB of cache a slot for the default model).
    let slots = flags.slots.or(file.slots).unwrap_or(DEFAULT_SLOTS).clamp(1, MAX_SLOTS);
    let memory = flags
        .memory
        .as_deref()
        .or(file.memory.as_deref())
        .map(|m| {
            footprint::parse_size(m)
                .map_err(|e| ConfigError(format!("{e} (--memory or `memory` in the config file)")))
        })
        .transpose()?;
    let kv = flags
        .kv_cache
        .as_deref()
        .or(file.kv_cache.as_deref())
        .map(str::parse::<KvType>)
        .transpose()?
        .unwrap_or(KvType::F16);
    // A server on this machine is most often a CPU-bound one that takes minutes per call.
    let default_timeout = match backend {
        Kind::Local => 900,
        Kind::OpenAi if is_this_machine(&base_url) => 900,
        Kind::OpenAi => 120,
    };
    let structured = match flags.structured.as_deref().or(file.structured.as_deref()) {
        None | Some("auto") => None,
        Some(name) => Some(
            StructuredForm::from_name(name)
                .filter(|f| {
                    !matches!(
                        f,
                        StructuredForm::None
                            | StructuredForm::Grammar
                            | StructuredForm::Probabilities
                    )
                })
                .ok_or_else(|| {
                    ConfigError(format!(
                        "unknown structured form `{name}`: choose auto, json_schema, \
                         json_object_schema, json_object or prompt"
                    ))
                })?,
        ),
    };
    let timeout = flags.timeout_secs.or(file.timeout_secs).unwrap_or(default_timeout).max(1);
    let default_concurrency = match backend {
        // More calls at once than this only wait longer each on two cores; the other slots
        // keep their agents' prefixes.
        Kind::Local => (slots as usize).min(4),
        Kind::OpenAi => 8,
    };
    Ok(Settings {
        backend,
        base_url,
        api_key,
        model,
        embed,
        embed_model,
        params: Params {
            temperature,
            top_p,
            max_tokens,
            seed: Some(flags.seed.or(file.seed).unwrap_or(0)),
            stop: Vec::new(),
        },
        policy: RetryPolicy { timeout: Duration::from_secs(timeout), ..RetryPolicy::default() },
        concurrency: flags.concurrency.or(file.concurrency).unwrap_or(default_concurrency).max(1),
        threads: flags.threads.or(file.threads),
        slots,
        memory,
        kv,
        structured,
    })
}

/// True for a base URL on this machine (`localhost`, `127.x`, `[::1]`).
pub fn is_this_machine(base_url: &str) -> bool {
    let address = crate::openai::public_address(base_url);
    let host = address.split_once("://").map_or(address.as_str(), |(_, rest)| rest);
    let host = host.split('/').next().unwrap_or_default();
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost") || host.starts_with("127.") || host == "::1"
}

/// The model names events record for the installed embedded models.
pub fn local_model_name(model: &str) -> String {
    match model {
        "default" => "qwen2.5-coder-1.5b-instruct-q4_k_m".into(),
        "small" => "qwen2.5-coder-0.5b-instruct-q4_k_m".into(),
        path => Path::new(path)
            .file_stem()
            .map_or_else(|| path.to_owned(), |s| s.to_string_lossy().into_owned()),
    }
}

/// Starts the language model's backend.
pub fn llm_backend(settings: &Settings) -> Result<Arc<dyn LlmBackend>, ConfigError> {
    match settings.backend {
        Kind::OpenAi => {
            let endpoint = Endpoint {
                base_url: settings.base_url.clone(),
                api_key: settings.api_key.clone(),
                model: settings.model.clone(),
            };
            Ok(Arc::new(OpenAi::new(endpoint).map_err(|e| ConfigError(e.message))?))
        }
        Kind::Local => {
            let (path, plan) = local_plan(settings)?;
            let mut config = LocalConfig::new(&path, &local_model_name(&settings.model));
            if let Some(threads) = settings.threads {
                config.threads = threads.max(1);
            }
            config.slots = settings.slots;
            config.streams = plan.streams;
            config.cache_bytes = plan.cache;
            config.kv = plan.kv;
            Ok(Arc::new(LocalLlm::start(config).map_err(|e| ConfigError(e.message))?))
        }
    }
}

/// The embedded model's file and how its memory will be spent: a stream per call in flight
/// (the concurrency, at most the slots), room for idle prefixes when there are more slots
/// than streams ([`footprint::Want::of`]), within the memory budget. An error, before
/// anything is loaded, when the budget cannot hold the model.
pub fn local_plan(settings: &Settings) -> Result<(PathBuf, footprint::Plan), ConfigError> {
    let path = models::resolve_gguf(&settings.model).map_err(|e| ConfigError(e.to_string()))?;
    let shape = ModelShape::of(&path).map_err(ConfigError)?;
    let concurrency = u32::try_from(settings.concurrency).unwrap_or(u32::MAX);
    let want = footprint::Want::of(settings.slots, concurrency);
    let plan = footprint::plan(&shape, Budget::from_setting(settings.memory), want, settings.kv)
        .map_err(ConfigError)?;
    Ok((path, plan))
}

/// The embedding backend (the embedded model loads on first use).
pub fn embed_backend(settings: &Settings) -> Result<Arc<dyn EmbedBackend>, ConfigError> {
    match settings.embed {
        Kind::OpenAi => {
            let endpoint = Endpoint {
                base_url: settings.base_url.clone(),
                api_key: settings.api_key.clone(),
                model: settings.embed_model.clone(),
            };
            Ok(Arc::new(OpenAiEmbed::new(endpoint).map_err(|e| ConfigError(e.message))?))
        }
        Kind::Local => {
            let dir = models::models_dir().map_err(|e| ConfigError(e.to_string()))?;
            let path = ModelChoice::Embeddings.path_in(&dir);
            if !path.is_dir() {
                return Err(ConfigError(format!(
                    "the embedding model is not installed at {}: run `hamlet models fetch --model \
                     embeddings` (or `./hamlet-dev setup`), or pass --embed openai",
                    path.display()
                )));
            }
            Ok(Arc::new(LocalEmbed::new(&path)))
        }
    }
}

/// A gateway over the given backends with the settings' sampling, retries and concurrency.
pub fn gateway(
    settings: &Settings,
    llm: Arc<dyn LlmBackend>,
    embedder: Arc<dyn EmbedBackend>,
) -> Gateway {
    Gateway::new(
        llm,
        embedder,
        settings.params.clone(),
        settings.policy.clone(),
        settings.concurrency,
    )
    .with_structured(settings.structured)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structured_form_is_negotiated_unless_set_and_a_flag_beats_the_file() {
        let env = Env::default();
        let auto = resolve(&FileSettings::default(), &env, &Flags::default()).unwrap();
        assert_eq!(auto.structured, None, "negotiated by default");
        let file =
            FileSettings { structured: Some("json_object".into()), ..FileSettings::default() };
        let s = resolve(&file, &env, &Flags::default()).unwrap();
        assert_eq!(s.structured, Some(StructuredForm::JsonObject));
        let flags = Flags { structured: Some("auto".into()), ..Flags::default() };
        assert_eq!(resolve(&file, &env, &flags).unwrap().structured, None);
        for bad in ["grammar", "none", "probabilities", "xml"] {
            let flags = Flags { structured: Some(bad.into()), ..Flags::default() };
            let e = resolve(&file, &env, &flags).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("json_object_schema"), "{e}");
        }
        // A server on this machine gets the long timeout; a remote one the short.
        let here = Flags {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            model: Some("m".into()),
            ..Flags::default()
        };
        assert_eq!(resolve(&file, &env, &here).unwrap().policy.timeout, Duration::from_secs(900));
        let there = Flags {
            base_url: Some("https://llm.example.com/v1".into()),
            model: Some("m".into()),
            ..Flags::default()
        };
        assert_eq!(resolve(&file, &env, &there).unwrap().policy.timeout, Duration::from_secs(120));
        assert!(
            is_this_machine("http://localhost:11434/v1") && is_this_machine("http://[::1]:8000/v1")
        );
        assert!(!is_this_machine("http://10.0.0.5:8000/v1"));
    }

    #[test]
    fn flags_beat_the_environment_which_beats_the_file() {
        let file = FileSettings {
            base_url: Some("http://file:1/v1".into()),
            model: Some("file-model".into()),
            api_key: Some("file-key".into()),
            temperature: Some(0.5),
            ..FileSettings::default()
        };
        let env = Env {
            base_url: Some("http://env:2/v1".into()),
            api_key: Some("env-key".into()),
            ..Env::default()
        };
        let s = resolve(&file, &env, &Flags::default()).unwrap();
        assert_eq!(s.backend, Kind::OpenAi, "a base URL anywhere selects the HTTP backend");
        assert_eq!(s.base_url, "http://env:2/v1");
        assert_eq!(s.api_key, "env-key");
        assert_eq!(s.model, "file-model");
        assert_eq!(s.params.temperature, 0.5);
        let flags = Flags {
            base_url: Some("http://flag:3/v1".into()),
            model: Some("flag-model".into()),
            temperature: Some(0.0),
            ..Flags::default()
        };
        let s = resolve(&file, &env, &flags).unwrap();
        assert_eq!((s.base_url.as_str(), s.model.as_str()), ("http://flag:3/v1", "flag-model"));
        assert_eq!(s.params.temperature, 0.0);
        assert!(!format!("{s:?}").contains("env-key"), "the key never prints");
    }

    #[test]
    fn with_nothing_configured_the_embedded_model_runs() {
        let s = resolve(&FileSettings::default(), &Env::default(), &Flags::default()).unwrap();
        assert_eq!((s.backend, s.model.as_str(), s.embed), (Kind::Local, "default", Kind::Local));
        // A key alone does not send calls (and bills) to a server nobody named.
        let env = Env { api_key: Some("sk-x".into()), ..Env::default() };
        assert_eq!(
            resolve(&FileSettings::default(), &env, &Flags::default()).unwrap().backend,
            Kind::Local
        );
    }

    #[test]
    fn a_server_without_a_model_is_an_error_that_says_what_to_do() {
        let flags =
            Flags { base_url: Some("http://localhost:11434/v1".into()), ..Flags::default() };
        let e = resolve(&FileSettings::default(), &Env::default(), &flags).unwrap_err();
        assert!(e.0.contains("--model"), "{e}");
        let bad = Flags { temperature: Some(5.0), ..Flags::default() };
        assert!(resolve(&FileSettings::default(), &Env::default(), &bad).is_err());
        assert!("ollama".parse::<Kind>().is_err());
    }
}
