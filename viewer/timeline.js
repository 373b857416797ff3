// The timeline: scrubber, density strip, night bands, markers, transport buttons, speed and playback.

import { app, emit, on, SPEEDS } from './state.js';
import { call } from './ipc.js';
import { seek, targetSecs, baseSeq, addTicker, wake, lessOftenWhilePlaying } from './seek.js';
import { el, button, icon, fmtTime, fmtClock, fmtCount, showError, setChildren, clear } from './dom.js';

const PAD = 10;
const MARKER_KINDS = ['conversation', 'reflection', 'plan', 'intervention', 'mayor'];

let root = null;
let track = null;
let strip = null;
let markersLayer = null;
let playhead = null;
let hoverLabel = null;
let clockTime = null;
let clockSeq = null;
let playBtn = null;
let speedSel = null;
let messageBox = null;
let markerEls = [];
let scrubbing = null;
let playSecs = 0;
let lastNow = null;
let lastPlaySought = null;
const stepQueue = [];
let stepping = false;

/** performance.now() of an input event, from its own timestamp when that is usable. */
export function stamp(e) {
  const now = performance.now();
  const ts = e && e.timeStamp;
  return Number.isFinite(ts) && ts > 0 && ts <= now && now - ts < 1000 ? ts : now;
}

export function initTimeline(host) {
  root = host;
  const controls = el('div', { class: 'tl-controls' });
  const group = el('div', { class: 'tl-transport', attrs: { role: 'group', 'aria-label': 'Playback' } },
    button({ icon: 'home', title: 'Go to the start (Home)', onClick: (e) => home(stamp(e)) }),
    button({ icon: 'event-back', title: 'Step back one event (Shift+← or ,)', onClick: (e) => step('event', -1, stamp(e)) }),
    button({ icon: 'step-back', title: 'Step back one clock step (←)', onClick: (e) => step('step', -1, stamp(e)) }),
    (playBtn = button({ icon: 'play', title: 'Play (Space)', cls: 'btn-play', onClick: () => togglePlay() })),
    button({ icon: 'step-forward', title: 'Step forward one clock step (→)', onClick: (e) => step('step', 1, stamp(e)) }),
    button({ icon: 'event-forward', title: 'Step forward one event (Shift+→ or .)', onClick: (e) => step('event', 1, stamp(e)) }),
    button({ icon: 'end', title: 'Go to the end (End)', onClick: (e) => end(stamp(e)) }),
  );
  clockTime = el('span', { class: 'tl-time', text: '—' });
  clockSeq = el('span', { class: 'tl-seq', text: '' });
  const clock = el('div', { class: 'tl-clock', attrs: { 'aria-live': 'off' } }, clockTime, clockSeq);
  speedSel = el('select', { class: 'tl-speed', title: 'Playback speed: simulated seconds per real second (saved)', attrs: { 'aria-label': 'Playback speed' } });
  for (const s of SPEEDS) speedSel.append(el('option', { value: String(s), text: speedLabel(s) }));
  speedSel.addEventListener('change', () => {
    const v = Number(speedSel.value);
    if (Number.isFinite(v) && v > 0) {
      app.settings.speed = v;
      emit('settings-changed');
    }
  });
  const legend = el('div', { class: 'tl-legend', attrs: { 'aria-hidden': 'true' } },
    ...MARKER_KINDS.map((k) => el('span', { class: `tl-legend-item` }, el('span', { class: `tl-marker-shape kind-${k}` }), k)));
  controls.append(group, clock, el('label', { class: 'tl-speed-label' }, el('span', { text: 'Speed' }), speedSel), el('div', { class: 'spacer' }), legend);

  track = el('div', {
    class: 'tl-track',
    tabIndex: 0,
    attrs: {
      'data-scrubber': '', role: 'slider', 'aria-label': 'Simulated time. Drag to scrub; ← → step, Shift+← → or , . step by event, Home and End',
      'aria-valuemin': '0', 'aria-valuemax': '0', 'aria-valuenow': '0',
    },
  });
  strip = el('canvas', { class: 'tl-strip', attrs: { 'aria-hidden': 'true' } });
  markersLayer = el('div', { class: 'tl-markers' });
  playhead = el('div', { class: 'tl-playhead', attrs: { 'aria-hidden': 'true' } });
  hoverLabel = el('div', { class: 'tl-hover', hidden: true, attrs: { 'aria-hidden': 'true' } });
  messageBox = el('div', { class: 'tl-message', hidden: true });
  track.append(strip, markersLayer, playhead, hoverLabel, messageBox);
  root.append(controls, track);

  track.addEventListener('pointerdown', onDown);
  track.addEventListener('pointermove', onMove);
  track.addEventListener('pointerup', onUp);
  track.addEventListener('pointercancel', onUp);
  track.addEventListener('pointerleave', () => { hoverLabel.hidden = true; });

  new ResizeObserver(() => layout()).observe(track);
  addTicker(playTick);
  on('target', () => updatePlayhead());
  on('frame', () => updatePlayhead());
  on('seek-failed', () => setPlaying(false));
  on('settings', () => syncSpeed());
  syncSpeed();
}

function speedLabel(s) {
  const names = { 1: 'real time', 10: '10 s/s', 60: '1 min/s', 300: '5 min/s', 600: '10 min/s', 3600: '1 h/s' };
  return `${s.toLocaleString('en-US')}× · ${names[s] || `${s} s/s`}`;
}

function syncSpeed() {
  if (!speedSel) return;
  const v = String(app.settings.speed);
  if (![...speedSel.options].some((o) => o.value === v)) {
    speedSel.append(el('option', { value: v, text: speedLabel(Number(v)) }));
  }
  speedSel.value = v;
}

/** The scrubber's width in CSS pixels: how many density buckets to ask for. */
export function bucketsWanted() {
  const w = track ? track.clientWidth - 2 * PAD : 0;
  return Math.max(50, Math.min(4000, Math.round(w > 0 ? w : 800)));
}

export function setTimeline(tl) {
  app.timeline = tl;
  messageBox.hidden = true;
  track.setAttribute('aria-valuemin', String(tl.start_secs));
  track.setAttribute('aria-valuemax', String(tl.end_secs));
  buildMarkers();
  layout();
}

export function clearTimeline() {
  app.timeline = null;
  clear(markersLayer);
  markerEls = [];
  setPlaying(false);
  clockTime.textContent = '—';
  clockSeq.textContent = '';
  if (strip.width) strip.getContext('2d').clearRect(0, 0, strip.width, strip.height);
}

export function timelineError(msg) {
  messageBox.hidden = false;
  setChildren(messageBox, el('span', { class: 'u', text: `The timeline could not be loaded: ${msg}`, attrs: { dir: 'auto' } }));
}

function span() {
  const tl = app.timeline;
  if (!tl) return null;
  const s0 = Number(tl.start_secs);
  const s1 = Math.max(s0 + 1, Number(tl.end_secs));
  return { s0, s1, w: Math.max(1, track.clientWidth - 2 * PAD) };
}

function xOf(secs) {
  const sp = span();
  if (!sp) return PAD;
  return PAD + ((secs - sp.s0) / (sp.s1 - sp.s0)) * sp.w;
}

function secsAt(clientX) {
  const sp = span();
  const rect = track.getBoundingClientRect();
  const f = Math.min(1, Math.max(0, (clientX - rect.left - PAD) / sp.w));
  return Math.round(sp.s0 + f * (sp.s1 - sp.s0));
}

function buildMarkers() {
  clear(markersLayer);
  markerEls = [];
  const tl = app.timeline;
  const markers = Array.isArray(tl.markers) ? tl.markers.slice(0, 2000) : [];
  // The most important first: draw them last so they sit on top.
  for (let i = markers.length - 1; i >= 0; i--) {
    const m = markers[i];
    if (!Number.isFinite(m.seq) || !Number.isFinite(m.secs)) continue;
    const kind = MARKER_KINDS.includes(m.kind) ? m.kind : 'other';
    const node = el('div', {
      class: `tl-marker tl-marker-shape kind-${kind}`,
      title: `${m.label ?? kind} — ${fmtTime(m.secs)} · #${m.seq} (click to go there)`,
      attrs: { 'aria-hidden': 'true' },
    });
    node.addEventListener('pointerdown', (e) => e.stopPropagation());
    node.addEventListener('click', (e) => {
      e.stopPropagation();
      setPlaying(false);
      seek({ seq: m.seq, hint: m.secs }, { t0: stamp(e) });
    });
    markerEls.push({ node, secs: m.secs });
    markersLayer.append(node);
  }
}

function layout() {
  if (!app.timeline || !track) return;
  for (const { node, secs } of markerEls) node.style.left = `${xOf(secs)}px`;
  drawStrip();
  updatePlayhead();
  rebucketSoon();
}

/** After a resize, asks for the density again with one bucket per pixel of the new width. */
let rebucketTimer = 0;
function rebucketSoon() {
  const tl = app.timeline;
  const have = Array.isArray(tl.density) ? tl.density.length : 0;
  const want = bucketsWanted();
  clearTimeout(rebucketTimer);
  if (!have || Math.abs(want - have) / have < 0.2) return;
  rebucketTimer = setTimeout(async () => {
    const epoch = app.epoch;
    const branch = app.branch;
    try {
      const fresh = await call('timeline', { branch, buckets: bucketsWanted() });
      if (epoch !== app.epoch || branch !== app.branch || !fresh || !Array.isArray(fresh.density)) return;
      app.timeline = { ...app.timeline, ...fresh };
      buildMarkers();
      for (const { node, secs } of markerEls) node.style.left = `${xOf(secs)}px`;
      drawStrip();
      updatePlayhead();
    } catch {
      // The strip drawn from the old buckets stays: still right, only coarser or finer.
    }
  }, 500);
}

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

function drawStrip() {
  const tl = app.timeline;
  const sp = span();
  if (!tl || !sp) return;
  const dpr = window.devicePixelRatio || 1;
  const w = track.clientWidth;
  const h = strip.clientHeight || 48;
  strip.width = Math.round(w * dpr);
  strip.height = Math.round(h * dpr);
  const g = strip.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const barTop = 4;
  const barH = h - 20;
  g.fillStyle = cssVar('--tl-bg', '#15181f');
  g.fillRect(PAD, barTop, sp.w, barH);
  // Nights.
  g.fillStyle = cssVar('--tl-night', 'rgba(70,90,170,0.28)');
  for (const n of Array.isArray(tl.nights) ? tl.nights : []) {
    if (!Array.isArray(n) || n.length < 2) continue;
    const a = Math.max(PAD, xOf(n[0]));
    const b = Math.min(PAD + sp.w, xOf(n[1]));
    if (b > a) g.fillRect(a, barTop, b - a, barH);
  }
  // Density.
  const d = Array.isArray(tl.density) ? tl.density : [];
  let max = 0;
  for (const v of d) if (v > max) max = v;
  if (d.length && max > 0) {
    const bw = sp.w / d.length;
    g.fillStyle = cssVar('--tl-bar', '#5b8def');
    for (let i = 0; i < d.length; i++) {
      const v = d[i];
      if (!(v > 0)) continue;
      const bh = Math.max(1, Math.sqrt(v / max) * (barH - 2));
      g.fillRect(PAD + i * bw, barTop + barH - bh, Math.max(1, bw - (bw > 3 ? 0.5 : 0)), bh);
    }
  }
  // Hour ticks.
  const steps = [600, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
  const pxPerSec = sp.w / (sp.s1 - sp.s0);
  const stepS = steps.find((s) => s * pxPerSec >= 64) || steps[steps.length - 1];
  g.strokeStyle = cssVar('--tl-tick', 'rgba(255,255,255,0.25)');
  g.fillStyle = cssVar('--tl-label', '#9aa3b5');
  g.font = '10.5px system-ui,sans-serif';
  g.textAlign = 'center';
  g.textBaseline = 'top';
  g.lineWidth = 1;
  g.beginPath();
  for (let t = Math.ceil(sp.s0 / stepS) * stepS; t <= sp.s1; t += stepS) {
    const x = Math.round(xOf(t)) + 0.5;
    g.moveTo(x, barTop + barH);
    g.lineTo(x, barTop + barH + 4);
    const label = t % 86400 === 0 ? `day ${t / 86400}` : fmtClock(t);
    const half = g.measureText(label).width / 2;
    g.textAlign = x - half < 0 ? 'left' : x + half > w ? 'right' : 'center';
    g.fillText(label, g.textAlign === 'left' ? 0 : g.textAlign === 'right' ? w : x, barTop + barH + 5);
  }
  g.stroke();
}

function updatePlayhead() {
  if (!app.timeline || !track) return;
  const secs = scrubbing ? scrubbing.secs : targetSecs();
  playhead.style.transform = `translateX(${Math.round(xOf(secs))}px)`;
  clockWords();
}

// The playhead moves every frame; while playing, the clock's words change at most ten
// times a second.
const clockWords = lessOftenWhilePlaying(100, () => {
  if (!app.timeline || !track) return;
  const secs = scrubbing ? scrubbing.secs : targetSecs();
  clockTime.textContent = fmtTime(secs);
  const f = app.frame;
  clockSeq.textContent = f ? `#${fmtCount(f.seq)}` : '';
  track.setAttribute('aria-valuenow', String(secs));
  track.setAttribute('aria-valuetext', fmtTime(secs));
});

// ---------------------------------------------------------------- scrubbing

function onDown(e) {
  if (e.button !== 0 || !app.timeline) return;
  setPlaying(false);
  track.focus({ preventScroll: true });
  track.setPointerCapture(e.pointerId);
  const secs = secsAt(e.clientX);
  scrubbing = { id: e.pointerId, secs };
  track.classList.add('scrubbing');
  seek({ secs }, { t0: stamp(e) });
  showHover(e.clientX);
}

function onMove(e) {
  if (!app.timeline) return;
  showHover(e.clientX);
  if (!scrubbing || e.pointerId !== scrubbing.id) return;
  const secs = secsAt(e.clientX);
  if (secs === scrubbing.secs) return;
  scrubbing.secs = secs;
  seek({ secs }, { t0: stamp(e) });
}

function onUp(e) {
  if (!scrubbing || e.pointerId !== scrubbing.id) return;
  scrubbing = null;
  track.classList.remove('scrubbing');
  if (track.hasPointerCapture(e.pointerId)) track.releasePointerCapture(e.pointerId);
  updatePlayhead();
}

function showHover(clientX) {
  const secs = secsAt(clientX);
  hoverLabel.hidden = false;
  hoverLabel.textContent = fmtTime(secs);
  const x = xOf(secs);
  const w = hoverLabel.offsetWidth;
  hoverLabel.style.transform = `translateX(${Math.round(Math.min(track.clientWidth - w - 2, Math.max(2, x - w / 2)))}px)`;
}

// ---------------------------------------------------------------- transport

export function setPlaying(playing) {
  const p = !!playing && !!app.timeline;
  if (p === app.playing) return;
  app.playing = p;
  lastNow = null;
  lastPlaySought = null;
  if (p) {
    playSecs = targetSecs();
    if (playSecs >= app.timeline.end_secs) playSecs = app.timeline.start_secs;
    wake();
  }
  setChildren(playBtn, icon(p ? 'pause' : 'play'));
  playBtn.title = p ? 'Pause (Space)' : 'Play (Space)';
  playBtn.setAttribute('aria-label', playBtn.title);
  playBtn.classList.toggle('active', p);
  emit('playing', p);
}

export function togglePlay() {
  setPlaying(!app.playing);
}

function playTick(now) {
  if (!app.playing || !app.timeline) { lastNow = null; return false; }
  if (lastNow === null) { lastNow = now; return true; }
  const dt = Math.min(0.25, Math.max(0, (now - lastNow) / 1000));
  lastNow = now;
  playSecs += app.settings.speed * dt;
  const endS = app.timeline.end_secs;
  if (playSecs >= endS) {
    seek({ secs: endS });
    setPlaying(false);
    return false;
  }
  const s = Math.floor(playSecs);
  if (s !== lastPlaySought) {
    lastPlaySought = s;
    seek({ secs: s });
  }
  return true;
}

/** One event or one clock step, from the latest moment asked for. Presses queue (at most 8). */
export function step(by, dir, t0) {
  if (!app.timeline) return;
  setPlaying(false);
  if (stepQueue.length >= 8) return;
  stepQueue.push({ by, dir, t0 });
  if (!stepping) runSteps();
}

async function runSteps() {
  stepping = true;
  const epoch = app.epoch;
  try {
    while (stepQueue.length && epoch === app.epoch) {
      const s = stepQueue.shift();
      const base = baseSeq();
      if (base === null || base === undefined) break;
      const r = await call('step', { branch: app.branch, seq: base, by: s.by, dir: s.dir });
      if (epoch !== app.epoch) break;
      if (r && Number.isFinite(r.seq)) seek({ seq: r.seq }, { t0: s.t0 });
    }
  } catch (err) {
    showError(err.message, 'Could not step');
    stepQueue.length = 0;
  } finally {
    stepping = false;
  }
}

export function home(t0) {
  if (!app.timeline) return;
  setPlaying(false);
  seek({ secs: app.timeline.start_secs }, { t0 });
}

export function end(t0) {
  if (!app.timeline) return;
  setPlaying(false);
  seek({ seq: app.timeline.head_seq, hint: app.timeline.end_secs }, { t0 });
}

/** Redraws the strip (after a theme or size change). */
export function redrawTimeline() {
  layout();
}
