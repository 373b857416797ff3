// The browser's worker (viewer/worker.mjs) under Node, over the real module: a trap in the
// module while it answers fails that request alone, with the BUG message; the worker makes
// a new instance, opens the recording again, and the next request is answered as before.
//
// The trap is thrown by a wrapper around the module's `hamlet_ask` (a test double of a
// panic: the module has no input that panics), exactly as WebAssembly throws one.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const [wasmFile, recordingFile] = process.argv.slice(2);

let instances = 0;
let trapNext = false;
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async (bytes, imports) => {
  const made = await instantiate(bytes, imports);
  instances += 1;
  const real = made.instance.exports;
  const hamlet_ask = (n) => {
    if (trapNext) {
      trapNext = false;
      throw new WebAssembly.RuntimeError('unreachable');
    }
    return real.hamlet_ask(n);
  };
  return { module: made.module, instance: { exports: { ...real, hamlet_ask } } };
};

const waiting = new Map();
globalThis.self = { postMessage: (m) => waiting.get(m.id)(m) };
const { BUG } = await import('../../viewer/door.mjs');
await import('../../viewer/worker.mjs');
let next = 0;
const send = (m) => new Promise((resolve) => {
  next += 1;
  waiting.set(next, resolve);
  self.onmessage({ data: { id: next, ...m } });
});

assert.deepEqual(await send({ op: 'load', wasm: readFileSync(wasmFile) }), { id: 1, ok: true, text: 'null' });
const opened = await send({ op: 'open', name: 'day.hamlet', bytes: readFileSync(recordingFile) });
assert.equal(opened.ok, true, opened.text);
const branch = JSON.parse(opened.text).branches[0].name;
const question = { op: 'ask', command: 'timeline', args: { branch, buckets: 40 } };
const before = await send(question);
assert.equal(before.ok, true, before.text);
const made = instances;

trapNext = true;
const trapped = await send(question);
assert.equal(trapped.ok, false);
assert.equal(trapped.text, BUG);
assert.equal(instances, made + 1, 'the worker made a new instance');

const after = await send(question);
assert.equal(after.ok, true, after.text);
assert.equal(after.text, before.text, 'the new instance answers as the old one did');
const other = await send({ op: 'ask', command: 'frame', args: { branch, seq: 100 } });
assert.equal(other.ok, true, other.text);
process.stdout.write(JSON.stringify({ instances, answered: after.text.length }));
