//! A town the person at the viewer leads (`[mayor] who = "player"`): a recording of one, made
//! by the rules double (a test double, `hamlet_testkit::rules`), and how the window's
//! Mayor forms are filled in and sent as a person would.

use std::path::Path;
use std::sync::Arc;

use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::town::{Definition, WILLOWMERE};
use hamlet_gateway::{Gateway, Params, RetryPolicy};
use hamlet_testkit::rules::{LetterEmbedder, RuleModel};
use serde_json::{json, Value};

use crate::webdriver::Window;

/// Willowmere's `[mayor]`: the person, with a treasury and a free site.
const MAYOR: &str = "\n[mayor]\nwho = \"player\"\nfunds_cents = 100000\nfound_cents = 40000\nsite = [{ name = \"north lot\", at = [80, 1] }]\n";

/// Willowmere led by the person, twenty simulated minutes or a little more by the rules
/// double, written to `file`.
pub fn led_willowmere(file: &Path) {
    let town = Definition::parse("led.toml", &format!("{WILLOWMERE}{MAYOR}")).unwrap();
    let gateway = Gateway::new(
        Arc::new(RuleModel),
        Arc::new(LetterEmbedder),
        Params::default(),
        RetryPolicy::default(),
        4,
    );
    let tmp = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let bytes = rt.block_on(async {
        let store = Store::open(tmp.path()).unwrap();
        let mut sim =
            Sim::start(store, "main", town, 7, gateway, SimSettings::default()).await.unwrap();
        // Twenty minutes, then on to a step with no conversation open (a change lands
        // between steps; a head at a quiet step, which writes only its clock step, is one).
        for _ in 0..120 {
            sim.step().await.unwrap();
        }
        for _ in 0..360 {
            if !sim.mid_step() {
                break;
            }
            sim.step().await.unwrap();
        }
        assert!(!sim.mid_step(), "a conversation still open after another hour");
        let head = sim.store().branch(sim.branch()).unwrap().head_seq;
        let last = sim.store().event_at(sim.branch(), head).unwrap();
        assert!(
            matches!(last.body, hamlet_log::Body::ClockStepped(_)),
            "the recording ends at a quiet step, as the window must take a change at"
        );
        hamlet_engine::history::export_with_checkpoints(sim.store(), None, Vec::new()).unwrap()
    });
    std::fs::write(file, bytes).unwrap();
}

/// Chooses `kind` in the Intervene tab's form, types `fields` (field → value) into it and
/// presses "Write it", as a person would.
pub fn fill_and_send(w: &Window, kind: &str, fields: &Value) {
    let typed = w.run(
        "document.querySelector('button.side-tab[aria-controls=pane-change]').click(); \
         const pane = document.getElementById('pane-change'); \
         const kind = pane.querySelector('select[aria-label=\"What to change\"]'); \
         kind.value = arguments[0]; kind.dispatchEvent(new Event('change')); \
         for (const [name, value] of Object.entries(arguments[1])) { \
           const input = pane.querySelector(`[data-field=\"${name}\"]`); \
           input.value = String(value); input.dispatchEvent(new Event('input')); \
           if (input.value !== String(value)) { \
             return { field: name, options: [...(input.options || [])].map((o) => o.value) }; \
           } \
         } \
         [...pane.querySelectorAll('button')].find((b) => b.textContent.trim() === 'Write it').click(); \
         return true;",
        json!([kind, fields]),
    );
    assert_eq!(typed, json!(true), "a value the form does not offer");
}

/// What the Intervene tab says once it has answered: its result line, or the error shown
/// next to `field`.
pub fn answered(w: &Window, field: &str) -> Value {
    w.wait_for(
        "the Intervene tab's answer",
        "const pane = document.getElementById('pane-change'); \
         const error = pane.querySelector(`.field-error[data-error-for=\"${arguments[0]}\"]`); \
         const result = pane.querySelector('.change-result'); \
         const said = result ? result.textContent : ''; \
         if (error && error.textContent) return { refused: error.textContent }; \
         return said && !said.startsWith('Writing') ? { said } : null;",
        json!([field]),
    )
}
