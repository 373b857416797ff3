//! `hamlet share`: one HTML file that shows a recording in any browser, offline. It carries
//! the viewer's page (its modules joined into one script), the browser's build of the read
//! commands (gzipped), and the recording itself (already compressed, as format 2 writes it),
//! verified as it opens; its content security policy allows no connection anywhere.
//!
//! The page's modules are joined here, not by a bundler: each module becomes a function
//! run once in import order, whose `import { a, b as c } from './x.js'` becomes
//! `const { a, b: c } = modules['x.js']` and whose `export` declarations are what it
//! returns. The page keeps to what this reads (named imports of `./` modules, `export`
//! before a function, class or const, no cycles); anything else is refused in words.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};
use base64::Engine as _;
use clap::Args;
use sha2::Digest as _;

use super::serve::{module, page_file};
use super::Outcome;

/// The largest recording a shared file carries: a browser holds the file, its text and
/// the recording's bytes at once.
pub const MAX_RECORDING_BYTES: u64 = 64 << 20;

/// `hamlet share`.
#[derive(Debug, Args)]
pub struct ShareArgs {
    /// The recording to share (`.hamlet`)
    file: PathBuf,
    /// Where to write the page (`.html`)
    #[arg(long)]
    out: PathBuf,
    /// Share only this branch (with its ancestry); default: the whole recording
    #[arg(long)]
    branch: Option<String>,
    /// Share only up to this moment of the branch ('day1 17:00', a seq as '#1200')
    #[arg(long, requires = "branch")]
    until: Option<String>,
}

/// `hamlet share`.
pub fn share(args: ShareArgs) -> anyhow::Result<Outcome> {
    let wasm = module()?;
    let original = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let (rec, report) = hamlet_engine::log::open_checked(&original)
        .map_err(|e| anyhow::anyhow!("{} is not a Hamlet recording: {e}", args.file.display()))?;
    if !report.is_clean() {
        bail!(
            "{} does not verify ({} problems; `hamlet verify` lists them): a shared file would \
             only show that",
            args.file.display(),
            report.problems.len()
        );
    }
    let name = args
        .file
        .file_name()
        .map_or_else(|| "recording.hamlet".to_owned(), |n| n.to_string_lossy().into_owned());
    let recording = match &args.branch {
        None => original.clone(),
        Some(branch) => cut(&original, branch, args.until.as_deref())?,
    };
    drop(rec);
    if recording.len() as u64 > MAX_RECORDING_BYTES {
        bail!(
            "{} is {:.0} MiB, more than a shared file carries ({} MiB): show it with \
             `hamlet serve {}` instead, or share one branch up to a moment (--branch, --until)",
            args.file.display(),
            recording.len() as f64 / (1 << 20) as f64,
            MAX_RECORDING_BYTES >> 20,
            args.file.display()
        );
    }
    let html = page(&name, &recording, wasm)?;
    let mut tmp = args.out.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, &html).with_context(|| format!("cannot write {}", args.out.display()))?;
    std::fs::rename(&tmp, &args.out)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    eprintln!(
        "wrote {} ({:.1} MiB): {name} ({:.1} MiB) and its viewer; it opens in a browser with \
         no network. Every prompt and answer of the recording is inside it.",
        args.out.display(),
        html.len() as f64 / (1 << 20) as f64,
        recording.len() as f64 / (1 << 20) as f64,
    );
    Ok(Outcome::Done)
}

/// The recording of `branch` (with its ancestry), cut after `until` if given.
fn cut(bytes: &[u8], branch: &str, until: Option<&str>) -> anyhow::Result<Vec<u8>> {
    let dir = tempfile::tempdir()?;
    let mut store = hamlet_engine::store::Store::open(dir.path())?;
    store.import(bytes)?;
    let branches = store.branches();
    let Some(picked) = hamlet_engine::log::pick(&branches, Some(branch)).cloned() else {
        let known: Vec<&str> = branches.iter().map(|b| b.name.as_str()).collect();
        bail!("no branch `{branch}`; there are: {}", known.join(", "));
    };
    let seq = match until {
        None => None,
        Some(text) => {
            let moment = super::parse_moment(text).map_err(|e| anyhow::anyhow!("{e}"))?;
            let town = hamlet_engine::history::state_at(&store, picked.id, moment)?;
            town.head.map(|(s, _)| s)
        }
    };
    Ok(hamlet_engine::history::export_until_with_checkpoints(
        &store,
        Some(picked.id),
        seq,
        Vec::new(),
    )?)
}

/// `bytes` gzipped (the browser inflates them itself, `DecompressionStream`).
fn gzip(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    use std::io::Write as _;
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(bytes)?;
    Ok(z.finish()?)
}

/// Base64 of `bytes`.
fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The CSP source naming `text` by its hash.
fn hash(text: &str) -> String {
    format!("'sha256-{}'", b64(&sha2::Sha256::digest(text.as_bytes())))
}

/// The whole page: index.html with its stylesheet and modules inline, the worker, the
/// module and the recording as data, and a policy naming exactly its two inline texts.
fn page(name: &str, recording: &[u8], wasm: &[u8]) -> anyhow::Result<String> {
    let text = |file: &str| -> anyhow::Result<String> {
        String::from_utf8(page_file(file)?.to_vec()).context("a page file is not UTF-8")
    };
    let index = text("index.html")?;
    let style = text("style.css")?;
    let worker = join_modules("worker.mjs", &text)?;
    let name_js = serde_json::to_string(name)?;
    let boot = format!(
        "const hamletBytes = (id) => {{\n\
         \x20 const s = atob(document.getElementById(id).textContent.trim());\n\
         \x20 const u = new Uint8Array(s.length);\n\
         \x20 for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);\n\
         \x20 return u;\n\
         }};\n\
         window.HAMLET_EMBEDDED = {{\n\
         \x20 wasm: () => new Response(new Blob([hamletBytes('hamlet-wasm')]).stream()\n\
         \x20   .pipeThrough(new DecompressionStream('gzip'))).arrayBuffer(),\n\
         \x20 worker: () => URL.createObjectURL(new Blob([document.getElementById('hamlet-worker').textContent], {{ type: 'text/javascript' }})),\n\
         \x20 recording: async () => ({{ name: {name_js}, bytes: hamletBytes('hamlet-recording') }}),\n\
         }};\n"
    );
    let script = format!("{boot}{}", join_modules("main.js", &text)?);
    for (what, inline) in
        [("the page's script", &script), ("the worker", &worker), ("the stylesheet", &style)]
    {
        if inline.to_ascii_lowercase().contains("</script")
            || inline.to_ascii_lowercase().contains("</style")
        {
            bail!("{what} holds a closing tag and cannot be put inline");
        }
    }
    let csp = format!(
        "default-src 'none'; script-src {} 'wasm-unsafe-eval'; worker-src blob:; style-src {}; \
         img-src data: blob:; connect-src 'none'; object-src 'none'; base-uri 'none'; \
         form-action 'none'",
        hash(&script),
        hash(&style)
    );
    let head_links = [
        "  <link rel=\"stylesheet\" href=\"style.css\">\n",
        "  <script type=\"module\" src=\"main.js\"></script>\n",
    ];
    let mut html = index;
    for link in head_links {
        if !html.contains(link) {
            bail!("index.html no longer reads `{}`", link.trim());
        }
        html = html.replacen(link, "", 1);
    }
    let head = format!(
        "  <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n  <style>{style}</style>\n"
    );
    html = html.replacen("</head>", &format!("{head}</head>"), 1);
    let body = format!(
        "<script type=\"text/plain\" id=\"hamlet-worker\">{worker}</script>\n\
         <script type=\"application/octet-stream\" id=\"hamlet-wasm\">{}</script>\n\
         <script type=\"application/octet-stream\" id=\"hamlet-recording\">{}</script>\n\
         <script type=\"module\">{script}</script>\n</body>",
        b64(&gzip(wasm)?),
        b64(recording)
    );
    if !html.contains("</body>") {
        bail!("index.html has no </body>");
    }
    Ok(html.replacen("</body>", &body, 1))
}

/// One module of the page as read for joining.
struct Module {
    /// The module's code with its imports and `export`s rewritten.
    body: String,
    /// The modules it imports.
    imports: Vec<String>,
    /// The names it exports.
    exports: Vec<String>,
}

/// Reads module `file` (see the module's documentation).
fn read_module(file: &str, source: &str) -> anyhow::Result<Module> {
    let mut body = String::new();
    let mut imports = Vec::new();
    let mut exports = Vec::new();
    let mut rest = source;
    while !rest.is_empty() {
        let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
        let line = &rest[..line_end];
        if line.starts_with("import ") {
            let end = rest.find(';').with_context(|| format!("{file}: an import without `;`"))?;
            let statement = &rest[..end];
            let (names, from) = statement
                .strip_prefix("import")
                .and_then(|s| s.trim().strip_prefix('{'))
                .and_then(|s| s.split_once('}'))
                .with_context(|| format!("{file}: `{statement}` is not `import {{ … }} from`"))?;
            let from = from
                .trim()
                .strip_prefix("from")
                .map(str::trim)
                .and_then(|f| f.strip_prefix("'./"))
                .and_then(|f| f.strip_suffix('\''))
                .with_context(|| format!("{file}: `{statement}` imports from outside ./"))?;
            let bound: Vec<String> = names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| match n.split_once(" as ") {
                    Some((a, b)) => format!("{}: {}", a.trim(), b.trim()),
                    None => n.to_owned(),
                })
                .collect();
            body.push_str(&format!("const {{ {} }} = modules[{from:?}];", bound.join(", ")));
            imports.push(from.to_owned());
            rest = &rest[end + 1..];
            continue;
        }
        if let Some(declared) = line.strip_prefix("export ") {
            let after = declared
                .strip_prefix("async function ")
                .or_else(|| declared.strip_prefix("function "))
                .or_else(|| declared.strip_prefix("class "))
                .or_else(|| declared.strip_prefix("const "))
                .with_context(|| {
                    format!("{file}: `{}` is not an export this reads", line.trim())
                })?;
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            if name.is_empty() {
                bail!("{file}: `{}` exports no name this reads", line.trim());
            }
            exports.push(name);
            body.push_str(declared);
        } else {
            body.push_str(line);
        }
        rest = &rest[line_end..];
    }
    Ok(Module { body, imports, exports })
}

/// Module `entry` and every module it imports, joined into one script (see the module's
/// documentation).
fn join_modules(
    entry: &str,
    text: &dyn Fn(&str) -> anyhow::Result<String>,
) -> anyhow::Result<String> {
    let mut read: BTreeMap<String, Module> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    // Depth first: a module after everything it imports; a cycle is refused.
    fn visit(
        name: &str,
        text: &dyn Fn(&str) -> anyhow::Result<String>,
        read: &mut BTreeMap<String, Module>,
        order: &mut Vec<String>,
        path: &mut Vec<String>,
    ) -> anyhow::Result<()> {
        if order.iter().any(|o| o == name) {
            return Ok(());
        }
        if path.iter().any(|p| p == name) {
            bail!("the page's modules import in a circle: {} → {name}", path.join(" → "));
        }
        let module = read_module(name, &text(name)?)?;
        path.push(name.to_owned());
        for i in &module.imports {
            visit(i, text, read, order, path)?;
        }
        path.pop();
        read.insert(name.to_owned(), module);
        order.push(name.to_owned());
        Ok(())
    }
    visit(entry, text, &mut read, &mut order, &mut Vec::new())?;
    let mut out = String::from("const modules = {};\n");
    for name in &order {
        let m = &read[name];
        out.push_str(&format!(
            "modules[{name:?}] = (() => {{\n'use strict';\n{}\nreturn {{ {} }};\n}})();\n",
            m.body,
            m.exports.join(", ")
        ));
    }
    Ok(out)
}
