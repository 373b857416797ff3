//! The embedded embedding model: all-MiniLM-L6-v2 (384 dimensions), run on the CPU in f32.
//!
//! The model folder holds `config.json`, `tokenizer.json` and `model.safetensors`, exactly as
//! `hamlet models fetch --model embeddings` installs them (see [`crate::models`]). Every file
//! is checked against its SHA-256 before use, so a vector always comes from the same weights.
//!
//! Texts are tokenised in one batch padded to the longest input and truncated at
//! [`MAX_TOKENS`] tokens (the tokenizer file itself pads to a fixed 128 and truncates at 128;
//! both are overridden to match sentence-transformers' `max_seq_length` of 256). BERT runs
//! with the attention mask and token type ids, the last hidden states are averaged over the
//! real (unpadded) tokens, and the mean is scaled to unit length, so the dot product of two
//! vectors is their cosine similarity.
//!
//! Vectors are recorded as events like every other model answer, so replay never recomputes
//! them: a last-bit difference between machines or batch shapes cannot change a replay.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use hamlet_log::id::hex;

/// The model's name, as recorded in events.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// Length of every embedding vector.
pub const DIMENSIONS: usize = 384;

/// Longest input in tokens, counting `[CLS]` and `[SEP]`; longer texts are truncated.
pub const MAX_TOKENS: usize = 256;

/// Most texts run through BERT at once; longer inputs are split into batches of this size,
/// which bounds the attention scores' memory (batch × 12 heads × tokens² floats).
const MAX_BATCH: usize = 32;

/// One file of the model folder and what it must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelFile {
    /// The file's name inside the model folder.
    pub name: &'static str,
    /// Its SHA-256, lowercase hex.
    pub sha256: &'static str,
    /// Its size in bytes.
    pub size: u64,
}

/// The BERT configuration.
pub const CONFIG_FILE: ModelFile = ModelFile {
    name: "config.json",
    sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    size: 612,
};

/// The WordPiece tokenizer, in the Hugging Face `tokenizers` format.
pub const TOKENIZER_FILE: ModelFile = ModelFile {
    name: "tokenizer.json",
    sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    size: 466_247,
};

/// The weights, f32, tensor names without a `bert.` prefix.
pub const WEIGHTS_FILE: ModelFile = ModelFile {
    name: "model.safetensors",
    sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    size: 90_868_376,
};

/// Every file the model folder must hold.
pub const MODEL_FILES: [ModelFile; 3] = [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE];

/// Why the embedding model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A file of the model folder is missing or unreadable.
    #[error(
        "cannot read {path}: {source}; run `hamlet models fetch --model embeddings` to install \
         the embedding model"
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A file of the model folder is not the expected one.
    #[error(
        "{path} has SHA-256 {got}, expected {expected}: the file is damaged or not \
         all-MiniLM-L6-v2's; run `hamlet models fetch --model embeddings` to fetch it again"
    )]
    Checksum {
        /// The file.
        path: PathBuf,
        /// The SHA-256 it must have.
        expected: &'static str,
        /// The SHA-256 it has.
        got: String,
    },
    /// `config.json` is not a BERT configuration.
    #[error("{path} is not a BERT configuration: {message}")]
    Config {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        message: String,
    },
    /// `tokenizer.json` could not be loaded or configured.
    #[error("cannot use the tokenizer in {path}: {message}")]
    TokenizerLoad {
        /// The file.
        path: PathBuf,
        /// What the tokenizer library said.
        message: String,
    },
    /// The weights do not fit the configuration.
    #[error("cannot load the weights in {path}: {source}")]
    Weights {
        /// The file.
        path: PathBuf,
        /// What candle said.
        source: candle_core::Error,
    },
    /// A text could not be tokenised.
    #[error("cannot tokenise the texts to embed: {message}")]
    Tokenize {
        /// What the tokenizer library said.
        message: String,
    },
    /// The model failed while running.
    #[error("the embedding model failed to run: {source}")]
    Inference {
        /// What candle said.
        source: candle_core::Error,
    },
}

/// all-MiniLM-L6-v2 loaded in memory, ready to embed texts on the CPU.
pub struct LocalEmbedder {
    tokenizer: Tokenizer,
    model: BertModel,
    device: Device,
}

impl LocalEmbedder {
    /// Loads the model from `dir`, which must hold the three [`MODEL_FILES`], after checking
    /// each one's SHA-256. Reads the whole weights file (≈ 91 MB) into memory.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let config_path = dir.join(CONFIG_FILE.name);
        let tokenizer_path = dir.join(TOKENIZER_FILE.name);
        let weights_path = dir.join(WEIGHTS_FILE.name);
        let config_bytes = read_verified(&config_path, &CONFIG_FILE)?;
        let tokenizer_bytes = read_verified(&tokenizer_path, &TOKENIZER_FILE)?;
        let weights = read_verified(&weights_path, &WEIGHTS_FILE)?;

        let config: Config = serde_json::from_slice(&config_bytes)
            .map_err(|e| EmbedError::Config { path: config_path, message: e.to_string() })?;

        let tokenizer_error =
            |message: String| EmbedError::TokenizerLoad { path: tokenizer_path.clone(), message };
        let mut tokenizer =
            Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| tokenizer_error(e.to_string()))?;
        // Keep the file's pad token and direction; pad to the longest text of the batch.
        let padding = PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_to_multiple_of: None,
            ..tokenizer.get_padding().cloned().unwrap_or_default()
        };
        let truncation = TruncationParams {
            max_length: MAX_TOKENS,
            ..tokenizer.get_truncation().cloned().unwrap_or_default()
        };
        tokenizer.with_padding(Some(padding));
        tokenizer.with_truncation(Some(truncation)).map_err(|e| tokenizer_error(e.to_string()))?;

        let device = Device::Cpu;
        let weights_error =
            |source: candle_core::Error| EmbedError::Weights { path: weights_path.clone(), source };
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(weights_error)?;
        let model = BertModel::load(vb, &config).map_err(weights_error)?;
        Ok(LocalEmbedder { tokenizer, model, device })
    }

    /// One unit-length vector of [`DIMENSIONS`] floats per text, in order.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self.embed_counted(texts)?.0)
    }

    /// As [`LocalEmbedder::embed`], with the number of tokens the model read: real tokens
    /// only, `[CLS]` and `[SEP]` included, padding excluded, after truncation.
    pub fn embed_counted(&self, texts: &[String]) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
        let mut vectors = Vec::with_capacity(texts.len());
        let mut tokens = 0;
        for batch in texts.chunks(MAX_BATCH) {
            let (batch_vectors, batch_tokens) = self.embed_batch(batch)?;
            vectors.extend(batch_vectors);
            tokens += batch_tokens;
        }
        Ok((vectors, tokens))
    }

    /// How many tokens embedding `texts` would read, counted as [`LocalEmbedder::embed_counted`]
    /// does, without running the model.
    pub fn token_count(&self, texts: &[String]) -> Result<usize, EmbedError> {
        let mut tokens = 0;
        for batch in texts.chunks(MAX_BATCH) {
            tokens += self.tokenize(batch)?.real_tokens;
        }
        Ok(tokens)
    }

    fn tokenize(&self, texts: &[String]) -> Result<Batch, EmbedError> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| EmbedError::Tokenize { message: e.to_string() })?;
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut batch = Batch {
            rows: encodings.len(),
            len,
            ids: Vec::with_capacity(encodings.len() * len),
            type_ids: Vec::with_capacity(encodings.len() * len),
            mask: Vec::with_capacity(encodings.len() * len),
            real_tokens: 0,
        };
        for encoding in &encodings {
            let (ids, type_ids, mask) =
                (encoding.get_ids(), encoding.get_type_ids(), encoding.get_attention_mask());
            if ids.len() != len || type_ids.len() != len || mask.len() != len {
                return Err(EmbedError::Tokenize {
                    message: format!(
                        "the tokenizer returned rows of different lengths ({} and {len}) despite \
                         padding",
                        ids.len()
                    ),
                });
            }
            batch.ids.extend_from_slice(ids);
            batch.type_ids.extend_from_slice(type_ids);
            batch.mask.extend_from_slice(mask);
            batch.real_tokens += mask.iter().filter(|&&m| m != 0).count();
        }
        Ok(batch)
    }

    fn embed_batch(&self, texts: &[String]) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
        if texts.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let batch = self.tokenize(texts)?;
        let real_tokens = batch.real_tokens;
        let mut vectors =
            self.mean_pool(batch).map_err(|source| EmbedError::Inference { source })?;
        for vector in &mut vectors {
            l2_normalize(vector);
        }
        Ok((vectors, real_tokens))
    }

    /// BERT's last hidden states averaged over the real tokens of each row.
    fn mean_pool(&self, batch: Batch) -> candle_core::Result<Vec<Vec<f32>>> {
        let shape = (batch.rows, batch.len);
        let input_ids = Tensor::from_vec(batch.ids, shape, &self.device)?;
        let token_type_ids = Tensor::from_vec(batch.type_ids, shape, &self.device)?;
        let attention_mask = Tensor::from_vec(batch.mask, shape, &self.device)?;
        // (rows, len, DIMENSIONS)
        let hidden = self.model.forward(&input_ids, &token_type_ids, Some(&attention_mask))?;
        let mask = attention_mask.to_dtype(DType::F32)?; // (rows, len)
        let summed = hidden.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?; // (rows, DIMENSIONS)
        let counts = mask.sum_keepdim(1)?; // (rows, 1); ≥ 2: [CLS] and [SEP] are always there
        summed.broadcast_div(&counts)?.to_vec2::<f32>()
    }
}

/// One tokenised batch, flattened row by row.
struct Batch {
    rows: usize,
    len: usize,
    ids: Vec<u32>,
    type_ids: Vec<u32>,
    mask: Vec<u32>,
    real_tokens: usize,
}

/// Reads `path` and checks it is `expected`.
fn read_verified(path: &Path, expected: &ModelFile) -> Result<Vec<u8>, EmbedError> {
    let bytes =
        fs::read(path).map_err(|source| EmbedError::Read { path: path.to_path_buf(), source })?;
    let got = hex(&Sha256::digest(&bytes));
    if got != expected.sha256 {
        return Err(EmbedError::Checksum {
            path: path.to_path_buf(),
            expected: expected.sha256,
            got,
        });
    }
    Ok(bytes)
}

/// Scales `v` to unit length; a zero vector stays zero (as in sentence-transformers, the norm
/// is clamped at 1e-12).
fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    for x in v {
        *x /= norm;
    }
}

/// The embedded embedding model as a gateway backend. The model loads on first use (a
/// command that never embeds never pays for it) and runs off the async runtime's threads.
pub struct LocalEmbed {
    dir: PathBuf,
    loaded: std::sync::OnceLock<Result<std::sync::Arc<LocalEmbedder>, String>>,
}

impl LocalEmbed {
    /// The model in `dir` (`ModelChoice::Embeddings.path_in(models dir)`), loaded when first asked.
    pub fn new(dir: &Path) -> LocalEmbed {
        LocalEmbed { dir: dir.to_owned(), loaded: std::sync::OnceLock::new() }
    }

    fn model(&self) -> Result<std::sync::Arc<LocalEmbedder>, crate::backend::BackendError> {
        self.loaded
            .get_or_init(|| {
                LocalEmbedder::load(&self.dir).map(std::sync::Arc::new).map_err(|e| e.to_string())
            })
            .clone()
            .map_err(|m| {
                crate::backend::BackendError::new(hamlet_log::event::FailureKind::Refused, m)
            })
    }
}

impl crate::backend::EmbedBackend for LocalEmbed {
    fn name(&self) -> &str {
        "local"
    }

    fn server(&self) -> String {
        String::new()
    }

    fn model(&self) -> String {
        MODEL_NAME.to_owned()
    }

    fn embed<'a>(
        &'a self,
        call: &'a crate::request::EmbedCall,
        _request_hash: [u8; 32],
    ) -> crate::backend::BoxFuture<'a, Result<crate::backend::Vectors, crate::backend::BackendError>>
    {
        Box::pin(async move {
            let model = self.model()?;
            let texts = call.texts.clone();
            let done = tokio::task::spawn_blocking(move || model.embed_counted(&texts)).await;
            let failed = |m: String| {
                crate::backend::BackendError::new(hamlet_log::event::FailureKind::Other, m)
            };
            let (vectors, tokens) =
                done.map_err(|e| failed(e.to_string()))?.map_err(|e| failed(e.to_string()))?;
            Ok(crate::backend::Vectors {
                vectors,
                tokens: u32::try_from(tokens).unwrap_or(u32::MAX),
                pooled: false,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn normalising_gives_unit_length_and_keeps_zero() {
        let mut v = vec![3.0, 4.0];
        l2_normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut zero = vec![0.0; 4];
        l2_normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 4]);
    }

    #[test]
    fn model_files_are_distinct_and_pinned() {
        let names: Vec<&str> = MODEL_FILES.iter().map(|f| f.name).collect();
        assert_eq!(names, ["config.json", "tokenizer.json", "model.safetensors"]);
        for file in MODEL_FILES {
            assert_eq!(file.sha256.len(), 64);
            assert!(file.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }

    #[test]
    fn the_embedder_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<LocalEmbedder>();
    }

    /// Reference values from an independent numpy implementation of the same model.
    /// Needs the embedding model (`./hamlet-dev test` fetches it first);
    /// HAMLET_SKIP_MODEL_TESTS=1 skips it deliberately.
    #[test]
    fn matches_the_reference_similarities() {
        if std::env::var_os("HAMLET_SKIP_MODEL_TESTS").is_some_and(|v| v == "1") {
            return;
        }
        let dir = crate::models::models_dir()
            .expect("a models directory")
            .join(crate::models::EMBEDDING_DIR);
        let embedder = LocalEmbedder::load(&dir).expect("the embedding model loads");
        let texts: Vec<String> = [
            "Isabella is planning a Valentine's Day party",
            "Isabella invites friends to a party at Hobbs Cafe",
            "John brushes his teeth",
        ]
        .map(String::from)
        .to_vec();
        let (vectors, tokens) = embedder.embed_counted(&texts).expect("embeds");
        assert_eq!(tokens, 11 + 11 + 6);
        assert_eq!(embedder.token_count(&texts).expect("counts"), tokens);
        for v in &vectors {
            assert_eq!(v.len(), DIMENSIONS);
            assert!((dot(v, v) - 1.0).abs() < 1e-5);
        }
        let (a, b, c) = (&vectors[0], &vectors[1], &vectors[2]);
        assert!((dot(a, b) - 0.605_679).abs() < 1e-3, "a·b = {}", dot(a, b));
        assert!((dot(a, c) + 0.020_201).abs() < 1e-3, "a·c = {}", dot(a, c));
        assert!((dot(b, c) - 0.049_130).abs() < 1e-3, "b·c = {}", dot(b, c));
        assert!((a[0] - 0.004_553).abs() < 1e-4 && (a[4] + 0.141_611).abs() < 1e-4);
        // Padding does not change a vector: alone, the short text gives the same one.
        let alone = embedder.embed(&texts[2..]).expect("embeds");
        assert!(dot(&alone[0], c) > 0.999_99);
        assert!(embedder.embed(&[]).expect("embeds nothing").is_empty());
    }
}
