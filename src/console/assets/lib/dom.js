// Building the page: elements from plain data (never innerHTML, so record payloads and
// names can hold any text), SVG elements, and the number, size and time formats.

const SVG_NS = 'http://www.w3.org/2000/svg';

function apply(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else if (k === 'value' && 'value' in el) el.value = v;
    else if (k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden') el[k] = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// h('a', {href: '#/'}, 'text', child, [more]) -> HTMLElement
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs && (attrs instanceof Node || typeof attrs !== 'object' || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  apply(el, attrs);
  append(el, children);
  return el;
}

// s('rect', {x: 0, ...}) -> SVGElement
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

// el.append() writes null as the text "null": this skips null, undefined and false.
export function add(el, ...children) {
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function fmtNum(n) {
  if (n === null || n === undefined || n === '') return '—';
  const x = Number(n);
  return Number.isFinite(x) ? x.toLocaleString('en-US') : String(n);
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return '—';
  let x = Number(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (x >= 1024 && i < units.length - 1) { x /= 1024; i++; }
  return `${i === 0 ? x : x.toFixed(x < 10 ? 2 : 1)} ${units[i]}`;
}

// Epoch milliseconds (or seconds, or an ISO string) -> "2026-11-30 14:02:07Z".
export function fmtTime(t) {
  if (t === null || t === undefined || t === '') return '—';
  let ms = typeof t === 'string' && !/^\d+(\.\d+)?$/.test(t) ? Date.parse(t) : Number(t);
  if (!Number.isFinite(ms)) return String(t);
  if (ms < 1e11) ms *= 1000;  // seconds (AWS timestamps)
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function fmtSeconds(sec) {
  if (sec === null || sec === undefined) return '—';
  const x = Number(sec);
  if (x < 120) return `${Math.round(x * 10) / 10} s`;
  if (x < 7200) return `${Math.round(x / 6) / 10} min`;
  return `${Math.round(x / 360) / 10} h`;
}

export function badge(text, kind) {
  return h('span', { class: ['badge', kind] }, text);
}

// The badge kind of a stream, channel or consumer state.
export function stateKind(state) {
  if (['ACTIVE', 'ok'].includes(state)) return 'ok';
  if (['CREATING', 'UPDATING', 'DELETING', 'degraded'].includes(state)) return 'warn';
  if (['FAILED'].includes(state)) return 'bad';
  return 'info';
}

export function kv(pairs) {
  const dl = h('dl', { class: 'kv' });
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.append(h('dt', k), h('dd', v === null ? '—' : v));
  }
  return dl;
}

export function table(headers, rows, opts = {}) {
  const t = h('table', opts.attrs || {});
  t.append(h('thead', h('tr', headers.map((c) => h('th', { class: c.num ? 'num' : null }, c.label ?? c)))));
  const body = h('tbody');
  for (const r of rows) {
    const tr = r instanceof Node ? r : h('tr', r.map((cell, i) => h('td', { class: headers[i]?.num ? 'num' : null }, cell)));
    body.append(tr);
  }
  if (rows.length === 0) body.append(h('tr', h('td', { colspan: headers.length, class: 'empty' }, opts.empty || 'None.')));
  t.append(body);
  return t;
}

export function errorBox(e) {
  const msg = e && e.type ? `${e.type}: ${e.message}` : String(e && e.message ? e.message : e);
  return h('div', { class: 'error-box', role: 'alert' }, msg);
}

export function card(title, ...children) {
  return h('section', { class: 'card' }, title ? h('h2', title) : null, ...children);
}
