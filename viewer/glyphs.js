// Action icons that draw on any machine: an action's emoji where a font on this machine
// draws it, else the word it stands for (never an empty box).
//
// The engine picks each action's icon from a closed list (`ACTION_ICONS` in
// engine/src/mind/plan.rs); every one has a word here (a tidy test holds the two lists
// together). An icon outside the list (an older or a foreign recording) that does not draw
// is left out: the action's own words stand beside it.

import { el, untrusted } from './dom.js';

/** Each action icon and the word shown where it does not draw. */
export const ICON_WORDS = new Map([
  ['😴', 'sleep'], ['🚿', 'shower'], ['🪥', 'teeth'], ['👕', 'dress'],
  ['🍳', 'cook'], ['☕', 'coffee'], ['🍽', 'meal'], ['🥪', 'snack'],
  ['🍰', 'cake'], ['🛒', 'shop'], ['💼', 'work'], ['💻', 'computer'],
  ['📚', 'study'], ['✍', 'write'], ['🎨', 'paint'], ['🎵', 'music'],
  ['🧹', 'clean'], ['🧺', 'laundry'], ['🌱', 'garden'], ['🔧', 'repair'],
  ['📦', 'stock'], ['🧾', 'accounts'], ['🚶', 'walk'], ['🏃', 'run'],
  ['🧘', 'rest'], ['💬', 'talk'], ['📞', 'call'], ['🎉', 'party'],
  ['🍺', 'drink'], ['📺', 'TV'], ['🛋', 'relax'], ['🏛', 'civic'],
]);

/** The fonts asked for an emoji, before the page's own. */
export const EMOJI_FONTS = '"Noto Color Emoji","Apple Color Emoji","Segoe UI Emoji","Twemoji Mozilla",sans-serif';

/** Joiners, variation selectors, skin tones and tags: they draw nothing of their own. */
function isModifier(cp) {
  return cp === 0x200d || (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0x1f3fb && cp <= 0x1f3ff)
    || (cp >= 0xe0020 && cp <= 0xe007f);
}

let probe = null;
let missing = null;
const draws = new Map();

/** The pixels `text` draws as on the probe canvas. */
function pixels(text) {
  const { g, size } = probe;
  g.clearRect(0, 0, size, size);
  g.fillText(text, 2, 2);
  return g.getImageData(0, 0, size, size).data;
}

function same(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Drawn in black, a colour font's glyph still has colour: it is surely drawn. */
function coloured(a) {
  for (let i = 0; i < a.length; i += 4) {
    if (a[i + 3] > 0 && (Math.abs(a[i] - a[i + 1]) > 24 || Math.abs(a[i + 1] - a[i + 2]) > 24)) return true;
  }
  return false;
}

function blank(a) {
  for (let i = 3; i < a.length; i += 4) if (a[i] !== 0) return false;
  return true;
}

/**
 * True when this machine's fonts draw `text`: each of its code points draws something, and
 * not the box a font draws for what it lacks. Answers are kept; a page without a canvas
 * (none in this viewer) answers true.
 */
export function emojiDraws(text) {
  const key = String(text ?? '');
  if (key === '') return false;
  const known = draws.get(key);
  if (known !== undefined) return known;
  if (probe === null) {
    const size = 40;
    const canvas = document.createElement('canvas');
    canvas.width = size;
    canvas.height = size;
    const g = canvas.getContext('2d', { willReadFrequently: true });
    if (!g) return true;
    g.font = `28px ${EMOJI_FONTS}`;
    g.textBaseline = 'top';
    g.fillStyle = '#000';
    probe = { g, size };
    // Two unassigned code points no font has: the box a font draws for a missing glyph,
    // which must not be taken for a drawing.
    missing = [pixels('\u0378'), pixels('\u{3FFFD}')];
  }
  let ok = true;
  for (const ch of key) {
    const cp = ch.codePointAt(0);
    if (isModifier(cp)) continue;
    const p = pixels(ch);
    if (coloured(p)) continue;
    if (blank(p) || missing.some((m) => same(m, p))) { ok = false; break; }
  }
  if (draws.size > 500) draws.clear();
  draws.set(key, ok);
  return ok;
}

/**
 * How to show an action's icon: `{ emoji }` where it draws, `{ word }` where it does not and
 * the icon is one of the engine's, or null (nothing to show).
 */
export function iconShown(emoji) {
  const text = String(emoji ?? '').trim();
  if (text === '') return null;
  if (emojiDraws(text)) return { emoji: text };
  const word = ICON_WORDS.get(text) ?? ICON_WORDS.get(text.replace(/\uFE0F/g, ''));
  return word ? { word } : null;
}

/**
 * An action's icon as a node for a panel: the emoji (as untrusted text) where it draws, its
 * word in a small tag where it does not, or null. `cls` is the emoji's class.
 */
export function iconNode(emoji, cls) {
  const shown = iconShown(emoji);
  if (shown === null) return null;
  if (shown.emoji) return untrusted(shown.emoji, `${cls} emoji`);
  return el('span', { class: `${cls} icon-word`, text: shown.word, title: `the action's icon (${shown.word}): no font here draws it` });
}
