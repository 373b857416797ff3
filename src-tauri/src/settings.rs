//! What the viewer remembers between runs, kept with tauri-plugin-store in
//! `settings.json` (under `$XDG_DATA_HOME/town.hamlet.viewer/`): the settings (speed, panel
//! width, what the map draws, the model of the Intervene tab without its key), the recent files,
//! and the moment each file was left at.
//! The page reads and writes them through commands; it never touches the store itself.

use serde::{Deserialize, Serialize};
use tauri::AppHandle;
use tauri_plugin_store::StoreExt;

const FILE: &str = "settings.json";
/// The most recent files kept.
pub const MAX_RECENT: usize = 10;
/// The most files whose last moment is kept.
const MAX_MOMENTS: usize = 100;

/// The viewer's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Simulated seconds per real second while playing, 1 to 3600.
    pub speed: u32,
    /// The side panel's width, in pixels.
    pub panel_width: u32,
    /// Whether the map draws walking agents' paths.
    pub show_paths: bool,
    /// Whether the map draws speech bubbles.
    pub show_bubbles: bool,
    /// The model the Intervene tab asks and continues with, without its key.
    pub model: ModelSetting,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            speed: 60,
            panel_width: 420,
            show_paths: true,
            show_bubbles: true,
            model: ModelSetting::default(),
        }
    }
}

/// The model of the user's choice, as the settings keep it: everything of `ops::ModelSpec`
/// but the key, which has no field here, so it is never written (a key sent along is
/// dropped when the settings are read).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSetting {
    /// `default`, `small` or `server`.
    pub backend: String,
    /// The server's base URL.
    pub base_url: String,
    /// The server's model.
    pub model: String,
    /// Embeddings from `local` or `server`.
    pub embed: String,
    /// The server's embedding model.
    pub embed_model: String,
}

impl Default for ModelSetting {
    fn default() -> ModelSetting {
        ModelSetting {
            backend: "default".into(),
            base_url: String::new(),
            model: String::new(),
            embed: "local".into(),
            embed_model: String::new(),
        }
    }
}

impl Settings {
    /// The same settings within their bounds, the base URL without anything that may be
    /// secret (a user and password, a query string): those are never written.
    pub fn bounded(self) -> Settings {
        let base_url = match self.model.base_url.trim() {
            "" => String::new(),
            url => hamlet_gateway::openai::public_address(url),
        };
        Settings {
            speed: self.speed.clamp(1, 3600),
            panel_width: self.panel_width.clamp(240, 2000),
            model: ModelSetting { base_url, ..self.model },
            ..self
        }
    }
}

/// A file or store opened lately.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recent {
    /// Its path.
    pub path: String,
    /// Its name, as the title bar shows it.
    pub title: String,
}

fn get<T: serde::de::DeserializeOwned + Default>(app: &AppHandle, key: &str) -> T {
    app.store(FILE)
        .ok()
        .and_then(|s| s.get(key))
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

fn put<T: Serialize>(app: &AppHandle, key: &str, value: &T) -> Result<(), String> {
    let store = app.store(FILE).map_err(|e| e.to_string())?;
    store.set(key, serde_json::to_value(value).map_err(|e| e.to_string())?);
    // Saved now: a viewer killed a moment later still remembers.
    store.save().map_err(|e| format!("cannot save the viewer's settings: {e}"))
}

/// The settings (defaults for anything missing or unreadable).
pub fn load(app: &AppHandle) -> Settings {
    get::<Settings>(app, "settings").bounded()
}

/// Saves the settings.
pub fn save(app: &AppHandle, settings: &Settings) -> Result<(), String> {
    put(app, "settings", &settings.clone().bounded())
}

/// The recent files, newest first.
pub fn recent(app: &AppHandle) -> Vec<Recent> {
    get(app, "recent")
}

/// Puts `opened` first in the recent files.
pub fn remember(app: &AppHandle, opened: Recent) {
    let mut list = recent(app);
    list.retain(|r| r.path != opened.path);
    list.insert(0, opened);
    list.truncate(MAX_RECENT);
    let _ = put(app, "recent", &list);
}

/// The moment `path` was left at.
pub fn moment(app: &AppHandle, path: &str) -> Option<u64> {
    get::<Vec<(String, u64)>>(app, "moments").into_iter().find(|(p, _)| p == path).map(|(_, s)| s)
}

/// Remembers the moment `path` is shown at.
pub fn set_moment(app: &AppHandle, path: &str, seq: u64) -> Result<(), String> {
    let mut moments: Vec<(String, u64)> = get(app, "moments");
    moments.retain(|(p, _)| p != path);
    moments.insert(0, (path.to_owned(), seq));
    moments.truncate(MAX_MOMENTS);
    put(app, "moments", &moments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_kept_without_its_key() {
        // As the page sends it: the key along with the rest.
        let sent = serde_json::json!({
            "speed": 600,
            "model": { "backend": "server", "base_url": "http://localhost:11434/v1",
                       "model": "qwen2.5:7b", "api_key": "sk-secret", "embed": "local" },
        });
        let settings: Settings = serde_json::from_value(sent).unwrap();
        assert_eq!(settings.model.backend, "server");
        assert_eq!(settings.model.model, "qwen2.5:7b");
        assert_eq!(settings.model.embed_model, "", "a field left out takes its default");
        let written = serde_json::to_string(&settings).unwrap();
        assert!(!written.contains("sk-secret") && !written.contains("api_key"), "{written}");
        // Settings written before the model was kept still read.
        let old: Settings = serde_json::from_str(r#"{"speed": 60, "show_paths": false}"#).unwrap();
        assert_eq!(old.model, ModelSetting::default());
        assert!(!old.show_paths);
        // Credentials in the address itself are not kept either.
        let sent = serde_json::json!({ "model": { "backend": "server",
            "base_url": "https://me:pw-secret@llm.example.com/v1?key=sk-query" } });
        let settings = serde_json::from_value::<Settings>(sent).unwrap().bounded();
        assert_eq!(settings.model.base_url, "https://llm.example.com/v1");
    }
}
