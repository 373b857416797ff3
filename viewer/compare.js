// The Compare tab: the branch shown beside another from where they part (`compare`: the
// engine's `hamlet diff`), each agent with when its days first differ and a click to jump
// there; the other branch's agents are drawn on the map as dashed rings where they are
// somewhere else at the same moment.

import { app, emit, on } from './state.js';
import { call, latest } from './ipc.js';
import { el, button, untrusted, setChildren, fmtTime, fmtCount, fmtMany } from './dom.js';
import { setGhosts } from './map.js';

let root = null;
let other = null;
let summary = null;
let list = null;
let overlayBox = null;
let shownFor = null;
let visible = false;
let last = null;

const ghostFrame = latest(
  ({ branch, secs }) => call('frame', { branch, secs }),
  {
    apply: (frame) => { if (visible && overlayBox.checked) setGhosts(frame, other.value); },
    fail: () => setGhosts(null),
  },
);

export function initCompare(host) {
  root = host;
  other = el('select', { class: 'input', attrs: { 'aria-label': 'The branch to compare with' }, on: { change: () => compare() } });
  overlayBox = el('input', { type: 'checkbox', checked: true, attrs: { 'aria-label': 'Show the other branch on the map' }, on: { change: () => followMoment() } });
  summary = el('div', { class: 'compare-summary small', attrs: { 'aria-live': 'polite' } });
  list = el('ul', { class: 'compare-agents' });
  root.append(
    el('div', { class: 'row' }, el('span', { class: 'dim small', text: 'Compare with' }), other),
    el('label', { class: 'row small' }, overlayBox, el('span', { text: 'Its agents on the map (dashed, where they are elsewhere)' })),
    summary,
    list,
  );
  on('frame', () => followMoment());
}

/** Shown or hidden with its tab: the overlay is drawn only while the tab is open. */
export function setCompareVisible(v) {
  visible = v;
  if (!v) setGhosts(null);
  else { listOthers(); followMoment(); }
}

function listOthers() {
  const names = ((app.opened && app.opened.branches) || []).map((b) => b.name).filter((n) => n !== app.branch);
  const keep = names.includes(other.value) ? other.value : names[0];
  setChildren(other, ...names.map((n) => el('option', { value: n, text: n })));
  if (keep) other.value = keep;
  if (!names.length) {
    setChildren(summary, untrusted('Only one branch: fork one (Branches ▸ Fork here) to compare.'));
    setChildren(list);
    setGhosts(null);
    return;
  }
  if (shownFor !== `${app.branch}|${other.value}`) compare();
}

function followMoment() {
  if (!visible || !other || !other.value || !overlayBox.checked) { setGhosts(null); return; }
  if (!Number.isFinite(app.cursorSecs)) return;
  ghostFrame.want(`${other.value}|${Math.floor(app.cursorSecs)}`, { branch: other.value, secs: Math.floor(app.cursorSecs) });
}

/** Compares the branch shown with `b` (default: the one chosen); answers the engine's diff. */
export async function compare(b) {
  if (b) other.value = b;
  const a = app.branch;
  const with_ = other.value;
  if (!a || !with_) return null;
  setChildren(summary, untrusted(`Comparing ${a} with ${with_}…`));
  try {
    const d = await call('compare', { a, b: with_ });
    shownFor = `${a}|${with_}`;
    last = d;
    draw(d);
    followMoment();
    return d;
  } catch (err) {
    setChildren(summary, el('span', { class: 'error' }, untrusted(err.message)));
    return { error: err.message };
  }
}

function draw(d) {
  const parted = d.parted_secs === null || d.parted_secs === undefined
    ? 'share nothing'
    : `share #0–#${Math.max(0, d.shared - 1)} (to ${fmtTime(d.parted_secs)})`;
  const differ = d.agents.filter((x) => x.first_secs !== null && x.first_secs !== undefined);
  setChildren(summary, untrusted(`${d.a} and ${d.b} ${parted}; then ${d.a} has ${fmtCount(d.a_after)} events and ${d.b} ${fmtCount(d.b_after)}. ${differ.length} of ${d.agents.length} agents’ days differ.`));
  const rows = [...d.agents].sort((x, y) => (x.first_secs ?? Infinity) - (y.first_secs ?? Infinity) || x.name.localeCompare(y.name));
  setChildren(list, ...rows.map((x) => row(d, x)));
}

function side(s) {
  if (!s.present) return 'not in town';
  const first = s.actions[0];
  const doing = first ? `${first[1] || ''} ${first[2]}`.trim() : 'no new action';
  return `${fmtMany(s.actions.length, 'action')}, ${fmtMany(s.conversations.length, 'talk')} · first: ${doing}`;
}

function row(d, x) {
  const same = x.first_secs === null || x.first_secs === undefined;
  const jump = same ? null : button({
    label: `→ ${fmtTime(x.first_secs)}`, cls: 'btn-ghost btn-small',
    title: `Show both branches at ${fmtTime(x.first_secs)}, where ${x.name}’s days first differ`,
    onClick: () => jumpTo(x.first_secs),
  });
  return el('li', { class: ['compare-agent', same ? 'same' : 'differs'], dataset: { agent: x.name } },
    el('div', { class: 'row' }, el('strong', {}, untrusted(x.name)), el('span', { class: 'dim small', text: same ? 'the same on both' : 'differs from' }), jump),
    same ? null : el('div', { class: 'small' }, el('span', { class: 'dim', text: `${d.a}: ` }), untrusted(side(x.a))),
    same ? null : el('div', { class: 'small' }, el('span', { class: 'dim', text: `${d.b}: ` }), untrusted(side(x.b))));
}

/** Shows both branches at `secs`: the branch shown is scrubbed there, and the other's
 * agents follow on the map. */
export function jumpTo(secs) {
  emit('seek-secs', secs);
  followMoment();
}

export function compareState() {
  return { other: other ? other.value : null, shownFor, last, summary: summary ? summary.textContent : '' };
}
