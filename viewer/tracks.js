// Tracks: the map's changes along a branch, kept here so a scrubbed moment is drawn at once,
// with no question to the engine. `frameAt` is engine/src/view/tracks.rs's `Tracks::frame`
// written again for the page: it draws exactly the `Frame` the engine answers (the
// end-to-end tests compare the two at many moments). Lists are flat, a fixed number of
// numbers per entry, oldest first; see COMMANDS.md.

/** Checks the shape of a `tracks` answer; returns it ready to use, or null. */
export function loadTracks(t) {
  if (!t || typeof t !== 'object') return null;
  const lists = ['strings', 'clock', 'agents', 'conversations', 'objects'];
  if (!lists.every((k) => Array.isArray(t[k]))) return null;
  if (![t.first_seq, t.head_seq, t.trail_secs, t.lines_read].every(Number.isFinite)) return null;
  // The lists become typed arrays: a million events' worth of numbers that the garbage
  // collector never has to walk.
  const flat = (list) => Float64Array.from(list, Number);
  const byId = new Map();
  for (const a of t.agents) {
    if (!a || !Number.isFinite(a.id)) return null;
    for (const k of ['names', 'tiles', 'actions', 'talk', 'cash']) {
      if (!Array.isArray(a[k])) return null;
      a[k] = flat(a[k]);
    }
    byId.set(a.id, a);
  }
  for (const c of t.conversations) {
    if (!c || !Number.isFinite(c.start) || !Array.isArray(c.agents) || !Array.isArray(c.turns)) return null;
    c.turns = flat(c.turns);
  }
  for (const o of t.objects) {
    if (!o || typeof o.address !== 'string' || !Array.isArray(o.states)) return null;
    o.states = flat(o.states);
  }
  return { ...t, clock: flat(t.clock), byId };
}

/** How many of `n` entries come before the first for which `after(i)` holds. */
function split(n, after) {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (after(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The index of the last entry (`width` numbers) whose seq (through `key`) is at most `seq`, or -1. */
function lastIndex(flat, width, seq, key) {
  const n = Math.floor(flat.length / width);
  return split(n, (i) => key(flat[i * width]) > seq) - 1;
}

const plain = (s) => s;
const positive = (s) => (s < 0 ? 0 : s);
/** A `tiles` entry's seq, walked there or not (-seq-1). */
const tileSeq = (s) => (s < 0 ? -s - 1 : s);

function text(t, i) {
  const s = t.strings[i];
  return typeof s === 'string' ? s : '';
}

function xy(flat, i) {
  return [flat[i * 3 + 1] | 0, flat[i * 3 + 2] | 0];
}

/** The last event at or before `secs`; null before the first. */
function seqAtTime(t, secs) {
  const n = Math.floor(t.clock.length / 3);
  const k = split(n, (i) => t.clock[i * 3 + 1] > secs);
  if (k === 0) return null;
  return k < n ? Math.max(0, t.clock[k * 3] - 1) : t.head_seq;
}

/** The seq a simulated time falls on, as the engine's `seq_at` answers. */
export function seqAt(t, secs) {
  const s = seqAtTime(t, secs);
  return Math.max(s === null ? t.first_seq : s, t.first_seq);
}

function tileAt(a, seq) {
  const i = lastIndex(a.tiles, 3, seq, tileSeq);
  return i < 0 ? null : xy(a.tiles, i);
}

function trail(tiles, from, seq) {
  const n = Math.floor(tiles.length / 3);
  const lo = split(n, (i) => tileSeq(tiles[i * 3]) >= from);
  const hi = split(n, (i) => tileSeq(tiles[i * 3]) > seq);
  let first = -1;
  for (let i = lo; i < hi; i++) {
    if (tiles[i * 3] >= 0) { first = i; break; }
  }
  if (first < 0) return [];
  const out = [];
  if (first > 0) out.push(xy(tiles, first - 1));
  for (let i = first; i < hi; i++) if (tiles[i * 3] >= 0) out.push(xy(tiles, i));
  return out;
}

function sim(secs) {
  const two = (n) => String(n).padStart(2, '0');
  const day = Math.floor(secs / 86400);
  return `day ${day} ${two(Math.floor(secs / 3600) % 24)}:${two(Math.floor(secs / 60) % 60)}:${two(secs % 60)}`;
}

/** The town at `seq` as the map draws it: the engine's `Frame`, from the tracks alone. */
export function frameAt(t, seqWanted) {
  const seq = Math.min(t.head_seq, Math.max(t.first_seq, Math.round(seqWanted)));
  const c = lastIndex(t.clock, 3, seq, plain);
  const secs = c < 0 ? 0 : t.clock[c * 3 + 1];
  const step = c < 0 ? 0 : t.clock[c * 3 + 2];
  const before = seqAtTime(t, Math.max(0, secs - t.trail_secs));
  const from = Math.min(before === null ? t.first_seq : before + 1, seq);

  const nameOf = (id) => {
    const a = t.byId.get(id);
    const i = a ? lastIndex(a.names, 3, seq, plain) : -1;
    return i < 0 ? `agent ${id}` : text(t, a.names[i * 3 + 1]);
  };
  const tileOf = (id) => {
    const a = t.byId.get(id);
    return (a && tileAt(a, seq)) || [0, 0];
  };
  const underWay = (cv) => cv.start <= seq && (cv.end === null || cv.end === undefined || seq < cv.end);

  const agents = [];
  for (const a of t.agents) {
    const ni = lastIndex(a.names, 3, seq, plain);
    if (ni < 0) continue;
    const ai = lastIndex(a.actions, 4, seq, plain);
    const ti = lastIndex(a.talk, 2, seq, positive);
    let talking = [];
    if (ti >= 0) {
      const cv = t.conversations[a.talk[ti * 2 + 1]];
      if (cv && underWay(cv)) talking = cv.agents.filter((o) => o !== a.id).map(nameOf);
    }
    const ci = lastIndex(a.cash, 2, seq, positive);
    agents.push({
      id: a.id,
      name: text(t, a.names[ni * 3 + 1]),
      initials: text(t, a.names[ni * 3 + 2]),
      tile: tileAt(a, seq) || [0, 0],
      emoji: ai < 0 ? '' : text(t, a.actions[ai * 4 + 1]),
      action: ai < 0 ? '' : text(t, a.actions[ai * 4 + 2]),
      address: ai < 0 ? '' : text(t, a.actions[ai * 4 + 3]),
      talking_with: talking,
      trail: trail(a.tiles, from, seq),
      cash_cents: ci < 0 ? 0 : a.cash[ci * 2 + 1],
    });
  }

  const bubbles = [];
  for (const cv of t.conversations) {
    if (!underWay(cv)) continue;
    const until = Math.min(seq, cv.start + t.lines_read);
    const i = lastIndex(cv.turns, 3, until, plain);
    if (i < 0) continue;
    const speaker = cv.turns[i * 3 + 1];
    bubbles.push({ speaker: nameOf(speaker), text: text(t, cv.turns[i * 3 + 2]), tile: tileOf(speaker) });
  }

  const objects = {};
  for (const o of t.objects) {
    const i = lastIndex(o.states, 2, seq, positive);
    if (i < 0) continue;
    const s = o.states[i * 2 + 1];
    if (s >= 0) objects[o.address] = text(t, s);
  }
  return { seq, secs, time: sim(secs), step, agents, bubbles, objects };
}
