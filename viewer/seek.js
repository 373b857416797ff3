// The moment on screen: coalesced frame requests, the one animation loop, draw timing and hamletStats.

import { app, emit } from './state.js';
import { call } from './ipc.js';
import { showError } from './dom.js';
import { frameAt, seqAt } from './tracks.js';

const CAP = 10000;

/** What the end-to-end tests read: milliseconds, newest last, at most CAP each. */
export const stats = { scrub: [], frames: [], why: [], whyParts: [], tracks: [], memories: [] };
window.hamletStats = stats;

export function record(name, ms) {
  const arr = stats[name];
  if (!arr || !(Number.isFinite(ms) || Array.isArray(ms))) return;
  arr.push(ms);
  if (arr.length > CAP) arr.splice(0, arr.length - CAP);
}

// A target is { seq } or { secs } (plus key, gen and an optional secs hint for seq seeks).
let target = null;
let gen = 0;
let inflight = null;
let arrived = null;
let shownKey = null;
let shownGen = 0;
const inputs = []; // { gen, t0 }: scrub inputs waiting for their frame to be drawn
const waiters = []; // { gen, resolve }: promises of programmatic seeks
let scheduled = false;
const tickers = new Set();
const painters = [];

function keyOf(t) {
  return t.seq !== undefined ? `q${t.seq}` : `s${t.secs}`;
}

/** Clamps a wish to the branch. */
function clampTarget(t) {
  const tl = app.timeline;
  if (!tl) return t;
  if (t.seq !== undefined) {
    const lo = Number.isFinite(tl.first_seq) ? tl.first_seq : 0;
    const hi = Number.isFinite(tl.head_seq) ? tl.head_seq : t.seq;
    return { ...t, seq: Math.min(hi, Math.max(lo, Math.round(t.seq))) };
  }
  let s = Math.max(0, Math.floor(t.secs));
  if (Number.isFinite(tl.start_secs)) s = Math.max(tl.start_secs, s);
  if (Number.isFinite(tl.end_secs)) s = Math.min(tl.end_secs, s);
  return { ...t, secs: s };
}

/**
 * Asks for a moment. With the branch's tracks at hand (`app.tracks`) the frame is made
 * here and drawn at once, before this returns. Without them it only sets the target:
 * `frame` is asked by `request` when nothing is in flight (at once, or when the answer in
 * flight lands), and the loop draws what came back.
 * `t0` (performance.now() of a scrub input) makes the time to the drawn frame count in
 * hamletStats.scrub. Resolves once that moment (or a later wish) is drawn.
 */
export function seek(t, { t0 } = {}) {
  if (!app.timeline || !app.branch) return Promise.resolve(null);
  if (t.seq !== undefined && !Number.isFinite(t.seq)) return Promise.resolve(null);
  if (t.seq === undefined && !Number.isFinite(t.secs)) return Promise.resolve(null);
  gen += 1;
  const c = clampTarget(t);
  target = { ...c, key: keyOf(c), gen };
  if (Number.isFinite(t0)) inputs.push({ gen, t0 });
  const p = new Promise((resolve) => waiters.push({ gen, resolve }));
  emit('target', target);
  if (app.tracks) {
    const seq = target.seq !== undefined ? target.seq : seqAt(app.tracks, target.secs);
    arrived = { frame: frameAt(app.tracks, seq), t: target };
    present();
    return p;
  }
  // Nothing in flight: ask now rather than a frame later. Otherwise the answer in flight
  // asks for the newest target when it lands.
  request();
  wake();
  return p;
}

/** The second the playhead should show now: the wish if there is one, else what is drawn. */
export function targetSecs() {
  if (target && target.secs !== undefined) return target.secs;
  if (target && Number.isFinite(target.hint) && !isShown(target)) return target.hint;
  return app.cursorSecs;
}

/** The seq steps should start from: the latest seq wished for, else the frame's. */
export function baseSeq() {
  if (target && target.seq !== undefined) return target.seq;
  return app.frame ? app.frame.seq : null;
}

/** True while frames are being asked for or waiting to be drawn (scrubbing, playing). */
export function seekBusy() {
  return !!inflight || !!arrived || (!!target && !isShown(target));
}

function isShown(t) {
  if (!t) return true;
  if (t.key === shownKey) return true;
  return t.seq !== undefined && !!app.frame && app.frame.seq === t.seq;
}

/** Forgets the moment (a file opened, a branch changed). */
export function resetSeek() {
  target = null;
  inflight = null;
  arrived = null;
  shownKey = null;
  shownGen = 0;
  inputs.length = 0;
  while (waiters.length) waiters.shift().resolve(null);
  app.frame = null;
  app.tracks = null;
}

/**
 * `fn`, run at once — except while playing, when it runs at most once every `ms` (the last
 * call still runs, `ms` after the one before). For words that change with every frame:
 * each change costs a layout and a paint that a frame every 16 ms cannot spare.
 */
export function lessOftenWhilePlaying(ms, fn) {
  let at = 0;
  let later = 0;
  const run = () => {
    const now = performance.now();
    clearTimeout(later);
    if (app.playing && now - at < ms) {
      later = setTimeout(run, ms - (now - at));
      return;
    }
    at = now;
    fn();
  };
  return run;
}

/** Adds a function called on every tick with `now`; it returns true to keep the loop running. */
export function addTicker(fn) {
  tickers.add(fn);
  return () => tickers.delete(fn);
}

/** A painter: `{ dirty(): bool, draw() }`. Its draw time counts in hamletStats.frames. */
export function addPainter(p) {
  painters.push(p);
}

/** Schedules the loop's next tick (one requestAnimationFrame at a time). */
export function wake() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(tick);
}

async function request() {
  if (inflight || !target || isShown(target) || !app.branch) return;
  if (arrived && (arrived.t.key === target.key || (target.seq !== undefined && arrived.frame.seq === target.seq))) return;
  const t = target;
  const epoch = app.epoch;
  inflight = t;
  const args = t.seq !== undefined ? { branch: app.branch, seq: t.seq } : { branch: app.branch, secs: t.secs };
  try {
    const frame = await call('frame', args);
    if (epoch !== app.epoch) return;
    if (!frame || typeof frame !== 'object' || !Array.isArray(frame.agents)) {
      throw new Error('frame: the answer has no agents');
    }
    arrived = { frame, t };
  } catch (err) {
    if (epoch !== app.epoch) return;
    showError(err.message, 'Could not show that moment');
    settle(t.gen, null);
    if (target === t) target = null;
    emit('seek-failed', err);
    emit('target', target);
  } finally {
    if (epoch === app.epoch) {
      inflight = null;
      // Pipelined: while this answer waits for the next animation frame to be drawn, the
      // newest target (if it moved) is already being asked for.
      request();
      wake();
    }
  }
}

/** Resolves scrub inputs and waiters up to `g`; `drawnAt` null means they are dropped. */
function settle(g, drawnAt) {
  for (let i = inputs.length - 1; i >= 0; i--) {
    if (inputs[i].gen <= g) {
      if (drawnAt !== null) record('scrub', drawnAt - inputs[i].t0);
      inputs.splice(i, 1);
    }
  }
  for (let i = waiters.length - 1; i >= 0; i--) {
    if (waiters[i].gen <= g) {
      waiters[i].resolve(app.frame);
      waiters.splice(i, 1);
    }
  }
}

/** Shows the frame that arrived and redraws what is dirty; settles the inputs it answers. */
function present() {
  let drawnGen = null;
  // An answer asked for before a later frame was drawn (from the tracks) is stale.
  if (arrived && arrived.t.gen < shownGen) arrived = null;
  if (arrived) {
    const { frame, t } = arrived;
    arrived = null;
    shownGen = t.gen;
    app.frame = frame;
    app.cursorSecs = t.secs !== undefined ? t.secs : Number(frame.secs) || 0;
    shownKey = t.key;
    drawnGen = t.gen;
    emit('frame', frame);
  }
  for (const p of painters) {
    if (!p.dirty()) continue;
    const a = performance.now();
    try {
      p.draw();
    } catch (err) {
      console.error(err);
    }
    record('frames', performance.now() - a);
  }
  const done = performance.now();
  if (drawnGen !== null) settle(drawnGen, done);
  if (target && !inflight && isShown(target)) settle(target.gen, done);
}

function tick(now) {
  scheduled = false;
  let keep = false;
  for (const fn of tickers) {
    try {
      if (fn(now)) keep = true;
    } catch (err) {
      console.error(err);
    }
  }
  present();
  request();
  if (keep || arrived || painters.some((p) => p.dirty())) wake();
}
