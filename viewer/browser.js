// The page's back end in a browser, where there is no window's Rust side: the read commands
// go to a Web Worker running the WebAssembly build (`web/`, through `door.mjs`), which
// answers through the same door as the desktop; what the desktop keeps in its settings
// store the browser keeps in its own storage; opening is by file picker, drag and drop, or
// `?url=`; CSV and the recording are downloads. What writes (fork, change, continue, export
// of a branch) needs the desktop app and says so.
//
// A trap in the module fails only the request that caused it: the worker answers it with
// the error, makes a new instance and opens the recording again.

const listeners = new Map();

/** Listens to one of the page's events (as the desktop's `listen`); answers how to stop. */
export function listenHere(name, handler) {
  if (!listeners.has(name)) listeners.set(name, new Set());
  listeners.get(name).add(handler);
  return () => listeners.get(name).delete(handler);
}

function emitHere(name, payload) {
  for (const handler of listeners.get(name) || []) {
    try { handler(payload); } catch (err) { console.error(err); }
  }
}

/** Where the module and the worker come from: a page served from a folder (`hamlet serve`),
 * or a shared file that carries both (`hamlet share` sets `window.HAMLET_EMBEDDED`). */
function embedded() {
  return (typeof window !== 'undefined' && window.HAMLET_EMBEDDED) || null;
}

let worker = null;
let started = null;
let nextId = 1;
const waiting = new Map();

function fail(text) {
  for (const [, w] of waiting) w.reject(new Error(text));
  waiting.clear();
}

async function wasmBytes() {
  const e = embedded();
  if (e && e.wasm) return e.wasm();
  const answer = await fetch(new URL('hamlet_web.wasm', document.baseURI));
  if (!answer.ok) throw new Error(`the viewer's module could not be loaded (${answer.status})`);
  return answer.arrayBuffer();
}

function start() {
  if (started) return started;
  started = (async () => {
    const e = embedded();
    // A shared file's worker is one script (its modules joined), started from its own text:
    // a classic worker, since a page opened from a file may not start a module worker.
    worker = e && e.worker ? new Worker(e.worker()) : new Worker(new URL('worker.mjs', document.baseURI), { type: 'module' });
    worker.onmessage = (m) => {
      const { id, ok, text } = m.data || {};
      const w = waiting.get(id);
      if (!w) return;
      waiting.delete(id);
      if (ok) w.resolve(text); else w.reject(new Error(text));
    };
    worker.onerror = (err) => {
      fail(`the viewer's worker failed: ${err && err.message ? err.message : 'it did not start'}`);
      started = null;
    };
    await post({ op: 'load', wasm: await wasmBytes() });
  })();
  return started;
}

function post(message, transfer = []) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    worker.postMessage({ id, ...message }, transfer);
  });
}

let opened = null;
let originalBytes = null;

const settingsKey = 'hamlet.settings';
const momentKey = (title) => `hamlet.moment.${title}`;

function stored(key) {
  try { return JSON.parse(localStorage.getItem(key) || 'null'); } catch { return null; }
}

function store(key, value) {
  try { localStorage.setItem(key, JSON.stringify(value)); } catch { /* private mode: kept for this visit only */ }
}

/** Opens a recording's bytes under `name`; tells the page (`opened`) and answers the view. */
export async function openBytes(name, bytes) {
  await start();
  originalBytes = bytes;
  try {
    const text = await post({ op: 'open', name, bytes: bytes.slice(0) });
    const view = { ...JSON.parse(text), last_seq: stored(momentKey(name)) };
    opened = view;
    emitHere('opened', view);
    return view;
  } catch (err) {
    emitHere('open-failed', { path: name, message: err.message });
    throw err;
  }
}

/** Opens the recording at `url` (the page's `?url=`, or a link `hamlet serve` lists). */
export async function openUrl(url) {
  const name = decodeURIComponent(new URL(url, document.baseURI).pathname.split('/').pop() || 'recording.hamlet');
  let answer;
  try {
    answer = await fetch(url);
  } catch (err) {
    const message = `${name} could not be fetched: ${err.message}`;
    emitHere('open-failed', { path: name, message });
    throw new Error(message);
  }
  if (!answer.ok) {
    const message = `${name} could not be fetched (${answer.status})`;
    emitHere('open-failed', { path: name, message });
    throw new Error(message);
  }
  return openBytes(name, new Uint8Array(await answer.arrayBuffer()));
}

/** Opens a File (from the picker or a drop). */
export async function openFile(file) {
  return openBytes(file.name, new Uint8Array(await file.arrayBuffer()));
}

function pickFile() {
  return new Promise((resolve) => {
    const input = document.createElement('input');
    input.type = 'file';
    input.accept = '.hamlet';
    input.addEventListener('change', () => resolve(input.files && input.files[0] ? input.files[0] : null));
    input.addEventListener('cancel', () => resolve(null));
    input.click();
  });
}

function download(name, bytes, type) {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The read commands: answered by the module, through the same door as the desktop's. */
const READ = new Set(['timeline', 'map', 'frame', 'tracks', 'step', 'agent', 'why', 'calls', 'branches', 'compare', 'research']);

export const DESKTOP_ONLY = 'this needs Hamlet’s desktop app: a page in a browser only reads the recording';

/** Answers a command as the desktop would (or rejects with words). */
export async function callHere(name, args = {}) {
  if (READ.has(name)) {
    if (!opened) throw new Error('nothing is open: open a recording first');
    await start();
    const began = performance.now();
    const answer = JSON.parse(await post({ op: 'ask', command: name, args }));
    if ((name === 'frame' || name === 'tracks') && answer && typeof answer === 'object') {
      answer.micros = Math.round((performance.now() - began) * 1000);
    }
    return answer;
  }
  switch (name) {
    case 'current': return opened;
    case 'recent': return [];
    case 'settings': return stored(settingsKey) || {};
    case 'save_settings': store(settingsKey, args.settings || {}); return null;
    case 'remember_moment': if (opened) store(momentKey(opened.title), args.seq); return null;
    case 'pick_and_open': {
      const file = await pickFile();
      return file ? openFile(file) : null;
    }
    case 'save_csv': download(args.name || 'research.csv', args.text || '', 'text/csv'); return args.name || null;
    case 'save_recording':
      if (!originalBytes) throw new Error('nothing is open');
      download(opened.title || 'recording.hamlet', originalBytes, 'application/octet-stream');
      return { bytes: originalBytes.length };
    case 'open_recent': throw new Error('a browser keeps no recent files: open the file again');
    case 'answer_next_dialog': throw new Error('no dialogs to answer in a browser');
    default: throw new Error(DESKTOP_ONLY);
  }
}
