//! How much memory the embedded model may take, and how it is spent.
//!
//! The embedded model holds its weights (the GGUF file, read into memory), its **streams** (a
//! stream holds one call's KV cells, [`CONTEXT_PER_CALL`] of them, and there are as many as
//! calls read or answered at once; a cell holds one token's keys and values for every layer),
//! the **idle prefixes** set aside from the streams (each agent's kinds of call keep what they
//! last read, to read only the rest next time: bytes in proportion to their tokens, the least
//! recently used dropped when the room for them is full), and a work space (compute buffers,
//! the logits, the process's own). The weights and the work space are fixed by the model; the
//! streams and the room for idle prefixes are what a budget sizes.
//!
//! The budget is `--memory` (or `memory` in the config file's `[llm]` table), else
//! [`DEFAULT_SHARE_PERCENT`] of the memory this machine has available now
//! (`MemAvailable` in `/proc/meminfo`). A use never plans past what it needs: one stream and
//! no idle prefixes for a one-off question, a stream per call in flight and
//! [`TOWN_CACHE_TOKENS`] of idle prefixes for a town. A budget that cannot hold the weights,
//! the work space and one stream is an error before the model is loaded, naming the memory
//! needed.

use std::path::Path;

use crate::config::ConfigError;

/// The share of the available memory the embedded model plans to use when no budget is set.
pub const DEFAULT_SHARE_PERCENT: u64 = 50;

/// Tokens of idle prefixes a town keeps in memory (0.9 GB with the default model in `f16`):
/// room for every agent's kinds of call in a ten-agent town.
pub const TOWN_CACHE_TOKENS: u32 = 32_768;

/// Tokens one call may hold: its prompt and its answer. A reflection lists up to a hundred
/// recent memories, about 2,000 to 3,700 tokens with its template and answer.
pub const CONTEXT_PER_CALL: u32 = 4_096;

/// Memory the model needs beside its weights and its KV pool: compute buffers for a
/// 512-token batch, the logits of every sequence, the process. Measured with the default
/// model (`hamlet bench call`: peak resident memory less the weights and the pool): 95 MiB
/// with one call's pool, 133 MiB with a town's; this leaves room above both.
pub const WORK_BYTES: u64 = 160 * MIB;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// How keys and values are stored in the KV pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvType {
    /// 16-bit floats, as the model computes them.
    F16,
    /// 8-bit blocks (34 bytes per 32 values): about half the memory.
    Q8_0,
}

impl KvType {
    /// Bytes per value, in 1/32 of a byte (a `q8_0` block of 32 values takes 34 bytes).
    fn bytes_per_32(self) -> u64 {
        match self {
            KvType::F16 => 64,
            KvType::Q8_0 => 34,
        }
    }

    /// The name on the command line and in the config file.
    pub fn name(self) -> &'static str {
        match self {
            KvType::F16 => "f16",
            KvType::Q8_0 => "q8_0",
        }
    }
}

impl std::str::FromStr for KvType {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<KvType, ConfigError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f16" => Ok(KvType::F16),
            "q8_0" | "q8" => Ok(KvType::Q8_0),
            other => Err(ConfigError(format!(
                "unknown KV cache type `{other}`: choose f16 (as computed) or q8_0 (half the memory)"
            ))),
        }
    }
}

/// What the memory of a model depends on, read from its GGUF file's header (no weights are
/// read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelShape {
    /// The file's size: the weights, as loaded into memory.
    pub file_bytes: u64,
    /// Layers.
    pub layers: u64,
    /// Keys per token and layer (heads holding keys × their width); values the same.
    pub kv_width: u64,
}

impl ModelShape {
    /// Reads the shape of the GGUF model at `path`.
    pub fn of(path: &Path) -> Result<ModelShape, String> {
        let file_bytes = std::fs::metadata(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .len();
        // llama.cpp's reader would say why a file is refused on standard error; the error
        // below says it instead.
        crate::local::backend()?;
        let gguf = llama_cpp_2::gguf::GgufContext::from_file(path)
            .ok_or_else(|| format!("{} is not a GGUF model file", path.display()))?;
        let arch = {
            let at = gguf.find_key("general.architecture");
            if at < 0 || gguf.kv_type(at) != llama_cpp_sys_2::GGUF_TYPE_STRING {
                return Err(format!("{} names no architecture", path.display()));
            }
            gguf.val_str(at).unwrap_or_default().to_owned()
        };
        let number = |key: &str| -> Option<u64> {
            let at = gguf.find_key(&format!("{arch}.{key}"));
            if at < 0 {
                return None;
            }
            match gguf.kv_type(at) {
                llama_cpp_sys_2::GGUF_TYPE_UINT32 => Some(u64::from(gguf.val_u32(at))),
                llama_cpp_sys_2::GGUF_TYPE_INT32 => u64::try_from(gguf.val_i32(at)).ok(),
                llama_cpp_sys_2::GGUF_TYPE_UINT64 => Some(gguf.val_u64(at)),
                _ => None,
            }
        };
        let missing = |key: &str| format!("{} does not say its {arch}.{key}", path.display());
        let layers = number("block_count").ok_or_else(|| missing("block_count"))?;
        let heads =
            number("attention.head_count").ok_or_else(|| missing("attention.head_count"))?;
        let kv_heads = number("attention.head_count_kv").unwrap_or(heads);
        let width = match number("attention.key_length") {
            Some(w) => w,
            None => {
                let embedding =
                    number("embedding_length").ok_or_else(|| missing("embedding_length"))?;
                embedding / heads.max(1)
            }
        };
        Ok(ModelShape { file_bytes, layers, kv_width: kv_heads * width })
    }

    /// Bytes one KV cell takes: a token's keys and values in every layer.
    pub fn cell_bytes(&self, kv: KvType) -> u64 {
        (2 * self.layers * self.kv_width * kv.bytes_per_32()).div_ceil(32)
    }

    /// Resident memory with `cells` KV cells in all: weights, cells, work space.
    pub fn resident(&self, cells: u32, kv: KvType) -> u64 {
        self.file_bytes + u64::from(cells) * self.cell_bytes(kv) + WORK_BYTES
    }
}

/// Where a budget comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// `--memory` or the config file's `memory`.
    Set(u64),
    /// [`DEFAULT_SHARE_PERCENT`] of the memory available when the model started.
    ShareOf {
        /// `MemAvailable`, in bytes.
        available: u64,
    },
    /// Nothing set and nothing known of the machine (no `/proc/meminfo`): the pool is sized by
    /// its use alone.
    Unknown,
}

impl Budget {
    /// The budget for a setting: the set one, else a share of what this machine has available.
    pub fn from_setting(set: Option<u64>) -> Budget {
        match set {
            Some(bytes) => Budget::Set(bytes),
            None => match available_bytes() {
                Some(available) => Budget::ShareOf { available },
                None => Budget::Unknown,
            },
        }
    }

    /// The bytes the model may plan to use, if any limit is known.
    pub fn bytes(self) -> Option<u64> {
        match self {
            Budget::Set(b) => Some(b),
            Budget::ShareOf { available } => Some(available / 100 * DEFAULT_SHARE_PERCENT),
            Budget::Unknown => None,
        }
    }

    fn describe(self) -> String {
        match self {
            Budget::Set(b) => format!("the memory budget is {}", human(b)),
            Budget::ShareOf { available } => format!(
                "this machine has {} available and the model plans on {DEFAULT_SHARE_PERCENT}% of it, {}",
                human(available),
                human(self.bytes().unwrap_or(0))
            ),
            Budget::Unknown => "no budget is known".into(),
        }
    }
}

/// What a use of the model wants: calls at once and room for idle prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    /// Calls read or answered at once, each in a stream of [`CONTEXT_PER_CALL`] cells.
    pub streams: u32,
    /// Tokens of idle prefixes kept in memory beside the streams.
    pub cached_tokens: u32,
}

impl Want {
    /// What `slots` prefixes and `concurrency` calls at once want: a stream per call in
    /// flight, and room for [`TOWN_CACHE_TOKENS`] when there are more slots than streams.
    pub fn of(slots: u32, concurrency: u32) -> Want {
        let streams = concurrency.clamp(1, slots.max(1));
        Want { streams, cached_tokens: if slots > streams { TOWN_CACHE_TOKENS } else { 0 } }
    }
}

/// How the model's memory is spent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Streams: calls read or answered at once.
    pub streams: u32,
    /// How keys and values are stored.
    pub kv: KvType,
    /// The weights.
    pub weights: u64,
    /// The streams' KV cells, allocated at start.
    pub pool: u64,
    /// Room for idle prefixes set aside, taken as they are.
    pub cache: u64,
    /// Everything else.
    pub work: u64,
}

impl Plan {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.weights + self.pool + self.cache + self.work
    }

    /// One line: the total and its parts.
    pub fn describe(&self) -> String {
        format!(
            "{} (weights {}, {} stream{} of {CONTEXT_PER_CALL} tokens {}, idle prefixes up to {}, \
             work space {}; KV in {})",
            human(self.total()),
            human(self.weights),
            self.streams,
            if self.streams == 1 { "" } else { "s" },
            human(self.pool),
            human(self.cache),
            human(self.work),
            self.kv.name()
        )
    }
}

/// The memory of a use of a model within a budget: what it wants if that fits; else fewer
/// streams (never none) and less room for idle prefixes. An error when one stream does not
/// fit, naming the memory needed.
pub fn plan(shape: &ModelShape, budget: Budget, want: Want, kv: KvType) -> Result<Plan, String> {
    let cell = shape.cell_bytes(kv).max(1);
    let stream = u64::from(CONTEXT_PER_CALL) * cell;
    let fixed = shape.file_bytes + WORK_BYTES;
    let wanted_cache = u64::from(want.cached_tokens) * cell;
    let (streams, cache) = match budget.bytes() {
        None => (want.streams.max(1), wanted_cache),
        Some(limit) => {
            let left = limit.saturating_sub(fixed);
            let fit = u32::try_from(left / stream).unwrap_or(u32::MAX);
            if fit == 0 {
                let needed = fixed + stream;
                return Err(format!(
                    "the embedded model needs at least {} of memory (weights {}, KV cells for one \
                     call {}, work space {}), and {}: give more with --memory (e.g. --memory {}), \
                     or choose a smaller model (--model small)",
                    human(needed),
                    human(shape.file_bytes),
                    human(stream),
                    human(WORK_BYTES),
                    budget.describe(),
                    human_flag(needed)
                ));
            }
            let streams = want.streams.max(1).min(fit);
            (streams, wanted_cache.min(left - u64::from(streams) * stream))
        }
    };
    Ok(Plan {
        streams,
        kv,
        weights: shape.file_bytes,
        pool: u64::from(streams) * stream,
        cache,
        work: WORK_BYTES,
    })
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
pub fn available_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(mem_available)
}

/// The `MemAvailable` line of a `/proc/meminfo` text, in bytes.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let number: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => number.checked_mul(1024),
        Some(_) => None,
    }
}

/// A size as people write it: `3G`, `3 GB`, `2.5GiB`, `1500M`, `800MB` (powers of 1,024;
/// a unit is required).
pub fn parse_size(text: &str) -> Result<u64, ConfigError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let bad = || {
        ConfigError(format!(
            "`{text}` is not a memory size: write a number and a unit, e.g. 3G, 2.5GB or 1500M"
        ))
    };
    let number: f64 = number.parse().map_err(|_| bad())?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "g" | "gb" | "gib" => GIB,
        "m" | "mb" | "mib" => MIB,
        "t" | "tb" | "tib" => 1024 * GIB,
        _ => return Err(bad()),
    };
    let bytes = number * scale as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// Bytes as people read them: `1.4 GB`, `112 MB` (powers of 1,024).
pub fn human(bytes: u64) -> String {
    if bytes >= GIB {
        format!("{:.1} GB", bytes as f64 / GIB as f64)
    } else {
        format!("{} MB", bytes.div_ceil(MIB))
    }
}

/// A `--memory` value at least `bytes`, rounded up to a tenth of a gigabyte.
fn human_flag(bytes: u64) -> String {
    let tenths = (bytes * 10).div_ceil(GIB);
    format!("{}.{}G", tenths / 10, tenths % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen2.5-1.5B's shape: 28 layers, 2 KV heads of 128.
    const QWEN_1_5B: ModelShape =
        ModelShape { file_bytes: 1_117_320_768, layers: 28, kv_width: 256 };

    #[test]
    fn a_cell_holds_a_tokens_keys_and_values_in_every_layer() {
        // 28 layers × (256 keys + 256 values) × 2 bytes = 28 KiB; the old slot of 4,096
        // tokens was 112 MiB.
        assert_eq!(QWEN_1_5B.cell_bytes(KvType::F16), 28 * 1024);
        assert_eq!(QWEN_1_5B.cell_bytes(KvType::F16) * 4096, 112 * MIB);
        // q8_0: 34 bytes per 32 values.
        assert_eq!(QWEN_1_5B.cell_bytes(KvType::Q8_0), 28 * 512 * 34 / 32);
    }

    #[test]
    fn a_plan_is_what_its_use_needs_within_the_budget() {
        let stream = u64::from(CONTEXT_PER_CALL) * QWEN_1_5B.cell_bytes(KvType::F16);
        // One question: one stream, no idle prefixes.
        let one = Want::of(1, 4);
        assert_eq!(one, Want { streams: 1, cached_tokens: 0 });
        let big = Budget::Set(16 * GIB);
        let p = plan(&QWEN_1_5B, big, one, KvType::F16).unwrap();
        assert_eq!((p.streams, p.pool, p.cache), (1, stream, 0));
        assert_eq!(p.total(), p.weights + p.pool + p.cache + p.work);
        assert_eq!(p.total(), QWEN_1_5B.resident(CONTEXT_PER_CALL, KvType::F16));
        // A town: a stream per call in flight and room for idle prefixes.
        let town = Want::of(64, 4);
        assert_eq!(town, Want { streams: 4, cached_tokens: TOWN_CACHE_TOKENS });
        let p = plan(&QWEN_1_5B, big, town, KvType::F16).unwrap();
        assert_eq!((p.streams, p.pool), (4, 4 * stream));
        assert_eq!(p.cache, u64::from(TOWN_CACHE_TOKENS) * QWEN_1_5B.cell_bytes(KvType::F16));
        assert!(p.total() < 3 * GIB, "{}", p.describe());
        // A budget that holds less: fewer streams and less room, never more than the budget.
        for limit in [2 * GIB, 3 * GIB / 2, 5 * GIB / 2] {
            let p = plan(&QWEN_1_5B, Budget::Set(limit), town, KvType::F16).unwrap();
            assert!(p.total() <= limit, "{limit}: {}", p.describe());
            assert!(p.streams >= 1);
        }
        let tight = plan(&QWEN_1_5B, Budget::Set(2 * GIB), town, KvType::F16).unwrap();
        let q8 = plan(&QWEN_1_5B, Budget::Set(2 * GIB), town, KvType::Q8_0).unwrap();
        assert!(q8.cache > tight.cache || q8.streams > tight.streams, "q8_0 holds more");
        // The share of what is available.
        let share = Budget::ShareOf { available: 8 * GIB };
        assert_eq!(share.bytes(), Some(8 * GIB / 100 * DEFAULT_SHARE_PERCENT));
        assert!(plan(&QWEN_1_5B, share, town, KvType::F16).unwrap().total() <= 4 * GIB);
        // Nothing known: what is wanted.
        assert_eq!(plan(&QWEN_1_5B, Budget::Unknown, town, KvType::F16).unwrap().streams, 4);
    }

    #[test]
    fn a_budget_too_small_names_the_memory_needed() {
        let town = Want::of(64, 4);
        let e = plan(&QWEN_1_5B, Budget::Set(GIB), town, KvType::F16).unwrap_err();
        let needed = QWEN_1_5B.resident(CONTEXT_PER_CALL, KvType::F16);
        assert!(e.contains(&human(needed)) && e.contains("--memory"), "{e}");
        assert!(e.contains("1.0 GB"), "says the budget: {e}");
        // Exactly enough is enough: one stream, no idle prefixes.
        let p = plan(&QWEN_1_5B, Budget::Set(needed), town, KvType::F16).unwrap();
        assert_eq!((p.streams, p.cache), (1, 0));
        assert!(plan(&QWEN_1_5B, Budget::Set(needed - 1), town, KvType::F16).is_err());
        // The flag it suggests is enough.
        let flag = human_flag(needed);
        let suggested = parse_size(&flag).unwrap();
        assert!(suggested >= needed, "{flag}");
        assert!(plan(&QWEN_1_5B, Budget::Set(suggested), town, KvType::F16).is_ok());
    }

    #[test]
    fn sizes_are_read_as_people_write_them() {
        assert_eq!(parse_size("3G").unwrap(), 3 * GIB);
        assert_eq!(parse_size(" 3 GB ").unwrap(), 3 * GIB);
        assert_eq!(parse_size("2.5GiB").unwrap(), 5 * GIB / 2);
        assert_eq!(parse_size("1500m").unwrap(), 1500 * MIB);
        assert_eq!(parse_size("1T").unwrap(), 1024 * GIB);
        for bad in ["", "3", "G", "-1G", "3X", "1e3M", "0G", "..G", "3 G B"] {
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(e.contains("3G"), "{bad}: {e}");
        }
        assert_eq!(human(3 * GIB), "3.0 GB");
        assert_eq!(human(112 * MIB), "112 MB");
    }

    #[test]
    fn meminfo_gives_the_available_memory() {
        let text = "MemTotal:       24000000 kB\nMemFree:  1000 kB\nMemAvailable:   8000000 kB\n";
        assert_eq!(mem_available(text), Some(8_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
        assert_eq!(mem_available("MemAvailable: 5 pages\n"), None);
        assert!("q8_0".parse::<KvType>().is_ok() && "F16".parse::<KvType>().is_ok());
        assert!("q4".parse::<KvType>().unwrap_err().to_string().contains("q8_0"));
    }
}
