// Shared page state (the open file, branch, settings, selection) and a tiny event bus.

export const DEFAULT_SETTINGS = Object.freeze({
  speed: 60,
  panel_width: 420,
  show_paths: true,
  show_bubbles: true,
});

export const SPEEDS = [1, 10, 60, 300, 600, 3600];

export const app = {
  /** `Opened` of the file on screen, or null. */
  opened: null,
  /** The branch shown. */
  branch: null,
  /** `Timeline` of the branch. */
  timeline: null,
  /** `MapView` of the branch. */
  map: null,
  /** The branch's tracks (tracks.js), once they have come: frames are made from them. */
  tracks: null,
  /** `Frame` drawn on the canvas. */
  frame: null,
  /** The simulated second the playhead stands on (a secs seek keeps what was asked). */
  cursorSecs: 0,
  /** Bumped whenever the file or branch changes: late answers of older epochs are dropped. */
  epoch: 0,
  settings: { ...DEFAULT_SETTINGS },
  /** Selected agent id, or null. */
  selected: null,
  playing: false,
};

const handlers = new Map();

export function on(name, fn) {
  if (!handlers.has(name)) handlers.set(name, new Set());
  handlers.get(name).add(fn);
  return () => handlers.get(name).delete(fn);
}

export function emit(name, data) {
  const set = handlers.get(name);
  if (!set) return;
  for (const fn of [...set]) {
    try {
      fn(data);
    } catch (err) {
      console.error(`handler for ${name} failed`, err);
    }
  }
}

/** The frame's agent with this id, if it is in town at the moment shown. */
export function agentInFrame(id) {
  const f = app.frame;
  if (!f || !Array.isArray(f.agents)) return null;
  return f.agents.find((a) => a.id === id) || null;
}
