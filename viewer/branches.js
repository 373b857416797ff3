// The branch tree: every branch of what is open with its fork point and length; click one to
// show it, fork the one shown at the moment on the playhead, rename a branch (✎: its name
// becomes a field; Enter renames, Escape leaves it as it was), delete a fork. Forks, renames
// and deletions are the engine's (`fork`, `rename_branch`, `delete_branch`): its refusals are
// shown as it words them.

import { app, emit } from './state.js';
import { call, answerNextDialog, inBrowser, message } from './ipc.js';
import { el, button, untrusted, setChildren, fmtCount, fmtTime } from './dom.js';

let root = null;
let list = null;
let nameInput = null;
let forkButton = null;
let status = null;
let storeLine = null;
let busy = false;
/** The branch whose name is being edited (its row shows a field), or null. */
let editing = null;
/** Where Fork here imports a recording: a folder the user picked, or null (the default
 * store under the data directory). */
let chosenStore = null;

export function initBranches(host) {
  root = host;
  nameInput = el('input', {
    type: 'text', class: 'input', placeholder: 'name (optional)',
    title: 'The new branch’s name; left empty, the engine picks one (main-what-if-1, …)',
    attrs: { 'aria-label': 'New branch name', spellcheck: 'false' },
  });
  forkButton = button({
    icon: 'fork', label: 'Fork here', cls: 'btn-primary-ghost',
    title: 'Make a new branch from the branch shown, at the moment on the playhead (whole steps); the branch shown is untouched',
    onClick: () => forkHere(),
  });
  nameInput.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); forkHere(); }
    e.stopPropagation();
  });
  const exportButton = button({
    label: 'Export…', cls: 'btn-ghost',
    title: 'Save the branch shown, with its ancestry, as a .hamlet recording that verifies (a store only)',
    onClick: () => exportShown(false),
  });
  const exportUntil = button({
    label: 'Export to here…', cls: 'btn-ghost',
    title: 'Save the branch shown up to the moment on the playhead, as a .hamlet recording',
    onClick: () => exportShown(true),
  });
  storeLine = el('div', { class: 'branches-store dim small' });
  status = el('div', { class: 'branches-status', attrs: { 'aria-live': 'polite' } });
  list = el('ul', { class: 'branch-tree', attrs: { role: 'tree', 'aria-label': 'Branches' } });
  if (inBrowser()) {
    // A page in a browser reads the recording: forks and exports need the desktop app.
    const save = button({
      label: 'Save recording', cls: 'btn-ghost',
      title: 'Save the recording this page shows, byte for byte as it was shared',
      onClick: () => call('save_recording').catch((err) => { status.textContent = message(err); }),
    });
    root.append(
      el('p', { class: 'dim small browser-only', text: 'Forking a branch and exporting one need Hamlet’s desktop app; this page only reads the recording.' }),
      el('div', { class: 'branches-controls row' }, save),
      status,
      list,
    );
    return;
  }
  root.append(
    el('div', { class: 'branches-controls row' }, forkButton, nameInput),
    storeLine,
    el('div', { class: 'branches-controls row' }, exportButton, exportUntil),
    status,
    list,
  );
}

/** Draws the tree of `branches` (`Branch` rows), the one shown marked. */
export function showBranches(branches) {
  if (!list) return;
  const rows = Array.isArray(branches) ? branches : [];
  const children = new Map();
  for (const b of rows) {
    const key = b.parent ?? '';
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(b);
  }
  const known = new Set(rows.map((b) => b.name));
  const roots = rows.filter((b) => !b.parent || !known.has(b.parent));
  const items = [];
  const walk = (b, depth) => {
    items.push(row(b, depth));
    for (const c of children.get(b.name) || []) walk(c, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  setChildren(list, ...items);
  const writable = app.opened && app.opened.kind === 'store';
  drawStoreLine(!writable && !!app.opened);
  forkButton.title = writable
    ? 'Make a new branch from the branch shown, at the moment on the playhead (whole steps); the branch shown is untouched'
    : 'Make a new branch at the moment on the playhead. A recording is read-only: it is first imported into a store under the viewer’s data directory (the recording is untouched), and the window shows that store';
}

function row(b, depth) {
  const shown = b.name === app.branch;
  const writable = app.opened && app.opened.kind === 'store';
  const where = b.parent ? `fork of ${b.parent} after #${b.fork_seq}` : 'root';
  const meta = el('span', { class: 'dim small', text: ` · ${where} · ${events(b.own_events)} of its own · head #${b.head_seq}` });
  const name = writable && editing === b.name ? nameField(b.name) : el('button', {
    type: 'button', class: 'branch-name linkish', title: shown ? 'The branch shown' : `Show ${b.name}`,
    on: { click: () => { if (!shown) emit('switch-branch', b.name); } },
  }, untrusted(b.name));
  const edit = writable && editing !== b.name
    ? button({ label: '✎', cls: 'btn-ghost btn-small branch-rename', title: `Rename ${b.name} (its id, history and forks stay)`, onClick: () => startRename(b.name) })
    : null;
  const del = b.parent
    ? button({ icon: 'close', cls: 'btn-ghost btn-small', title: `Delete the fork ${b.name} (its own events go; its parent stays)`, onClick: () => remove(b.name) })
    : null;
  return el('li', {
    class: ['branch-row', shown ? 'shown' : ''],
    attrs: { role: 'treeitem', 'aria-level': String(depth + 1), 'aria-current': shown ? 'true' : null },
    dataset: { branch: b.name },
  }, el('span', { class: 'branch-indent', attrs: { 'aria-hidden': 'true' }, text: depth ? `${'  '.repeat(depth - 1)}└ ` : '' }), name, edit, meta, del);
}

/** The field a branch's name turns into: Enter renames, Escape (or leaving it) cancels. */
function nameField(old) {
  const field = el('input', {
    type: 'text', class: 'input branch-name-input',
    title: 'The branch’s new name: Enter renames it, Escape leaves it as it was',
    attrs: { 'aria-label': `New name for ${old}`, spellcheck: 'false' },
  });
  field.value = old;
  field.addEventListener('keydown', (e) => {
    e.stopPropagation();
    if (e.key === 'Enter') { e.preventDefault(); rename(old, field.value); }
    if (e.key === 'Escape') { e.preventDefault(); stopRename(); }
  });
  field.addEventListener('blur', () => { if (!busy && editing === old) stopRename(); });
  requestAnimationFrame(() => { field.focus(); field.select(); });
  return field;
}

function startRename(name) {
  editing = name;
  say('');
  if (app.opened) showBranches(app.opened.branches);
}

function stopRename() {
  editing = null;
  if (app.opened) showBranches(app.opened.branches);
}

/** On a recording, says where Fork here will import it, with a button to pick a folder. */
function drawStoreLine(recording) {
  if (!recording) { setChildren(storeLine); storeLine.hidden = true; return; }
  storeLine.hidden = false;
  const where = chosenStore
    ? untrusted(`Fork here imports this recording into the store ${chosenStore}. `)
    : untrusted('Fork here imports this recording into a new store under the viewer’s data directory. ');
  const pick = button({ label: 'Choose a folder…', cls: 'btn-ghost btn-small', title: 'Import into a store of your choosing (an empty folder, or a store)', onClick: () => pickStore() });
  const reset = chosenStore
    ? button({ label: 'Use the default', cls: 'btn-ghost btn-small', onClick: () => useDefaultStore() })
    : null;
  setChildren(storeLine, where, pick, reset);
}

/** Forgets the folder picked: Fork here imports under the data directory again. */
async function useDefaultStore() {
  try {
    await call('pick_store', { default: true });
    chosenStore = null;
  } catch (err) {
    say(err.message, true);
  }
  drawStoreLine(app.opened && app.opened.kind !== 'store');
}

/**
 * Picks the folder Fork here imports a recording into, in the folder dialog (a test
 * build's dialog answering `dir` when given); the viewer keeps the folder, the page only
 * shows it.
 */
export async function pickStore(dir) {
  try {
    if (dir !== undefined) await answerNextDialog(dir);
    const picked = await call('pick_store');
    if (picked) chosenStore = picked;
    drawStoreLine(app.opened && app.opened.kind !== 'store');
    return chosenStore;
  } catch (err) {
    say(err.message, true);
    return null;
  }
}

const events = (n) => `${fmtCount(n)} event${n === 1 ? '' : 's'}`;

function say(text, error = false) {
  status.className = ['branches-status', error ? 'error' : ''].filter(Boolean).join(' ');
  setChildren(status, text ? untrusted(text) : null);
}

/** Forks the branch shown at the playhead's moment; the new branch is shown. */
export async function forkHere(name) {
  if (busy || !app.opened || !app.branch) return null;
  busy = true;
  forkButton.disabled = true;
  const wanted = (name ?? nameInput.value).trim();
  try {
    const secs = Number.isFinite(app.cursorSecs) ? Math.floor(app.cursorSecs) : undefined;
    const forked = await call('fork', { branch: app.branch, secs, name: wanted || null });
    nameInput.value = '';
    const cut = forked.inside_step ? ' (inside a step: going on finishes it first)' : '';
    const where = forked.imported
      ? ` The recording is read-only and untouched: it was imported into the store ${forked.imported.store} (${events(forked.imported.events)} new there), which is what is shown now.`
      : '';
    say(`Forked ${forked.name} from ${forked.parent} after #${forked.seq} (${fmtTime(forked.secs)})${cut}; ${forked.parent} is untouched.${where}`);
    // A recording was swapped for the store it went into: show the store first (its
    // `opened` event may come after this answer; the page shows one opening once).
    if (forked.imported) emit('open-now', await call('current'));
    emit('branches-changed', { branches: forked.branches, select: forked.name, secs: forked.secs });
    return forked;
  } catch (err) {
    say(err.message, true);
    return null;
  } finally {
    busy = false;
    forkButton.disabled = false;
  }
}

/**
 * Renames branch `old` to `name` (a store only); the engine's refusal is shown as it words
 * it, the field kept for another try. The branch shown stays shown, under its new name, at
 * the same moment.
 */
export async function rename(old, name) {
  if (busy) return null;
  busy = true;
  try {
    const answer = await call('rename_branch', { branch: old, name: String(name ?? '') });
    editing = null;
    say(`Renamed ${answer.old} to ${answer.name}: its id, its history and its forks stay.`);
    emit('branches-changed', {
      branches: answer.branches,
      select: app.branch === answer.old ? answer.name : null,
      secs: app.branch === answer.old ? app.cursorSecs : undefined,
    });
    return answer;
  } catch (err) {
    say(err.message, true);
    return null;
  } finally {
    busy = false;
  }
}

/** Deletes a fork; the engine's refusal is shown as it words it. */
export async function remove(name) {
  if (busy) return null;
  busy = true;
  try {
    const answer = await call('delete_branch', { branch: name });
    say(`Deleted ${name} (${events(answer.deleted)}).`);
    emit('branches-changed', { branches: answer.branches, select: null });
    return answer;
  } catch (err) {
    say(err.message, true);
    return null;
  } finally {
    busy = false;
  }
}

/** Exports the branch shown (up to the playhead when `upToHere`) through the save dialog. */
async function exportShown(upToHere) {
  if (!app.opened || !app.branch) return;
  if (app.opened.kind !== 'store') {
    say('A recording is a file already: copy it, or fork it (Fork here) to export a branch of the store.', true);
    return;
  }
  const until = upToHere && Number.isFinite(app.cursorSecs) ? Math.floor(app.cursorSecs) : null;
  try {
    const done = await call('export', { branch: app.branch, untilSecs: until, path: null });
    if (done) say(`Saved ${done.path}: ${events(done.events)}, ${fmtCount(done.bytes)} bytes; it verifies.`);
  } catch (err) {
    say(err.message, true);
  }
}
