//! A W3C WebDriver client over plain HTTP, enough to drive the viewer's window through
//! WebKitWebDriver (Debian's `webkit2gtk-driver`): a virtual X display (Xvfb), the driver,
//! one session on the real `hamlet-viewer` binary, scripts run in the page, clicks,
//! screenshots of the X screen (WebDriver's own screenshot command hangs under Xvfb), and
//! the viewer killed with SIGKILL as a crash would end it. The same page in a browser is
//! driven through ChromeDriver and headless Chromium (Debian's `chromium-driver`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// One HTTP/1.1 request; the response body as JSON.
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(120))).map_err(|e| e.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json; \
         charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    // Read to the end of the body: its length when the head gives one (ChromeDriver keeps
    // the connection open), else to the end of the stream.
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        if let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|n| n.trim().parse::<usize>().ok());
            if length.is_some_and(|n| raw.len() >= split + 4 + n) {
                break;
            }
        }
        let n = s.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no HTTP header")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
    let mut payload = raw[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        payload = unchunk(&payload);
    }
    if payload.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&payload)
        .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&payload)))
}

/// The data of a chunked HTTP body (a chunk's extensions after `;` ignored).
pub fn unchunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&data[..end]);
        let size =
            usize::from_str_radix(size.split(';').next().unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = data.get(start + size + 2..).unwrap_or(&[]);
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Xvfb, WebKitWebDriver and a session on the viewer, all ended when dropped.
pub struct Window {
    /// The X display's server (none for a headless browser).
    xvfb: Option<Child>,
    driver: Child,
    port: u16,
    session: String,
    display: String,
    /// Where screenshots go.
    pub shots: PathBuf,
}

fn need(program: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{program} is not installed: `./hamlet-dev setup` installs it (Debian package {package}); \
         HAMLET_SKIP_VIEWER_E2E=1 skips these tests"
    );
}

impl Window {
    /// Opens the viewer (the test build these tests were built with) on `args` in a fresh X
    /// display, its settings in `data_home`.
    pub fn open(args: &[String], data_home: &Path, shots: &Path) -> Window {
        Window::open_binary(Path::new(env!("CARGO_BIN_EXE_hamlet-viewer")), args, data_home, shots)
    }

    /// [`Window::open`] with another build of the viewer.
    pub fn open_binary(binary: &Path, args: &[String], data_home: &Path, shots: &Path) -> Window {
        need("Xvfb", "xvfb");
        need("WebKitWebDriver", "webkit2gtk-driver");
        need("import", "imagemagick");
        std::fs::create_dir_all(shots).unwrap();
        // A display number nobody uses: Xvfb picks one and says which.
        let (mut reader, writer) = std::io::pipe().unwrap();
        let xvfb = Command::new("Xvfb")
            .args(["-displayfd", "1", "-screen", "0", "1600x1000x24", "-nolisten", "tcp"])
            .stdout(writer)
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts");
        let mut number = Vec::new();
        let mut byte = [0u8; 1];
        while reader.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
            number.push(byte[0]);
        }
        let display = format!(":{}", String::from_utf8_lossy(&number).trim());
        let port = free_port();
        let mut command = Command::new("WebKitWebDriver");
        command
            .arg(format!("--port={port}"))
            .env("DISPLAY", &display)
            .env("TAURI_WEBVIEW_AUTOMATION", "true")
            .env("WEBKIT_DISABLE_COMPOSITING_MODE", "1")
            .env("WEBKIT_DISABLE_DMABUF_RENDERER", "1")
            .env("NO_AT_BRIDGE", "1")
            .env("XDG_DATA_HOME", data_home)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // The embedded models where the tests' own environment has them (`./hamlet-dev
        // setup` put them there), not under the window's fresh data directory.
        if let Ok(models) = hamlet_gateway::models::models_dir() {
            command.env(hamlet_gateway::models::MODELS_DIR_ENV, models);
        }
        let driver = command.spawn().expect("WebKitWebDriver starts");
        // Tries, not a clock: about 30 s.
        let mut tries = 300;
        while http(port, "GET", "/status", None).is_err() {
            tries -= 1;
            assert!(tries > 0, "WebKitWebDriver did not answer on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let created = http(
            port,
            "POST",
            "/session",
            Some(&json!({ "capabilities": { "alwaysMatch": {
                "webkitgtk:browserOptions": { "binary": binary, "args": args }
            }}})),
        )
        .expect("a WebDriver session");
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        let mut window =
            Window { xvfb: Some(xvfb), driver, port, session, display, shots: shots.to_owned() };
        window.set_size(1600, 1000);
        window
    }

    /// Headless Chromium on `url` (the page `hamlet share` wrote, or one `hamlet serve`
    /// serves), its downloads going to `downloads`.
    pub fn browser(url: &str, downloads: &Path, shots: &Path) -> Window {
        Window::browser_with(url, downloads, shots, &[])
    }

    /// [`Window::browser`] with variables set in the browser's environment (its fonts).
    pub fn browser_with(
        url: &str,
        downloads: &Path,
        shots: &Path,
        env: &[(&str, &Path)],
    ) -> Window {
        need("chromium", "chromium");
        need("chromedriver", "chromium-driver");
        std::fs::create_dir_all(shots).unwrap();
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        // Tries, not a clock: about 30 s.
        let mut tries = 300;
        while http(port, "GET", "/status", None).is_err() {
            tries -= 1;
            assert!(tries > 0, "chromedriver did not answer on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let created = http(
            port,
            "POST",
            "/session",
            Some(&json!({ "capabilities": { "alwaysMatch": { "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1600,1000"],
                "prefs": { "download.default_directory": downloads, "download.prompt_for_download": false },
            }}}})),
        )
        .expect("a WebDriver session");
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        let window = Window {
            xvfb: None,
            driver,
            port,
            session,
            display: String::new(),
            shots: shots.to_owned(),
        };
        window.call("POST", "/url", Some(&json!({ "url": url })));
        window
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let answer = http(self.port, method, &path, body).unwrap_or_else(|e| panic!("{path}: {e}"));
        if let Some(error) = answer["value"]["error"].as_str() {
            panic!("{path}: {error}: {}", answer["value"]["message"]);
        }
        answer["value"].clone()
    }

    fn set_size(&mut self, w: u32, h: u32) {
        let path = format!("/session/{}/window/rect", self.session);
        let _ = http(
            self.port,
            "POST",
            &path,
            Some(&json!({ "x": 0, "y": 0, "width": w, "height": h })),
        );
    }

    /// The X display the window is on (`:N`).
    pub fn display(&self) -> &str {
        &self.display
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page.
    pub fn run(&self, script: &str, args: Value) -> Value {
        self.call("POST", "/execute/sync", Some(&json!({ "script": script, "args": args })))
    }

    /// Runs `script` whose last argument is a callback to call with the answer.
    pub fn run_async(&self, script: &str, args: Value) -> Value {
        self.call("POST", "/execute/async", Some(&json!({ "script": script, "args": args })))
    }

    /// Waits until `script` returns something truthy, and returns it.
    pub fn wait_for(&self, what: &str, script: &str, args: Value) -> Value {
        // Tries, not a clock: a minute at least.
        for _ in 0..1200 {
            let v = self.run(script, args.clone());
            if !(v.is_null() || v == json!(false) || v == json!(0) || v == json!("")) {
                return v;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("timed out waiting for {what}");
    }

    /// Clicks the element `css` selects.
    pub fn click(&self, css: &str) {
        let found =
            self.call("POST", "/element", Some(&json!({ "using": "css selector", "value": css })));
        let id = found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_owned();
        self.call("POST", &format!("/element/{id}/click"), Some(&json!({})));
    }

    /// Kills the viewer as a crash would: SIGKILL to the `hamlet-viewer` process the driver
    /// started (found among the driver's descendants in `/proc`), then to every process it
    /// had started itself (WebKit's), with no chance to flush or close anything. Waits until
    /// the viewer is gone and answers its pid; the window is of no use after this.
    pub fn kill_hard(&self) -> u32 {
        let table = processes();
        let under_driver = descendants(&table, self.driver.id());
        let viewers: Vec<u32> = under_driver
            .iter()
            .copied()
            .filter(|pid| table.iter().any(|p| p.pid == *pid && p.name == "hamlet-viewer"))
            .collect();
        let [viewer] = viewers[..] else {
            let seen: Vec<(u32, &str)> = table
                .iter()
                .filter(|p| under_driver.contains(&p.pid))
                .map(|p| (p.pid, p.name.as_str()))
                .collect();
            panic!("one hamlet-viewer under WebKitWebDriver, not {viewers:?}: {seen:?}");
        };
        // Its own children are found before it dies: after, they belong to no one here.
        let children = descendants(&table, viewer);
        assert!(send_kill(&[viewer]), "SIGKILL to the viewer (pid {viewer})");
        send_kill(&children);
        // Tries, not a clock: about 10 s.
        for _ in 0..200 {
            if !alive(viewer) {
                return viewer;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the viewer (pid {viewer}) outlived SIGKILL");
    }

    /// A picture of the X screen (of the page, in a browser), saved as `name.png`.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        std::thread::sleep(Duration::from_millis(300));
        let path = self.shots.join(format!("{name}.png"));
        if self.xvfb.is_none() {
            use base64::Engine as _;
            let png = self.call("GET", "/screenshot", None);
            let png =
                base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
            std::fs::write(&path, png).unwrap();
            return path;
        }
        let ok = Command::new("import")
            .args(["-window", "root", "-display", &self.display])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "screenshot {name}");
        path
    }
}

/// A process as `/proc` shows it: its id, its parent's, and its program's file name.
struct Process {
    pid: u32,
    parent: u32,
    name: String,
}

/// Every process this user can see (one that ends while being read is left out).
fn processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid …`: the name may hold spaces and parentheses.
            let after = &stat[stat.rfind(')')? + 1..];
            let parent = after.split_whitespace().nth(1)?.parse().ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let program = cmdline.split(|b| *b == 0).next().unwrap_or_default();
            let program = String::from_utf8_lossy(program);
            let name = Path::new(&*program)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Some(Process { pid, parent, name })
        })
        .collect()
}

/// The processes under `root`, children before grandchildren.
fn descendants(table: &[Process], root: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for child in table.iter().filter(|p| p.parent == parent) {
            if !found.contains(&child.pid) {
                found.push(child.pid);
                next.push(child.pid);
            }
        }
    }
    found
}

/// SIGKILL to `pids` (the shell's `kill`: the tests forbid unsafe code); true if every
/// one was sent.
fn send_kill(pids: &[u32]) -> bool {
    if pids.is_empty() {
        return true;
    }
    Command::new("sh")
        .args(["-c", "kill -KILL \"$@\"", "sh"])
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `pid` still runs (a zombie, dead but not yet reaped, does not: its files, and
/// the locks on them, are closed).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().is_some_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

impl Drop for Window {
    fn drop(&mut self) {
        let _ = http(self.port, "DELETE", &format!("/session/{}", self.session), None);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        if let Some(xvfb) = &mut self.xvfb {
            let _ = xvfb.kill();
            let _ = xvfb.wait();
        }
    }
}
