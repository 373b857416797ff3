//! `hamlet serve` and `hamlet share`. `serve` lists a folder's recordings and serves them,
//! the viewer's page and its module, read-only: GET only, nothing outside the folder, nothing
//! but `.hamlet` files. `share` writes one HTML file that carries a recording and connects
//! nowhere.

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
    let mut told = BufReader::new(child.stderr.take().unwrap());
    told.read_line(&mut said).unwrap();
    // The rest of what the server says is read, never left to fill or close the pipe.
    std::thread::spawn(move || std::io::copy(&mut told, &mut std::io::sink()));
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

#[test]
fn share_writes_one_page_that_carries_the_recording_and_connects_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let file = root.join("recordings/willowmere-morning.hamlet");
    let out = dir.path().join("morning.html");
    let done = Command::new(env!("CARGO_BIN_EXE_hamlet"))
        .args(["share"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(String::from_utf8_lossy(&done.stderr).contains("Every prompt and answer"));
    let html = std::fs::read_to_string(&out).unwrap();
    // One file: no script, style or module fetched from anywhere.
    assert!(!html.contains("src=\"") && !html.contains("href=\"style.css\""), "nothing linked");
    let csp = html.split("Content-Security-Policy\" content=\"").nth(1).unwrap();
    let csp = csp.split('"').next().unwrap();
    for must in ["default-src 'none'", "connect-src 'none'", "'wasm-unsafe-eval'", "'sha256-"] {
        assert!(csp.contains(must), "{must}: {csp}");
    }
    // It carries the recording, byte for byte.
    let carried = html.split("id=\"hamlet-recording\">").nth(1).unwrap();
    let carried = carried.split("</script>").next().unwrap();
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(carried.trim()).unwrap();
    assert_eq!(bytes, std::fs::read(&file).unwrap());
    // The page's modules, joined: every one of them, each once.
    for module in ["\"main.js\"", "\"browser.js\"", "\"dom.js\""] {
        assert_eq!(html.matches(&format!("modules[{module}] = ")).count(), 1, "{module}");
    }
    // A file that is not a recording, and one that does not verify, are refused in words.
    let bad = dir.path().join("bad.hamlet");
    std::fs::write(&bad, b"not a recording").unwrap();
    let mut damaged = std::fs::read(&file).unwrap();
    let at = damaged.len() / 2;
    damaged[at] ^= 0x55;
    let unsound = dir.path().join("unsound.hamlet");
    std::fs::write(&unsound, &damaged).unwrap();
    for (f, says) in [(&bad, "is not a Hamlet recording"), (&unsound, "does not verify")] {
        let refused = Command::new(env!("CARGO_BIN_EXE_hamlet"))
            .arg("share")
            .arg(f)
            .arg("--out")
            .arg(dir.path().join("x.html"))
            .output()
            .unwrap();
        assert!(!refused.status.success());
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(err.contains(says), "{err}");
    }
    assert!(!dir.path().join("x.html").exists(), "nothing written for a refusal");
}

#[test]
fn share_cuts_a_branch_at_a_moment() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = dir.path().join("early.html");
    let done = Command::new(env!("CARGO_BIN_EXE_hamlet"))
        .arg("share")
        .arg(root.join("recordings/willowmere-morning.hamlet"))
        .args(["--branch", "main", "--until", "day0 07:30", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    let carried = html.split("id=\"hamlet-recording\">").nth(1).unwrap();
    let carried = carried.split("</script>").next().unwrap();
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(carried.trim()).unwrap();
    let cut = dir.path().join("cut.hamlet");
    std::fs::write(&cut, &bytes).unwrap();
    // A recording that verifies, whose last event is at 07:30 at the latest.
    let verified =
        Command::new(env!("CARGO_BIN_EXE_hamlet")).arg("verify").arg(&cut).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let rec = hamlet_log::Recording::open(&bytes).unwrap();
    let main = rec.root().unwrap().id;
    let last = rec.events(main, 0).unwrap().last().unwrap().unwrap();
    assert!(last.sim_time_secs() <= 7 * 3600 + 30 * 60, "{}", last.sim_time_secs());
    assert!(last.sim_time_secs() >= 7 * 3600 + 20 * 60, "cut near 07:30: {}", last.sim_time_secs());
    // A branch that is not there is refused in words.
    let refused = Command::new(env!("CARGO_BIN_EXE_hamlet"))
        .arg("share")
        .arg(root.join("recordings/willowmere-morning.hamlet"))
        .args(["--branch", "nowhere", "--out"])
        .arg(dir.path().join("x.html"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("no branch `nowhere`; there are: main")
    );
}
