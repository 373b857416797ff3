//! The page in a browser, as a person meets it: a day shared as one HTML file and opened
//! from disk with nothing fetched, and a folder shown by `hamlet serve`. Headless Chromium
//! (ChromeDriver) scrubs to moments and finds the agents where `hamlet show` puts them, opens
//! an agent and "why?" down to a prompt, draws a research chart, saves the recording back
//! byte for byte; a hostile recording shows its text as text and runs nothing; an unsound
//! one shows its findings. Screenshots go to `target/viewer-e2e/`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::measure::{seek, wait_open};
use crate::webdriver::Window;
use crate::{events_of, hamlet_show, hostile, one_window, shipped, shots, skip};

/// The `hamlet` built beside these tests.
fn hamlet() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let hamlet = exe.parent().and_then(Path::parent).map(|d| d.join("hamlet")).unwrap();
    assert!(
        hamlet.exists(),
        "{} is not built: cargo build --release -p hamlet-cli",
        hamlet.display()
    );
    hamlet
}

/// `hamlet share FILE` into `dir`: the page's path.
fn share(file: &Path, dir: &Path) -> PathBuf {
    let page = dir.join("day.html");
    let made =
        Command::new(hamlet()).arg("share").arg(file).arg("--out").arg(&page).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    page
}

/// Seeks to three moments and holds every agent's tile to `hamlet show`'s.
fn tiles_agree(w: &Window, file: &Path) {
    let head = events_of(file).last().unwrap().seq();
    for seq in [head / 5, head / 2, head - 3] {
        let shown = seek(w, seq);
        let town = hamlet_show(file, seq);
        let agents = shown["agents"].as_array().unwrap();
        let expected = town["agents"].as_array().unwrap();
        assert_eq!(agents.len(), expected.len(), "at #{seq}");
        for brief in expected {
            let a = agents.iter().find(|a| a["id"] == brief["id"]).expect("on screen");
            assert_eq!(a["tile"], brief["tile"], "{} at #{seq}", brief["name"]);
        }
    }
}

/// Opens agent 0's panel and its action's "why?" down to the prompt of a call; answers it.
fn why_to_a_prompt(w: &Window) -> String {
    w.run("window.hamlet.select(0); return true;", json!([]));
    w.wait_for(
        "the agent panel",
        "const a = window.hamlet.debug().agent; return !a.loading && a.agent === 0;",
        json!([]),
    );
    w.click("#pane-agent .agent-doing .btn-why");
    w.wait_for(
        "the why graph",
        "return document.querySelector('#pane-why svg g[data-kind]');",
        json!([]),
    );
    w.run(
        "[...document.querySelectorAll('#pane-why button')].find((b) => b.textContent.trim() === 'Tree').click(); \
         document.querySelector('#pane-why .tree-row.cat-call').click(); return true;",
        json!([]),
    );
    let detail = w.wait_for(
        "the prompt behind the action",
        "const d = document.querySelector('[data-why-detail]'); return d && !d.hidden && d.textContent.length > 40 ? d.textContent : null;",
        json!([]),
    );
    detail.as_str().unwrap().to_owned()
}

#[test]
fn a_shared_day_opens_from_disk_with_nothing_fetched_and_answers_as_the_desktop() {
    if skip() {
        return;
    }
    let _one = one_window();
    let dir = tempfile::tempdir().unwrap();
    let file = shipped();
    let page = share(&file, dir.path());
    let size = std::fs::metadata(&page).unwrap().len();
    println!("day.html: {size} bytes ({:.2} MiB)", size as f64 / (1 << 20) as f64);
    assert!(size <= 8 << 20, "the shared day is {size} bytes, over 8 MiB");

    let downloads = dir.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let w = Window::browser(&format!("file://{}?test", page.display()), &downloads, &shots());
    let opened = wait_open(&w);
    assert_eq!(opened["branch"], "main");
    // From loading the page to the first frame drawn (reported, not held: a test never
    // asserts a wall-clock time; docs/measurements.md keeps the figure).
    let first = w.run("return performance.now();", json!([]));
    println!("shared day: first frame drawn by {first} ms after the page began loading");
    w.screenshot("b01-shared-opened");
    let status = w.run("return document.querySelector('#status').textContent;", json!([]));
    let status = status.as_str().unwrap();
    assert!(status.contains("verify: sound"), "{status}");
    assert!(status.contains("every prompt and answer is inside this file"), "{status}");

    tiles_agree(&w, &file);
    let prompt = why_to_a_prompt(&w);
    assert!(prompt.contains("Delphine"), "the prompt names her: {prompt}");
    w.screenshot("b02-shared-why");
    // A research chart, drawn from the module's answer.
    let drawn = w.run_async(
        "const done = arguments[arguments.length - 1]; window.hamlet.plot({ what: 'density', every_secs: 3600 }).then(() => done(window.hamlet.debug().plots), (e) => done({ error: String(e) }));",
        json!([]),
    );
    assert!(drawn.get("error").is_none(), "{drawn}");
    w.screenshot("b03-shared-research");
    // The write features are not there, and say why.
    let writes = w.run(
        "return [document.querySelector('#pane-change').textContent, document.querySelector('#pane-branches').textContent];",
        json!([]),
    );
    assert!(writes[0].as_str().unwrap().contains("need Hamlet’s desktop app"), "{writes}");
    assert!(writes[1].as_str().unwrap().contains("need Hamlet’s desktop app"), "{writes}");
    // Nothing was fetched: every resource the page used came from the file itself.
    let fetched = w.run(
        "return performance.getEntriesByType('resource').map((r) => r.name).filter((n) => !n.startsWith('blob:') && !n.startsWith('data:'));",
        json!([]),
    );
    assert_eq!(fetched, json!([]), "the shared page fetched something");
    // Save recording gives the .hamlet back, byte for byte.
    w.run(
        "[...document.querySelectorAll('#pane-branches button')].find((b) => b.textContent.includes('Save recording')).click(); return true;",
        json!([]),
    );
    let saved = downloads.join("willowmere-day.hamlet");
    for _ in 0..600 {
        if saved.exists()
            && std::fs::metadata(&saved).unwrap().len() == std::fs::metadata(&file).unwrap().len()
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read(&saved).unwrap(),
        std::fs::read(&file).unwrap(),
        "the recording, byte for byte"
    );
}

#[test]
fn serve_lists_a_folder_and_opens_each_recording_hostile_and_unsound_shown_safely() {
    if skip() {
        return;
    }
    let _one = one_window();
    let dir = tempfile::tempdir().unwrap();
    let day = dir.path().join("willowmere-day.hamlet");
    std::fs::copy(shipped(), &day).unwrap();
    hostile::write(&dir.path().join("hostile.hamlet"));
    let mut damaged = std::fs::read(shipped()).unwrap();
    let at = damaged.len() / 3;
    damaged[at] ^= 0x5a;
    std::fs::write(dir.path().join("unsound.hamlet"), damaged).unwrap();
    let mut server = Command::new(hamlet())
        .args(["serve", "--port", "0"])
        .arg(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut told = BufReader::new(server.stderr.take().unwrap());
    told.read_line(&mut said).unwrap();
    // The rest of what the server says is read, never left to fill or close the pipe.
    std::thread::spawn(move || std::io::copy(&mut told, &mut std::io::sink()));
    let base = said
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let downloads = dir.path().join("downloads");

    // The listing, then the day opened from its link.
    let w = Window::browser(&format!("{base}/"), &downloads, &shots());
    let links = w.wait_for("the listing", "return document.querySelectorAll('a').length === 3 ? [...document.querySelectorAll('a')].map((a) => a.getAttribute('href')) : null;", json!([]));
    w.screenshot("b04-serve-listing");
    let day_link = links
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l.as_str().unwrap().contains("willowmere-day"))
        .unwrap();
    w.run("window.location.href = arguments[0] + '&test'; return true;", json!([day_link]));
    wait_open(&w);
    tiles_agree(&w, &day);
    let prompt = why_to_a_prompt(&w);
    assert!(prompt.contains("Delphine"), "{prompt}");
    w.screenshot("b05-serve-why");
    drop(w);

    // The hostile recording: its text shown as written, nothing run.
    let w = Window::browser(
        &format!("{base}/viewer/index.html?url=/recordings/hostile.hamlet&test"),
        &downloads,
        &shots(),
    );
    wait_open(&w);
    w.run("window.hamlet.select(0); return true;", json!([]));
    w.wait_for(
        "the agent panel",
        "const a = window.hamlet.debug().agent; return !a.loading && a.agent === 0;",
        json!([]),
    );
    let page = w.run(
        &format!(
            "return {{ pwned: window.{p} || null, text: document.body.textContent, injected: document.querySelectorAll('img[src=x], a[href^=javascript], [onerror]').length }};",
            p = hostile::PWNED
        ),
        json!([]),
    );
    w.screenshot("b06-serve-hostile");
    assert_eq!(page["pwned"], Value::Null, "a payload ran: {}", page["pwned"]);
    assert_eq!(page["injected"], 0, "recording text became elements");
    assert!(page["text"].as_str().unwrap().contains("<script>"), "shown as written");
    drop(w);

    // The unsound one: its findings, nothing else.
    let w = Window::browser(
        &format!("{base}/viewer/index.html?url=/recordings/unsound.hamlet&test"),
        &downloads,
        &shots(),
    );
    let findings = w.wait_for(
        "the findings",
        "const u = document.querySelector('#unsound'); return u && !u.hidden && u.querySelectorAll('.findings li').length ? u.textContent : null;",
        json!([]),
    );
    assert!(findings.as_str().unwrap().contains("did not verify"), "{findings}");
    w.screenshot("b07-serve-unsound");
    drop(w);
    let _ = server.kill();
    let _ = server.wait();
}

/// A fontconfig file: this machine's fonts less every colour emoji font.
fn fonts_without_emoji(dir: &Path) -> PathBuf {
    let conf = dir.join("fonts.conf");
    std::fs::write(
        &conf,
        r#"<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <selectfont>
    <rejectfont>
      <glob>*Emoji*</glob>
      <pattern><patelt name="color"><bool>true</bool></patelt></pattern>
    </rejectfont>
  </selectfont>
</fontconfig>
"#,
    )
    .unwrap();
    conf
}

/// Draws `text` and the box of a missing glyph on a canvas in the page: true when they differ.
const DRAWS: &str = "const c = document.createElement('canvas'); c.width = c.height = 40; \
    const g = c.getContext('2d'); g.font = '28px \"Noto Color Emoji\", sans-serif'; g.textBaseline = 'top'; \
    const px = (t) => { g.clearRect(0, 0, 40, 40); g.fillText(t, 2, 2); return g.getImageData(0, 0, 40, 40).data.join(); }; \
    return px(arguments[0]) !== px('\\u0378');";

/// Seeks to the day's middle and opens the panel of an agent whose action's icon is `icon`;
/// returns the panel's icon: [its classes, its text].
fn panel_icon(w: &Window, file: &Path, icon: &str) -> Value {
    let head = events_of(file).last().unwrap().seq();
    let mut seq = head / 2;
    // The first moment, from the middle on, when an agent's action carries the icon.
    let agent = loop {
        let shown = seek(w, seq);
        let found = shown["agents"].as_array().unwrap().iter().find(|a| a["emoji"] == icon);
        if let Some(a) = found {
            break a["id"].clone();
        }
        seq += 200;
        assert!(seq < head, "no action carries {icon} in the day's second half");
    };
    w.run("window.hamlet.select(arguments[0]); return true;", json!([agent]));
    w.wait_for(
        "the agent panel's icon",
        "const a = window.hamlet.debug().agent; if (a.loading || a.agent !== arguments[0]) return null; \
         const i = document.querySelector('#pane-agent .agent-doing .agent-emoji'); return i ? [i.className, i.textContent] : null;",
        json!([agent]),
    )
}

#[test]
fn on_a_machine_without_colour_emoji_each_icon_shows_its_word_not_a_box() {
    if skip() {
        return;
    }
    let _one = one_window();
    let dir = tempfile::tempdir().unwrap();
    let file = shipped();
    let page = share(&file, dir.path());
    let url = format!("file://{}?test", page.display());
    let icon = "💼";

    // With the set-up's fonts, the emoji itself.
    let w = Window::browser(&url, dir.path(), &shots());
    wait_open(&w);
    assert_eq!(w.run(DRAWS, json!([icon])), true, "set-up installs a colour emoji font");
    let shown = panel_icon(&w, &file, icon);
    assert_eq!(shown, json!(["u agent-emoji emoji", icon]));
    drop(w);

    // Without one: the browser draws a box for the emoji; the page shows its word instead.
    let conf = fonts_without_emoji(dir.path());
    let w = Window::browser_with(&url, dir.path(), &shots(), &[("FONTCONFIG_FILE", &conf)]);
    wait_open(&w);
    assert_eq!(w.run(DRAWS, json!([icon])), false, "no font here draws {icon}");
    let shown = panel_icon(&w, &file, icon);
    assert_eq!(shown, json!(["agent-emoji icon-word", "work"]));
    w.screenshot("b08-no-emoji-font");
}
