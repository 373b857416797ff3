// The Intervene tab: change the branch shown at its head (the engine's interventions, each a
// form whose fields the engine checks), and continue it for some simulated hours with a model
// of the user's choice, with a progress bar, live map and Cancel. Nothing is decided here:
// every change is the engine's (`change`, `continue_run`, `cancel_run`), and its refusals are
// shown next to the field they name. A server's key lives in this page's memory only.

import { app, emit, on } from './state.js';
import { call, listen, inBrowser } from './ipc.js';
import { el, button, untrusted, setChildren, fmtMany, fmtTime, fmtClock, fmtDuration } from './dom.js';

let root = null;
let kindSelect = null;
let fieldsBox = null;
let resultBox = null;
let submit = null;
let modelBox = null;
let runBox = null;
let hoursInput = null;
let continueButton = null;
let cancelButton = null;
let bar = null;
let runText = null;
let headLine = null;
let busy = false;
let running = false;
let lastFollow = 0;
let followTimer = 0;

/** The model chosen, kept in memory only (the key never leaves this page but to the engine). */
const model = { backend: 'default', base_url: '', model: '', api_key: '', embed: 'local', embed_model: '' };
const modelInputs = {};

/** What a number field starts at: a wage a mayor might pay, a meeting in an hour. */
const NUMBER_DEFAULTS = { minutes: '30', cash_cents: '5000', dollars: '15', in_minutes: '60' };

/** The forms: each kind's fields, as `[field, label, type, hint]`. */
const KINDS = {
  'inner-voice': { label: 'Inner voice', model: true, fields: [['agent', 'Agent', 'agent'], ['text', 'The thought', 'textarea', 'e.g. “I should ask Juniper to the party”']] },
  interview: { label: 'Interview', model: true, fields: [['agent', 'Agent', 'agent'], ['question', 'Question', 'textarea', 'Asked as yourself; answered from memory'], ['remember', 'The agent remembers it', 'checkbox']] },
  'edit-persona': { label: 'Edit persona', model: true, fields: [['agent', 'Agent', 'agent'], ['persona', 'Seed paragraph', 'textarea', 'Statements separated by “;” (empty: kept, when a model is given)'], ['model', 'Thinks with from now on (optional)', 'text', 'default, small, or a [models.NAME] profile']] },
  'add-agent': { label: 'Add an agent', model: true, fields: [['name', 'Name', 'text'], ['persona', 'Seed paragraph', 'textarea', 'Statements separated by “;”'], ['home', 'Home (sector:arena)', 'arena'], ['strategy', 'Strategy', 'strategy'], ['cash_cents', 'Cash (cents)', 'number'], ['model', 'Thinks with (optional)', 'text', 'the model chosen below; or default, small, a [models.NAME] profile']] },
  'add-building': { label: 'Add a building', model: false, fields: [['template', 'Copy of', 'sector'], ['name', 'Name', 'text'], ['x', 'West wall (x)', 'number'], ['y', 'North wall (y)', 'number']] },
  'set-object': { label: 'Set an object', model: false, fields: [['address', 'Object', 'object'], ['state', 'State', 'text', 'e.g. out of order']] },
  happen: { label: 'Something happens', model: false, fields: [['place', 'Where (sector or sector:arena)', 'place'], ['text', 'What', 'textarea', 'e.g. a fire alarm is ringing'], ['minutes', 'For minutes', 'number']] },
  // The mayor's acts, for a town whose [mayor] is the person at the viewer.
  'mayor-job': { label: 'Mayor: post a job', model: false, fields: [['sector', 'Where the work is', 'sector'], ['title', 'The job', 'text', 'e.g. baker'], ['dollars', 'Wage per hour ($)', 'number']] },
  'mayor-found': { label: 'Mayor: found a business', model: false, fields: [['template', 'A copy of', 'sector'], ['name', 'Its name', 'text'], ['site', 'On the site', 'text', 'a [[mayor.site]] of the town file']] },
  'mayor-wage': { label: 'Mayor: set a wage', model: false, fields: [['sector', 'Where', 'sector'], ['dollars', 'Wage per hour ($)', 'number']] },
  'mayor-meeting': { label: 'Mayor: call a meeting', model: false, fields: [['what', 'About', 'text'], ['place', 'Where (sector or sector:arena)', 'place'], ['in_minutes', 'Starts in minutes', 'number'], ['minutes', 'For minutes', 'number']] },
  'mayor-task': { label: 'Mayor: give a task', model: false, fields: [['agent', 'Agent', 'agent'], ['what', 'The task', 'text'], ['place', 'Where (sector or sector:arena)', 'place'], ['in_minutes', 'Starts in minutes', 'number'], ['minutes', 'For minutes', 'number']] },
};

const STRATEGIES = ['full', 'no_reflection', 'no_reflection_no_planning'];

export function initChange(host) {
  root = host;
  if (inBrowser()) {
    root.append(el('h3', { text: 'Intervene' }),
      el('p', { class: 'dim small browser-only', text: 'Changing the town and running it on need Hamlet’s desktop app; this page only reads the recording.' }));
    return;
  }
  headLine = el('p', { class: 'dim small change-head' });
  kindSelect = el('select', { class: 'input', attrs: { 'aria-label': 'What to change' }, on: { change: () => drawFields() } },
    ...Object.entries(KINDS).map(([k, d]) => el('option', { value: k, text: d.label })));
  fieldsBox = el('form', { class: 'change-fields', on: { submit: (e) => { e.preventDefault(); makeChange(); } } });
  submit = button({ label: 'Write it', cls: 'btn-primary-ghost', title: 'The engine checks it, then writes it at the branch’s head', onClick: () => makeChange() });
  resultBox = el('div', { class: 'change-result', attrs: { 'aria-live': 'polite' } });
  modelBox = el('fieldset', { class: 'change-model' });
  drawModel();
  hoursInput = el('input', { type: 'number', class: 'input input-narrow', value: '1', attrs: { min: '0.1', max: '168', step: '0.5', 'aria-label': 'Simulated hours to continue' } });
  continueButton = button({ label: 'Continue', cls: 'btn-primary-ghost', title: 'Run the branch shown on for these simulated hours with the model chosen', onClick: () => continueRun() });
  cancelButton = button({ label: 'Cancel', cls: 'btn-ghost', title: 'Stop after the step under way: nothing is lost, and Continue goes on identically', onClick: () => cancelRun() });
  cancelButton.disabled = true;
  bar = el('progress', { class: 'run-bar', attrs: { max: '1', value: '0', 'aria-label': 'Continuation progress' } });
  runText = el('div', { class: 'run-text small', attrs: { 'aria-live': 'polite' } });
  runBox = el('div', { class: 'change-run' },
    el('h3', { text: 'Continue' }),
    el('div', { class: 'row' }, hoursInput, el('span', { class: 'dim small', text: 'simulated hours' }), continueButton, cancelButton),
    bar, runText);
  root.append(
    headLine,
    el('h3', { text: 'Intervene' }),
    el('div', { class: 'row' }, kindSelect),
    fieldsBox,
    el('div', { class: 'row' }, submit),
    resultBox,
    el('h3', { text: 'Model' }),
    modelBox,
    runBox,
  );
  drawFields();
  listen('run-progress', (p) => showProgress(p));
  // The model chosen last time (the settings keep it without its key).
  on('settings', () => {
    const kept = app.settings.model;
    if (!kept || typeof kept !== 'object') return;
    const choice = {};
    for (const k of KEPT) if (typeof kept[k] === 'string') choice[k] = kept[k];
    setModel(choice, false);
  });
}

/** What of the model the settings keep: all but the key. */
const KEPT = ['backend', 'base_url', 'model', 'embed', 'embed_model'];

/** Asks the page to keep the model chosen (without its key) in the settings. */
function keepModel() {
  const kept = {};
  for (const k of KEPT) kept[k] = model[k];
  emit('keep-model', kept);
}

/** Shown with its tab: the forms' lists (agents in town, places, objects) are made afresh. */
export function setChangeVisible(v) {
  if (v && !busy) drawFields(true);
  showChangeTarget();
}

/** Says where changes land; called when the branch or the moment shown changes. */
export function showChangeTarget() {
  if (!headLine) return;
  const b = app.opened && (app.opened.branches || []).find((x) => x.name === app.branch);
  const writable = app.opened && app.opened.kind === 'store';
  const text = !app.opened ? 'Nothing is open.'
    : !writable ? 'A recording is read-only: fork it first (Branches ▸ Fork here), then change the fork.'
      : `Changes land at the head of ${app.branch} (#${b ? b.head_seq : '?'}, ${app.timeline ? fmtTime(app.timeline.end_secs) : ''}).${b && !b.parent ? ' This is a root: fork it first to keep it as it was.' : ''}`;
  setChildren(headLine, untrusted(text));
  submit.disabled = busy || running || !writable;
  continueButton.disabled = busy || running || !writable;
}

function field(name, label, type, hint) {
  const id = `change-${name}`;
  let input;
  const agents = (app.frame && app.frame.agents) || [];
  const map = app.map || {};
  const options = (values) => values.map((v) => el('option', { value: v, text: v }));
  switch (type) {
    case 'agent':
      input = el('select', { class: 'input' }, ...agents.map((a) => el('option', { value: String(a.id), text: a.name })));
      if (app.selected !== null && app.selected !== undefined) input.value = String(app.selected);
      break;
    case 'textarea':
      input = el('textarea', { class: 'input', attrs: { rows: '3', placeholder: hint || '' } });
      break;
    case 'checkbox':
      input = el('input', { type: 'checkbox' });
      break;
    case 'number':
      input = el('input', { type: 'number', class: 'input input-narrow', value: NUMBER_DEFAULTS[name] ?? '0' });
      break;
    case 'arena':
      input = el('select', { class: 'input' }, ...options((map.arenas || []).map((a) => `${a.sector}:${a.arena}`)));
      break;
    case 'place':
      input = el('select', { class: 'input' }, ...options([...(map.sectors || []).map((s) => s.name), ...(map.arenas || []).map((a) => `${a.sector}:${a.arena}`)]));
      break;
    case 'sector':
      input = el('select', { class: 'input' }, ...options((map.sectors || []).map((s) => s.name)));
      break;
    case 'object':
      input = el('select', { class: 'input' }, ...options((map.objects || []).map((o) => o.address)));
      break;
    case 'strategy':
      input = el('select', { class: 'input' }, ...options(STRATEGIES));
      break;
    default:
      input = el('input', { type: 'text', class: 'input', attrs: { placeholder: hint || '', spellcheck: 'false' } });
  }
  input.id = id;
  input.dataset.field = name;
  input.addEventListener('keydown', (e) => e.stopPropagation());
  const error = el('div', { class: 'field-error', dataset: { errorFor: name }, attrs: { 'aria-live': 'polite' } });
  return el('div', { class: 'change-field' }, el('label', { attrs: { for: id }, text: label }), input, error);
}

function drawFields(keepResult = false) {
  const kind = KINDS[kindSelect.value];
  setChildren(fieldsBox, ...kind.fields.map(([n, l, t, h]) => field(n, l, t, h)));
  if (!keepResult) setChildren(resultBox);
}

function drawModel() {
  const select = (key, choices, label) => {
    const s = el('select', { class: 'input', attrs: { 'aria-label': label } }, ...choices.map(([v, t]) => el('option', { value: v, text: t })));
    s.value = model[key];
    s.addEventListener('change', () => { model[key] = s.value; drawServer(); keepModel(); });
    modelInputs[key] = s;
    return s;
  };
  const text = (key, label, type = 'text') => {
    const i = el('input', { type, class: 'input', value: model[key], attrs: { placeholder: label, 'aria-label': label, spellcheck: 'false', autocomplete: 'off' } });
    i.addEventListener('input', () => { model[key] = i.value; if (key !== 'api_key') keepModel(); });
    i.addEventListener('keydown', (e) => e.stopPropagation());
    modelInputs[key] = i;
    return i;
  };
  const server = el('div', { class: 'change-server' },
    text('base_url', 'Base URL of the server, ending in /v1 (Ollama: port 11434)'),
    text('model', 'The server’s model'),
    text('api_key', 'Key (kept in memory only)', 'password'),
    select('embed', [['local', 'Embeddings: embedded (MiniLM)'], ['server', 'Embeddings: the server']], 'Embeddings'),
    text('embed_model', 'The server’s embedding model'));
  setChildren(modelBox,
    select('backend', [['default', 'Embedded: default (Qwen2.5-Coder-1.5B)'], ['small', 'Embedded: small (0.5B)'], ['server', 'An OpenAI-compatible server']], 'Model'),
    server,
    el('div', { class: 'field-error', dataset: { errorFor: 'model' } }));
  drawServer();
}

function drawServer() {
  const server = modelBox.querySelector('.change-server');
  if (server) server.hidden = model.backend !== 'server' && model.embed !== 'server';
  if (modelInputs.embed_model) modelInputs.embed_model.hidden = model.embed !== 'server';
}

function clearErrors() {
  for (const e of root.querySelectorAll('.field-error')) setChildren(e);
  setChildren(resultBox);
}

function fieldError(field, text) {
  const slot = field && root.querySelector(`.field-error[data-error-for="${field}"]`);
  if (slot) setChildren(slot, untrusted(text));
  else say(text, true);
}

function say(text, error = false, hint = '') {
  resultBox.className = ['change-result', error ? 'error' : ''].filter(Boolean).join(' ');
  setChildren(resultBox, untrusted(text), hint ? el('div', { class: 'dim small' }, untrusted(hint)) : null);
}

/** The form's values as the engine's `Intervention`. */
function values() {
  const kind = kindSelect.value;
  const out = { kind };
  for (const input of fieldsBox.querySelectorAll('[data-field]')) {
    const name = input.dataset.field;
    if (input.type === 'checkbox') out[name] = input.checked;
    else if (name === 'agent' || input.type === 'number') out[name] = Number(input.value);
    else if (name === 'model') out[name] = input.value.trim() || null;
    else out[name] = input.value;
  }
  return out;
}

/** Makes the intervention in the form (or `change`, as the engine's `Intervention`); answers what the engine said. */
export async function makeChange(change) {
  if (busy || running) return null;
  busy = true;
  showChangeTarget();
  clearErrors();
  if (change && KINDS[change.kind]) {
    // Asked from outside (a test, a script): shown in the form as if typed there, so a
    // refusal lands next to its field.
    kindSelect.value = change.kind;
    drawFields();
    for (const input of fieldsBox.querySelectorAll('[data-field]')) {
      const v = change[input.dataset.field];
      if (v === undefined) continue;
      if (input.type === 'checkbox') input.checked = !!v;
      else {
        if (input.tagName === 'SELECT' && ![...input.options].some((o) => o.value === String(v))) {
          input.append(el('option', { value: String(v), text: String(v) }));
        }
        input.value = String(v);
      }
    }
  }
  const asked = change || values();
  const needsModel = KINDS[asked.kind] ? KINDS[asked.kind].model : true;
  say(needsModel ? 'Asking the model… (the embedded model takes a few seconds to load the first time)' : 'Writing…');
  try {
    const done = await call('change', { branch: app.branch, change: asked, model: needsModel ? { ...model } : null });
    say(done.said);
    emit('branch-grew', { seq: done.to_seq });
    return done;
  } catch (err) {
    setChildren(resultBox);
    fieldError(err.field, err.message);
    if (err.hint) say(err.message, true, err.hint);
    return { error: err.message, field: err.field || null };
  } finally {
    busy = false;
    showChangeTarget();
  }
}

/** Continues the branch shown for `hours` simulated hours; answers how it ended. */
export async function continueRun(hours) {
  if (busy || running) return null;
  const h = Number(hours ?? hoursInput.value);
  running = true;
  cancelButton.disabled = false;
  showChangeTarget();
  clearErrors();
  setChildren(runText, untrusted('Starting… (the embedded model takes a few seconds to load the first time)'));
  try {
    const ended = await call('continue_run', { branch: app.branch, hours: h, model: { ...model } });
    showProgress(ended);
    follow(ended.head_seq, true);
    return ended;
  } catch (err) {
    if (err.field === 'model' || err.field === 'hours') fieldError(err.field === 'hours' ? 'model' : err.field, err.message);
    setChildren(runText, el('div', { class: 'error' }, untrusted(err.message)), err.hint ? el('div', { class: 'dim' }, untrusted(err.hint)) : null);
    follow(null, true);
    return { error: err.message };
  } finally {
    running = false;
    cancelButton.disabled = true;
    showChangeTarget();
  }
}

/** Stops the continuation after the step under way. */
export async function cancelRun() {
  if (!running) return;
  cancelButton.disabled = true;
  setChildren(runText, untrusted('Stopping after the step under way…'));
  await call('cancel_run');
}

function showProgress(p) {
  if (!p || !runText) return;
  const span = Math.max(1, p.to_secs - p.from_secs);
  bar.value = Math.min(1, Math.max(0, (p.secs - p.from_secs) / span));
  const cost = p.cost_usd === null || p.cost_usd === undefined ? 'cost: a model has no price in the config file' : `$${p.cost_usd.toFixed(4)}`;
  const eta = p.state === 'running' && Number.isFinite(p.eta_secs) ? ` · about ${fmtDuration(Math.round(p.eta_secs))} to go` : '';
  const what = p.state === 'done' ? 'Done' : p.state === 'stopped' ? 'Stopped (nothing is lost; Continue goes on from here)' : 'Running';
  const between = `${fmtClock(p.from_secs)} → ${fmtClock(p.to_secs)}`;
  setChildren(runText, untrusted(`${what}: at ${fmtTime(p.secs)} (${between}) · ${fmtMany(p.calls, 'call')} · ${fmtMany(p.tokens, 'token')} · ${cost} · ${fmtDuration(Math.round(p.wall_secs))}${p.state === 'running' ? ' so far' : ''}${eta}`));
  root.dataset.runState = p.state;
  if (p.state === 'running') follow(p.head_seq, false, p.secs);
}

/** The map follows the run: while it runs, the head's frame is asked (at most every 0.5 s);
 * at the end the branch is read again whole (timeline, tracks). */
function follow(seq, now, secs) {
  clearTimeout(followTimer);
  if (now) { emit('branch-grew', { seq }); return; }
  const go = () => { lastFollow = performance.now(); emit('run-head', { seq, secs }); };
  const wait = 500 - (performance.now() - lastFollow);
  if (wait <= 0) go();
  else followTimer = setTimeout(go, wait);
}

export function changeState() {
  return { busy, running, model: { ...model, api_key: model.api_key ? '(set)' : '' }, result: resultBox ? resultBox.textContent : '', run: runText ? runText.textContent : '', runState: root ? root.dataset.runState || null : null };
}

/** Sets the model (from the settings, a test, or a script); kept in the settings unless
 * `keep` is false. */
export function setModel(m, keep = true) {
  Object.assign(model, m || {});
  for (const [k, i] of Object.entries(modelInputs)) i.value = model[k] ?? '';
  if (modelBox) drawServer();
  if (keep) keepModel();
}
