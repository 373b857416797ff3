// The "why?" view: the causal graph as SVG (pan and zoom), its indented tree, and one node's detail.

import { app, emit, on } from './state.js';
import { call } from './ipc.js';
import { record } from './seek.js';
import { el, svg, button, untrusted, notice, setChildren, clear, truncate, fmtScore, fmtCount } from './dom.js';

const CATEGORIES = {
  action: 'action',
  plan: 'plan',
  call: 'model call',
  answer: 'answer',
  retrieval: 'retrieval',
  memory: 'memory',
  reflection: 'reflection',
  dialogue: 'dialogue',
  other: 'event',
};

/** The most characters of a summary a box shows (two lines; the whole is in its tooltip and the detail). */
const BOX_CHARS = 110;

let root = null;
let head = null;
let stage = null;
let graphHost = null;
let treeHost = null;
let detailHost = null;
let svgEl = null;
let viewport = null;
let mode = 'graph';
let graph = null;
let nodes = [];
let edges = [];
let nodeEls = [];
let edgeEls = [];
let selected = null;
let vb = { x: 0, y: 0, w: 100, h: 100 };
let vbFull = { x: 0, y: 0, w: 100, h: 100 };
let ppu = 1; // screen pixels per graph unit
// The graph pane's size, kept by its ResizeObserver: drawing never has to ask for a layout.
let hostW = 0;
let hostH = 0;
let treeDrawn = false;
let rootDrawn = -1;
let edgeLayer = null;
let labelLayer = null;
let nodeLayer = null;
let rootShown = -1;
let fitted = true;
let panState = null;
let request = 0;
let lastArgs = null;
const past = [];
let modeButtons = {};

export function category(node) {
  switch (node.kind) {
    case 'ActionStarted': return 'action';
    case 'PlanMade': return 'plan';
    case 'LlmRequested': return 'call';
    case 'LlmResponded':
    case 'LlmFailed': return 'answer';
    case 'Retrieved': return 'retrieval';
    case 'MemoryAdded': return /\[reflection\b/i.test(node.summary || '') ? 'reflection' : 'memory';
    case 'ReflectionStarted': return 'reflection';
    case 'DialogueTurn':
    case 'ConversationStarted':
    case 'ConversationEnded': return 'dialogue';
    case 'Perceived': return 'memory';
    default: return 'other';
  }
}

export function initWhy(host) {
  root = host;
  head = el('div', { class: 'why-head' });
  graphHost = el('div', { class: 'why-graph', tabIndex: 0, attrs: { 'aria-label': 'Why graph. Drag to pan, wheel to zoom, + − 0 while focused.' } });
  treeHost = el('div', { class: 'why-tree', hidden: true, attrs: { role: 'tree', 'aria-label': 'Why tree' } });
  stage = el('div', { class: 'why-stage' }, graphHost, treeHost);
  detailHost = el('div', { class: 'why-detail', attrs: { 'data-why-detail': '' } });
  root.append(head, stage, detailHost);
  wirePanZoom();
  on('reset', () => { past.length = 0; lastArgs = null; graph = null; request++; renderEmpty(); });
  renderEmpty();
}

/**
 * Answers one real "why?" (the first agent's action at the moment shown) and lays the pane
 * out around it once, unseen: the first click then does not pay for styling the pane,
 * compiling its code, loading its fonts and the first large answer over IPC (150 ms and
 * more here). Leaves the pane as it was. Called once a file is on screen.
 */
export async function warmUp() {
  if (!root || !root.hidden || graph || !app.branch) return;
  const f = app.frame;
  const first = f && Array.isArray(f.agents) ? f.agents[0] : null;
  const epoch = app.epoch;
  let answer = null;
  if (first) {
    try {
      answer = await call('why', { branch: app.branch, agent: first.id, seq: f.seq });
    } catch {
      answer = null;
    }
  }
  if (epoch !== app.epoch || !root.hidden || graph) return;
  answer = answer || {
    root: 0,
    width: 880,
    height: 60,
    nodes: ['ActionStarted', 'LlmRequested', 'MemoryAdded'].map((kind, i) => (
      { id: '', seq: i, time: '', kind, summary: 'Warming up', detail: 'Warming up', x: i * 320, y: 0, w: 240, h: 48 })),
    edges: [{ from: 0, to: 1, link: 'cause' }, { from: 1, to: 2, link: 'recalled', scores: [0.5, 0.5, 0.5, 1.5] }],
    tree: [],
  };
  const style = root.getAttribute('style');
  root.hidden = false;
  root.style.visibility = 'hidden';
  root.style.position = 'absolute';
  root.style.inset = '0';
  try {
    show(answer);
    void root.offsetWidth;
  } finally {
    graph = null;
    nodes = [];
    edges = [];
    nodeEls = [];
    edgeEls = [];
    selected = null;
    renderEmpty();
    if (style === null) root.removeAttribute('style');
    else root.setAttribute('style', style);
    root.hidden = true;
  }
}

function renderEmpty() {
  setChildren(head);
  clear(graphHost);
  clear(treeHost);
  clear(detailHost);
  detailHost.hidden = true;
  graphHost.append(notice('Nothing asked yet.', 'empty', 'Select an agent and press “why?” (Y), or press “why?” beside a plan, a memory or a conversation, to see the chain of causes behind it.'));
}

function argsLabel(args) {
  if (args.event) return `event ${truncate(args.event, 20)}`;
  return `agent ${args.agent} at #${args.seq}`;
}

/**
 * Asks `why` and draws the answer. `args`: { agent, seq } (seq defaults to the moment shown)
 * or { event }. `t0` is the performance.now() of the click, for hamletStats.why.
 */
export async function openWhy(args, t0 = performance.now(), { remember = true } = {}) {
  if (!app.branch) throw new Error('No file is open.');
  const a = args.event ? { event: String(args.event) } : { agent: Number(args.agent), seq: Number.isFinite(args.seq) ? args.seq : (app.frame ? app.frame.seq : 0) };
  if (remember && lastArgs && graph) past.push(lastArgs);
  if (past.length > 30) past.shift();
  const id = ++request;
  const epoch = app.epoch;
  setChildren(head, el('div', { class: 'why-title' }, el('span', { class: 'spinner' }), el('span', { text: ` Asking why (${argsLabel(a)})…` })));
  try {
    const answer = await call('why', { branch: app.branch, ...a });
    if (id !== request || epoch !== app.epoch) return null;
    const t1 = performance.now();
    lastArgs = a;
    show(answer);
    const t2 = performance.now();
    // Laid out (the one layout the new graph needs), as the next paint will show it.
    void graphHost.offsetWidth;
    const t3 = performance.now();
    record('why', t3 - t0);
    // Where it went: the question and its answer, building the page, laying it out.
    record('whyParts', [t1 - t0, t2 - t1, t3 - t2]);
    return answer;
  } catch (err) {
    if (id !== request || epoch !== app.epoch) return null;
    lastArgs = a;
    graph = null;
    renderHead(null, err.message);
    clear(graphHost);
    clear(treeHost);
    detailHost.hidden = true;
    graphHost.hidden = false;
    treeHost.hidden = true;
    graphHost.append(notice(err.message, 'error', 'The causes could not be traced for this.'));
    return null;
  }
}

function resolveNode(ref) {
  if (typeof ref === 'number') return nodes[ref] ? ref : -1;
  const i = nodes.findIndex((n) => n.id === ref);
  return i;
}

/** An edge's scores as named fields, whether they came flat or as `scores: [recency, importance, relevance, score]`. */
function scoresOf(e) {
  if (!Array.isArray(e.scores)) return { ...e };
  const [recency, importance, relevance, score] = e.scores;
  return { ...e, recency, importance, relevance, score };
}

function show(answer) {
  graph = answer && typeof answer === 'object' ? answer : { nodes: [], edges: [], tree: [] };
  nodes = Array.isArray(graph.nodes) ? graph.nodes : [];
  edges = (Array.isArray(graph.edges) ? graph.edges : [])
    .map((e) => ({ ...scoresOf(e), a: resolveNode(e.from), b: resolveNode(e.to) }))
    .filter((e) => e.a >= 0 && e.b >= 0);
  selected = null;
  const rootIdx = resolveNode(graph.root);
  renderHead(rootIdx >= 0 ? nodes[rootIdx] : null);
  drawGraph(rootIdx);
  // The tree is built when it is first shown.
  rootShown = rootIdx;
  treeDrawn = false;
  clear(treeHost);
  setMode(mode);
  if (rootIdx >= 0) select(rootIdx, { center: false });
  else detailHost.hidden = true;
  initialView(rootIdx);
}

function renderHead(rootNode, error) {
  const back = button({ icon: 'back', title: 'Back to the previous “why?”', cls: 'btn-small', onClick: () => goBack() });
  back.disabled = past.length === 0;
  modeButtons = {
    graph: button({ icon: 'graph', label: 'Graph', title: 'Show the causes as a graph', cls: 'btn-small seg', pressed: mode === 'graph', onClick: () => setMode('graph') }),
    tree: button({ icon: 'tree', label: 'Tree', title: 'Show the causes as an indented tree', cls: 'btn-small seg', pressed: mode === 'tree', onClick: () => setMode('tree') }),
  };
  const fitB = el('span', { class: 'seg-group', attrs: { role: 'group', 'aria-label': 'Zoom' } },
    button({ icon: 'zoom-out', title: 'Zoom out (− while the graph has focus)', cls: 'btn-small', onClick: () => zoomBy(1.25) }),
    button({ icon: 'zoom-in', title: 'Zoom in (+ while the graph has focus)', cls: 'btn-small', onClick: () => zoomBy(1 / 1.25) }),
    button({ icon: 'fit', title: 'Fit the whole graph (0 while the graph has focus)', cls: 'btn-small', onClick: () => fitView() }));
  setChildren(head,
    el('div', { class: 'why-toolbar' },
      back,
      error ? null : el('div', { class: 'seg-group', attrs: { role: 'group', 'aria-label': 'View' } }, modeButtons.graph, modeButtons.tree),
      error ? null : fitB,
      el('span', { class: 'spacer' }),
      graph && !error ? el('span', { class: 'dim small', text: `${fmtCount(nodes.length)} events · ${fmtCount(edges.length)} links` }) : null),
    error
      ? el('div', { class: 'why-title', text: 'No answer' })
      : el('div', { class: 'why-title' }, el('span', { class: 'dim', text: 'Why: ' }), untrusted(rootNode ? rootNode.summary : '')),
    graph && graph.truncated && !error ? el('div', { class: 'why-truncated', text: 'More causes exist than are shown (the walk stopped at its node limit).' }) : null,
    error ? null : legend());
}

function legend() {
  return el('div', { class: 'why-legend' },
    ...Object.entries(CATEGORIES).filter(([k]) => k !== 'other').map(([k, label]) => el('span', { class: `legend-item cat-${k}` }, el('span', { class: 'swatch' }), label)),
    el('span', { class: 'legend-item' }, el('span', { class: 'lg-line lg-cause' }), 'cause'),
    el('span', { class: 'legend-item' }, el('span', { class: 'lg-line lg-recalled' }), 'recalled (score)'),
    el('span', { class: 'legend-item' }, el('span', { class: 'lg-line lg-evidence' }), 'evidence'));
}

function goBack() {
  const prev = past.pop();
  if (prev) openWhy(prev, performance.now(), { remember: false });
}

function setMode(m) {
  mode = m;
  if (m === 'tree' && !treeDrawn && graph) {
    treeDrawn = true;
    drawTree(rootShown);
    if (selected !== null) markTreeRow(selected);
  }
  graphHost.hidden = m !== 'graph';
  treeHost.hidden = m !== 'tree';
  for (const [k, b] of Object.entries(modeButtons)) b.setAttribute('aria-pressed', String(k === m));
}

// ---------------------------------------------------------------- graph

function num(v, d = 0) {
  const n = Number(v);
  return Number.isFinite(n) ? n : d;
}

function anchors(A, B) {
  // Edges run from an effect (A) to what led to it (B); drawn from B to A, arrow at A.
  const ax = num(A.x); const ay = num(A.y); const aw = num(A.w, 160); const ah = num(A.h, 48);
  const bx = num(B.x); const by = num(B.y); const bw = num(B.w, 160); const bh = num(B.h, 48);
  if (bx + bw <= ax - 4) return { x1: bx + bw, y1: by + bh / 2, x2: ax, y2: ay + ah / 2, h: true };
  if (bx >= ax + aw + 4) return { x1: bx, y1: by + bh / 2, x2: ax + aw, y2: ay + ah / 2, h: true };
  if (by >= ay + ah) return { x1: bx + bw / 2, y1: by, x2: ax + aw / 2, y2: ay + ah, h: false };
  return { x1: bx + bw / 2, y1: by + bh, x2: ax + aw / 2, y2: ay, h: false };
}

/** A node's box in the drawing's units. */
function boxOf(n) {
  return { x: num(n.x), y: num(n.y), w: Math.max(40, num(n.w, 160)), h: Math.max(24, num(n.h, 48)) };
}

/**
 * Sets up an empty drawing: its elements are made as they first come in view
 * (`materialize`, from `applyViewBox`), so a chain of a hundred and more events builds and
 * lays out only what is on screen.
 */
function drawGraph(rootIdx) {
  clear(graphHost);
  const W = Math.max(100, num(graph.width, 800));
  const H = Math.max(100, num(graph.height, 600));
  svgEl = svg('svg', { class: 'why-svg', role: 'img', 'aria-label': 'Causal graph' });
  const defs = svg('defs');
  for (const link of ['cause', 'recalled', 'evidence', 'active']) {
    const m = svg('marker', { id: `arrow-${link}`, viewBox: '0 0 10 10', refX: '9', refY: '5', markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' });
    m.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', class: `arrowhead arrow-${link}` }));
    defs.append(m);
  }
  svgEl.append(defs);
  viewport = svg('g', { class: 'why-viewport' });
  edgeLayer = svg('g', { class: 'why-edges' });
  labelLayer = svg('g', { class: 'why-edge-labels' });
  nodeLayer = svg('g', { class: 'why-nodes' });
  viewport.append(edgeLayer, nodeLayer, labelLayer);
  svgEl.append(viewport);
  // One listener for every box.
  const nodeOf = (e) => {
    const g = e.target instanceof Element ? e.target.closest('.why-node') : null;
    const i = g ? Number(g.dataset.index) : -1;
    return Number.isInteger(i) && nodes[i] ? i : -1;
  };
  nodeLayer.addEventListener('click', (e) => {
    const i = nodeOf(e);
    if (i < 0 || (panState && panState.moved)) return;
    e.stopPropagation();
    select(i, { center: false });
  });
  nodeLayer.addEventListener('keydown', (e) => {
    const i = nodeOf(e);
    if (i >= 0 && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); e.stopPropagation(); select(i, { center: false }); }
  });
  graphHost.append(svgEl);
  vbFull = { x: -20, y: -20, w: W + 40, h: H + 40 };
  rootDrawn = rootIdx;
  nodeEls = new Array(nodes.length).fill(null);
  edgeEls = new Array(edges.length).fill(null);
}

/** Makes the boxes and links in view (and a margin around it) that are not made yet. */
function materialize() {
  if (!svgEl || nodeEls.length !== nodes.length) return;
  const mx = vb.w * 0.25;
  const my = vb.h * 0.25;
  const [x0, x1, y0, y1] = [vb.x - mx, vb.x + vb.w + mx, vb.y - my, vb.y + vb.h + my];
  const inView = (x, y, w, h) => !(x + w < x0 || x > x1 || y + h < y0 || y > y1);
  for (let k = 0; k < edges.length; k++) {
    if (edgeEls[k]) continue;
    const p = anchors(nodes[edges[k].a], nodes[edges[k].b]);
    if (inView(Math.min(p.x1, p.x2), Math.min(p.y1, p.y2), Math.abs(p.x2 - p.x1), Math.abs(p.y2 - p.y1))) edgeEls[k] = makeEdge(k, p);
  }
  for (let i = 0; i < nodes.length; i++) {
    if (nodeEls[i]) continue;
    const b = boxOf(nodes[i]);
    if (inView(b.x, b.y, b.w, b.h)) nodeEls[i] = makeNode(i, b);
  }
}

function makeEdge(k, p) {
  const e = edges[k];
  const dx = p.h ? Math.abs(p.x2 - p.x1) : Math.abs(p.y2 - p.y1);
  const c = Math.max(24, dx * 0.45);
  const c1 = p.h ? [p.x1 + Math.sign(p.x2 - p.x1) * c, p.y1] : [p.x1, p.y1 + Math.sign(p.y2 - p.y1) * c];
  const c2 = p.h ? [p.x2 - Math.sign(p.x2 - p.x1) * c, p.y2] : [p.x2, p.y2 - Math.sign(p.y2 - p.y1) * c];
  const link = ['cause', 'recalled', 'evidence'].includes(e.link) ? e.link : 'cause';
  const touches = selected !== null && (e.a === selected || e.b === selected);
  const path = svg('path', {
    d: `M${p.x1},${p.y1} C${c1[0]},${c1[1]} ${c2[0]},${c2[1]} ${p.x2},${p.y2}`,
    class: `why-edge edge-${link}${touches ? ' active' : ''}`,
    'marker-end': `url(#arrow-${link})`,
  });
  const tip = link === 'recalled'
    ? `recalled: score ${fmtScore(e.score)} = recency ${fmtScore(e.recency)}, importance ${fmtScore(e.importance)}, relevance ${fmtScore(e.relevance)}`
    : link === 'evidence' ? 'evidence cited by a reflection' : 'recorded cause';
  path.append(svg('title', { text: tip }));
  edgeLayer.append(path);
  let label = null;
  if (link === 'recalled' && Number.isFinite(Number(e.score))) {
    // The bezier's midpoint.
    const mx = 0.125 * p.x1 + 0.375 * c1[0] + 0.375 * c2[0] + 0.125 * p.x2;
    const my = 0.125 * p.y1 + 0.375 * c1[1] + 0.375 * c2[1] + 0.125 * p.y2;
    label = svg('text', { x: mx, y: my - 3, class: `edge-label${touches ? ' active' : ''}`, 'text-anchor': 'middle', text: fmtScore(Number(e.score)) });
    label.append(svg('title', { text: tip }));
    labelLayer.append(label);
  }
  return { path, label, link };
}

function makeNode(i, b) {
  const n = nodes[i];
  const cat = category(n);
  const cls = `why-node cat-${cat}${i === rootDrawn ? ' root' : ''}${i === selected ? ' selected' : ''}`;
  const g = svg('g', { class: cls, transform: `translate(${b.x},${b.y})`, tabindex: '0', role: 'button', 'aria-label': `${CATEGORIES[cat]} #${n.seq}`, 'data-kind': String(n.kind), 'data-index': String(i) });
  g.append(svg('rect', { width: b.w, height: b.h, rx: 6, ry: 6, class: 'node-box' }));
  g.append(svg('rect', { width: 4, height: b.h - 8, x: 0, y: 4, rx: 2, class: 'node-stripe' }));
  // The words as HTML inside the box: WebKit lays out SVG text glyph by glyph, which made
  // a graph of forty nodes take a quarter of a second; HTML text is laid out a line at a time.
  const fo = svg('foreignObject', { x: 8, y: 3, width: Math.max(10, b.w - 12), height: Math.max(10, b.h - 6) });
  fo.append(el('div', { class: 'node-html' },
    el('div', { class: 'node-kind-h', text: `${CATEGORIES[cat]} · #${n.seq}` }),
    untrusted(truncate(String(n.summary || ''), BOX_CHARS), 'node-summary-h')));
  g.append(fo, svg('title', { text: `${n.kind} #${n.seq} ${n.time}\n${n.summary}` }));
  nodeLayer.append(g);
  return g;
}

/** The whole graph if it is readable at that size, else a readable zoom on the action. */
function initialView(rootIdx) {
  const vw = Math.max(200, hostW);
  const vh = Math.max(120, hostH);
  const fitScale = Math.min(vw / vbFull.w, vh / vbFull.h);
  const n = nodes[rootIdx];
  if (fitScale >= 0.6 || !n) {
    fitView();
    return;
  }
  const s = 1;
  const w = vw / s;
  const h = vh / s;
  const cyRoot = num(n.y) + num(n.h, 48) / 2;
  vb = { x: Math.max(vbFull.x, num(n.x) - 20), y: Math.max(vbFull.y, cyRoot - h / 3), w, h };
  fitted = false;
  applyViewBox();
}


function applyViewBox() {
  if (!svgEl) return;
  svgEl.setAttribute('viewBox', `${vb.x} ${vb.y} ${vb.w} ${vb.h}`);
  if (hostW > 0 && hostH > 0) ppu = Math.min(hostW / vb.w, hostH / vb.h);
  materialize();
}

function fitView() {
  vb = { ...vbFull };
  fitted = true;
  applyViewBox();
}

function svgPoint(clientX, clientY) {
  const ctm = svgEl.getScreenCTM();
  if (!ctm) return { x: vb.x + vb.w / 2, y: vb.y + vb.h / 2 };
  const p = new DOMPoint(clientX, clientY).matrixTransform(ctm.inverse());
  return { x: p.x, y: p.y };
}

function zoomBy(f, clientX, clientY) {
  if (!svgEl) return;
  const rect = svgEl.getBoundingClientRect();
  const pt = svgPoint(clientX ?? rect.left + rect.width / 2, clientY ?? rect.top + rect.height / 2);
  const nw = Math.min(vbFull.w * 4, Math.max(60, vb.w * f));
  const g = nw / vb.w;
  vb = { x: pt.x - (pt.x - vb.x) * g, y: pt.y - (pt.y - vb.y) * g, w: vb.w * g, h: vb.h * g };
  fitted = false;
  applyViewBox();
}


function wirePanZoom() {
  // A resized panel keeps the graph's scale and top-left corner (or stays fitted).
  new ResizeObserver((entries) => {
    const box = entries[entries.length - 1].contentRect;
    hostW = box.width;
    hostH = box.height;
    if (!svgEl || hostW <= 0 || hostH <= 0) return;
    if (fitted) { fitView(); return; }
    vb = { ...vb, w: hostW / ppu, h: hostH / ppu };
    applyViewBox();
  }).observe(graphHost);
  graphHost.addEventListener('wheel', (e) => {
    if (!svgEl) return;
    e.preventDefault();
    const d = e.deltaY * (e.deltaMode === 1 ? 33 : 1);
    zoomBy(Math.exp(Math.max(-0.5, Math.min(0.5, d * 0.0022))), e.clientX, e.clientY);
  }, { passive: false });
  graphHost.addEventListener('pointerdown', (e) => {
    if (!svgEl || e.button !== 0) return;
    const ctm = svgEl.getScreenCTM();
    panState = { x: e.clientX, y: e.clientY, vb: { ...vb }, moved: false, scale: ctm ? ctm.a : 1, id: e.pointerId };
  });
  graphHost.addEventListener('pointermove', (e) => {
    if (!panState || e.pointerId !== panState.id) return;
    const dx = e.clientX - panState.x;
    const dy = e.clientY - panState.y;
    if (!panState.moved && Math.hypot(dx, dy) > 4) {
      panState.moved = true;
      graphHost.setPointerCapture(e.pointerId);
      graphHost.classList.add('dragging');
    }
    if (panState.moved) {
      vb = { ...panState.vb, x: panState.vb.x - dx / panState.scale, y: panState.vb.y - dy / panState.scale };
      fitted = false;
      applyViewBox();
    }
  });
  const endPan = (e) => {
    if (!panState || e.pointerId !== panState.id) return;
    graphHost.classList.remove('dragging');
    if (graphHost.hasPointerCapture(e.pointerId)) graphHost.releasePointerCapture(e.pointerId);
    const moved = panState.moved;
    // Let the click that follows a drag see that it was a drag, then forget.
    setTimeout(() => { if (panState && panState.moved === moved) panState = null; }, 0);
  };
  graphHost.addEventListener('pointerup', endPan);
  graphHost.addEventListener('pointercancel', endPan);
  graphHost.addEventListener('keydown', (e) => {
    if (!svgEl) return;
    const step = vb.w * 0.1;
    const keys = {
      '+': () => zoomBy(1 / 1.25), '=': () => zoomBy(1 / 1.25), '-': () => zoomBy(1.25), '0': () => fitView(),
      ArrowLeft: () => { vb.x -= step; applyViewBox(); }, ArrowRight: () => { vb.x += step; applyViewBox(); },
      ArrowUp: () => { vb.y -= step; applyViewBox(); }, ArrowDown: () => { vb.y += step; applyViewBox(); },
    };
    const fn = keys[e.key];
    if (fn && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      e.stopPropagation();
      if (e.key !== '0') fitted = false;
      fn();
    }
  });
}

function centerOn(i) {
  const n = nodes[i];
  if (!n) return;
  const x = num(n.x) + num(n.w, 160) / 2;
  const y = num(n.y) + num(n.h, 48) / 2;
  if (x < vb.x || x > vb.x + vb.w || y < vb.y || y > vb.y + vb.h) {
    vb = { ...vb, x: x - vb.w / 2, y: y - vb.h / 2 };
    fitted = false;
    applyViewBox();
  }
}

// ---------------------------------------------------------------- tree

function drawTree(rootIdx) {
  clear(treeHost);
  const tree = Array.isArray(graph.tree) ? graph.tree : [];
  const rows = tree.length ? tree : nodes.map((_, i) => ({ node: i, depth: i === rootIdx ? 0 : 1 }));
  const stack = [];
  for (const t of rows) {
    const i = resolveNode(t.node);
    if (i < 0) continue;
    const depth = Math.max(0, Math.min(40, num(t.depth)));
    stack.length = depth;
    const parent = depth > 0 ? stack[depth - 1] : undefined;
    stack[depth] = i;
    const e = parent !== undefined ? edges.find((x) => x.a === parent && x.b === i) : null;
    const n = nodes[i];
    const cat = category(n);
    const link = typeof t.link === 'string' && t.link ? t.link : e ? e.link : '';
    const how = link === 'recalled' ? `recalled${e ? ` ${fmtScore(Number(e.score))}` : ''}` : link === 'evidence' ? 'evidence' : '';
    const row = el('button', {
      type: 'button', class: `tree-row cat-${cat}`, title: `${n.kind} — click for its detail`,
      attrs: { role: 'treeitem', 'aria-level': String(depth + 1) },
      dataset: { node: String(i) },
      on: { click: () => select(i, { center: true }) },
    },
    el('span', { class: 'swatch' }),
    how ? el('span', { class: 'tree-how', text: how }) : null,
    el('span', { class: 'tree-seq', text: `#${n.seq}` }),
    el('span', { class: 'tree-time dim', text: String(n.time || '').replace(/^day \d+ /, '') }),
    untrusted(n.summary, 'tree-summary'),
    t.again ? el('span', { class: 'dim tree-again', text: '(see above)' }) : null);
    row.style.paddingLeft = `${8 + depth * 16}px`;
    treeHost.append(row);
  }
  if (graph.truncated) treeHost.append(el('div', { class: 'dim small tree-more', text: '… more causes not shown' }));
}

// ---------------------------------------------------------------- detail

function select(i, { center }) {
  selected = i;
  nodeEls.forEach((g, k) => { if (g) g.classList.toggle('selected', k === i); });
  edgeEls.forEach((x, k) => {
    if (!x) return;
    const touches = edges[k].a === i || edges[k].b === i;
    x.path.classList.toggle('active', touches);
    if (x.label) x.label.classList.toggle('active', touches);
  });
  markTreeRow(i);
  if (center && mode === 'graph') centerOn(i);
  renderDetail(nodes[i]);
}

function markTreeRow(i) {
  for (const row of treeHost.children) if (row.dataset) row.classList.toggle('selected', row.dataset.node === String(i));
}

function linkList(title, list) {
  if (!list.length) return null;
  return el('div', { class: 'links' },
    el('div', { class: 'links-title dim', text: title }),
    ...list.slice(0, 40).map(({ e, other }) => {
      const n = nodes[other];
      const how = e.link === 'recalled' ? `recalled ${fmtScore(Number(e.score))} · ` : e.link === 'evidence' ? 'evidence · ' : '';
      return el('button', { type: 'button', class: `link-row cat-${category(n)}`, title: 'Show this event', on: { click: () => select(other, { center: true }) } },
        el('span', { class: 'swatch' }), el('span', { class: 'dim', text: `${how}#${n.seq} ` }), untrusted(truncate(n.summary, 120)));
    }),
    list.length > 40 ? el('div', { class: 'dim small', text: `… and ${list.length - 40} more` }) : null);
}

function renderDetail(n) {
  detailHost.hidden = false;
  const cat = category(n);
  const isCall = n.kind === 'LlmRequested' || n.kind === 'LlmResponded' || n.kind === 'LlmFailed';
  const i = nodes.indexOf(n);
  const causes = edges.filter((e) => e.a === i).map((e) => ({ e, other: e.b }));
  const ledTo = edges.filter((e) => e.b === i).map((e) => ({ e, other: e.a }));
  setChildren(detailHost,
    el('div', { class: 'detail-head' },
      el('span', { class: `chip cat-${cat}` }, el('span', { class: 'swatch' }), CATEGORIES[cat]),
      el('span', { class: 'mono', text: `${n.kind} #${n.seq}` }),
      el('span', { class: 'dim', text: n.time }),
      el('span', { class: 'spacer' }),
      el('button', { type: 'button', class: 'btn btn-small', text: 'go to moment', title: `Show the town at #${n.seq}`, on: { click: () => emit('seek-seq', n.seq) } }),
      el('button', { type: 'button', class: 'btn btn-small', text: 'why this?', title: 'Trace the causes of this event', on: { click: () => openWhy({ event: n.id }, performance.now()) } }),
      isCall ? el('button', { type: 'button', class: 'btn btn-small btn-accent', text: 'inspect call', title: 'Open this model call in the call inspector', on: { click: () => emit('inspect-call', n) } }) : null),
    el('div', { class: 'detail-id mono dim', text: n.id }),
    el('p', { class: 'prose' }, untrusted(n.summary)),
    n.detail !== null && n.detail !== undefined ? el('pre', { class: 'detail-pre u', text: n.detail, attrs: { dir: 'auto' } }) : null,
    linkList('Caused by', causes),
    linkList('Led to', ledTo));
}

/** For tests: what the why view shows. */
export function whyState() {
  return {
    nodes: nodes.length,
    edges: edges.length,
    drawnNodes: svgEl ? svgEl.querySelectorAll('.why-node').length : 0,
    selected: selected === null ? null : nodes[selected] && nodes[selected].id,
    mode,
  };
}
