//! `hamlet serve`: lists a folder's recordings and serves them, the viewer's page and its
//! module, read-only: GET only, nothing outside the folder, nothing but `.hamlet` files.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};

/// Asks `method path` of the server at `at`; the status line and the body.
fn ask(at: &str, method: &str, path: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(at).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {at}\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").expect("a head");
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    (head, all[split + 4..].to_vec())
}

#[test]
fn serve_shows_a_folders_recordings_and_nothing_else_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let morning = std::fs::read(root.join("recordings/willowmere-morning.hamlet")).unwrap();
    std::fs::write(dir.path().join("a morning.hamlet"), &morning).unwrap();
    std::fs::write(dir.path().join("secret.txt"), b"not for the web").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hamlet"))
        .args(["serve", "--port", "0"])
        .arg(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut said).unwrap();
    let at = said.split("http://").nth(1).and_then(|r| r.split('/').next()).unwrap().to_owned();
    assert!(at.starts_with("127.0.0.1:"), "{said}");

    let (head, listing) = ask(&at, "GET", "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let listing = String::from_utf8(listing).unwrap();
    assert!(listing.contains("/viewer/index.html?url=/recordings/a%20morning.hamlet"), "{listing}");
    assert!(!listing.contains("secret"), "{listing}");
    let (head, page) = ask(&at, "GET", "/viewer/index.html");
    assert!(head.contains("Content-Security-Policy: default-src 'self'"), "{head}");
    assert!(String::from_utf8(page).unwrap().contains("main.js"));
    let (head, wasm) = ask(&at, "GET", "/viewer/hamlet_web.wasm");
    assert!(head.contains("application/wasm"), "{head}");
    assert_eq!(&wasm[..4], b"\0asm");
    let (_, got) = ask(&at, "GET", "/recordings/a%20morning.hamlet?x=1");
    assert_eq!(got, morning, "the recording, byte for byte");
    // Nothing else: not another file of the folder, not a way out of it, no writes.
    for path in [
        "/recordings/secret.txt",
        "/recordings/..%2Fsecret.txt",
        "/recordings/%2e%2e/x.hamlet",
        "/x",
    ] {
        let (head, _) = ask(&at, "GET", path);
        assert!(head.starts_with("HTTP/1.1 404"), "{path}: {head}");
    }
    for method in ["POST", "PUT", "DELETE"] {
        let (head, _) = ask(&at, method, "/recordings/a%20morning.hamlet");
        assert!(head.starts_with("HTTP/1.1 405"), "{method}: {head}");
    }
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(std::fs::read(dir.path().join("a morning.hamlet")).unwrap(), morning);
}
