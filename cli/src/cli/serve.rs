//! `hamlet serve`: a read-only local web server for recordings. It lists the `.hamlet` files
//! of a folder (or serves one file) and opens each in the viewer's page running in the
//! browser over the WebAssembly build (`viewer/`, `web/`, both carried in this binary). GET
//! and HEAD only; nothing outside the folder, and in it only its `.hamlet` files; bound to
//! 127.0.0.1 unless told otherwise.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;

use super::Outcome;

mod page {
    include!(concat!(env!("OUT_DIR"), "/page.rs"));
}

/// `hamlet serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A folder of recordings to list, or one recording to open
    path: PathBuf,
    /// The port to listen on (0: any free one)
    #[arg(long, default_value_t = 8470)]
    port: u16,
    /// The address to listen on; another machine can reach the recordings only if this is
    /// not 127.0.0.1
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
}

/// What the page may do: its own scripts, the module compiled, nothing fetched from
/// anywhere but this server.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; \
style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; \
base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The browser's module, or how to get it.
pub fn module() -> anyhow::Result<&'static [u8]> {
    match page::WASM {
        Some(wasm) => Ok(wasm),
        None => bail!(
            "this hamlet was built without the browser's viewer (the wasm32-unknown-unknown \
             target was missing): run `rustup target add wasm32-unknown-unknown`, then build \
             hamlet again (./hamlet-dev setup)"
        ),
    }
}

/// The viewer's page file `name`.
pub fn page_file(name: &str) -> anyhow::Result<&'static [u8]> {
    match page::PAGE.iter().find(|(n, _)| *n == name) {
        Some((_, bytes)) => Ok(bytes),
        None => bail!("this hamlet carries no page file `{name}`"),
    }
}

/// `hamlet serve`.
pub fn serve(args: ServeArgs) -> anyhow::Result<Outcome> {
    module()?;
    let meta = std::fs::metadata(&args.path)
        .with_context(|| format!("cannot read {}", args.path.display()))?;
    let (dir, only) = if meta.is_dir() {
        (args.path.clone(), None)
    } else {
        let name = args.path.file_name().map(|n| n.to_string_lossy().into_owned());
        let dir = args.path.parent().map_or_else(|| PathBuf::from("."), Path::to_owned);
        (if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir }, name)
    };
    let dir =
        std::fs::canonicalize(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let listener = TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .with_context(|| format!("cannot listen on {}:{}", args.bind, args.port))?;
    let at = listener.local_addr()?;
    let shown = match &only {
        Some(name) => format!("http://{at}/viewer/index.html?url=/recordings/{}", encode(name)),
        None => format!("http://{at}/"),
    };
    // Said in one write, and a closed stderr is no reason to stop serving: whoever started
    // the server may read the address and close the pipe.
    let mut said = format!("serving {} read-only at {shown}\n", args.path.display());
    if !args.bind.is_loopback() {
        said += &format!(
            "note: bound to {}: other machines on the network can read these recordings\n",
            args.bind
        );
    }
    said += "open that address in a browser; Ctrl-C stops\n";
    let _ = std::io::stderr().write_all(said.as_bytes());
    let server = Server { dir, only };
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let server = server.clone();
        std::thread::spawn(move || {
            let _ = server.answer(stream);
        });
    }
    Ok(Outcome::Done)
}

#[derive(Clone)]
struct Server {
    dir: PathBuf,
    only: Option<String>,
}

/// A path's `%XX` escapes decoded (`None` if one is broken or the result is not UTF-8).
fn decode(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A file name for a URL path: everything but unreserved characters escaped.
fn encode(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Text made safe to put in HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

impl Server {
    fn answer(&self, stream: TcpStream) -> std::io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        // The headers are read and ignored: nothing in them changes an answer.
        let mut header = String::new();
        while reader.read_line(&mut header)? > 2 {
            header.clear();
        }
        let mut words = line.split_whitespace();
        let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let mut out = stream;
        if method != "GET" && method != "HEAD" {
            return respond(
                &mut out,
                "405 Method Not Allowed",
                "text/plain",
                b"read-only: GET only\n",
                method,
            );
        }
        let path = target.split(['?', '#']).next().unwrap_or("");
        let Some(path) = decode(path) else {
            return respond(
                &mut out,
                "400 Bad Request",
                "text/plain",
                b"a broken address\n",
                method,
            );
        };
        match self.find(&path) {
            Some((kind, bytes)) => respond(&mut out, "200 OK", kind, &bytes, method),
            None => respond(&mut out, "404 Not Found", "text/plain", b"nothing here\n", method),
        }
    }

    /// What `path` names: a listing, a page file, the module, or a recording of the folder.
    fn find(&self, path: &str) -> Option<(&'static str, Vec<u8>)> {
        if path == "/" {
            return Some(("text/html; charset=utf-8", self.listing().into_bytes()));
        }
        if path == "/viewer/hamlet_web.wasm" {
            return Some(("application/wasm", module().ok()?.to_vec()));
        }
        if let Some(name) = path.strip_prefix("/viewer/") {
            let (_, bytes) = page::PAGE.iter().find(|(n, _)| *n == name)?;
            return Some((content_type(name), bytes.to_vec()));
        }
        let name = path.strip_prefix("/recordings/")?;
        if !self.served(name) {
            return None;
        }
        // Only a file directly in the folder: no path, no link out of it.
        let file = std::fs::canonicalize(self.dir.join(name)).ok()?;
        if file.parent() != Some(self.dir.as_path()) || !file.is_file() {
            return None;
        }
        Some(("application/octet-stream", std::fs::read(file).ok()?))
    }

    /// Whether `name` is a recording this server shows.
    fn served(&self, name: &str) -> bool {
        let plain = !name.is_empty()
            && !name.contains(['/', '\\', '\0'])
            && !name.starts_with('.')
            && name.ends_with(".hamlet");
        plain && self.only.as_deref().is_none_or(|only| only == name)
    }

    /// The page at `/`: each recording, a link that opens it in the viewer.
    fn listing(&self) -> String {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| self.served(n))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        let items: String = names
            .iter()
            .map(|n| {
                let size = std::fs::metadata(self.dir.join(n)).map_or(0, |m| m.len());
                format!(
                    "<li><a href=\"/viewer/index.html?url=/recordings/{}\">{}</a> \
                     <small>{:.1} MiB</small></li>\n",
                    encode(n),
                    escape(n),
                    size as f64 / (1 << 20) as f64
                )
            })
            .collect();
        let body = if items.is_empty() {
            "<p>No <code>.hamlet</code> recordings in this folder.</p>".to_owned()
        } else {
            format!("<ul>\n{items}</ul>")
        };
        format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>Hamlet recordings</title></head><body>\n<h1>Hamlet recordings</h1>\n\
             <p>{}: click one to open it in the viewer. This server only reads.</p>\n{body}\n\
             </body></html>\n",
            escape(&self.dir.display().to_string())
        )
    }
}

fn respond(
    out: &mut TcpStream,
    status: &str,
    kind: &str,
    body: &[u8],
    method: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Content-Security-Policy: {CSP}\r\nX-Content-Type-Options: nosniff\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    out.write_all(head.as_bytes())?;
    if method != "HEAD" {
        out.write_all(body)?;
    }
    out.flush()
}
