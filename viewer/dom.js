// DOM helpers: safe element builders, icons, formatting, error banners and the virtual list.

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Sets attributes, refusing event-handler names: handlers go through `on`. */
function setAttrs(node, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (/^on/i.test(name)) throw new Error(`refusing handler attribute ${name}`);
    node.setAttribute(name, value === true ? '' : String(value));
  }
}

/**
 * Builds an element. `props`: class, text (set as textContent), title, attrs, on (event
 * handlers), dataset, and any other plain property (type, value, tabIndex, …).
 * Children may be nodes, strings (become text nodes), arrays, or null.
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  applyProps(node, props);
  append(node, children);
  return node;
}

/** Builds an SVG element with attributes; text (if any) as textContent. */
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  const { text, class: cls, on, ...rest } = attrs;
  if (cls) node.setAttribute('class', cls);
  setAttrs(node, rest);
  if (text !== undefined) node.textContent = String(text);
  if (on) for (const [ev, fn] of Object.entries(on)) node.addEventListener(ev, fn);
  append(node, children);
  return node;
}

function applyProps(node, props) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null) continue;
    switch (key) {
      case 'class': node.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : value; break;
      case 'text': node.textContent = String(value); break;
      case 'attrs': setAttrs(node, value); break;
      case 'on': for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn); break;
      case 'dataset': Object.assign(node.dataset, value); break;
      default:
        if (/^on/i.test(key)) throw new Error(`refusing handler property ${key}`);
        node[key] = value;
    }
  }
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Removes every child. */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

/** Replaces a node's children. */
export function setChildren(node, ...children) {
  clear(node);
  append(node, children);
  return node;
}

/** A span for text from a recording: isolated so that bidi controls cannot reorder the UI. */
export function untrusted(text, cls = '') {
  return el('span', { class: ['u', cls].filter(Boolean).join(' '), text: text ?? '', attrs: { dir: 'auto' } });
}

/**
 * Where something is: "at ADDRESS", or "outdoors" for the open ground (an empty address), as
 * the engine words it. `dim` is the class of the words around the address.
 */
export function atPlace(address, cls = '', dim = 'dim') {
  const text = String(address ?? '');
  return text.trim() === ''
    ? el('span', { class: dim, text: 'outdoors' })
    : [el('span', { class: dim, text: 'at ' }), untrusted(text, cls)];
}

export const $ = (sel, root = document) => root.querySelector(sel);

// ---------------------------------------------------------------- icons

const ICONS = {
  play: 'M7 4.5v15l12-7.5z',
  pause: 'M6.5 4.5h4v15h-4zM13.5 4.5h4v15h-4z',
  'step-back': 'M18 5v14L8.5 12zM6 5h2.2v14H6z',
  'step-forward': 'M6 5v14l9.5-7zM15.8 5H18v14h-2.2z',
  'event-back': 'M12 5v14l-8-7zM20 5v14l-8-7z',
  'event-forward': 'M4 5v14l8-7zM12 5v14l8-7z',
  home: 'M5 5h2.2v14H5zM20 5v14l-11-7z',
  end: 'M16.8 5H19v14h-2.2zM4 5v14l11-7z',
  'zoom-in': 'M10.5 4a6.5 6.5 0 015.2 10.4l4.3 4.3-1.4 1.4-4.3-4.3A6.5 6.5 0 1110.5 4zm0 2a4.5 4.5 0 100 9 4.5 4.5 0 000-9zM9.6 8h1.8v1.6H13v1.8h-1.6V13H9.6v-1.6H8V9.6h1.6z',
  'zoom-out': 'M10.5 4a6.5 6.5 0 015.2 10.4l4.3 4.3-1.4 1.4-4.3-4.3A6.5 6.5 0 1110.5 4zm0 2a4.5 4.5 0 100 9 4.5 4.5 0 000-9zM8 9.6h5v1.8H8z',
  fit: 'M4 4h6v2H6v4H4zM14 4h6v6h-2V6h-4zM4 14h2v4h4v2H4zM18 14h2v6h-6v-2h4z',
  bubbles: 'M4 5h16v10H9l-5 4zM6 7v7.6L8.3 13H18V7z',
  paths: 'M5 19a2 2 0 110-4 2 2 0 010 4zM19 9a2 2 0 110-4 2 2 0 010 4zM6.2 15.4l3.6-4.7 3 2.4 4.8-4.7 1.4 1.4-6.1 6-3-2.3-2.2 2.9z',
  why: 'M12 3a9 9 0 110 18 9 9 0 010-18zm0 2a7 7 0 100 14 7 7 0 000-14zm-1 10h2v2h-2zm1-8a3 3 0 013 3c0 1.3-.8 2-1.6 2.5-.5.3-.4.5-.4 1.5h-2c0-1.6.3-2.2 1.3-2.8.6-.4.7-.6.7-1.2a1 1 0 00-2 0H9a3 3 0 013-3z',
  panel: 'M3 5h18v14H3zm2 2v10h9V7zm11 0v10h3V7z',
  open: 'M3 6h7l2 2h9v11H3zm2 4v7h14v-7z',
  close: 'M6.4 5L12 10.6 17.6 5 19 6.4 13.4 12 19 17.6 17.6 19 12 13.4 6.4 19 5 17.6 10.6 12 5 6.4z',
  expand: 'M4 4h6v2H7.4l3.3 3.3-1.4 1.4L6 7.4V10H4zM14 4h6v6h-2V7.4l-3.3 3.3-1.4-1.4L16.6 6H14zM4 14h2v2.6l3.3-3.3 1.4 1.4L7.4 18H10v2H4zM18 14h2v6h-6v-2h2.6l-3.3-3.3 1.4-1.4 3.3 3.3z',
  refresh: 'M17.65 6.35A7.96 7.96 0 0012 4a8 8 0 108 8h-2a6 6 0 11-1.76-4.24L13 11h7V4z',
  tree: 'M4 4h6v4H4zM8 8h2v3h4v2h-4v4h4v2H8zM14 10h6v4h-6zM14 16h6v4h-6z',
  graph: 'M6 4a2 2 0 110 4 2 2 0 010-4zM18 10a2 2 0 110 4 2 2 0 010-4zM6 16a2 2 0 110 4 2 2 0 010-4zM7.6 7l8.9 3.8-.8 1.8L6.8 8.8zM6.8 15.2l8.9-3.8.8 1.8-8.9 3.8z',
  back: 'M10 6l-6 6 6 6 1.4-1.4L7.8 13H20v-2H7.8l3.6-3.6z',
  fork: 'M6 3a2.5 2.5 0 110 5 2.5 2.5 0 010-5zM18 3a2.5 2.5 0 110 5 2.5 2.5 0 010-5zM6 16a2.5 2.5 0 110 5 2.5 2.5 0 010-5zM5 8h2v8H5zM17 8h2v1.5a4.5 4.5 0 01-4.5 4.5H9a2 2 0 00-2 2H5a4 4 0 014-4h5.5A2.5 2.5 0 0017 9.5z',
};

/** An icon from the set above, as inline SVG made with createElementNS. */
export function icon(name) {
  const s = svg('svg', { class: 'icon', viewBox: '0 0 24 24', 'aria-hidden': 'true', focusable: 'false' });
  s.append(svg('path', { d: ICONS[name] || ICONS.why }));
  return s;
}

/** A toolbar-style button: icon, optional label, a title naming its shortcut. */
export function button({ icon: iconName, label, title, cls, onClick, pressed }) {
  const b = el('button', { type: 'button', class: ['btn', cls].filter(Boolean).join(' '), title });
  if (title) b.setAttribute('aria-label', title);
  if (iconName) b.append(icon(iconName));
  if (label) b.append(el('span', { class: 'btn-label', text: label }));
  if (pressed !== undefined) b.setAttribute('aria-pressed', String(!!pressed));
  if (onClick) b.addEventListener('click', onClick);
  return b;
}

// ---------------------------------------------------------------- formatting

const pad2 = (n) => String(n).padStart(2, '0');

/** Simulated seconds as the engine writes them: `day 0 07:30:00`. */
export function fmtTime(secs) {
  if (!Number.isFinite(secs)) return '—';
  const s = Math.max(0, Math.floor(secs));
  const day = Math.floor(s / 86400);
  const r = s % 86400;
  return `day ${day} ${pad2(Math.floor(r / 3600))}:${pad2(Math.floor((r % 3600) / 60))}:${pad2(r % 60)}`;
}

/** `07:30`, without the day. */
export function fmtClock(secs) {
  if (!Number.isFinite(secs)) return '—';
  const r = Math.floor(Math.max(0, secs)) % 86400;
  return `${pad2(Math.floor(r / 3600))}:${pad2(Math.floor((r % 3600) / 60))}`;
}

/** A duration: `45 s`, `12 min`, `1 h 30 min`. */
export function fmtDuration(secs) {
  if (!Number.isFinite(secs)) return '—';
  const s = Math.round(secs);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  const h = Math.floor(s / 3600);
  const m = Math.round((s % 3600) / 60);
  return m ? `${h} h ${m} min` : `${h} h`;
}

/** Cents as money, the engine's way: `$12.05`, `-$0.50`. */
export function fmtMoney(cents) {
  if (!Number.isFinite(cents)) return '—';
  const sign = cents < 0 ? '-' : '';
  const a = Math.abs(Math.trunc(cents));
  return `${sign}$${Math.floor(a / 100).toLocaleString('en-US')}.${pad2(a % 100)}`;
}

/** Engine time in µs, in the unit that reads best. */
export function fmtMicros(us) {
  if (!Number.isFinite(us)) return '—';
  if (us < 1000) return `${Math.round(us)} µs`;
  if (us < 1e6) return `${(us / 1000).toFixed(us < 1e4 ? 2 : 1)} ms`;
  return `${(us / 1e6).toFixed(2)} s`;
}

export function fmtCount(n) {
  return Number.isFinite(n) ? n.toLocaleString('en-US') : '—';
}

/** A count and its noun, singular for one: "1 call", "2 calls". */
export function fmtMany(n, noun, plural = `${noun}s`) {
  return `${fmtCount(n)} ${n === 1 ? noun : plural}`;
}

/** A score 0..1 as two decimals. */
export function fmtScore(x) {
  return Number.isFinite(x) ? x.toFixed(2) : '—';
}

/** Cuts text to `max` code points, with an ellipsis. */
export function truncate(text, max) {
  const s = String(text ?? '');
  if (s.length <= max) return s;
  const cps = Array.from(s);
  return cps.length <= max ? s : cps.slice(0, Math.max(0, max - 1)).join('') + '…';
}

export function ago(unixSecs) {
  if (!Number.isFinite(unixSecs)) return '';
  const d = Date.now() / 1000 - unixSecs;
  if (d < 90) return 'just now';
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400 * 2) return `${Math.round(d / 3600)} h ago`;
  return `${Math.round(d / 86400)} days ago`;
}

/** A stable hue for a key (an agent id, a name). */
export function hueOf(key) {
  let h = 2166136261;
  const s = String(key);
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return ((h >>> 0) % 360);
}

// ---------------------------------------------------------------- banners

const shown = new Map();

/** Shows an error in the banner area (dismissible); the same message again bumps a count. */
export function showError(message, title = 'Error') {
  const host = document.getElementById('banners');
  const text = String(message ?? 'unknown error');
  const key = `${title}\u0000${text}`;
  const existing = shown.get(key);
  if (existing && existing.isConnected) {
    const n = Number(existing.dataset.count || 1) + 1;
    existing.dataset.count = String(n);
    existing.querySelector('.banner-count').textContent = `×${n}`;
    return existing;
  }
  const banner = el('div', { class: 'banner', attrs: { role: 'alert' } },
    el('strong', { class: 'banner-title', text: title }),
    untrusted(text, 'banner-text'),
    el('span', { class: 'banner-count' }),
    button({ icon: 'close', title: 'Dismiss this message', cls: 'btn-ghost btn-small', onClick: () => { banner.remove(); shown.delete(key); } }),
  );
  shown.set(key, banner);
  host.append(banner);
  while (host.children.length > 5) host.firstElementChild.remove();
  return banner;
}

export function clearErrors() {
  const host = document.getElementById('banners');
  if (host) clear(host);
  shown.clear();
}

/** A panel's in-place message (empty state or error). */
export function notice(text, kind = 'empty', hint = '') {
  return el('div', { class: `notice notice-${kind}` },
    kind === 'error' ? untrusted(text, 'notice-text') : el('div', { class: 'notice-text', text }),
    hint ? el('div', { class: 'notice-hint', text: hint }) : null);
}

// ---------------------------------------------------------------- virtual list

/**
 * A list of fixed-height rows where only the visible rows are in the DOM. Rows are pooled
 * and re-filled on scroll, so ten thousand items scroll like ten.
 */
export class VirtualList {
  constructor(host, { rowHeight, create, fill, overscan = 6, label = 'list', onRender = null }) {
    this.rowHeight = rowHeight;
    this.onRender = onRender;
    this.create = create;
    this.fill = fill;
    this.overscan = overscan;
    this.items = [];
    this.viewport = el('div', { class: 'vlist', tabIndex: 0, attrs: { role: 'list', 'aria-label': label } });
    this.spacer = el('div', { class: 'vlist-spacer' });
    this.viewport.append(this.spacer);
    host.append(this.viewport);
    this.pool = [];
    this.scheduled = false;
    this.height = 0;
    this.viewport.addEventListener('scroll', () => this.schedule(), { passive: true });
    this.ro = new ResizeObserver(() => { this.height = this.viewport.clientHeight; this.schedule(); });
    this.ro.observe(this.viewport);
  }

  setItems(items, { keepScroll = true } = {}) {
    this.items = items;
    this.spacer.style.height = `${items.length * this.rowHeight}px`;
    if (!keepScroll) this.viewport.scrollTop = 0;
    for (const row of this.pool) row.dataset.index = '';
    this.render();
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => { this.scheduled = false; this.render(); });
  }

  scrollToIndex(i) {
    const top = i * this.rowHeight;
    const vh = this.viewport.clientHeight;
    if (top < this.viewport.scrollTop || top + this.rowHeight > this.viewport.scrollTop + vh) {
      this.viewport.scrollTop = Math.max(0, top - vh / 2);
    }
    this.render();
  }

  render() {
    const t0 = performance.now();
    this.renderRows();
    if (this.onRender) this.onRender(performance.now() - t0);
  }

  renderRows() {
    const h = this.height || this.viewport.clientHeight || 400;
    const top = this.viewport.scrollTop;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - this.overscan);
    const last = Math.min(this.items.length, Math.ceil((top + h) / this.rowHeight) + this.overscan);
    const need = Math.max(0, last - first);
    while (this.pool.length < need) {
      const row = this.create();
      row.classList.add('vrow');
      row.style.height = `${this.rowHeight}px`;
      this.pool.push(row);
      this.spacer.append(row);
    }
    for (let k = 0; k < this.pool.length; k++) {
      const row = this.pool[k];
      const i = first + k;
      if (k >= need) {
        if (!row.hidden) row.hidden = true;
        continue;
      }
      row.hidden = false;
      row.style.transform = `translateY(${i * this.rowHeight}px)`;
      if (row.dataset.index !== String(i) || row.__item !== this.items[i]) {
        row.dataset.index = String(i);
        row.__item = this.items[i];
        this.fill(row, this.items[i], i);
      }
    }
  }
}
