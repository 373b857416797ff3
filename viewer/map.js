// The town map: canvas drawing (static layer cached per zoom), agents, trails, bubbles, pan/zoom, hover and picking.

import { app, emit, on } from './state.js';
import { addPainter, wake } from './seek.js';
import { iconShown, iconNode, EMOJI_FONTS } from './glyphs.js';
import { el, hueOf, truncate, setChildren, untrusted, atPlace, notice, clear } from './dom.js';

const WALL = '#394050';
const GROUND = '#ebe6d8';
const UI_FONT = 'system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif';

/** Floor colours by sector kind, as HSL. */
const KIND_HSL = {
  home: [34, 62, 84],
  cafe: [16, 70, 83],
  market: [92, 42, 80],
  office: [210, 48, 85],
  store: [282, 32, 86],
  college: [248, 42, 87],
  dorm: [336, 48, 87],
  park: [104, 42, 74],
  bar: [27, 52, 77],
};

const MIN_LEVEL = 4; // 2 px per tile
const MAX_LEVEL = 26; // ~90 px per tile
const CACHE_PIXELS = 16e6;
const CACHE_SIDE = 8192;

let host = null;
let canvas = null;
let ctx = null;
let tooltip = null;
let overlay = null;
let W = 0;
let H = 0;
let dpr = 1;
let level = 12;
let scale = 8;
let cx = 0;
let cy = 0;
let dirty = true;
let userMoved = false;
let view = null; // the MapView with derived lookups
const caches = new Map(); // level → cache
let hover = null;
let placed = [];
let drag = null;
let wheelAcc = 0;
let outside = '#1b1e25';

const levelScale = (l) => 2 ** (l / 4);

export function markDirty() {
  dirty = true;
  wake();
}

export function mapCanvas() {
  return canvas;
}

export function initMap(root) {
  host = root;
  canvas = el('canvas', {
    class: 'map-canvas',
    tabIndex: 0,
    attrs: {
      role: 'application',
      'aria-label': 'Town map. Drag to pan, wheel to zoom, click an agent to select it. Keys: + and − zoom, 0 fits, WASD (or Shift+arrows while the map has focus) pan.',
    },
  });
  tooltip = el('div', { class: 'map-tooltip', hidden: true, attrs: { role: 'tooltip' } });
  overlay = el('div', { class: 'map-overlay' });
  host.append(canvas, tooltip, overlay);
  ctx = canvas.getContext('2d', { alpha: false });

  const ro = new ResizeObserver(() => resize());
  ro.observe(host);
  watchDpr();

  canvas.addEventListener('pointerdown', onPointerDown);
  canvas.addEventListener('pointermove', onPointerMove);
  canvas.addEventListener('pointerup', onPointerUp);
  canvas.addEventListener('pointercancel', () => { drag = null; canvas.classList.remove('dragging'); });
  canvas.addEventListener('pointerleave', () => { if (!drag) setHover(null); });
  canvas.addEventListener('wheel', onWheel, { passive: false });

  const readTheme = () => {
    outside = getComputedStyle(document.documentElement).getPropertyValue('--map-outside').trim() || '#1b1e25';
    markDirty();
  };
  readTheme();
  matchMedia('(prefers-color-scheme: light)').addEventListener('change', readTheme);

  addPainter({ dirty: () => dirty, draw });
  on('frame', () => { refreshHoverTooltip(); markDirty(); });
  on('selected', markDirty);
  on('settings', markDirty);
  showOverlay(null);
}

function watchDpr() {
  const mq = matchMedia(`(resolution: ${window.devicePixelRatio}dppx)`);
  mq.addEventListener('change', () => { resize(); watchDpr(); }, { once: true });
}

function resize() {
  if (!host) return;
  const rect = host.getBoundingClientRect();
  const newDpr = window.devicePixelRatio || 1;
  if (newDpr !== dpr) caches.clear();
  dpr = newDpr;
  W = Math.max(1, Math.round(rect.width));
  H = Math.max(1, Math.round(rect.height));
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  if (view && !userMoved) fit(false);
  markDirty();
}

// ---------------------------------------------------------------- the map data

/** Checks and indexes a MapView; throws with a readable message if it does not hold. */
function prepare(m) {
  const width = Number(m && m.width);
  const height = Number(m && m.height);
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0 || width > 4096 || height > 4096) {
    throw new Error('map: its width and height are not usable');
  }
  const cells = Array.isArray(m.cells) ? m.cells : [];
  if (cells.length !== width * height) {
    throw new Error(`map: ${cells.length} cells for a ${width}×${height} grid`);
  }
  const arenas = Array.isArray(m.arenas) ? m.arenas : [];
  const sectors = Array.isArray(m.sectors) ? m.sectors : [];
  const objects = Array.isArray(m.objects) ? m.objects : [];
  const arenaColour = arenas.map((a, i) => {
    const base = KIND_HSL[a.kind] || [hueOf(a.kind || a.sector || i), 35, 84];
    const l = base[2] + ((i % 3) - 1) * 2.5;
    return `hsl(${base[0]} ${base[1]}% ${l}%)`;
  });
  const byAddress = new Map();
  const byTile = new Map();
  for (const o of objects) {
    if (!Array.isArray(o.tile)) continue;
    byAddress.set(o.address, o);
    const k = `${o.tile[0]},${o.tile[1]}`;
    if (!byTile.has(k)) byTile.set(k, []);
    byTile.get(k).push(o);
  }
  const kindBySector = new Map(sectors.map((s) => [s.name, s.kind]));
  return { ...m, width, height, cells, arenas, sectors, objects, arenaColour, byAddress, byTile, kindBySector };
}

export function setMap(m) {
  caches.clear();
  hover = null;
  tooltip.hidden = true;
  try {
    view = prepare(m);
  } catch (err) {
    view = null;
    showOverlay(notice(err.message, 'error'));
    markDirty();
    return;
  }
  showOverlay(null);
  userMoved = false;
  fit(false);
  markDirty();
}

export function clearMap(message = null) {
  view = null;
  caches.clear();
  hover = null;
  if (tooltip) tooltip.hidden = true;
  showOverlay(message ? notice(message, 'empty') : null);
  markDirty();
}

export function mapError(message) {
  view = null;
  caches.clear();
  showOverlay(notice(message, 'error', 'The map could not be loaded; the rest of the window still works.'));
  markDirty();
}

function showOverlay(node) {
  if (!overlay) return;
  clear(overlay);
  overlay.hidden = !node;
  if (node) overlay.append(node);
}

// ---------------------------------------------------------------- camera

function setLevel(l) {
  level = Math.min(MAX_LEVEL, Math.max(MIN_LEVEL, l));
  scale = levelScale(level);
}

function clampCentre() {
  if (!view) return;
  cx = Math.min(view.width, Math.max(0, cx));
  cy = Math.min(view.height, Math.max(0, cy));
}

export function fit(user = true) {
  if (!view) return;
  const s = Math.min((W - 24) / view.width, (H - 24) / view.height);
  setLevel(Math.floor(4 * Math.log2(Math.max(0.5, s))));
  cx = view.width / 2;
  cy = view.height / 2;
  if (user) userMoved = false;
  markDirty();
}

function zoomAt(newLevel, sx, sy) {
  if (!view) return;
  const before = toTile(sx, sy);
  setLevel(newLevel);
  cx = before.x - (sx - W / 2) / scale;
  cy = before.y - (sy - H / 2) / scale;
  clampCentre();
  userMoved = true;
  markDirty();
}

export function zoomIn() { zoomAt(level + 2, W / 2, H / 2); }
export function zoomOut() { zoomAt(level - 2, W / 2, H / 2); }

/** Pans by a fraction of the view (dx, dy in -1..1). */
export function panBy(dx, dy) {
  if (!view) return;
  cx += (dx * W * 0.15) / scale;
  cy += (dy * H * 0.15) / scale;
  clampCentre();
  userMoved = true;
  markDirty();
}

/** Brings a tile into view if it is outside. */
export function reveal(tile) {
  if (!view || !Array.isArray(tile)) return;
  const p = toScreen(tile[0] + 0.5, tile[1] + 0.5);
  if (p.x < 40 || p.y < 40 || p.x > W - 40 || p.y > H - 40) {
    cx = tile[0] + 0.5;
    cy = tile[1] + 0.5;
    clampCentre();
    userMoved = true;
    markDirty();
  }
}

function toTile(sx, sy) {
  return { x: cx + (sx - W / 2) / scale, y: cy + (sy - H / 2) / scale };
}

function toScreen(tx, ty) {
  return { x: (tx - cx) * scale + W / 2, y: (ty - cy) * scale + H / 2 };
}

// ---------------------------------------------------------------- the static layer

function colourOf(v) {
  if (v === 0) return WALL;
  if (v === 1) return GROUND;
  return view.arenaColour[v - 2] || '#d8d8d8';
}

/** The tiles on screen, as a rectangle clipped to the map. */
function visibleTiles() {
  const a = toTile(0, 0);
  const b = toTile(W, H);
  return {
    x0: Math.max(0, Math.floor(a.x)), y0: Math.max(0, Math.floor(a.y)),
    x1: Math.min(view.width, Math.ceil(b.x)), y1: Math.min(view.height, Math.ceil(b.y)),
  };
}

function ensureCache() {
  const s = scale * dpr;
  const whole = view.width * s * view.height * s <= CACHE_PIXELS && view.width * s <= CACHE_SIDE && view.height * s <= CACHE_SIDE;
  let c = caches.get(level);
  if (c && c.dpr === dpr) {
    if (c.whole) return c;
    const v = visibleTiles();
    if (v.x0 >= c.x0 && v.y0 >= c.y0 && v.x1 <= c.x1 && v.y1 <= c.y1) return c;
  }
  let region;
  if (whole) {
    region = { x0: 0, y0: 0, x1: view.width, y1: view.height };
  } else {
    const v = visibleTiles();
    const mx = Math.ceil((v.x1 - v.x0) * 0.4) + 1;
    const my = Math.ceil((v.y1 - v.y0) * 0.4) + 1;
    region = {
      x0: Math.max(0, v.x0 - mx), y0: Math.max(0, v.y0 - my),
      x1: Math.min(view.width, v.x1 + mx), y1: Math.min(view.height, v.y1 + my),
    };
  }
  c = renderStatic(region, s);
  c.whole = whole;
  caches.set(level, c);
  if (caches.size > 4) caches.delete(caches.keys().next().value);
  return c;
}

function renderStatic(r, s) {
  const off = document.createElement('canvas');
  off.width = Math.max(1, Math.ceil((r.x1 - r.x0) * s));
  off.height = Math.max(1, Math.ceil((r.y1 - r.y0) * s));
  const g = off.getContext('2d');
  const px = (x) => Math.round((x - r.x0) * s);
  const py = (y) => Math.round((y - r.y0) * s);
  const { cells, width } = view;

  // Cells, a run of equal cells at a time.
  for (let y = r.y0; y < r.y1; y++) {
    let x = r.x0;
    while (x < r.x1) {
      const v = cells[y * width + x];
      let end = x + 1;
      while (end < r.x1 && cells[y * width + end] === v) end++;
      g.fillStyle = colourOf(v);
      g.fillRect(px(x), py(y), px(end) - px(x), py(y + 1) - py(y));
      x = end;
    }
  }

  // A faint grid when tiles are big enough to be told apart.
  if (scale >= 14) {
    g.strokeStyle = 'rgba(60,50,30,0.07)';
    g.lineWidth = 1;
    g.beginPath();
    for (let x = r.x0; x <= r.x1; x++) { g.moveTo(px(x) + 0.5, 0); g.lineTo(px(x) + 0.5, off.height); }
    for (let y = r.y0; y <= r.y1; y++) { g.moveTo(0, py(y) + 0.5); g.lineTo(off.width, py(y) + 0.5); }
    g.stroke();
  }

  // Edges between two different floors (rooms that meet at a door).
  g.strokeStyle = 'rgba(40,40,50,0.35)';
  g.lineWidth = Math.max(1, dpr);
  g.beginPath();
  for (let y = r.y0; y < r.y1; y++) {
    for (let x = r.x0; x < r.x1; x++) {
      const v = cells[y * width + x];
      if (v < 2) continue;
      if (x + 1 < width) {
        const w = cells[y * width + x + 1];
        if (w >= 2 && w !== v) { g.moveTo(px(x + 1), py(y)); g.lineTo(px(x + 1), py(y + 1)); }
      }
      if (y + 1 < view.height) {
        const w = cells[(y + 1) * width + x];
        if (w >= 2 && w !== v) { g.moveTo(px(x), py(y + 1)); g.lineTo(px(x + 1), py(y + 1)); }
      }
    }
  }
  g.stroke();

  // Objects as small squares.
  if (scale >= 5) {
    const size = Math.max(2 * dpr, s * 0.34);
    g.fillStyle = 'rgba(88,72,58,0.85)';
    g.strokeStyle = 'rgba(255,255,255,0.7)';
    g.lineWidth = Math.max(1, dpr * 0.75);
    for (const o of view.objects) {
      const [ox, oy] = o.tile;
      if (ox < r.x0 || oy < r.y0 || ox >= r.x1 || oy >= r.y1) continue;
      const x = (ox + 0.5 - r.x0) * s - size / 2;
      const y = (oy + 0.5 - r.y0) * s - size / 2;
      g.fillRect(x, y, size, size);
      if (scale >= 10) g.strokeRect(x, y, size, size);
    }
  }

  // Labels: sector names always, arena names once zoomed in enough; each cut to the width
  // of its place, and left out where it would cover one already written.
  g.textAlign = 'center';
  g.textBaseline = 'middle';
  g.lineJoin = 'round';
  const taken = [];
  const label = (text, tx, ty, maxW, font, fill, halo) => {
    g.font = font;
    const t = fitWidth(g, text, Math.max(24 * dpr, maxW));
    const w = g.measureText(t).width + 4 * dpr;
    const h = parseFloat(font.match(/([\d.]+)px/)[1]) * 1.25;
    const x = (tx + 0.5 - r.x0) * s;
    const y = (ty + 0.5 - r.y0) * s;
    const box = { x0: x - w / 2, x1: x + w / 2, y0: y - h / 2, y1: y + h / 2 };
    if (taken.some((b) => box.x0 < b.x1 && box.x1 > b.x0 && box.y0 < b.y1 && box.y1 > b.y0)) return;
    taken.push(box);
    g.lineWidth = 3 * dpr;
    g.strokeStyle = halo;
    g.strokeText(t, x, y);
    g.fillStyle = fill;
    g.fillText(t, x, y);
  };
  const sectorFont = `600 ${(scale >= 16 ? 13 : scale >= 8 ? 11.5 : 10) * dpr}px ${UI_FONT}`;
  for (const sct of view.sectors) {
    if (!Array.isArray(sct.label)) continue;
    // With arena names shown, the sector name moves to the top of its bounds.
    const lx = sct.label[0];
    let ly = sct.label[1];
    if (scale >= 16 && Array.isArray(sct.bounds)) ly = sct.bounds[1] - 0.15;
    const wTiles = Array.isArray(sct.bounds) ? sct.bounds[2] - sct.bounds[0] + 1 : 12;
    label(sct.name, lx, ly, wTiles * s, sectorFont, '#1d2230', 'rgba(255,255,255,0.85)');
  }
  if (scale >= 16) {
    for (const a of view.arenas) {
      if (!Array.isArray(a.label)) continue;
      label(a.arena, a.label[0], a.label[1], 8 * s, `italic ${10.5 * dpr}px ${UI_FONT}`, 'rgba(50,45,40,0.9)', 'rgba(255,255,255,0.75)');
    }
  }
  return { canvas: off, dpr, level, ...r };
}

// ---------------------------------------------------------------- drawing

function draw() {
  dirty = false;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.fillStyle = outside;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  placed = [];
  if (!view) return;
  const c = ensureCache();
  const o = toScreen(c.x0, c.y0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(c.canvas, Math.round(o.x * dpr), Math.round(o.y * dpr));
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const f = app.frame;
  if (!f) return;
  drawActiveObjects(f);
  const agents = Array.isArray(f.agents) ? f.agents : [];
  const r = Math.min(16, Math.max(7, scale * 0.42));
  placeAgents(agents, r);
  drawGhosts(agents, r);
  if (app.settings.show_paths) drawTrails(r);
  drawAgents(r);
  if (app.settings.show_bubbles) drawBubbles(f, r);
}

function drawActiveObjects(f) {
  if (!f.objects || typeof f.objects !== 'object' || scale < 4) return;
  const size = Math.max(5, scale * 0.5);
  ctx.lineWidth = 1.5;
  for (const address of Object.keys(f.objects)) {
    const o = view.byAddress.get(address);
    if (!o) continue;
    const p = toScreen(o.tile[0] + 0.5, o.tile[1] + 0.5);
    if (p.x < -size || p.y < -size || p.x > W + size || p.y > H + size) continue;
    ctx.fillStyle = '#f0a030';
    ctx.strokeStyle = '#7a4a00';
    ctx.fillRect(p.x - size / 2, p.y - size / 2, size, size);
    ctx.strokeRect(p.x - size / 2, p.y - size / 2, size, size);
  }
}

function placeAgents(agents, r) {
  const byTile = new Map();
  for (const a of agents) {
    if (!Array.isArray(a.tile)) continue;
    const k = `${a.tile[0]},${a.tile[1]}`;
    if (!byTile.has(k)) byTile.set(k, []);
    byTile.get(k).push(a);
  }
  for (const group of byTile.values()) {
    const n = group.length;
    group.forEach((a, i) => {
      const p = toScreen(a.tile[0] + 0.5, a.tile[1] + 0.5);
      if (n > 1) {
        const ang = (i / n) * Math.PI * 2 - Math.PI / 2;
        const d = r * (n > 4 ? 1.3 : 0.95);
        p.x += Math.cos(ang) * d;
        p.y += Math.sin(ang) * d;
      }
      placed.push({ agent: a, x: p.x, y: p.y, r });
    });
  }
  // The selected agent is drawn last, on top.
  placed.sort((a, b) => (a.agent.id === app.selected) - (b.agent.id === app.selected));
}

/** Another branch's agents at the same moment (Compare's overlay), where they are not where
 * this branch has them: a dashed ring with initials, and a thin line from this branch's agent. */
let ghost = null;
let ghostsDrawn = [];

export function setGhosts(frame, label) {
  ghost = frame && Array.isArray(frame.agents) ? { frame, label: label || '' } : null;
  markDirty();
}

function drawGhosts(agents, r) {
  ghostsDrawn = [];
  if (!ghost) return;
  const here = new Map(agents.map((a) => [a.id, a]));
  ctx.save();
  ctx.lineWidth = 1.5;
  ctx.font = `600 ${Math.max(8, Math.round(r * 0.8))}px ${UI_FONT}`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  for (const g of ghost.frame.agents) {
    if (!Array.isArray(g.tile)) continue;
    const a = here.get(g.id);
    if (a && Array.isArray(a.tile) && a.tile[0] === g.tile[0] && a.tile[1] === g.tile[1]) continue;
    const p = toScreen(g.tile[0] + 0.5, g.tile[1] + 0.5);
    ghostsDrawn.push({ id: g.id, tile: g.tile });
    if (a && Array.isArray(a.tile)) {
      const q = toScreen(a.tile[0] + 0.5, a.tile[1] + 0.5);
      ctx.strokeStyle = 'rgba(180, 120, 255, 0.55)';
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(q.x, q.y);
      ctx.lineTo(p.x, p.y);
      ctx.stroke();
    }
    ctx.setLineDash([4, 3]);
    ctx.fillStyle = 'rgba(180, 120, 255, 0.22)';
    ctx.strokeStyle = 'rgba(150, 90, 240, 0.95)';
    ctx.beginPath();
    ctx.arc(p.x, p.y, r, 0, Math.PI * 2);
    ctx.fill();
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = 'rgba(90, 40, 170, 0.95)';
    ctx.fillText(g.initials || initialsOf(g.name), p.x, p.y);
  }
  ctx.restore();
}

function drawTrails(r) {
  ctx.lineCap = 'round';
  ctx.lineJoin = 'round';
  const lw = Math.max(2, Math.min(6, scale * 0.16));
  for (const { agent, x, y } of placed) {
    const trail = Array.isArray(agent.trail) ? agent.trail.filter((t) => Array.isArray(t)) : [];
    if (trail.length === 0) continue;
    const pts = trail.map((t) => toScreen(t[0] + 0.5, t[1] + 0.5));
    pts.push({ x, y });
    const hue = hueOf(agent.id);
    for (let i = 1; i < pts.length; i++) {
      // Trails are one-tile moves: a longer jump is not a walk, so it is not drawn as one.
      if (Math.abs(pts[i].x - pts[i - 1].x) + Math.abs(pts[i].y - pts[i - 1].y) > scale * 3 + r * 3) continue;
      const alpha = 0.12 + (0.5 * i) / pts.length;
      ctx.strokeStyle = `hsla(${hue} 70% 38% / ${alpha})`;
      ctx.lineWidth = lw;
      ctx.beginPath();
      ctx.moveTo(pts[i - 1].x, pts[i - 1].y);
      ctx.lineTo(pts[i].x, pts[i].y);
      ctx.stroke();
    }
    ctx.fillStyle = `hsla(${hue} 70% 38% / 0.25)`;
    for (let i = 0; i < pts.length - 1; i++) {
      ctx.beginPath();
      ctx.arc(pts[i].x, pts[i].y, lw * 0.8, 0, Math.PI * 2);
      ctx.fill();
    }
  }
}

/** Agents drawn once each, as images: keyed by everything that shows. */
const sprites = new Map();

/** An agent's marker (halo, disc, initials, talk dot, emoji above, name below) as an image. */
function spriteOf(agent, r, selected, hovered, talking, showName) {
  const initials = truncate(agent.initials || initialsOf(agent.name), 3);
  // The action's icon, or its word where no font here draws it.
  const shown = agent.emoji ? iconShown(truncate(agent.emoji, 4)) : null;
  const emoji = shown && shown.emoji ? shown.emoji : '';
  const word = shown && shown.word ? shown.word : '';
  const name = showName ? truncate(agent.name, 24) : '';
  const key = [agent.id, initials, emoji, word, name, r, dpr, selected, hovered, talking].join('\u0000');
  const known = sprites.get(key);
  if (known) return known;
  if (sprites.size > 1000) sprites.clear();
  const pad = 6;
  const wordPx = Math.max(8, Math.round(r * 0.75));
  const emojiH = emoji ? Math.round(r * 1.15) + 2 : word ? wordPx + 6 : 0;
  ctx.font = `600 11px ${UI_FONT}`;
  const nameW = name ? ctx.measureText(name).width + 8 : 0;
  ctx.font = `600 ${wordPx}px ${UI_FONT}`;
  const wordW = word ? ctx.measureText(word).width + 10 : 0;
  const w = Math.ceil(Math.max(2 * (r + pad), nameW, wordW));
  const h = Math.ceil(emojiH + 2 * (r + pad) + (name ? 18 : 0));
  const canvasEl = document.createElement('canvas');
  canvasEl.width = Math.max(1, Math.ceil(w * dpr));
  canvasEl.height = Math.max(1, Math.ceil(h * dpr));
  const g = canvasEl.getContext('2d');
  g.scale(dpr, dpr);
  const x = w / 2;
  const y = emojiH + r + pad;
  const hue = hueOf(agent.id);
  g.textAlign = 'center';
  g.textBaseline = 'middle';
  if (selected) {
    g.beginPath();
    g.arc(x, y, r + 5, 0, Math.PI * 2);
    g.fillStyle = 'rgba(255,200,40,0.35)';
    g.fill();
    g.lineWidth = 3;
    g.strokeStyle = '#ffb000';
    g.stroke();
  }
  g.beginPath();
  g.arc(x, y + 1.5, r, 0, Math.PI * 2);
  g.fillStyle = 'rgba(0,0,0,0.25)';
  g.fill();
  g.beginPath();
  g.arc(x, y, r, 0, Math.PI * 2);
  g.fillStyle = `hsl(${hue} 55% 42%)`;
  g.fill();
  g.lineWidth = hovered ? 3 : 1.5;
  g.strokeStyle = hovered ? '#ffffff' : 'rgba(255,255,255,0.9)';
  g.stroke();
  if (talking) {
    g.beginPath();
    g.arc(x + r * 0.75, y - r * 0.75, Math.max(2.5, r * 0.28), 0, Math.PI * 2);
    g.fillStyle = '#3fa7ff';
    g.fill();
    g.lineWidth = 1;
    g.strokeStyle = '#fff';
    g.stroke();
  }
  g.fillStyle = '#fff';
  g.font = `700 ${Math.round(r * (initials.length > 2 ? 0.72 : 0.88))}px ${UI_FONT}`;
  g.fillText(initials, x, y + 0.5);
  if (emoji) {
    g.font = `${Math.round(r * 1.15)}px ${EMOJI_FONTS}`;
    g.textBaseline = 'bottom';
    g.fillText(emoji, x, y - r - 1);
    g.textBaseline = 'middle';
  } else if (word) {
    // A small tag with the icon's word, where no font draws the emoji.
    const tw = wordW - 4;
    const th = wordPx + 4;
    const top = y - r - 2 - th;
    roundRect(x - tw / 2, top, tw, th, th / 2, g);
    g.fillStyle = 'rgba(255,255,255,0.92)';
    g.fill();
    g.lineWidth = 1;
    g.strokeStyle = 'rgba(29,34,48,0.35)';
    g.stroke();
    g.fillStyle = '#1d2230';
    g.font = `600 ${wordPx}px ${UI_FONT}`;
    g.fillText(word, x, top + th / 2 + 0.5);
  }
  if (name) {
    g.font = `600 11px ${UI_FONT}`;
    g.lineWidth = 3;
    g.strokeStyle = 'rgba(255,255,255,0.9)';
    g.textBaseline = 'top';
    g.strokeText(name, x, y + r + 3);
    g.fillStyle = '#1d2230';
    g.fillText(name, x, y + r + 3);
  }
  const sprite = { canvas: canvasEl, x, y, w, h };
  sprites.set(key, sprite);
  return sprite;
}

function drawAgents(r) {
  for (const p of placed) {
    const { agent, x, y } = p;
    if (x < -40 || y < -40 || x > W + 40 || y > H + 40) continue;
    const selected = agent.id === app.selected;
    const hovered = !!(hover && hover.kind === 'agent' && hover.agent.id === agent.id);
    const talking = Array.isArray(agent.talking_with) && agent.talking_with.length > 0;
    const s = spriteOf(agent, r, selected, hovered, talking, scale >= 22 || selected);
    // On whole device pixels: the image is copied, not resampled.
    const left = Math.round((x - s.x) * dpr) / dpr;
    const top = Math.round((y - s.y) * dpr) / dpr;
    ctx.drawImage(s.canvas, left, top, s.w, s.h);
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
}

function initialsOf(name) {
  return String(name || '?').split(/\s+/).filter(Boolean).slice(0, 2).map((w) => Array.from(w)[0]).join('').toUpperCase();
}

function drawBubbles(f, r) {
  const bubbles = Array.isArray(f.bubbles) ? f.bubbles : [];
  if (!bubbles.length) return;
  const taken = [];
  ctx.font = `12px ${UI_FONT}`;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  for (const b of bubbles) {
    if (!Array.isArray(b.tile)) continue;
    const speaker = placed.find((p) => p.agent.name === b.speaker && p.agent.tile[0] === b.tile[0] && p.agent.tile[1] === b.tile[1]);
    const anchor = speaker ? { x: speaker.x, y: speaker.y } : toScreen(b.tile[0] + 0.5, b.tile[1] + 0.5);
    if (anchor.x < -10 || anchor.x > W + 10 || anchor.y < -10 || anchor.y > H + 40) continue;
    const text = fitText(truncate(`${b.speaker}: ${b.text}`, 60), 340);
    const tw = ctx.measureText(text).width;
    const bw = tw + 16;
    const bh = 24;
    const bx = Math.min(W - bw - 4, Math.max(4, anchor.x - bw / 2));
    let by = anchor.y - r - bh - 22;
    for (let tries = 0; tries < 6; tries++) {
      const hit = taken.find((t) => bx < t.x + t.w && bx + bw > t.x && by < t.y + t.h && by + bh > t.y);
      if (!hit) break;
      by = hit.y - bh - 4;
    }
    by = Math.max(4, by);
    taken.push({ x: bx, y: by, w: bw, h: bh });
    // Tail then box.
    ctx.fillStyle = 'rgba(255,255,255,0.96)';
    ctx.strokeStyle = 'rgba(30,40,60,0.45)';
    ctx.lineWidth = 1;
    const tx = Math.min(bx + bw - 10, Math.max(bx + 10, anchor.x));
    ctx.beginPath();
    ctx.moveTo(tx - 6, by + bh - 1);
    ctx.lineTo(anchor.x, Math.min(anchor.y - r - 2, by + bh + 14));
    ctx.lineTo(tx + 6, by + bh - 1);
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
    roundRect(bx, by, bw, bh, 7);
    ctx.fill();
    ctx.stroke();
    ctx.fillRect(tx - 5.5, by + bh - 2, 11, 2.5);
    ctx.save();
    ctx.beginPath();
    ctx.rect(bx + 8, by, tw, bh);
    ctx.clip();
    ctx.fillStyle = '#1d2230';
    ctx.fillText(text, bx + 8, by + bh / 2 + 0.5);
    ctx.restore();
  }
  ctx.textAlign = 'center';
}

function fitText(text, max) {
  return fitWidth(ctx, text, max);
}

/** The text, shortened with an ellipsis until it fits `max` pixels in `g`'s current font. */
function fitWidth(g, text, max) {
  if (g.measureText(text).width <= max) return text;
  const cps = Array.from(text);
  let lo = 0;
  let hi = cps.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (g.measureText(`${cps.slice(0, mid).join('')}…`).width <= max) lo = mid;
    else hi = mid - 1;
  }
  return `${cps.slice(0, lo).join('').trimEnd()}…`;
}

function roundRect(x, y, w, h, rad, g = ctx) {
  g.beginPath();
  g.moveTo(x + rad, y);
  g.arcTo(x + w, y, x + w, y + h, rad);
  g.arcTo(x + w, y + h, x, y + h, rad);
  g.arcTo(x, y + h, x, y, rad);
  g.arcTo(x, y, x + w, y, rad);
  g.closePath();
}

// ---------------------------------------------------------------- pointer

function localPoint(e) {
  const rect = canvas.getBoundingClientRect();
  return { x: e.clientX - rect.left, y: e.clientY - rect.top };
}

function agentAt(x, y) {
  for (let i = placed.length - 1; i >= 0; i--) {
    const p = placed[i];
    const dx = x - p.x;
    const dy = y - p.y;
    if (dx * dx + dy * dy <= (p.r + 3) * (p.r + 3)) return p.agent;
  }
  return null;
}

function hitAt(x, y) {
  if (!view) return null;
  const agent = agentAt(x, y);
  if (agent) return { kind: 'agent', agent };
  const t = toTile(x, y);
  const tx = Math.floor(t.x);
  const ty = Math.floor(t.y);
  if (tx < 0 || ty < 0 || tx >= view.width || ty >= view.height) return null;
  if (scale >= 5) {
    const objs = view.byTile.get(`${tx},${ty}`);
    if (objs && objs.length) return { kind: 'object', objects: objs, key: `o${tx},${ty}` };
  }
  const v = view.cells[ty * view.width + tx];
  if (v >= 2 && view.arenas[v - 2]) return { kind: 'arena', arena: view.arenas[v - 2], key: `a${v}` };
  return null;
}

function hoverKey(h) {
  if (!h) return '';
  return h.kind === 'agent' ? `g${h.agent.id}` : h.key;
}

function setHover(h, x, y) {
  const changed = hoverKey(h) !== hoverKey(hover);
  hover = h;
  if (!h) {
    tooltip.hidden = true;
    canvas.classList.remove('over-agent');
    if (changed) markDirty();
    return;
  }
  canvas.classList.toggle('over-agent', h.kind === 'agent');
  if (changed) {
    fillTooltip(h);
    markDirty();
  }
  if (x !== undefined) placeTooltip(x, y);
}

function fillTooltip(h) {
  if (h.kind === 'agent') {
    const a = h.agent;
    const lines = [el('div', { class: 'tt-title' }, untrusted(a.name))];
    lines.push(el('div', { class: 'tt-line' }, iconNode(a.emoji, 'tt-emoji'), untrusted(a.action || 'idle')));
    if (a.action) lines.push(el('div', { class: 'tt-line tt-dim' }, atPlace(a.address, '', 'tt-key')));
    if (Array.isArray(a.talking_with) && a.talking_with.length) {
      lines.push(el('div', { class: 'tt-line' }, el('span', { class: 'tt-key', text: 'talking with ' }), untrusted(a.talking_with.join(', '))));
    }
    lines.push(el('div', { class: 'tt-hint', text: 'click to open its panel' }));
    setChildren(tooltip, lines);
  } else if (h.kind === 'object') {
    const states = (app.frame && app.frame.objects) || {};
    setChildren(tooltip, h.objects.map((o) => el('div', { class: 'tt-obj' },
      el('div', { class: 'tt-title' }, untrusted(o.name)),
      el('div', { class: 'tt-line tt-dim' }, untrusted(o.address)),
      states[o.address] !== undefined ? el('div', { class: 'tt-line' }, el('span', { class: 'tt-key', text: 'state ' }), untrusted(states[o.address])) : null)));
  } else {
    const a = h.arena;
    setChildren(tooltip,
      el('div', { class: 'tt-title' }, untrusted(a.sector)),
      el('div', { class: 'tt-line' }, untrusted(a.arena), el('span', { class: 'tt-dim', text: a.kind ? `  · ${a.kind}` : '' })));
  }
  tooltip.hidden = false;
}

/** After a new frame, the agent under the cursor may be doing something else. */
function refreshHoverTooltip() {
  if (!hover || hover.kind !== 'agent' || !app.frame) return;
  const a = app.frame.agents.find((x) => x.id === hover.agent.id);
  if (!a) { setHover(null); return; }
  hover = { kind: 'agent', agent: a };
  fillTooltip(hover);
}

function placeTooltip(x, y) {
  const tw = tooltip.offsetWidth;
  const th = tooltip.offsetHeight;
  let left = x + 14;
  let top = y + 16;
  if (left + tw > W - 6) left = Math.max(6, x - tw - 14);
  if (top + th > H - 6) top = Math.max(6, y - th - 12);
  tooltip.style.transform = `translate(${Math.round(left)}px, ${Math.round(top)}px)`;
}

function onPointerDown(e) {
  if (e.button !== 0) return;
  canvas.focus({ preventScroll: true });
  const p = localPoint(e);
  drag = { x: p.x, y: p.y, cx, cy, moved: false, id: e.pointerId };
  canvas.setPointerCapture(e.pointerId);
}

function onPointerMove(e) {
  const p = localPoint(e);
  if (drag) {
    const dx = p.x - drag.x;
    const dy = p.y - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) > 4) {
      drag.moved = true;
      canvas.classList.add('dragging');
      setHover(null);
    }
    if (drag.moved) {
      cx = drag.cx - dx / scale;
      cy = drag.cy - dy / scale;
      clampCentre();
      userMoved = true;
      markDirty();
    }
    return;
  }
  setHover(hitAt(p.x, p.y), p.x, p.y);
}

function onPointerUp(e) {
  if (!drag) return;
  const wasDrag = drag.moved;
  drag = null;
  canvas.classList.remove('dragging');
  if (canvas.hasPointerCapture(e.pointerId)) canvas.releasePointerCapture(e.pointerId);
  const p = localPoint(e);
  if (!wasDrag) {
    const a = agentAt(p.x, p.y);
    if (a) emit('pick-agent', a.id);
  }
  setHover(hitAt(p.x, p.y), p.x, p.y);
}

function onWheel(e) {
  if (!view) return;
  e.preventDefault();
  const unit = e.deltaMode === 1 ? 33 : e.deltaMode === 2 ? 400 : 1;
  const d = e.deltaY * unit;
  const p = localPoint(e);
  let steps = 0;
  if (Math.abs(d) >= 50) {
    steps = d > 0 ? -1 : 1;
    wheelAcc = 0;
  } else {
    wheelAcc += d;
    if (Math.abs(wheelAcc) >= 50) {
      steps = wheelAcc > 0 ? -1 : 1;
      wheelAcc = 0;
    }
  }
  if (steps) zoomAt(level + steps, p.x, p.y);
}

/** What the map shows, for tests: the camera and the agents' screen positions. */
export function mapState() {
  return { scale, cx, cy, width: W, height: H, placed: placed.map((p) => ({ id: p.agent.id, x: p.x, y: p.y })), ghosts: ghostsDrawn.slice(), ghostOf: ghost ? ghost.label : null };
}
