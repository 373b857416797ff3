// The Research tab: the paper's measurements of the branch shown, drawn on a canvas from
// the engine's `research` (the same folds as `hamlet research`): information diffusion over
// time (any keywords), relationship-network density over time, the relationship graph at the
// playhead, and the model's cost over simulated time per agent or purpose. Each chart's table
// saves as CSV (`save_csv`).

import { app, on } from './state.js';
import { call } from './ipc.js';
import { el, button, untrusted, setChildren, fmtTime, fmtClock } from './dom.js';

let root = null;
let what = null;
let keywords = null;
let costBy = null;
let every = null;
let canvas = null;
let caption = null;
/** Research requests sent so far (the latest is the one drawn). */
let requests = 0;
let saveButton = null;
let answer = null;
let visible = false;
let graphAt = null;
let drawnFor = null;

const CHARTS = [
  ['diffusion', 'Who knows — information diffusion'],
  ['density', 'Relationship density'],
  ['relationships', 'Relationship graph at the playhead'],
  ['cost', 'Model cost over time'],
  ['goals', 'Progress toward life goals'],
];

export function initPlots(host) {
  root = host;
  what = el('select', { class: 'input', attrs: { 'aria-label': 'Measurement' }, on: { change: () => { syncControls(); plot(); } } },
    ...CHARTS.map(([v, t]) => el('option', { value: v, text: t })));
  keywords = el('input', { type: 'text', class: 'input', value: 'party', attrs: { 'aria-label': 'Keywords (all must be in a memory)', placeholder: 'keywords, e.g. party or council election', spellcheck: 'false' } });
  keywords.addEventListener('keydown', (e) => { e.stopPropagation(); if (e.key === 'Enter') plot(); });
  costBy = el('select', { class: 'input', attrs: { 'aria-label': 'Cost by' }, on: { change: () => draw() } },
    el('option', { value: 'agent', text: 'by agent' }), el('option', { value: 'purpose', text: 'by purpose' }), el('option', { value: 'model', text: 'by model' }));
  every = el('select', { class: 'input', attrs: { 'aria-label': 'Every' }, on: { change: () => plot() } },
    ...[[900, 'every 15 min'], [1800, 'every 30 min'], [3600, 'every hour'], [7200, 'every 2 h']].map(([v, t]) => el('option', { value: String(v), text: t })));
  every.value = '1800';
  canvas = el('canvas', { class: 'plot-canvas', attrs: { width: '380', height: '240', role: 'img', 'aria-label': 'Chart' } });
  caption = el('div', { class: 'plot-caption small', attrs: { 'aria-live': 'polite' } });
  saveButton = button({ label: 'Save CSV…', cls: 'btn-ghost btn-small', title: 'Save this chart’s table as CSV', onClick: () => saveCsv() });
  root.append(
    el('div', { class: 'row' }, what),
    el('div', { class: 'row' }, keywords, costBy, every, button({ label: 'Draw', cls: 'btn-primary-ghost btn-small', onClick: () => plot() }), saveButton),
    canvas, caption);
  syncControls();
  on('frame', () => { if (visible && what.value === 'relationships' && app.frame && app.frame.secs !== graphAt) plotSoon(); });
}

let soon = 0;
function plotSoon() {
  clearTimeout(soon);
  soon = setTimeout(() => plot(), 250);
}

function syncControls() {
  keywords.hidden = what.value !== 'diffusion';
  costBy.hidden = what.value !== 'cost';
  every.hidden = what.value === 'relationships';
}

export function setPlotsVisible(v) {
  visible = v;
  if (v && drawnFor !== `${app.branch}|${what.value}`) plot();
}

/** Draws a measurement of the branch shown (`{ what, keywords, every_secs }`); answers the engine's rows. */
export async function plot(ask) {
  if (!app.branch) return null;
  if (ask && ask.what) { what.value = ask.what; syncControls(); }
  if (ask && Array.isArray(ask.keywords)) keywords.value = ask.keywords.join(' ');
  const request = {
    what: what.value,
    keywords: keywords.value.split(/[\s,]+/).filter(Boolean),
    every_secs: Number(every.value),
    at_secs: app.frame ? app.frame.secs : null,
  };
  // Only the latest request draws: showing the tab asks for its chart, and an ask that
  // follows at once must not be overdrawn by that one answering later.
  const mine = ++requests;
  setChildren(caption, untrusted('Measuring…'));
  try {
    const got = await call('research', { branch: app.branch, ask: request });
    if (mine !== requests) return got;
    answer = got;
    graphAt = request.at_secs;
    drawnFor = `${app.branch}|${request.what}`;
    draw();
    return answer;
  } catch (err) {
    if (mine !== requests) return { error: err.message };
    answer = null;
    clearCanvas();
    setChildren(caption, el('span', { class: 'error' }, untrusted(err.message)));
    return { error: err.message };
  }
}

function clearCanvas() {
  const g = canvas.getContext('2d');
  g.clearRect(0, 0, canvas.width, canvas.height);
}

function css(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

const PALETTE = ['#5b8def', '#e8774f', '#4fb286', '#c7a53b', '#a06cd5', '#d35d8d', '#43a8c0', '#8c8c3f', '#c25b4a', '#6b7bd1', '#3f9c6a', '#b3783c'];

function draw() {
  if (!answer) return;
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(260, root.clientWidth - 24);
  const h = 240;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const ink = css('--text', '#d8dee9');
  const muted = css('--muted', '#9aa3b5');
  g.font = '11px system-ui, sans-serif';
  if (answer.what === 'relationships') { drawGraph(g, w, h, ink, muted); return; }
  const rows = Array.isArray(answer.rows) ? answer.rows : [];
  let series = [];
  let yMax = 1;
  let yLabel = '';
  if (answer.what === 'diffusion') {
    series = [{ name: 'share who know', points: rows.map((r) => [r.at_secs, r.share]) }];
    yLabel = 'share of agents';
    const last = rows[rows.length - 1];
    setChildren(caption, untrusted(last ? `${last.knowing.length} of ${last.agents} know by ${fmtTime(last.at_secs)}: ${last.knowing.join(', ') || 'nobody'}` : 'No rows.'));
  } else if (answer.what === 'density') {
    series = [{ name: 'density', points: rows.map((r) => [r.at_secs, r.density]) }];
    yLabel = 'density (pairs who talked / pairs)';
    const [first, last] = [rows[0], rows[rows.length - 1]];
    setChildren(caption, untrusted(first && last ? `Density ${first.density.toFixed(3)} at ${fmtTime(first.at_secs)} → ${last.density.toFixed(3)} at ${fmtTime(last.at_secs)} (${last.pairs} pairs)` : 'No rows.'));
  } else if (answer.what === 'goals') {
    const measured = rows.filter((r) => r.progress !== null && r.progress !== undefined);
    const agents = [...new Set(measured.map((r) => r.agent))];
    series = agents.map((a) => ({ name: a, points: measured.filter((r) => r.agent === a).map((r) => [r.at_secs, r.progress]) }));
    yLabel = 'progress toward the goal';
    const unmeasured = [...new Set(rows.filter((r) => r.progress === null || r.progress === undefined).map((r) => r.agent))];
    const reached = [...new Set(measured.filter((r) => r.reached_secs !== null && r.reached_secs !== undefined).map((r) => r.agent))];
    const words = !rows.length
      ? 'No agent here has a goal (a persona’s goal in the town file).'
      : `${reached.length} of ${agents.length} measured goals reached${unmeasured.length ? `; no measure for ${unmeasured.join(', ')} (hamlet research judge-goals asks a model)` : ''}`;
    setChildren(caption, untrusted(words));
  } else if (answer.what === 'cost') {
    const by = costBy.value;
    const keys = [...new Set(rows.filter((r) => r.by === by).map((r) => r.key))];
    const times = [...new Set(rows.map((r) => r.at_secs))].sort((a, b) => a - b);
    series = keys.map((k) => ({ name: k, points: times.map((t) => [t, rows.filter((r) => r.by === by && r.key === k && r.at_secs === t).reduce((s, r) => s + r.calls, 0)]) }));
    yMax = Math.max(1, ...series.flatMap((s) => s.points.map((p) => p[1])));
    yLabel = 'model calls';
    const total = rows.filter((r) => r.by === 'purpose').reduce((s, r) => s + r.calls, 0);
    const money = rows.filter((r) => r.by === 'purpose').reduce((s, r) => s + r.money, 0);
    setChildren(caption, untrusted(`${total} calls in all, $${money.toFixed(4)} at the config file’s prices (the embedded models cost nothing)`));
  }
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  if (!xs.length) return;
  const [x0, x1] = [Math.min(...xs), Math.max(...xs, Math.min(...xs) + 1)];
  const pad = { l: 36, r: 8, t: 10, b: 34 };
  const X = (x) => pad.l + ((x - x0) / (x1 - x0)) * (w - pad.l - pad.r);
  const Y = (y) => h - pad.b - (y / yMax) * (h - pad.t - pad.b);
  g.strokeStyle = muted;
  g.fillStyle = muted;
  g.lineWidth = 1;
  g.beginPath();
  g.moveTo(pad.l, pad.t);
  g.lineTo(pad.l, h - pad.b);
  g.lineTo(w - pad.r, h - pad.b);
  g.stroke();
  g.textAlign = 'right';
  g.textBaseline = 'middle';
  for (const f of [0, 0.5, 1]) g.fillText(yMax === 1 ? f.toFixed(1) : String(Math.round(f * yMax)), pad.l - 4, Y(f * yMax));
  g.textAlign = 'center';
  g.textBaseline = 'top';
  for (let i = 0; i <= 4; i++) {
    const t = x0 + ((x1 - x0) * i) / 4;
    g.fillText(fmtClock(t), X(t), h - pad.b + 4);
  }
  g.fillText(yLabel, w / 2, h - 14);
  series.forEach((s, i) => {
    g.strokeStyle = PALETTE[i % PALETTE.length];
    g.lineWidth = 2;
    g.beginPath();
    s.points.forEach(([x, y], j) => (j ? g.lineTo(X(x), Y(y)) : g.moveTo(X(x), Y(y))));
    g.stroke();
  });
  if (series.length > 1) {
    g.textAlign = 'left';
    g.textBaseline = 'top';
    series.slice(0, 12).forEach((s, i) => {
      g.fillStyle = PALETTE[i % PALETTE.length];
      g.fillRect(pad.l + 6 + (i % 2) * 150, pad.t + Math.floor(i / 2) * 13, 8, 8);
      g.fillStyle = ink;
      g.fillText(s.name.slice(0, 22), pad.l + 18 + (i % 2) * 150, pad.t - 2 + Math.floor(i / 2) * 13);
    });
  }
}

function drawGraph(g, w, h, ink, muted) {
  const graph = answer.rows || { agents: [], edges: [] };
  const n = graph.agents.length;
  const cx = w / 2;
  const cy = h / 2;
  const r = Math.min(w, h) / 2 - 34;
  const at = (i) => [cx + r * Math.cos((i / Math.max(1, n)) * 2 * Math.PI - Math.PI / 2), cy + r * Math.sin((i / Math.max(1, n)) * 2 * Math.PI - Math.PI / 2)];
  const most = Math.max(1, ...graph.edges.map((e) => e[2]));
  for (const [i, j, k] of graph.edges) {
    const [a, b] = [at(i), at(j)];
    g.strokeStyle = '#5b8def';
    g.globalAlpha = 0.35 + 0.65 * (k / most);
    g.lineWidth = 1 + 3 * (k / most);
    g.beginPath();
    g.moveTo(a[0], a[1]);
    g.lineTo(b[0], b[1]);
    g.stroke();
  }
  g.globalAlpha = 1;
  graph.agents.forEach((name, i) => {
    const [x, y] = at(i);
    g.fillStyle = PALETTE[i % PALETTE.length];
    g.beginPath();
    g.arc(x, y, 6, 0, 2 * Math.PI);
    g.fill();
    g.fillStyle = ink;
    g.textAlign = x < cx - 4 ? 'right' : x > cx + 4 ? 'left' : 'center';
    g.textBaseline = y < cy ? 'bottom' : 'top';
    g.fillText(name, x + (x < cx - 4 ? -9 : x > cx + 4 ? 9 : 0), y + (y < cy ? -7 : 7));
  });
  const possible = (n * (n - 1)) / 2;
  setChildren(caption, untrusted(`At ${fmtTime(graph.at_secs)}: ${graph.edges.length} of ${possible} pairs had talked (density ${possible ? (graph.edges.length / possible).toFixed(3) : '0'}); thicker lines, more conversations.`));
  g.fillStyle = muted;
}

/** Saves the chart's table where the save dialog says; answers the path written. */
export async function saveCsv() {
  if (!answer) return null;
  const name = `${app.branch}-${answer.what}.csv`;
  try {
    const written = await call('save_csv', { name, text: answer.csv });
    if (written) setChildren(caption, untrusted(`Saved ${written}`));
    return written;
  } catch (err) {
    setChildren(caption, el('span', { class: 'error' }, untrusted(err.message)));
    return null;
  }
}

export function plotsState() {
  return { what: what ? what.value : null, rows: answer ? answer.rows : null, csv: answer ? answer.csv : null, caption: caption ? caption.textContent : '' };
}
