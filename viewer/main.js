// The page's wiring: boot, opening files, toolbar, side panel, status bar, keys, menu events and window.hamlet.

import { app, emit, on, DEFAULT_SETTINGS, agentInFrame } from './state.js';
import { call, listen, hasBridge, inBrowser, message as errorText, answerNextDialog } from './ipc.js';
import { openBytes, openFile, openUrl } from './browser.js';
import { seek, resetSeek, stats, wake, record, lessOftenWhilePlaying } from './seek.js';
import { loadTracks, frameAt } from './tracks.js';
import {
  el, button, untrusted, setChildren, clear, showError, clearErrors, notice, fmtMicros, fmtCount,
  ago, truncate,
} from './dom.js';
import { initMap, setMap, clearMap, mapError, zoomIn, zoomOut, fit, panBy, mapCanvas, reveal, mapState } from './map.js';
import {
  initTimeline, setTimeline, clearTimeline, timelineError, bucketsWanted, togglePlay, setPlaying,
  step, home, end, stamp,
} from './timeline.js';
import { initAgent, showAgent, setAgentVisible, agentState } from './agent.js';
import { initWhy, openWhy, whyState, warmUp } from './why.js';
import { initCalls, setCallsVisible, inspectNode, callsState } from './calls.js';
import { initBranches, showBranches, forkHere, pickStore, rename as renameBranch, remove as deleteBranch } from './branches.js';
import { initChange, showChangeTarget, setChangeVisible, makeChange, continueRun, cancelRun, changeState, setModel } from './change.js';
import { initCompare, setCompareVisible, compare, compareState } from './compare.js';
import { initPlots, setPlotsVisible, plot, saveCsv, plotsState } from './plots.js';

const $ = (id) => document.getElementById(id);

let view = 'welcome';
let panelOpen = true;
let sideTab = 'agent';
const sideTabButtons = {};
let lastOpened = { sig: null, at: 0 };
let saveTimer = 0;
let opening = false;
const tb = {};
const st = {};

// ---------------------------------------------------------------- boot

function boot() {
  buildToolbar();
  buildStatus();
  buildSide();
  initMap($('map'));
  initTimeline($('timeline'));
  initAgent($('pane-agent'));
  initWhy($('pane-why'));
  initCalls($('pane-calls'));
  initBranches($('pane-branches'));
  initChange($('pane-change'));
  initCompare($('pane-compare'));
  initPlots($('pane-research'));
  buildWelcome();
  wireSplitter();
  wireKeys();
  wireDrop();
  wireButtonFocus();
  wireEvents();
  setView('welcome');
  updateStatus();

  listen('opened', (o) => handleOpened(o));
  listen('open-failed', (p) => {
    setOpening(false);
    const path = p && p.path ? ` (${p.path})` : '';
    openFailed(`${p && p.message ? p.message : 'the file could not be opened'}${path}`);
  });
  listen('menu', (p) => onMenu(p && p.id));
  listen('tauri://drag-enter', () => showDrop(true));
  listen('tauri://drag-over', () => showDrop(true));
  listen('tauri://drag-leave', () => showDrop(false));
  listen('tauri://drag-drop', () => showDrop(false));

  loadSettings();
  loadRecent();
  // Where each file was left, for next time: a second after the moment settles.
  let momentTimer = null;
  on('frame', () => {
    if (!app.opened || !app.frame || app.playing) return;
    clearTimeout(momentTimer);
    const { seq } = app.frame;
    momentTimer = setTimeout(() => { call('remember_moment', { seq }).catch(() => {}); }, 1000);
  });
  // A file named on the command line was opened before this page loaded: show it. In a
  // browser, the recording the address names (`?url=`), or the one the shared file carries.
  if (hasBridge()) {
    call('current').then((o) => { if (o) handleOpened(o); }, (err) => openFailed(errorText(err)));
  } else {
    document.body.classList.add('in-browser');
    const url = new URLSearchParams(location.search).get('url');
    const carried = window.HAMLET_EMBEDDED && window.HAMLET_EMBEDDED.recording;
    if (carried || url) {
      setOpening(true);
      const opening = carried ? carried().then(({ name, bytes }) => openBytes(name, bytes)) : openUrl(url);
      opening.catch(() => {}).finally(() => setOpening(false));
    }
  }
}

// ---------------------------------------------------------------- settings

function validSettings(s) {
  const out = { ...DEFAULT_SETTINGS };
  if (s && typeof s === 'object') {
    if (Number.isFinite(s.speed) && s.speed >= 1 && s.speed <= 3600) out.speed = s.speed;
    if (Number.isFinite(s.panel_width) && s.panel_width >= 200 && s.panel_width <= 4000) out.panel_width = Math.round(s.panel_width);
    if (typeof s.show_paths === 'boolean') out.show_paths = s.show_paths;
    if (typeof s.show_bubbles === 'boolean') out.show_bubbles = s.show_bubbles;
  }
  return out;
}

async function loadSettings() {
  try {
    const s = await call('settings');
    app.settings = { ...validSettings(s), ...extraFields(s) };
  } catch (err) {
    if (hasBridge()) showError(err.message, 'Could not read the settings');
  }
  applySettings();
}

/** Fields this page does not know are kept and written back unchanged. */
function extraFields(s) {
  if (!s || typeof s !== 'object') return {};
  const out = {};
  for (const [k, v] of Object.entries(s)) if (!(k in DEFAULT_SETTINGS)) out[k] = v;
  return out;
}

function applySettings() {
  setPanelWidth(app.settings.panel_width, false);
  tb.bubbles.setAttribute('aria-pressed', String(!!app.settings.show_bubbles));
  tb.paths.setAttribute('aria-pressed', String(!!app.settings.show_paths));
  emit('settings');
}

function saveSettings() {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(async () => {
    try {
      await call('save_settings', { settings: { ...app.settings } });
    } catch (err) {
      if (hasBridge()) showError(err.message, 'Could not save the settings');
    }
  }, 400);
}

// ---------------------------------------------------------------- toolbar

/** Mouse clicks on buttons leave the keyboard focus where it was, as in a desktop program,
 * so Space keeps meaning play; Tab still reaches every button. */
function wireButtonFocus() {
  document.addEventListener('pointerdown', (e) => {
    if (e.pointerType !== 'mouse' || !(e.target instanceof Element)) return;
    const b = e.target.closest('button');
    if (b && !b.closest('.welcome, .unsound')) e.preventDefault();
  });
}

function buildToolbar() {
  const bar = $('toolbar');
  tb.open = button({ icon: 'open', label: 'Open…', title: 'Open a .hamlet recording or a store (File ▸ Open…)', cls: 'btn-primary-ghost', onClick: () => openDialog() });
  tb.title = el('span', { class: 'tb-title u', attrs: { dir: 'auto' } });
  tb.branch = el('select', { class: 'input tb-branch', title: 'The branch shown', attrs: { 'aria-label': 'Branch' } });
  tb.branch.addEventListener('change', () => switchBranch(tb.branch.value));
  tb.branchWrap = el('label', { class: 'tb-branch-wrap', hidden: true }, el('span', { class: 'dim', text: 'branch' }), tb.branch);
  tb.zoomOut = button({ icon: 'zoom-out', title: 'Zoom out (−)', onClick: () => zoomOut() });
  tb.zoomIn = button({ icon: 'zoom-in', title: 'Zoom in (+)', onClick: () => zoomIn() });
  tb.fit = button({ icon: 'fit', title: 'Fit the town in the window (0)', onClick: () => fit() });
  tb.bubbles = button({ icon: 'bubbles', label: 'Speech', title: 'Show speech bubbles (B)', pressed: true, cls: 'toggle', onClick: () => toggleSetting('show_bubbles') });
  tb.paths = button({ icon: 'paths', label: 'Trails', title: 'Show walking trails (P)', pressed: true, cls: 'toggle', onClick: () => toggleSetting('show_paths') });
  tb.why = button({ icon: 'why', label: 'Why?', title: 'Why is the selected agent doing this? (Y)', onClick: () => whySelected(performance.now()) });
  tb.panel = button({ icon: 'panel', title: 'Show or hide the side panel (Esc hides it)', cls: 'toggle', pressed: true, onClick: () => setPanelOpen(!panelOpen) });
  const sep = () => el('span', { class: 'tb-sep', attrs: { 'aria-hidden': 'true' } });
  tb.mapTools = el('div', { class: 'tb-group' }, sep(), tb.zoomOut, tb.zoomIn, tb.fit, sep(), tb.bubbles, tb.paths, sep(), tb.why);
  bar.append(tb.open, tb.branchWrap, tb.mapTools, el('span', { class: 'spacer' }), tb.title, tb.panel);
}

function toggleSetting(name) {
  app.settings[name] = !app.settings[name];
  tb.bubbles.setAttribute('aria-pressed', String(!!app.settings.show_bubbles));
  tb.paths.setAttribute('aria-pressed', String(!!app.settings.show_paths));
  emit('settings');
  saveSettings();
}

// ---------------------------------------------------------------- side panel

function buildSide() {
  const tabs = $('side-tabs');
  const defs = [['agent', 'Agent', 'The selected agent'], ['why', 'Why?', 'Why an agent acted: the causal graph'], ['calls', 'Calls', 'The model calls: prompts, tries, answers'], ['branches', 'Branches', 'Every branch with its fork point; fork here, switch, delete'], ['change', 'Intervene', 'Intervene in the branch at its head (an inner voice, an interview, a new neighbour…), and continue it with a model'], ['compare', 'Compare', 'This branch beside another: where each agent’s days part'], ['research', 'Research', 'The paper’s measurements as charts: diffusion, density, relationships, cost']];
  for (const [id, label, title] of defs) {
    const b = el('button', {
      type: 'button', class: 'side-tab', text: label, title,
      attrs: { role: 'tab', 'aria-selected': String(id === sideTab), 'aria-controls': `pane-${id}` },
      on: { click: () => setSideTab(id) },
    });
    sideTabButtons[id] = b;
    tabs.append(b);
  }
  tabs.append(el('span', { class: 'spacer' }),
    button({ icon: 'expand', title: 'Widen or narrow the side panel', cls: 'btn-ghost btn-small', onClick: () => toggleWide() }),
    button({ icon: 'close', title: 'Hide the side panel (Esc)', cls: 'btn-ghost btn-small', onClick: () => setPanelOpen(false) }));
  setAgentVisible(true);
}

function setSideTab(id) {
  sideTab = id;
  setPanelOpen(true);
  for (const [k, b] of Object.entries(sideTabButtons)) b.setAttribute('aria-selected', String(k === id));
  for (const k of Object.keys(sideTabButtons)) $(`pane-${k}`).hidden = k !== id;
  setAgentVisible(id === 'agent');
  setCallsVisible(id === 'calls');
  setCompareVisible(id === 'compare');
  setPlotsVisible(id === 'research');
  if (id === 'change') setChangeVisible(true);
}

function setPanelOpen(open) {
  panelOpen = open;
  $('workspace').classList.toggle('panel-closed', !open);
  document.body.classList.toggle('panel-closed', !open);
  tb.panel.setAttribute('aria-pressed', String(open));
  if (!open) { setAgentVisible(false); setCallsVisible(false); } else {
    setAgentVisible(sideTab === 'agent');
    setCallsVisible(sideTab === 'calls');
  }
}

function maxPanel() {
  return Math.max(280, Math.round(window.innerWidth * 0.8));
}

function setPanelWidth(w, save = true) {
  const width = Math.round(Math.min(maxPanel(), Math.max(280, Number(w) || DEFAULT_SETTINGS.panel_width)));
  document.documentElement.style.setProperty('--panel-width', `${width}px`);
  app.settings.panel_width = width;
  if (save) saveSettings();
}

let narrowWidth = null;
function toggleWide() {
  if (narrowWidth === null) {
    narrowWidth = app.settings.panel_width;
    setPanelWidth(Math.round(window.innerWidth * 0.66));
  } else {
    setPanelWidth(narrowWidth);
    narrowWidth = null;
  }
}

function wireSplitter() {
  const sp = $('splitter');
  let drag = null;
  sp.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    drag = { x: e.clientX, w: app.settings.panel_width, id: e.pointerId };
    sp.setPointerCapture(e.pointerId);
    document.body.classList.add('resizing');
  });
  sp.addEventListener('pointermove', (e) => {
    if (!drag || e.pointerId !== drag.id) return;
    setPanelWidth(drag.w + (drag.x - e.clientX), false);
  });
  const stop = (e) => {
    if (!drag || e.pointerId !== drag.id) return;
    drag = null;
    document.body.classList.remove('resizing');
    narrowWidth = null;
    saveSettings();
  };
  sp.addEventListener('pointerup', stop);
  sp.addEventListener('pointercancel', stop);
  sp.addEventListener('dblclick', () => setPanelWidth(DEFAULT_SETTINGS.panel_width));
  sp.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
      e.preventDefault();
      e.stopPropagation();
      setPanelWidth(app.settings.panel_width + (e.key === 'ArrowLeft' ? 24 : -24));
    }
  });
  window.addEventListener('resize', () => {
    if (app.settings.panel_width > maxPanel()) setPanelWidth(maxPanel(), false);
  });
}

// ---------------------------------------------------------------- status bar

function buildStatus() {
  const bar = $('status');
  st.file = el('span', { class: 'sb-item sb-file u', attrs: { dir: 'auto' } });
  st.branch = el('span', { class: 'sb-item sb-branch' });
  st.time = el('span', { class: 'sb-item sb-time', title: 'The moment shown (simulated time)' });
  st.seq = el('span', { class: 'sb-item sb-seq', title: 'The last event folded' });
  st.hash = el('span', { class: 'sb-item sb-hash mono', title: 'State hash' });
  st.micros = el('span', { class: 'sb-item sb-micros', title: 'Time the engine took for this frame' });
  st.verify = el('button', { type: 'button', class: 'sb-item sb-verify', title: 'Verification of the file' });
  st.verify.addEventListener('click', () => {
    if (app.opened && !app.opened.sound) setView('unsound');
  });
  // A shared file carries its whole recording: say so where it is always seen.
  const carried = window.HAMLET_EMBEDDED ? [el('span', {
    class: 'sb-item sb-carried',
    text: 'every prompt and answer is inside this file',
    title: 'This page carries the whole recording: every prompt the model was given and every answer, every memory and line. Whoever has the file can read them all.',
  })] : [];
  bar.append(st.file, st.branch, st.time, st.seq, st.hash, st.micros, ...carried, el('span', { class: 'spacer' }), st.verify);
}

// While playing, the status bar's words change at most four times a second.
const updateStatus = lessOftenWhilePlaying(250, showStatus);

function showStatus() {
  const o = app.opened;
  const f = app.frame;
  st.file.textContent = o ? o.title || o.path || '' : 'No file open';
  st.file.title = o ? o.path || '' : '';
  st.branch.hidden = !o;
  st.branch.textContent = app.branch ? `branch ${app.branch}` : '';
  st.time.textContent = f ? f.time || '' : '';
  st.seq.textContent = f ? `#${fmtCount(f.seq)}` : '';
  const hash = f ? String(f.state_hash || '') : '';
  st.hash.textContent = hash ? truncate(hash, 16) : '';
  st.hash.title = hash ? `State hash: ${hash}` : 'State hash';
  st.micros.textContent = f && Number.isFinite(f.micros) ? `engine ${fmtMicros(f.micros)}` : (f && app.tracks ? 'from tracks' : '');
  st.verify.hidden = !o;
  if (o) {
    const n = Array.isArray(o.findings) ? o.findings.length : 0;
    st.verify.textContent = o.sound ? 'verify: sound' : `verify: ${fmtCount(n)} finding${n === 1 ? '' : 's'}`;
    st.verify.className = `sb-item sb-verify ${o.sound ? 'ok' : 'bad'}`;
  }
  tb.why.disabled = app.selected === null || !app.frame;
}

// ---------------------------------------------------------------- views

function setView(v) {
  view = v;
  $('welcome').hidden = v !== 'welcome';
  $('unsound').hidden = v !== 'unsound';
  $('workspace').hidden = v !== 'workspace';
  $('timeline').hidden = v !== 'workspace';
  tb.mapTools.hidden = v !== 'workspace';
  tb.panel.hidden = v !== 'workspace';
  document.body.dataset.view = v;
}

function buildWelcome() {
  const open = button({ icon: 'open', label: 'Open…', title: 'Open a .hamlet recording or a store (File ▸ Open…)', cls: 'btn-primary btn-large', onClick: () => openDialog() });
  const spinner = el('span', { class: 'opening', hidden: true }, el('span', { class: 'spinner' }), el('span', { text: ' Opening…' }));
  tb.opening = spinner;
  $('welcome-actions').append(open, spinner);
}

function setOpening(busy) {
  opening = busy;
  if (tb.opening) tb.opening.hidden = !busy;
  document.body.classList.toggle('is-opening', busy);
}

async function loadRecent() {
  const host = $('recent');
  try {
    const list = await call('recent');
    renderRecent(Array.isArray(list) ? list : []);
  } catch (err) {
    setChildren(host, el('li', { class: 'recent-empty' }, notice(err.message, 'error')));
  }
}

function renderRecent(list) {
  const host = $('recent');
  clear(host);
  if (!list.length) {
    host.append(el('li', { class: 'recent-empty dim', text: 'Nothing opened yet. The recordings that ship with Hamlet are in its recordings/ folder.' }));
    return;
  }
  list.slice(0, 12).forEach((r, index) => {
    const b = el('button', { type: 'button', class: 'recent-item', title: 'Open this file again' },
      el('span', { class: 'recent-name' }, untrusted(r.title || r.path)),
      el('span', { class: 'recent-path dim' }, untrusted(r.path)),
      el('span', { class: 'recent-when dim', text: ago(r.opened_at_unix) }));
    b.addEventListener('click', () => openRecent(index));
    host.append(el('li', {}, b));
  });
}

function renderUnsound(o) {
  const host = $('unsound');
  const findings = Array.isArray(o.findings) ? o.findings : [];
  const list = el('ol', { class: 'findings' }, ...findings.slice(0, 2000).map((f) => el('li', {}, untrusted(f))));
  const open = button({ icon: 'open', label: 'Open another file…', title: 'Open a .hamlet recording or a store (File ▸ Open…)', cls: 'btn-primary', onClick: () => openDialog() });
  setChildren(host, el('div', { class: 'unsound-card' },
    el('div', { class: 'unsound-icon', attrs: { 'aria-hidden': 'true' }, text: '!' }),
    el('h1', { id: 'unsound-title', text: 'This file did not verify' }),
    el('p', { class: 'lead' }, untrusted(o.title || o.path || ''), el('span', { text: ` failed verification with ${fmtCount(findings.length)} finding${findings.length === 1 ? '' : 's'}. Nothing in it is shown: a file that does not verify may not be what it claims to be.` })),
    o.path ? el('p', { class: 'dim mono small' }, untrusted(o.path)) : null,
    el('h2', { text: 'Findings' }),
    findings.length ? list : el('p', { class: 'dim', text: 'The verifier reported no details.' }),
    findings.length > 2000 ? el('p', { class: 'dim', text: `… and ${fmtCount(findings.length - 2000)} more` }) : null,
    el('div', { class: 'welcome-actions' }, open)));
}

// ---------------------------------------------------------------- opening

/** One banner per failed open: the command rejects and `open-failed` arrives for the same failure. */
let lastOpenFailure = -Infinity;
function openFailed(message) {
  const now = performance.now();
  if (now - lastOpenFailure < 2000) return;
  lastOpenFailure = now;
  showError(message, 'Could not open');
}

async function openDialog() {
  if (opening) return;
  setOpening(true);
  try {
    const o = await call('pick_and_open');
    if (o) handleOpened(o);
  } catch (err) {
    openFailed(err.message);
  } finally {
    setOpening(false);
  }
}

/** Opens a recent file by its place in the list: the viewer opens the path it remembered. */
async function openRecent(index) {
  setOpening(true);
  try {
    const o = await call('open_recent', { index });
    if (o) handleOpened(o);
  } catch (err) {
    openFailed(err.message);
  } finally {
    setOpening(false);
  }
}

function handleOpened(o) {
  setOpening(false);
  if (!o || typeof o !== 'object') return;
  // An open answers and also emits `opened`: the same file twice in a row is shown once.
  const sig = JSON.stringify([o.path, o.title, o.branch, o.last_seq, o.sound, Array.isArray(o.findings) ? o.findings.length : 0]);
  const now = performance.now();
  if (sig === lastOpened.sig && now - lastOpened.at < 3000) return;
  lastOpened = { sig, at: now };

  app.epoch += 1;
  setPlaying(false);
  resetSeek();
  app.selected = null;
  app.opened = o;
  app.branch = null;
  clearErrors();
  emit('reset');
  emit('selected', null);
  document.title = `${o.title || 'Untitled'} — Hamlet`;
  tb.title.textContent = o.title || '';
  tb.title.title = o.path || '';

  const branches = Array.isArray(o.branches) ? o.branches : [];
  listBranches(branches);

  if (!o.sound) {
    clearTimeline();
    clearMap();
    renderUnsound(o);
    setView('unsound');
    updateStatus();
    return;
  }
  setView('workspace');
  setSideTab('agent');
  const branch = o.branch || (branches[0] && branches[0].name);
  tb.branch.value = branch;
  loadBranch(branch, Number.isFinite(o.last_seq) ? { seq: o.last_seq } : null);
  loadRecent();
}

/** The toolbar's branch list and the branch tree, from `Branch` rows. */
function listBranches(branches) {
  setChildren(tb.branch, ...branches.map((b) => el('option', { value: b.name, text: b.parent ? `${b.name} (fork of ${b.parent} at #${b.fork_seq})` : b.name })));
  tb.branchWrap.hidden = branches.length < 2;
  if (app.branch) tb.branch.value = app.branch;
  showBranches(branches);
}

/** A fork, a rename or a deletion changed the branches: list them, and show `select` (or,
 * if the branch shown is gone, `main`); a renamed branch shown is `select`, at `secs`. */
function branchesChanged({ branches, select, secs }) {
  if (!app.opened || !Array.isArray(branches)) return;
  app.opened.branches = branches;
  listBranches(branches);
  const names = branches.map((b) => b.name);
  const next = select && names.includes(select) ? select
    : names.includes(app.branch) ? null : (names.includes('main') ? 'main' : names[0]);
  if (Number.isFinite(secs)) app.cursorSecs = secs;
  if (next) { tb.branch.value = next; switchBranch(next); }
}

async function loadBranch(branch, at) {
  const epoch = app.epoch;
  app.branch = branch;
  if (app.opened) showBranches(app.opened.branches);
  clearTimeline();
  clearMap('Loading the map…');
  updateStatus();
  // Let the workspace lay out so the scrubber's width is known.
  await new Promise((r) => requestAnimationFrame(() => r()));
  const [tl, mp] = await Promise.allSettled([
    call('timeline', { branch, buckets: bucketsWanted() }),
    call('map', { branch }),
  ]);
  if (epoch !== app.epoch) return;
  app.map = mp.status === 'fulfilled' ? mp.value : null;
  if (mp.status === 'fulfilled') setMap(mp.value);
  else { mapError(mp.reason.message); showError(mp.reason.message, 'Could not load the map'); }
  if (tl.status === 'fulfilled' && tl.value && typeof tl.value === 'object') {
    setTimeline(tl.value);
    const target = at || { secs: tl.value.start_secs };
    await seek(target);
    fetchTracks(branch, epoch);
    // Once the town is on screen, ready "why?" for its first click.
    setTimeout(() => { if (epoch === app.epoch) warmUp(); }, 300);
  } else {
    const msg = tl.status === 'rejected' ? tl.reason.message : 'the timeline came back empty';
    timelineError(msg);
    showError(msg, 'Could not load the timeline');
  }
  updateStatus();
}

/** Asks for the branch's tracks; once they come every moment is drawn from them at once. */
async function fetchTracks(branch, epoch) {
  const t0 = performance.now();
  try {
    const answer = await call('tracks', { branch });
    if (epoch !== app.epoch) return;
    const tracks = loadTracks(answer);
    if (!tracks) throw new Error('tracks: the answer is not tracks');
    app.tracks = tracks;
    record('tracks', performance.now() - t0);
    emit('tracks', tracks);
    updateStatus();
  } catch (err) {
    if (epoch !== app.epoch) return;
    // Frames still come from the engine, one question each: slower, never wrong.
    console.warn('the tracks could not be loaded', err);
  }
}

/** The branch shown has new events (a change, or a continuation's steps): read it again and
 * show `seq` (its new head), keeping the agent selected. */
async function branchGrew(seq) {
  if (!app.opened) return;
  try {
    const branches = await call('branches');
    app.opened.branches = branches;
    listBranches(branches);
  } catch (err) {
    console.warn('the branches could not be read again', err);
  }
  const selected = app.selected;
  app.epoch += 1;
  setPlaying(false);
  resetSeek();
  emit('reset');
  app.selected = selected;
  emit('selected', selected);
  // No head to show (a continuation that failed): the moment shown stays.
  const at = Number.isFinite(seq) ? { seq } : { secs: app.cursorSecs };
  await loadBranch(app.branch, at);
  showChangeTarget();
}

/** A continuation committed a step: the map shows the new head, asked of the engine (the
 * tracks are stale until the run ends and the branch is read again). */
function runHead(seq, secs) {
  if (!app.timeline || !Number.isFinite(seq)) return;
  app.timeline.head_seq = Math.max(app.timeline.head_seq, seq);
  if (Number.isFinite(secs)) app.timeline.end_secs = Math.max(app.timeline.end_secs, secs);
  app.tracks = null;
  seek({ seq });
}

function switchBranch(name) {
  if (!app.opened || name === app.branch) return;
  const secs = app.cursorSecs;
  const selected = app.selected;
  app.epoch += 1;
  setPlaying(false);
  resetSeek();
  emit('reset');
  app.selected = selected;
  emit('selected', selected);
  loadBranch(name, Number.isFinite(secs) ? { secs } : null);
}

// ---------------------------------------------------------------- selection and why

function selectAgent(id) {
  if (id === null || id === undefined) return Promise.resolve();
  setSideTab('agent');
  const a = agentInFrame(id);
  if (a) reveal(a.tile);
  const p = showAgent(id);
  updateStatus();
  return p;
}

function whySelected(t0) {
  if (app.selected === null) {
    showError('Select an agent on the map first, then ask why.', 'Why?');
    return Promise.resolve(null);
  }
  setSideTab('why');
  return openWhy({ agent: app.selected, seq: app.frame ? app.frame.seq : undefined }, t0);
}

// ---------------------------------------------------------------- events between modules

function wireEvents() {
  on('frame', () => updateStatus());
  on('selected', () => updateStatus());
  on('pick-agent', (id) => selectAgent(id));
  on('why', (args) => {
    setSideTab('why');
    const { t0, ...rest } = args;
    openWhy(rest, Number.isFinite(t0) ? t0 : performance.now());
  });
  on('seek-seq', (seq) => { setPlaying(false); seek({ seq }, { t0: performance.now() }); });
  on('seek-secs', (secs) => { setPlaying(false); seek({ secs }, { t0: performance.now() }); });
  on('switch-branch', (name) => { tb.branch.value = name; switchBranch(name); });
  on('branches-changed', branchesChanged);
  on('branch-grew', ({ seq }) => branchGrew(seq));
  on('run-head', ({ seq, secs }) => runHead(seq, secs));
  on('keep-model', (m) => { app.settings.model = m; saveSettings(); });
  on('frame', () => showChangeTarget());
  on('open-now', (o) => { if (o) { handleOpened(o); setSideTab('branches'); } });
  on('inspect-call', (node) => { setSideTab('calls'); inspectNode(node); });
  on('settings-changed', () => saveSettings());
}

// ---------------------------------------------------------------- menu and keys

function onMenu(id) {
  const t0 = performance.now();
  const inWorkspace = view === 'workspace';
  const actions = {
    play: () => togglePlay(),
    'step-forward': () => step('step', 1, t0),
    'step-back': () => step('step', -1, t0),
    'event-forward': () => step('event', 1, t0),
    'event-back': () => step('event', -1, t0),
    home: () => home(t0),
    end: () => end(t0),
    'zoom-in': () => zoomIn(),
    'zoom-out': () => zoomOut(),
    'zoom-fit': () => fit(),
    'toggle-bubbles': () => toggleSetting('show_bubbles'),
    'toggle-paths': () => toggleSetting('show_paths'),
    why: () => whySelected(t0),
    'close-panel': () => setPanelOpen(false),
  };
  const fn = actions[id];
  if (!fn) return;
  if (!inWorkspace && !['toggle-bubbles', 'toggle-paths'].includes(id)) return;
  fn();
}

function isTyping(t) {
  if (!t || !(t instanceof Element)) return false;
  if (t.isContentEditable) return true;
  const tag = t.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT';
}

function wireKeys() {
  window.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || view !== 'workspace') return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (isTyping(e.target)) return;
    const onMap = document.activeElement === mapCanvas();
    const t0 = stamp(e);
    const k = e.key;
    let handled = true;
    if (k === ' ' || k === 'Spacebar') {
      const t = e.target;
      if (t instanceof Element && t.closest('button, summary, a, [role="button"], [role="tab"]')) return;
      togglePlay();
    } else if (k === 'ArrowLeft' || k === 'ArrowRight') {
      const dir = k === 'ArrowLeft' ? -1 : 1;
      if (e.shiftKey && onMap) panBy(dir, 0);
      else step(e.shiftKey ? 'event' : 'step', dir, t0);
    } else if ((k === 'ArrowUp' || k === 'ArrowDown') && onMap) {
      panBy(0, k === 'ArrowUp' ? -1 : 1);
    } else if (k === ',' || k === '<') {
      step('event', -1, t0);
    } else if (k === '.' || k === '>') {
      step('event', 1, t0);
    } else if (k === 'Home') {
      home(t0);
    } else if (k === 'End') {
      end(t0);
    } else if (k === '+' || k === '=') {
      zoomIn();
    } else if (k === '-' || k === '_') {
      zoomOut();
    } else if (k === '0') {
      fit();
    } else if (k === 'w' || k === 'W') {
      panBy(0, -1);
    } else if (k === 's' || k === 'S') {
      panBy(0, 1);
    } else if (k === 'a' || k === 'A') {
      panBy(-1, 0);
    } else if (k === 'd' || k === 'D') {
      panBy(1, 0);
    } else if (k === 'b' || k === 'B') {
      toggleSetting('show_bubbles');
    } else if (k === 'p' || k === 'P') {
      toggleSetting('show_paths');
    } else if (k === 'y' || k === 'Y') {
      whySelected(performance.now());
    } else if (k === 'Escape') {
      if (panelOpen) setPanelOpen(false);
      else handled = false;
    } else {
      handled = false;
    }
    if (handled) e.preventDefault();
  });
}

function showDrop(show) {
  $('drop').hidden = !show;
}

function wireDrop() {
  // The window's own drop handling opens the file; the page only keeps the browser from navigating to it.
  let depth = 0;
  window.addEventListener('dragenter', (e) => { e.preventDefault(); depth++; showDrop(true); });
  window.addEventListener('dragover', (e) => { e.preventDefault(); });
  window.addEventListener('dragleave', () => { depth = Math.max(0, depth - 1); if (!depth) showDrop(false); });
  window.addEventListener('drop', (e) => {
    e.preventDefault(); depth = 0; showDrop(false);
    // In a browser the page opens it itself.
    const file = e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files[0];
    if (inBrowser() && file) {
      setOpening(true);
      openFile(file).catch(() => {}).finally(() => setOpening(false));
    }
  });
}

// ---------------------------------------------------------------- test helpers

// The hooks the end-to-end tests drive the page with, installed only when the viewer is a
// test build: a release build has no `answer_next_dialog`, and no `window.hamlet`.
const hooks = {
  /** Shows the moment after event `n`; resolves when drawn. */
  seekSeq: (n) => seek({ seq: Number(n) }),
  /** Shows the moment at simulated second `s`; resolves when drawn. */
  seekSecs: (s) => seek({ secs: Number(s) }),
  /** Selects an agent by id and opens its panel; resolves when the panel has loaded. */
  select: (id) => selectAgent(id === null ? null : Number(id)),
  /** openWhy(agentId[, seq]) or openWhy({ agent, seq }) or openWhy({ event }) or openWhy('ev_…'). */
  openWhy: (arg, seq) => {
    setSideTab('why');
    if (typeof arg === 'string') return openWhy({ event: arg });
    if (typeof arg === 'number') return openWhy({ agent: arg, seq });
    if (arg && typeof arg === 'object') return openWhy(arg);
    return whySelected(performance.now());
  },
  /** What is on screen. */
  state: () => {
    const f = app.frame;
    return {
      seq: f ? f.seq : null,
      secs: f ? f.secs : null,
      time: f ? f.time : null,
      cursorSecs: app.cursorSecs,
      branch: app.branch,
      selected: app.selected,
      view,
      playing: app.playing,
      tracks: !!app.tracks,
      agents: f && Array.isArray(f.agents) ? f.agents.map((a) => ({ id: a.id, name: a.name, tile: a.tile, emoji: a.emoji })) : [],
    };
  },
  play: () => setPlaying(true),
  pause: () => setPlaying(false),
  /** The branch tree's rows as the page has them. */
  branches: () => (app.opened && Array.isArray(app.opened.branches) ? app.opened.branches : []),
  /** Forks the branch shown at the playhead (as the Fork here button); resolves to `Forked` or null. */
  fork: (name) => { setSideTab('branches'); return forkHere(name ?? ''); },
  /** Renames a branch of a store (as its ✎ field); resolves to `{ old, name, branches }`, or null if refused. */
  renameBranch: (old, name) => { setSideTab('branches'); return renameBranch(old, name); },
  /** Deletes a fork (as its × button); resolves to the answer, or null if refused. */
  deleteBranch: (name) => { setSideTab('branches'); return deleteBranch(name); },
  pickStore: (dir) => pickStore(dir),
  /** Makes an intervention at the branch's head (the engine's `Intervention`: `{ kind: 'inner-voice', agent, text }`, …);
   * resolves to what the engine said, or `{ error, field }`. */
  change: (c) => { setSideTab('change'); return makeChange(c); },
  /** Continues the branch shown for `hours` simulated hours; resolves to how it ended. */
  continueRun: (hours) => { setSideTab('change'); return continueRun(hours); },
  /** Compares the branch shown with branch `b`; resolves to the engine's diff. */
  compare: (b) => { setSideTab('compare'); return compare(b); },
  /** Draws a measurement (`{ what: 'diffusion'|'density'|'relationships'|'cost', keywords? }`); resolves to its rows. */
  plot: (ask) => { setSideTab('research'); return plot(ask); },
  /** Saves the chart's table as CSV, the save dialog answering `path`; resolves to the path written. */
  saveCsv: async (path) => { await answerNextDialog(path); return saveCsv(); },
  /** Exports the branch shown (up to `untilSecs` if given), the save dialog answering `path`; resolves to `{ path, bytes, events }`. */
  exportBranch: async (path, untilSecs) => {
    await answerNextDialog(path);
    return call('export', { branch: app.branch, untilSecs: Number.isFinite(untilSecs) ? untilSecs : null });
  },
  /** Stops a continuation after the step under way. */
  cancelRun: () => cancelRun(),
  /** The model the Intervene tab asks (the key shown only as set or not). */
  setModel: (m) => setModel(m),
  /** Shows another branch, keeping the moment where it exists. */
  switchBranch: (name) => { tb.branch.value = name; switchBranch(name); },
  /**
   * Draws each seq from the page's tracks and asks the engine for the same frame: the
   * moments where the two differ, with both (for tests; empty when they agree).
   */
  checkTracks: async (seqs) => {
    if (!app.tracks || !app.branch) throw new Error('the tracks have not come');
    const sorted = (v) => (Array.isArray(v) ? v.map(sorted)
      : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])])) : v);
    const differ = [];
    for (const seq of seqs) {
      const ours = frameAt(app.tracks, seq);
      const { micros, ...engine } = await call('frame', { branch: app.branch, seq });
      const [a, b] = [JSON.stringify(sorted(ours)), JSON.stringify(sorted(engine))];
      if (a !== b) differ.push({ seq, tracks: a, engine: b });
    }
    return differ;
  },
  /** Deeper views of the panels, for tests. */
  debug: () => ({ map: mapState(), agent: agentState(), why: whyState(), calls: callsState(), change: changeState(), compare: compareState(), plots: plotsState(), settings: { ...app.settings } }),
  stats,
};

boot();
if (hasBridge()) {
  call('answer_next_dialog', { path: null }).then(() => { window.hamlet = hooks; }, () => {});
} else if (new URLSearchParams(location.search).has('test')) {
  // A browser's page only reads: the end-to-end tests drive it with the same hooks.
  window.hamlet = hooks;
}
wake();
