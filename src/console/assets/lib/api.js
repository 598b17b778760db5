// The console's one way to the server: the public APIs through the console's gateway
// (/console/api/aws for Kinesis and Glue, /console/api/iceberg/... for the REST
// catalog, /console/api/metrics, /console/api/health) and the read-only endpoints
// documented in docs/console.md. Every POST carries the session's CSRF token.

let csrf = '';
let onSignedOut = () => {};

export function setCsrf(token) { csrf = token || ''; }
export function whenSignedOut(fn) { onSignedOut = fn; }

export class ApiError extends Error {
  constructor(status, type, message) {
    super(message || type || `HTTP ${status}`);
    this.status = status;
    this.type = type || '';
  }
}

// JSON whose integers of 16 or more digits (Iceberg snapshot ids) stay exact: they
// become strings, which is how the pages keep them.
export function parseJsonExact(text) {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
      const tok = m[0];
      out += !m[1] && !m[2] && tok.replace('-', '').length >= 16 ? `"${tok}"` : tok;
      i += tok.length;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out);
}

async function send(path, init = {}) {
  const headers = { ...(init.headers || {}) };
  if ((init.method || 'GET') !== 'GET') headers['X-CSRF-Token'] = csrf;
  const r = await fetch(path, { ...init, headers, credentials: 'same-origin', cache: 'no-store' });
  const text = await r.text();
  let body = null;
  if (text) {
    try { body = parseJsonExact(text); } catch { body = text; }
  }
  if (!r.ok) {
    const type = body && typeof body === 'object' ? (body.__type || body.error?.type || '').split('#').pop() : '';
    const message = body && typeof body === 'object' ? (body.message || body.Message || body.error?.message) : text;
    if (r.status === 401 && path.startsWith('/console/api/') && !path.endsWith('/login')) onSignedOut();
    throw new ApiError(r.status, type || r.headers.get('x-amzn-ErrorType') || '', message);
  }
  return body;
}

export const get = (path) => send(path);
export const post = (path, body) =>
  send(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

export function kinesis(op, body = {}) {
  return send('/console/api/aws', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': `Kinesis_20131202.${op}` },
    body: JSON.stringify(body),
  });
}

export function glue(op, body = {}) {
  return send('/console/api/aws', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': `AWSGlue.${op}` },
    body: JSON.stringify(body),
  });
}

// Every page of a paginated Kinesis or Glue list.
export async function all(call, op, body, key, tokenKey = 'NextToken') {
  const out = [];
  let token;
  for (let i = 0; i < 100; i++) {
    const r = await call(op, token ? { ...body, [tokenKey]: token } : body);
    out.push(...(r[key] || []));
    token = r[tokenKey];
    if (!token) break;
  }
  return out;
}

// The REST catalog: the warehouse's path prefix from /v1/config, then paths under it.
const prefixes = new Map();
export async function icebergPrefix(warehouse) {
  if (!prefixes.has(warehouse)) {
    const cfg = await get(`/console/api/iceberg/v1/config?warehouse=${encodeURIComponent(warehouse)}`);
    prefixes.set(warehouse, cfg?.overrides?.prefix ?? cfg?.defaults?.prefix ?? '');
  }
  return prefixes.get(warehouse);
}
export function nsPath(ns) { return ns.split('.').map(encodeURIComponent).join('%1F'); }
export async function iceberg(warehouse, rest) {
  const prefix = await icebergPrefix(warehouse);
  return get(`/console/api/iceberg/v1/${prefix ? encodeURIComponent(prefix) + '/' : ''}${rest}`);
}

// /metrics as {family: [{labels, value}]}.
export async function metrics() {
  const r = await fetch('/console/api/metrics', { credentials: 'same-origin', cache: 'no-store' });
  if (!r.ok) throw new ApiError(r.status, '', await r.text());
  const out = {};
  for (const line of (await r.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
    }
    (out[m[1]] ||= []).push({ labels, value: Number(m[4]) });
  }
  return out;
}

// Every shard of a stream (ListShards takes NextToken alone on later pages).
export async function listShards(stream) {
  const out = [];
  let r = await kinesis('ListShards', { StreamName: stream });
  out.push(...r.Shards);
  for (let i = 0; r.NextToken && i < 100; i++) {
    r = await kinesis('ListShards', { NextToken: r.NextToken });
    out.push(...r.Shards);
  }
  return out;
}
