// The browser's worker (see browser.js): one instance of the WebAssembly build, the
// recording open in it, and each read command answered in turn. A trap breaks the instance:
// that request is answered with the error, and a new instance opens the recording again.

import { Door, BUG } from './door.mjs';

let module = null;
let door = null;
let open = null;

async function fresh() {
  door = await Door.load(module);
  if (open) door.open(open.name, open.bytes);
}

async function answer(m) {
  switch (m.op) {
    case 'load':
      module = m.wasm;
      await fresh();
      return 'null';
    case 'open': {
      // A new instance for each recording: the last one's bytes go with its instance.
      door = await Door.load(module);
      const text = door.open(m.name, m.bytes);
      open = { name: m.name, bytes: m.bytes };
      return text;
    }
    case 'ask': {
      const { ok, text } = door.ask(m.command, m.args);
      if (!ok) throw new Error(text);
      return text;
    }
    default:
      throw new Error(`the worker does not know \`${m.op}\``);
  }
}

self.onmessage = async (e) => {
  const m = e.data || {};
  try {
    self.postMessage({ id: m.id, ok: true, text: await answer(m) });
  } catch (err) {
    const text = err && err.message ? err.message : String(err);
    if (text === BUG) {
      try { await fresh(); } catch { /* the next request says so */ }
    }
    self.postMessage({ id: m.id, ok: false, text });
  }
};
