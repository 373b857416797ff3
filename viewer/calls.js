// The call inspector: model calls around the moment or of one agent, each with its prompt, tries and answer.

import { app, emit, on, agentInFrame } from './state.js';
import { call, latest } from './ipc.js';
import { seekBusy } from './seek.js';
import { el, button, untrusted, notice, setChildren, fmtTime, fmtCount, VirtualList } from './dom.js';

const ROW = 46;
const SCOPES = [
  ['near', '±500 events around now', 500],
  ['wide', '±5,000 events around now', 5000],
  ['all', 'the whole branch', Infinity],
];

let root = null;
let controls = null;
let scopeSel = null;
let whoSel = null;
let search = null;
let countEl = null;
let listHost = null;
let list = null;
let detail = null;
let calls = [];
let shownCalls = [];
let chosen = null;
let visible = false;
let loader = null;
let loadedKey = null;
let pendingPick = null;
let statusEl = null;

export function initCalls(host) {
  root = host;
  scopeSel = el('select', { class: 'input', title: 'Which calls to list', attrs: { 'aria-label': 'Calls to list' } },
    ...SCOPES.map(([v, label]) => el('option', { value: v, text: label })));
  whoSel = el('select', { class: 'input', title: 'Everyone’s calls or only the selected agent’s', attrs: { 'aria-label': 'Whose calls' } },
    el('option', { value: 'all', text: 'everyone' }), el('option', { value: 'selected', text: 'the selected agent' }));
  search = el('input', { type: 'search', class: 'input', placeholder: 'Filter by template, purpose, agent…', title: 'Filter the list', attrs: { 'aria-label': 'Filter calls' } });
  const refresh = button({ icon: 'refresh', title: 'Load the list again', cls: 'btn-small', onClick: () => load(true) });
  countEl = el('span', { class: 'dim small' });
  controls = el('div', { class: 'calls-controls' },
    el('div', { class: 'row' }, scopeSel, el('span', { class: 'dim', text: 'by' }), whoSel, el('span', { class: 'spacer' }), refresh),
    el('div', { class: 'row' }, search, countEl));
  statusEl = el('div', { class: 'calls-status' });
  listHost = el('div', { class: 'calls-list-host' });
  detail = el('div', { class: 'call-detail' });
  root.append(controls, statusEl, listHost, detail);
  list = new VirtualList(listHost, { rowHeight: ROW, create: createRow, fill: fillRow, label: 'Model calls' });
  list.viewport.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    e.stopPropagation();
    const i = chosen ? shownCalls.indexOf(chosen) + (e.key === 'ArrowDown' ? 1 : -1) : 0;
    if (i >= 0 && i < shownCalls.length) choose(shownCalls[i]);
  });
  scopeSel.addEventListener('change', () => load(true));
  whoSel.addEventListener('change', () => load(true));
  search.addEventListener('input', () => refilter());
  loader = latest(fetchCalls, { apply: applyCalls, fail: failCalls });
  on('frame', () => { if (visible && scopeSel.value !== 'all') loadSoon(); });
  on('selected', () => { if (visible && whoSel.value === 'selected') load(false); });
  on('reset', () => { loader.reset(); calls = []; chosen = null; loadedKey = null; refilter(); renderDetail(); });
  refilter();
  renderDetail();
}

/** Follows the moment, but not while the scrubber is moving: once frames catch up. */
let soonTimer = 0;
function loadSoon() {
  clearTimeout(soonTimer);
  if (!seekBusy()) { load(false); return; }
  soonTimer = setTimeout(loadSoon, 300);
}

export function setCallsVisible(v) {
  visible = v;
  if (v) load(false);
}

function windowFor(scope) {
  const tl = app.timeline;
  const seq = app.frame ? app.frame.seq : (tl ? tl.head_seq : 0);
  const lo = tl ? tl.first_seq : 0;
  const hi = tl ? tl.head_seq : seq;
  const s = SCOPES.find((x) => x[0] === scope) || SCOPES[0];
  if (s[2] === Infinity) return { from: lo, to: hi };
  return { from: Math.max(lo, seq - s[2]), to: Math.min(hi, seq + s[2]) };
}

function load(force, explicit = null) {
  if (!app.branch || !app.timeline) return Promise.resolve();
  const w = explicit || windowFor(scopeSel.value);
  const agent = whoSel.value === 'selected' && app.selected !== null ? app.selected : null;
  const key = `${app.epoch}:${app.branch}:${w.from}-${w.to}:${agent}`;
  if (key === loadedKey && !force) return Promise.resolve();
  if (force) loader.invalidate();
  setChildren(statusEl, el('span', { class: 'spinner' }), el('span', { class: 'dim', text: ` loading calls #${w.from}–#${w.to}…` }));
  return loader.want(key, { key, epoch: app.epoch, branch: app.branch, from: w.from, to: w.to, agent });
}

async function fetchCalls(args) {
  const q = { branch: args.branch, from: args.from, to: args.to };
  if (args.agent !== null) q.agent = args.agent;
  const result = await call('calls', q);
  return { result, args };
}

function applyCalls({ result, args }) {
  if (args.epoch !== app.epoch) return;
  loadedKey = args.key;
  calls = Array.isArray(result) ? result : [];
  const name = args.agent !== null ? (agentInFrame(args.agent) || {}).name : null;
  setChildren(statusEl, el('span', { class: 'dim small', text: `#${fmtCount(args.from)}–#${fmtCount(args.to)}` }), name ? el('span', { class: 'dim small' }, ' · ', untrusted(name)) : null);
  if (chosen) chosen = calls.find((c) => sameId(c.event, chosen.event)) || chosen;
  if (pendingPick) {
    const pick = pendingPick;
    pendingPick = null;
    const found = pickCall(calls, pick);
    if (found) chosen = found;
    else {
      const near = nearestCall(calls, pick);
      if (near) chosen = near;
      statusEl.append(el('span', { class: 'warn small', text: near
        ? ` · no call matched event #${pick.seq} exactly; showing the nearest call before it`
        : ` · no call of event #${pick.seq} in this window` }));
    }
  }
  refilter();
  renderDetail();
  if (chosen) {
    const i = shownCalls.indexOf(chosen);
    if (i >= 0) list.scrollToIndex(i);
  }
}

function failCalls(err, args) {
  if (args.epoch !== app.epoch) return;
  loadedKey = args.key;
  calls = [];
  setChildren(statusEl, notice(err.message, 'error', 'The calls could not be listed.'));
  refilter();
}

function outcomeOf(c) {
  const tries = Array.isArray(c.tries) ? c.tries : [];
  const failed = tries.filter((t) => t.outcome !== 'answered').length;
  if (c.fallback) return { cls: 'fallback', text: 'fallback' };
  if (c.answer === null || c.answer === undefined) return failed ? { cls: 'failed', text: 'no answer' } : { cls: 'pending', text: 'pending' };
  if (failed) return { cls: 'retried', text: `answered after ${tries.length} tries` };
  return { cls: 'ok', text: 'answered' };
}

function refilter() {
  const t = search ? search.value.trim().toLowerCase() : '';
  shownCalls = t
    ? calls.filter((c) => [c.template, c.purpose, c.agent, c.model, c.request, c.event].some((x) => String(x ?? '').toLowerCase().includes(t)))
    : calls;
  list.setItems(shownCalls);
  countEl.textContent = calls.length ? `${fmtCount(shownCalls.length)} of ${fmtCount(calls.length)} calls` : '';
  if (!calls.length && !statusEl.querySelector('.notice-error')) {
    list.spacer.dataset.empty = app.branch ? 'No model calls here.' : 'Open a recording to inspect its model calls.';
  } else if (!shownCalls.length) list.spacer.dataset.empty = 'No call matches.';
  else delete list.spacer.dataset.empty;
}

function createRow() {
  const tpl = el('span', { class: 'call-tpl' });
  const who = el('span', { class: 'call-who' });
  const time = el('span', { class: 'call-time dim' });
  const out = el('span', { class: 'call-out' });
  const purpose = el('div', { class: 'call-purpose dim' });
  const row = el('div', { class: 'call-row', attrs: { role: 'listitem' } }, el('div', { class: 'call-top' }, tpl, who, el('span', { class: 'spacer' }), time, out), purpose);
  row.__p = { tpl, who, time, out, purpose };
  row.addEventListener('click', () => { if (row.__item) choose(row.__item); });
  return row;
}

function fillRow(row, c) {
  const p = row.__p;
  p.tpl.textContent = `${c.template ?? '?'} v${c.template_version ?? '?'}`;
  p.who.textContent = c.agent ?? '(no agent)';
  p.who.setAttribute('dir', 'auto');
  p.time.textContent = `${fmtTime(c.sim_time_secs).replace(/^day /, 'd')} · #${c.seq}`;
  const o = outcomeOf(c);
  p.out.textContent = o.text;
  p.out.className = `call-out out-${o.cls}`;
  p.purpose.textContent = c.purpose ?? '';
  p.purpose.setAttribute('dir', 'auto');
  row.classList.toggle('selected', c === chosen);
  row.classList.toggle('flag', o.cls === 'fallback' || o.cls === 'failed');
}

function choose(c) {
  chosen = c;
  for (const row of list.pool) row.classList.toggle('selected', row.__item === c);
  const i = shownCalls.indexOf(c);
  if (i >= 0) list.scrollToIndex(i);
  renderDetail();
}

/** Splits a prompt (`role: content` paragraphs) into messages; a completion prompt stays whole. */
export function splitPrompt(prompt) {
  if (Array.isArray(prompt)) return prompt.map((m) => ({ role: String(m.role ?? ''), content: String(m.content ?? '') }));
  const text = String(prompt ?? '');
  const roleRe = /^(system|user|assistant|tool|developer): /;
  if (!roleRe.test(text)) return [{ role: 'prompt', content: text }];
  const parts = text.split(/\n\n(?=(?:system|user|assistant|tool|developer): )/);
  return parts.map((p) => {
    const m = p.match(roleRe);
    return m ? { role: m[1], content: p.slice(m[0].length) } : { role: '', content: p };
  });
}

function pretty(text) {
  const s = String(text ?? '');
  const t = s.trim();
  if ((t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'))) {
    try { return JSON.stringify(JSON.parse(t), null, 2); } catch { /* not JSON: as it is */ }
  }
  return s;
}

function pre(text, cls = '') {
  return el('pre', { class: `pre u ${cls}`, text: String(text ?? ''), attrs: { dir: 'auto' } });
}

function renderDetail() {
  const c = chosen;
  if (!c) {
    setChildren(detail, notice('No call chosen.', 'empty', 'Pick a call in the list, or press “inspect call” on a model call in the why graph.'));
    return;
  }
  const tries = Array.isArray(c.tries) ? c.tries : [];
  const o = outcomeOf(c);
  const msgs = splitPrompt(c.messages || c.prompt);
  setChildren(detail,
    el('div', { class: 'call-head' },
      el('h3', {}, untrusted(`${c.template ?? '?'} v${c.template_version ?? '?'}`)),
      el('span', { class: `call-out out-${o.cls}`, text: o.text }),
      el('span', { class: 'spacer' }),
      el('button', { type: 'button', class: 'btn btn-small', text: `go to #${c.seq}`, title: 'Show the town when the call was made', on: { click: () => emit('seek-seq', c.seq) } }),
      c.event ? el('button', { type: 'button', class: 'btn btn-small', text: 'why?', title: 'Trace the causes of this call', on: { click: () => emit('why', { event: c.event, t0: performance.now() }) } }) : null),
    el('dl', { class: 'kv call-meta' },
      el('dt', { text: 'agent' }), el('dd', {}, untrusted(c.agent ?? '(none)')),
      el('dt', { text: 'purpose' }), el('dd', {}, untrusted(c.purpose ?? '')),
      el('dt', { text: 'model' }), el('dd', {}, untrusted(c.model ?? '')),
      el('dt', { text: 'when' }), el('dd', { text: `${fmtTime(c.sim_time_secs)} · #${c.seq}` }),
      el('dt', { text: 'request' }), el('dd', { class: 'mono small' }, untrusted(c.request ?? '')),
      el('dt', { text: 'event' }), el('dd', { class: 'mono small' }, untrusted(c.event ?? ''))),
    c.fallback ? el('div', { class: 'call-flag flag-fallback', text: 'No usable answer came: the engine used the documented fallback value below.' }) : null,
    el('h4', { text: `Prompt (${msgs.length} ${msgs.length === 1 ? 'part' : 'messages'})` }),
    ...msgs.map((m) => el('div', { class: `msg role-${/^[a-z]+$/.test(m.role) ? m.role : 'other'}` },
      el('div', { class: 'msg-role' }, untrusted(m.role || 'text')),
      pre(m.content))),
    el('h4', { text: `Tries (${tries.length})` }),
    tries.length ? null : el('div', { class: 'dim', text: 'No try recorded.' }),
    ...tries.map((t) => {
      const okT = t.outcome === 'answered';
      return el('div', { class: ['try', okT ? 'try-ok' : 'try-bad'] },
        el('div', { class: 'try-head' },
          el('strong', { text: `try ${t.attempt}` }),
          el('span', { class: `call-out ${okT ? 'out-ok' : 'out-failed'}` }, untrusted(t.outcome)),
          t.structured && t.structured !== 'none' ? el('span', { class: 'dim small', title: 'how the answer\'s structure was asked for', text: `asked as ${t.structured}` }) : null,
          el('span', { class: 'spacer' }),
          el('span', { class: 'dim small', text: `${fmtCount((t.tokens || [])[0])} + ${fmtCount((t.tokens || [])[1])} tokens · ${fmtCount(t.latency_ms)} ms` })),
        t.problem ? el('div', { class: 'try-problem' }, el('span', { class: 'dim', text: okT ? 'note: ' : 'why it failed: ' }), untrusted(t.problem)) : null,
        t.text ? el('details', { open: !okT || tries.length === 1 }, el('summary', { text: 'raw text' }), pre(t.text)) : el('div', { class: 'dim small', text: '(no text came)' }),
        t.parsed !== undefined ? el('details', {}, el('summary', { text: 'parsed' }), pre(pretty(typeof t.parsed === 'string' ? t.parsed : JSON.stringify(t.parsed)))) : null);
    }),
    el('h4', { text: c.fallback ? 'Answer used (fallback)' : 'Answer used' }),
    c.answer === null || c.answer === undefined
      ? el('div', { class: 'dim', text: 'Not answered by this moment.' })
      : pre(pretty(c.answer), c.fallback ? 'pre-fallback' : 'pre-answer'));
}

/** Finds the call a why node belongs to: by request event id, else by request hash, else by time. */
/** Ids compare as hex digits: with or without `ev_`, any case. */
function sameId(a, b) {
  const norm = (x) => String(x ?? '').toLowerCase().replace(/^ev_/, '');
  const x = norm(a);
  const y = norm(b);
  return !!x && !!y && (x === y || (Math.min(x.length, y.length) >= 12 && (x.startsWith(y) || y.startsWith(x))));
}

function pickCall(all, node) {
  const byEvent = all.find((c) => sameId(c.event, node.id));
  if (byEvent) return byEvent;
  const m = String(node.summary || '').match(/LLM (?:call|answer) ([0-9a-f]{8,64})/i);
  if (m) {
    const h = m[1].toLowerCase();
    const byHash = all.filter((c) => String(c.request || '').toLowerCase().startsWith(h));
    if (byHash.length) {
      // Equal requests have equal hashes: take the latest at or before the node.
      const before = byHash.filter((c) => c.seq <= node.seq);
      return (before.length ? before[before.length - 1] : byHash[0]);
    }
  }
  return null;
}

/** The call made last at or before a node, with the same agent when the node names one. */
function nearestCall(all, node) {
  const before = all.filter((c) => c.seq <= node.seq);
  const named = before.filter((c) => c.agent && String(node.summary || '').includes(c.agent));
  const pool = named.length ? named : before;
  return pool.length ? pool[pool.length - 1] : null;
}

/** Opens the call a why node (LlmRequested / LlmResponded / LlmFailed) belongs to. */
export function inspectNode(node) {
  const from = Math.max(app.timeline ? app.timeline.first_seq : 0, node.seq - 200);
  const to = node.seq + 200;
  whoSel.value = 'all';
  search.value = '';
  pendingPick = node;
  return load(true, { from, to });
}

/** For tests. */
export function callsState() {
  return { calls: calls.length, shown: shownCalls.length, chosen: chosen ? chosen.event : null };
}

