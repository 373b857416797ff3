// The bridge to the window's Rust side: invoke, listen, errors as words, and latest-only
// requests. In a browser (no window around the page) the same calls go to `browser.js`, the
// WebAssembly build in a worker, and the page works on unchanged.

import { callHere, listenHere } from './browser.js';

function tauri() {
  return window.__TAURI__ || null;
}

export function hasBridge() {
  const t = tauri();
  return !!(t && t.core && typeof t.core.invoke === 'function');
}

/** True in a browser: the page reads a recording and changes nothing (no desktop app). */
export function inBrowser() {
  return !hasBridge();
}

/** Turns whatever a rejected invoke gives into one readable sentence. */
export function message(err) {
  if (err === null || err === undefined) return 'unknown error';
  if (typeof err === 'string') return err;
  if (err instanceof Error) return err.message || String(err);
  if (typeof err === 'object') {
    if (typeof err.message === 'string') return err.message;
    try { return JSON.stringify(err); } catch { return String(err); }
  }
  return String(err);
}

/** Calls a command; rejects with an Error whose message is ready to show. */
export async function call(name, args = {}) {
  try {
    if (inBrowser()) return await callHere(name, args);
    return await tauri().core.invoke(name, args);
  } catch (err) {
    const e = new Error(message(err));
    e.command = name;
    // A change's refusal names the form's field at fault, and may say how to go on.
    if (err && typeof err === 'object') {
      if (typeof err.field === 'string') e.field = err.field;
      if (typeof err.hint === 'string') e.hint = err.hint;
    }
    throw e;
  }
}

/** Listens to an event from Rust; the handler receives the payload. */
export async function listen(name, handler) {
  const t = tauri();
  if (inBrowser()) return listenHere(name, handler);
  if (!t || !t.event || typeof t.event.listen !== 'function') return () => {};
  return t.event.listen(name, (e) => handler(e ? e.payload : undefined));
}

/**
 * Latest-only requests: at most one in flight; asking again while busy replaces what is
 * wanted, and when the request in flight returns only the newest wish is asked next. A wish
 * equal (by key) to what was last answered is not asked again.
 */
export function latest(run, { apply, fail }) {
  let want = null;
  let wantKey = null;
  let haveKey = null;
  let busy = false;
  let generation = 0;
  const waiters = [];

  async function pump() {
    if (busy || want === null) return;
    if (wantKey === haveKey) { flush(); return; }
    busy = true;
    const key = wantKey;
    const args = want;
    const gen = generation;
    try {
      const result = await run(args);
      if (gen !== generation) return;
      haveKey = key;
      apply(result, args, key === wantKey);
    } catch (err) {
      if (gen !== generation) return;
      haveKey = key;
      fail(err, args);
    } finally {
      if (gen === generation) busy = false;
    }
    if (gen === generation) pump();
  }

  function flush() {
    while (waiters.length) waiters.shift()();
  }

  return {
    /** Wants `args` (identified by `key`); resolves once that or a newer wish is answered. */
    want(key, args) {
      want = args;
      wantKey = key;
      const p = new Promise((resolve) => waiters.push(resolve));
      pump();
      return p;
    },
    /** Forgets everything (a file was opened, a branch changed). */
    reset() {
      generation += 1;
      want = null;
      wantKey = null;
      haveKey = null;
      busy = false;
      flush();
    },
    /** Forces the next wish to be asked even if its key was answered. */
    invalidate() { haveKey = null; },
    get busy() { return busy; },
  };
}

/**
 * A test build's stand-in for a person at a native dialog: the next dialog answers `path`.
 * `answer_next_dialog` exists only in a viewer built with `--features e2e`; a release
 * build refuses it, and has no command that takes a path.
 */
export const answerNextDialog = (path) => call('answer_next_dialog', { path });
