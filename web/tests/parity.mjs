// The browser build's side of the parity test (parity.rs): opens each recording of the
// plan in a fresh instance through the page's loader and prints every answer, as
// [[answered, text], …] per recording, on standard output.
import { readFileSync } from 'node:fs';
import { Door } from '../../viewer/door.mjs';

const [wasmFile, planFile] = process.argv.slice(2);
const wasm = readFileSync(wasmFile);
const plan = JSON.parse(readFileSync(planFile, 'utf8'));
const out = [];
for (const recording of plan) {
  const door = await Door.load(wasm);
  const answers = [];
  try {
    answers.push([true, door.open(recording.name, readFileSync(recording.file))]);
    for (const [command, args] of recording.questions) {
      const { ok, text } = door.ask(command, args);
      answers.push([ok, text]);
    }
  } catch (e) {
    answers.push([false, e.message]);
  }
  out.push(answers);
}
process.stdout.write(JSON.stringify(out));
