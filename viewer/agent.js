// The agent panel: one agent at the moment shown — doing, plans, memories (virtualised), reflections, people, talks.

import { app, emit, on, agentInFrame } from './state.js';
import { iconNode } from './glyphs.js';
import { call, latest } from './ipc.js';
import { seekBusy, record } from './seek.js';
import {
  el, button, untrusted, atPlace, notice, setChildren, fmtTime, fmtClock, fmtDuration, fmtMoney,
  fmtCount, fmtScore, VirtualList, hueOf,
} from './dom.js';

const TABS = [
  ['overview', 'Overview'],
  ['plan', 'Plan'],
  ['memories', 'Memories'],
  ['reflections', 'Reflections'],
  ['people', 'People'],
  ['talks', 'Talks'],
];
const MEMORY_ROW = 54;

let root = null;
let head = null;
let tabBar = null;
const panes = {};
let tab = 'overview';
let data = null;
let dataKey = null;
let loading = false;
let visible = false;
let loader = null;
let lastRenderMs = 0;

// Memories.
let memList = null;
let memItems = [];
let memFilterText = '';
let memKind = 'all';
let memNewest = true;
let memCount = null;
let memKindSel = null;
let memDetail = null;
let memSelected = null;
let filterTimer = 0;

export function initAgent(host) {
  root = host;
  head = el('div', { class: 'agent-head' });
  tabBar = el('div', { class: 'subtabs', attrs: { role: 'tablist', 'aria-label': 'Agent sections' } });
  const body = el('div', { class: 'agent-body' });
  for (const [id, label] of TABS) {
    const b = el('button', {
      type: 'button', class: 'subtab', text: label, title: `Show ${label.toLowerCase()}`,
      attrs: { role: 'tab', 'aria-selected': String(id === tab), 'data-tab': id },
      on: { click: () => setTab(id) },
    });
    tabBar.append(b);
    panes[id] = el('div', { class: `agent-pane pane-${id}`, hidden: id !== tab, attrs: { role: 'tabpanel' } });
    body.append(panes[id]);
  }
  buildMemoryPane();
  root.append(head, tabBar, body);
  loader = latest(fetchAgent, { apply: applyAgent, fail: failAgent });
  on('frame', () => refreshSoon());
  on('reset', () => reset());
  renderEmpty();
}

function setTab(id) {
  tab = id;
  for (const b of tabBar.children) b.setAttribute('aria-selected', String(b.dataset.tab === id));
  for (const [k, p] of Object.entries(panes)) p.hidden = k !== id;
  if (id === 'memories' && memList) memList.render();
}

/** Called by the side panel when the agent tab is shown or hidden. */
export function setAgentVisible(v) {
  visible = v;
  if (v) refresh();
}

function reset() {
  data = null;
  dataKey = null;
  loader && loader.reset();
  renderEmpty();
}

function renderEmpty() {
  setChildren(head, notice('No agent selected.', 'empty', 'Click an agent on the map to see what it is doing, its plans, memories and conversations.'));
  tabBar.hidden = true;
  for (const p of Object.values(panes)) p.hidden = true;
}

/**
 * After a new frame: at once when the frames have caught up with the scrubber; while it is
 * still moving (or playing), at most every 250 ms, so the map stays first in line.
 */
let deferTimer = 0;
let lastAsk = 0;
function refreshSoon() {
  const now = performance.now();
  if (!seekBusy() || now - lastAsk > 250) {
    clearTimeout(deferTimer);
    deferTimer = 0;
    lastAsk = now;
    refresh();
  } else if (!deferTimer) {
    deferTimer = setTimeout(() => { deferTimer = 0; refreshSoon(); }, 250 - (now - lastAsk));
  }
}

/** Shows an agent (by id) at the moment on screen. */
export function showAgent(id) {
  if (app.selected !== id) {
    memSelected = null;
    memFilterText = '';
    memKind = 'all';
    const input = panes.memories.querySelector('input');
    if (input) input.value = '';
    if (memList) memList.viewport.scrollTop = 0;
  }
  app.selected = id;
  emit('selected', id);
  return refresh(true);
}

function refresh(force = false) {
  if (app.selected === null || !app.frame || !app.branch) return Promise.resolve();
  if (!visible && !force) return Promise.resolve();
  const seq = app.frame.seq;
  const key = `${app.epoch}:${app.branch}:${app.selected}:${seq}`;
  if (key === dataKey && !force) return Promise.resolve();
  if (!data || data.id !== app.selected) {
    loading = true;
    const brief = agentInFrame(app.selected);
    setChildren(head, el('div', { class: 'agent-loading' }, el('span', { class: 'spinner' }), el('span', { text: 'Loading ' }), untrusted(brief ? brief.name : `agent ${app.selected}`), el('span', { text: '…' })));
  }
  head.classList.add('refreshing');
  return loader.want(key, { branch: app.branch, seq, agent: app.selected, key, epoch: app.epoch });
}

async function fetchAgent(args) {
  const result = await call('agent', { branch: args.branch, seq: args.seq, agent: args.agent });
  return { result, args };
}

function applyAgent({ result, args }) {
  if (args.epoch !== app.epoch || args.agent !== app.selected) return;
  loading = false;
  head.classList.remove('refreshing');
  if (!result || typeof result !== 'object') {
    failAgent(new Error('the agent panel came back empty'), args);
    return;
  }
  data = result;
  dataKey = args.key;
  const t = performance.now();
  render();
  lastRenderMs = performance.now() - t;
  emit('agent-shown', data);
}

function failAgent(err, args) {
  if (args && (args.epoch !== app.epoch || args.agent !== app.selected)) return;
  loading = false;
  head.classList.remove('refreshing');
  data = null;
  dataKey = args ? args.key : null;
  const brief = agentInFrame(app.selected);
  setChildren(head,
    brief ? el('h2', { class: 'agent-name' }, untrusted(brief.name)) : null,
    notice(err.message || String(err), 'error', 'This agent could not be shown at this moment.'));
  tabBar.hidden = true;
  for (const p of Object.values(panes)) p.hidden = true;
}

function whyButton(args, what) {
  const b = button({ icon: 'why', label: 'why?', cls: 'btn-why btn-small', title: `Why? — the causes of ${what}` });
  b.addEventListener('click', (e) => {
    e.preventDefault();
    e.stopPropagation();
    emit('why', { ...args, t0: performance.now() });
  });
  return b;
}

function nowSecs() {
  return app.cursorSecs;
}

// ---------------------------------------------------------------- render

/** Rebuilds a pane keeping its scroll position and which of its details are open. */
function keeping(pane, build) {
  const top = pane.scrollTop;
  const open = new Map();
  for (const d of pane.querySelectorAll('details[data-key]')) open.set(d.dataset.key, d.open);
  build();
  for (const d of pane.querySelectorAll('details[data-key]')) {
    if (open.has(d.dataset.key)) d.open = open.get(d.dataset.key);
  }
  pane.scrollTop = top;
}

function render() {
  const a = data;
  const sameAgent = panes.overview.dataset.agent === String(a.id);
  tabBar.hidden = false;
  for (const [k, p] of Object.entries(panes)) p.hidden = k !== tab;
  renderHead(a);
  const keep = (pane, fn) => (sameAgent ? keeping(pane, fn) : (fn(), pane.scrollTop = 0));
  keep(panes.overview, () => renderOverview(a));
  keep(panes.plan, () => renderPlans(a));
  renderMemories(a);
  keep(panes.reflections, () => renderReflections(a));
  keep(panes.people, () => renderPeople(a));
  keep(panes.talks, () => renderTalks(a));
  panes.overview.dataset.agent = String(a.id);
  const counts = {
    plan: arr(a.plans).length, memories: arr(a.memories).length, reflections: arr(a.reflections).length,
    people: arr(a.relationships).length, talks: arr(a.conversations).length,
  };
  for (const b of tabBar.children) {
    const n = counts[b.dataset.tab];
    const label = TABS.find((t) => t[0] === b.dataset.tab)[1];
    setChildren(b, label, n !== undefined ? el('span', { class: 'count', text: fmtCount(n) }) : null);
  }
}

function arr(x) {
  return Array.isArray(x) ? x : [];
}

function renderHead(a) {
  const hue = hueOf(a.id);
  const badge = el('div', { class: 'agent-badge', attrs: { 'aria-hidden': 'true' } });
  badge.style.background = `hsl(${hue} 55% 42%)`;
  const brief = agentInFrame(a.id);
  badge.textContent = (brief && brief.initials) || String(a.name || '?').slice(0, 2);
  const act = a.action;
  const doing = act
    ? el('div', { class: 'agent-doing' },
      iconNode(act.emoji, 'agent-emoji'),
      untrusted(act.description, 'agent-action'),
      whyButton({ agent: a.id, seq: app.frame ? app.frame.seq : undefined }, `${a.name}'s current action`))
    : el('div', { class: 'agent-doing dim', text: 'Not doing anything yet at this moment.' });
  if (act) doing.querySelector('.agent-action').title = String(act.description ?? '');
  const where = act
    ? el('div', { class: 'agent-where', title: String(act.address ?? '') },
      atPlace(act.address, 'where-addr'),
      el('span', { class: 'dim', text: ` · since ${fmtClock(act.started_secs)} for ${fmtDuration(act.duration_secs)}` }))
    : el('div', { class: 'agent-where dim', text: '\u00a0' });
  setChildren(head,
    el('div', { class: 'agent-title' },
      badge,
      el('div', { class: 'agent-title-text' },
        el('h2', { class: 'agent-name' }, untrusted(a.name)),
        el('div', { class: 'agent-sub dim' }, el('span', { text: `agent ${a.id} · ` }), el('span', { class: 'cash', text: fmtMoney(a.cash_cents), title: 'Cash' }))),
    ),
    doing,
    where,
  );
}

function section(title, ...children) {
  return el('section', { class: 'psection' }, el('h3', { text: title }), ...children);
}

function renderOverview(a) {
  const pane = panes.overview;
  const parts = [];
  if (a.summary && typeof a.summary === 'object') {
    parts.push(section(`How it describes itself (day ${a.summary.day})`,
      el('p', { class: 'prose' }, untrusted(a.summary.text)),
      a.summary.event ? el('div', { class: 'row-actions' }, whyButton({ event: a.summary.event }, 'this summary')) : null));
  } else {
    parts.push(section('Summary', el('p', { class: 'dim', text: 'No summary written yet at this moment.' })));
  }
  if (a.persona) parts.push(section('Persona', el('p', { class: 'prose' }, untrusted(a.persona))));
  const traits = a.traits && typeof a.traits === 'object' ? Object.entries(a.traits) : [];
  if (traits.length) {
    parts.push(section('Traits', el('dl', { class: 'kv' }, ...traits.flatMap(([k, v]) => [el('dt', {}, untrusted(k)), el('dd', {}, untrusted(v))]))));
  }
  const spatial = a.spatial && typeof a.spatial === 'object' ? Object.entries(a.spatial) : [];
  if (spatial.length) {
    const tree = el('ul', { class: 'tree spatial' });
    for (const [sector, arenas] of spatial) {
      const arenaList = el('ul', {});
      for (const [arena, objects] of Object.entries(arenas || {})) {
        const objs = Object.entries(objects || {});
        arenaList.append(el('li', {}, untrusted(arena, 'strong'),
          objs.length ? el('span', { class: 'dim' }, ': ', ...objs.flatMap(([o, s], i) => [i ? ', ' : '', untrusted(o), el('span', { class: 'dim', text: ' (' }), untrusted(s), el('span', { class: 'dim', text: ')' })])) : null));
      }
      tree.append(el('li', {}, el('details', { dataset: { key: `s:${sector}` } }, el('summary', {}, untrusted(sector)), arenaList)));
    }
    parts.push(section('What it knows of the town', tree));
  }
  setChildren(pane, ...parts);
}

// ---------------------------------------------------------------- plans

function renderPlans(a) {
  const pane = panes.plan;
  const plans = arr(a.plans);
  if (!plans.length) {
    setChildren(pane, notice('No plan at this moment.', 'empty', 'Plans appear once the agent has planned its day.'));
    return;
  }
  const byEvent = new Map(plans.map((p) => [p.event, p]));
  const children = new Map(); // `${event}#${item}` → [plan]
  const roots = [];
  for (const p of plans) {
    const d = Array.isArray(p.decomposes) ? p.decomposes : null;
    if (d && byEvent.has(d[0]) && byEvent.get(d[0]) !== p) {
      const k = `${d[0]}#${d[1]}`;
      if (!children.has(k)) children.set(k, []);
      children.get(k).push(p);
    } else {
      roots.push(p);
    }
  }
  const now = nowSecs();
  const seen = new Set();
  const renderPlan = (p, depth) => {
    seen.add(p);
    const items = el('ol', { class: 'plan-items' });
    arr(p.items).forEach((it, i) => {
      const start = Number(it.start_secs);
      const endS = start + Number(it.duration_secs);
      const current = start <= now && now < endS;
      const li = el('li', { class: ['plan-item', current && 'current', endS <= now && 'past'] },
        el('div', { class: 'plan-line' },
          el('span', { class: 'plan-time', text: `${fmtClock(start)}–${fmtClock(endS)}` }),
          untrusted(it.description, 'plan-desc'),
          current ? el('span', { class: 'tag tag-now', text: 'now' }) : null),
        it.address ? el('div', { class: 'plan-addr dim' }, untrusted(it.address)) : null);
      const kids = children.get(`${p.event}#${i}`);
      if (kids && depth < 6) for (const k of kids) if (!seen.has(k)) li.append(renderPlan(k, depth + 1));
      items.append(li);
    });
    return el('div', { class: `plan plan-${p.level}` },
      el('div', { class: 'plan-head' },
        el('span', { class: `tag tag-level`, text: p.level === 'day' ? 'day plan' : p.level === 'hour' ? 'hour plan' : p.level === 'action' ? 'action steps' : String(p.level) }),
        el('span', { class: 'dim', text: `${arr(p.items).length} items` }),
        el('span', { class: 'spacer' }),
        p.event ? whyButton({ event: p.event }, 'this plan') : null),
      items);
  };
  const nodes = roots.map((p) => renderPlan(p, 0));
  for (const p of plans) if (!seen.has(p)) nodes.push(renderPlan(p, 0));
  setChildren(pane, ...nodes);
  const cur = pane.querySelector('.plan-item.current .plan-line');
  if (cur) cur.setAttribute('aria-current', 'time');
}

// ---------------------------------------------------------------- memories

function buildMemoryPane() {
  const pane = panes.memories;
  const input = el('input', {
    type: 'search', class: 'input', placeholder: 'Filter by text…',
    title: 'Filter memories by their words', attrs: { 'aria-label': 'Filter memories by text' },
  });
  input.addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => { memFilterText = input.value.trim().toLowerCase(); refilter(false); }, 120);
  });
  memKindSel = el('select', { class: 'input', title: 'Show one kind of memory', attrs: { 'aria-label': 'Memory kind' } });
  memKindSel.addEventListener('change', () => { memKind = memKindSel.value; refilter(false); });
  const order = el('button', { type: 'button', class: 'btn btn-small', text: 'newest first', title: 'Change the order (newest or oldest first)' });
  order.addEventListener('click', () => {
    memNewest = !memNewest;
    order.textContent = memNewest ? 'newest first' : 'oldest first';
    refilter(false);
  });
  memCount = el('span', { class: 'dim mem-count' });
  const listHost = el('div', { class: 'mem-list-host' });
  const legend = el('div', { class: 'mem-legend dim' },
    memCount,
    el('span', { class: 'spacer' }),
    el('span', { class: 'mem-legend-scores', title: 'The scores of the last retrieval that returned each memory' },
      el('span', { class: 'lg-dot vbar-recency' }), 'recency',
      el('span', { class: 'lg-dot vbar-importance' }), 'importance',
      el('span', { class: 'lg-dot vbar-relevance' }), 'relevance → score'));
  memDetail = el('div', { class: 'mem-detail' });
  pane.append(el('div', { class: 'mem-controls' }, input, memKindSel, order), legend, listHost, memDetail);
  memList = new VirtualList(listHost, {
    rowHeight: MEMORY_ROW,
    label: 'Memory stream',
    create: createMemoryRow,
    fill: fillMemoryRow,
    onRender: (ms) => record('memories', ms),
  });
  memList.viewport.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    e.stopPropagation();
    const i = memSelected === null ? 0 : memItems.indexOf(memSelected) + (e.key === 'ArrowDown' ? 1 : -1);
    if (i >= 0 && i < memItems.length) selectMemory(memItems[i], i);
  });
}

const SCORE_NAMES = ['recency', 'importance', 'relevance', 'score'];

function createMemoryRow() {
  const kind = el('span', { class: 'mem-kind' });
  const time = el('span', { class: 'mem-time' });
  const impBar = el('span', { class: 'bar-fill' });
  const imp = el('span', { class: 'mem-imp', title: 'importance (1–10)' }, el('span', { class: 'bar' }, impBar), el('span', { class: 'mem-imp-n' }));
  const scores = el('span', { class: 'mem-scores' });
  const fills = SCORE_NAMES.slice(0, 3).map((name) => {
    const fill = el('span', { class: 'vbar-fill' });
    scores.append(el('span', { class: `vbar vbar-${name}` }, fill));
    return fill;
  });
  const total = el('span', { class: 'score-n' });
  scores.append(total);
  const why = button({ icon: 'why', cls: 'btn-why btn-icon-small', title: 'Why? — the causes of this memory' });
  const desc = el('div', { class: 'mem-desc u', attrs: { dir: 'auto' } });
  const row = el('div', { class: 'mem-row', attrs: { role: 'listitem' } },
    el('div', { class: 'mem-top' }, kind, time, imp, el('span', { class: 'spacer' }), scores, why),
    desc);
  row.__parts = { kind, time, impBar, imp, scores, fills, total, desc, why };
  row.addEventListener('click', () => {
    const i = Number(row.dataset.index);
    if (row.__item) selectMemory(row.__item, i);
  });
  why.addEventListener('click', (e) => {
    e.stopPropagation();
    if (row.__item) emit('why', { event: row.__item.id, t0: performance.now() });
  });
  return row;
}

function kindClass(kind) {
  return `mem-kind kind-${/^[a-z_]+$/.test(kind) ? kind : 'other'}`;
}

function fillMemoryRow(row, m) {
  const p = row.__parts;
  p.kind.textContent = m.kind;
  p.kind.className = kindClass(m.kind);
  p.time.textContent = fmtTime(m.created_secs).replace(/^day (\d+) (\d\d:\d\d):\d\d$/, 'd$1 $2');
  const imp = Math.max(0, Math.min(10, Number(m.importance) || 0));
  p.impBar.style.width = `${imp * 10}%`;
  p.imp.lastChild.textContent = String(imp);
  const r = m.last_retrieval;
  p.scores.classList.toggle('none', !r);
  SCORE_NAMES.slice(0, 3).forEach((name, i) => {
    const v = r ? Number(r[name]) : NaN;
    p.fills[i].style.height = Number.isFinite(v) ? `${Math.max(0, Math.min(1, v)) * 100}%` : '0%';
  });
  p.total.textContent = r ? fmtScore(Number(r.score)) : '–';
  p.scores.title = r
    ? `last retrieval: recency ${fmtScore(r.recency)} · importance ${fmtScore(r.importance)} · relevance ${fmtScore(r.relevance)} · score ${fmtScore(r.score)}`
    : 'never retrieved';
  p.desc.textContent = m.description;
  row.classList.toggle('selected', m === memSelected);
  p.why.hidden = !m.id;
}

function selectMemory(m, i) {
  memSelected = m;
  for (const row of memList.pool) row.classList.toggle('selected', row.__item === m);
  memList.scrollToIndex(i);
  renderMemoryDetail();
}

function renderMemoryDetail() {
  const m = memSelected;
  if (!m) {
    setChildren(memDetail, el('div', { class: 'dim', text: 'Click a memory to read it whole.' }));
    return;
  }
  const r = m.last_retrieval;
  setChildren(memDetail,
    el('div', { class: 'mem-detail-head' },
      el('span', { class: kindClass(m.kind), text: m.kind }),
      el('span', { class: 'dim', text: `${fmtTime(m.created_secs)} · importance ${m.importance} · last accessed ${fmtTime(m.last_accessed_secs)}` }),
      el('span', { class: 'spacer' }),
      m.id ? whyButton({ event: m.id }, 'this memory') : null),
    el('p', { class: 'prose' }, untrusted(m.description)),
    r ? el('div', { class: 'dim small' },
      el('span', { text: `last retrieved ${fmtTime(r.at_secs)} for ` }), untrusted(`“${r.query}”`),
      el('span', { text: ` — recency ${fmtScore(r.recency)}, importance ${fmtScore(r.importance)}, relevance ${fmtScore(r.relevance)}, score ${fmtScore(r.score)}` }))
      : el('div', { class: 'dim small', text: 'Never returned by a retrieval yet.' }));
}

function renderMemories(a) {
  const mems = arr(a.memories);
  const kinds = [...new Set(mems.map((m) => m.kind))].sort();
  const prev = memKind;
  setChildren(memKindSel, el('option', { value: 'all', text: 'all kinds' }), ...kinds.map((k) => el('option', { value: k, text: k })));
  memKindSel.value = kinds.includes(prev) ? prev : 'all';
  memKind = memKindSel.value;
  if (memSelected) memSelected = mems.find((m) => m.id === memSelected.id) || null;
  refilter(true);
  renderMemoryDetail();
}

function refilter(keepScroll) {
  const mems = data ? arr(data.memories) : [];
  const t = memFilterText;
  let items = mems.filter((m) => (memKind === 'all' || m.kind === memKind)
    && (!t || String(m.description).toLowerCase().includes(t)));
  if (memNewest) items = items.reverse();
  memItems = items;
  memCount.textContent = items.length === mems.length ? `${fmtCount(mems.length)} memories` : `${fmtCount(items.length)} of ${fmtCount(mems.length)}`;
  memList.setItems(items, { keepScroll });
  if (!items.length) memList.spacer.dataset.empty = mems.length ? 'No memory matches.' : 'No memories yet.';
  else delete memList.spacer.dataset.empty;
}

// ---------------------------------------------------------------- reflections

function renderReflections(a) {
  const pane = panes.reflections;
  const refl = arr(a.reflections);
  if (!refl.length) {
    setChildren(pane, notice('No reflections yet at this moment.', 'empty', 'Reflections appear when the importance of recent memories adds up.'));
    return;
  }
  const byId = new Map(refl.map((r) => [r.id, r]));
  const renderRefl = (r, path) => {
    const ev = el('ul', { class: 'evidence' });
    for (const e of arr(r.evidence)) {
      const nested = byId.get(e.id);
      if (nested && !path.has(nested.id) && path.size < 8) {
        ev.append(el('li', { class: 'evidence-item' }, renderRefl(nested, new Set([...path, nested.id]))));
      } else {
        ev.append(el('li', { class: 'evidence-item' },
          el('span', { class: kindClass(e.kind), text: e.kind }),
          untrusted(e.description, 'evidence-text'),
          e.id ? whyButton({ event: e.id }, 'this memory') : null));
      }
    }
    const summary = el('summary', {},
      el('span', { class: 'tag tag-depth', text: `depth ${r.depth}` }),
      el('span', { class: 'dim', text: ` ${fmtClock(r.created_secs)} ` }),
      untrusted(r.description, 'refl-text'));
    return el('details', { class: 'reflection', open: path.size <= 1, dataset: { key: `r:${[...path].join('/')}` } },
      summary,
      el('div', { class: 'refl-body' },
        el('div', { class: 'row-actions' }, el('span', { class: 'dim', text: `${arr(r.evidence).length} pieces of evidence` }), el('span', { class: 'spacer' }), r.id ? whyButton({ event: r.id }, 'this reflection') : null),
        ev));
  };
  // Only reflections no other reflection cites are roots; the newest first.
  const cited = new Set();
  for (const r of refl) for (const e of arr(r.evidence)) if (byId.has(e.id)) cited.add(e.id);
  const roots = refl.filter((r) => !cited.has(r.id)).reverse();
  setChildren(pane, el('div', { class: 'refl-tree' }, ...roots.map((r) => renderRefl(r, new Set([r.id])))));
}

// ---------------------------------------------------------------- people & talks

function renderPeople(a) {
  const pane = panes.people;
  const rel = arr(a.relationships);
  if (!rel.length) {
    setChildren(pane, notice('Nobody yet.', 'empty', 'People appear once this agent has talked with or remembered someone.'));
    return;
  }
  const sorted = [...rel].sort((x, y) => (y.conversations - x.conversations) || (y.memories - x.memories));
  setChildren(pane, ...sorted.map((r) => el('div', { class: 'person' },
    el('div', { class: 'person-head' },
      untrusted(r.name, 'person-name'),
      el('span', { class: 'dim', text: `${fmtCount(r.conversations)} talks · ${fmtCount(r.memories)} memories${Number.isFinite(r.last_talked_secs) ? ` · last ${fmtTime(r.last_talked_secs)}` : ''}` })),
    r.last_words ? el('blockquote', { class: 'last-words' }, untrusted(r.last_words)) : null)));
}

function renderTalks(a) {
  const pane = panes.talks;
  if (!Array.isArray(a.conversations)) {
    setChildren(pane, notice('This build did not send conversations.', 'empty'));
    return;
  }
  const convs = [...a.conversations].reverse();
  if (!convs.length) {
    setChildren(pane, notice('No conversations yet.', 'empty', 'Transcripts of the conversations this agent took part in appear here.'));
    return;
  }
  setChildren(pane, ...convs.map((c, i) => {
    const lines = el('ol', { class: 'transcript' });
    for (const l of arr(c.lines)) {
      lines.append(el('li', { class: 'line' },
        el('span', { class: 'line-time dim', text: fmtClock(l.at_secs) }),
        el('span', { class: 'line-body' },
          untrusted(l.speaker, 'speaker'),
          el('span', { class: 'dim', text: ': ' }),
          l.text ? untrusted(l.text, 'line-text') : el('span', { class: 'dim', text: '(says nothing more)' })),
        l.event ? whyButton({ event: l.event }, 'this line') : null));
    }
    const ended = c.ended ? `ended ${fmtClock(c.ended.at_secs)}: ${c.ended.reason}` : 'under way';
    return el('details', { class: 'talk', open: i === 0, dataset: { key: `c:${c.id}` } },
      el('summary', {},
        untrusted(arr(c.agents).join(' & '), 'talk-who'),
        el('span', { class: 'dim', text: ` · ${fmtTime(c.started_secs)} · ${arr(c.lines).length} lines` })),
      el('div', { class: 'talk-meta dim' },
        atPlace(c.address, '', ''), el('span', { text: ' · ' }), untrusted(ended),
        el('span', { class: 'spacer' }),
        c.id ? whyButton({ event: c.id }, 'this conversation') : null,
        Number.isFinite(c.seq) ? el('button', { type: 'button', class: 'btn btn-small', text: `go to #${c.seq}`, title: 'Show the town when it started', on: { click: () => emit('seek-seq', c.seq) } }) : null),
      lines);
  }));
}

/** For tests: what the panel shows. */
export function agentState() {
  return {
    loading,
    agent: data ? data.id : null,
    key: dataKey,
    memories: data ? arr(data.memories).length : 0,
    memoryRowsInDom: memList ? memList.pool.filter((r) => !r.hidden).length : 0,
    lastRenderMs,
  };
}

