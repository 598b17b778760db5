// Interop test of the Parquet writer and the JSON converter: random schemas (nested,
// optional at every level) x random records (nulls, empty lists and maps, Unicode,
// extreme numbers, long strings) go through `icestream convert`; every file is read
// back by two independent readers, DuckDB (@duckdb/node-api) and hyparquet (with
// hyparquet-compressors), and compared value by value with what the test generated.
// Statistics are compared with DuckDB's parquet_metadata, field ids with
// parquet_schema, and the iceberg.schema footer entry with the schema.
//
// Usage: node parquet_roundtrip.mjs ICESTREAM_BINARY NPM_DIR [SEED] [CASES]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';

import { resolve as resolvePath } from 'node:path';
const [binaryArg, npmDirArg, seedArg, casesArg] = process.argv.slice(2);
const binary = binaryArg && resolvePath(binaryArg);
const npmDir = npmDirArg && resolvePath(npmDirArg);
if (!binary || !npmDir) {
  console.error('usage: parquet_roundtrip.mjs ICESTREAM_BINARY NPM_DIR [SEED] [CASES]');
  process.exit(2);
}
const require = createRequire(join(npmDir, 'package.json'));
const load = (p) => import(pathToFileURL(require.resolve(p)).href);
const { DuckDBInstance } = await load('@duckdb/node-api');
const { parquetReadObjects, parquetMetadataAsync, asyncBufferFromFile } = await import(
  pathToFileURL(join(npmDir, 'node_modules/hyparquet/src/node.js')).href);
const { compressors } = await import(
  pathToFileURL(join(npmDir, 'node_modules/hyparquet-compressors/src/index.js')).href);

const SEED = Number(seedArg ?? 20261129);
const CASES = Number(casesArg ?? 24);

// ---------------------------------------------------------------- random helpers
function mulberry32(a) {
  return () => {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
let rnd = mulberry32(SEED);
const int = (n) => Math.floor(rnd() * n);
const pick = (a) => a[int(a.length)];
const chance = (p) => rnd() < p;
const bigRand = (digits) => {
  let s = '';
  for (let i = 0; i < digits; i++) s += String(int(10));
  return BigInt(s || '0');
};
const bytes = (n) => Buffer.from(Array.from({ length: n }, () => int(256)));
const hex = (b) => Buffer.from(b).toString('hex');

// ---------------------------------------------------------------- schemas
// A schema node: {id, name, required, type}; type is a primitive name string
// ("decimal(P,S)", "fixed[L]") or {type:'struct'|'list'|'map', ...} as in Iceberg JSON.
const PRIMS = ['boolean', 'int', 'long', 'float', 'double', 'decimal', 'date', 'time',
  'timestamp', 'timestamptz', 'string', 'uuid', 'fixed', 'binary'];
const JSON_SCHEMA_PRIMS = ['boolean', 'int', 'long', 'double', 'decimal38', 'date', 'time',
  'timestamptz', 'string', 'uuid', 'binary', 'enum'];

function makeSchema(jsonSchemaMode) {
  let nextId = 1;
  const prim = () => {
    const p = pick(jsonSchemaMode ? JSON_SCHEMA_PRIMS : PRIMS);
    if (p === 'decimal') { const P = 1 + int(38); return `decimal(${P},${int(P + 1)})`; }
    if (p === 'decimal38') return `decimal(38,${int(10)})`;
    if (p === 'fixed') return `fixed[${1 + int(20)}]`;
    if (p === 'enum') return { enum: ['red', 'green', 'blue', 'ünï'] };
    return p;
  };
  const type = (depth) => {
    const r = rnd();
    if (depth >= 4 || r < 0.6) return prim();
    if (r < 0.75) return struct(depth + 1);
    if (r < 0.88) return { type: 'list', 'element-id': nextId++, 'element-required': chance(0.4), element: type(depth + 1) };
    return { type: 'map', 'key-id': nextId++, key: 'string', 'value-id': nextId++, 'value-required': chance(0.4), value: type(depth + 1) };
  };
  const struct = (depth) => {
    const n = 1 + int(depth === 0 ? 8 : 4);
    const fields = [];
    for (let i = 0; i < n; i++) fields.push({ id: nextId++, name: `f${i}_${pick(['a', 'é', 'x y', 'Z'])}`, required: chance(0.3) });
    for (const f of fields) f.type = type(depth);
    return { type: 'struct', fields };
  };
  const root = struct(0);
  return { type: 'struct', 'schema-id': 0, fields: root.fields };
}

// Iceberg schema JSON: enum pseudo-types become strings.
function icebergType(t) {
  if (typeof t === 'object' && t.enum) return 'string';
  if (typeof t === 'string') return t;
  if (t.type === 'struct') return { type: 'struct', fields: t.fields.map((f) => ({ ...f, type: icebergType(f.type) })) };
  if (t.type === 'list') return { ...t, element: icebergType(t.element) };
  return { ...t, value: icebergType(t.value) };
}

// JSON Schema (draft-07) with the same shape; our converter assigns its own ids.
function jsonSchemaOf(t, nullable) {
  const n = (s) => (nullable ? { ...s, type: [s.type, 'null'] } : s);
  if (typeof t === 'object' && t.enum) return { enum: nullable ? [...t.enum, null] : t.enum };
  if (typeof t === 'object') {
    if (t.type === 'struct') {
      return n({ type: 'object', properties: Object.fromEntries(t.fields.map((f) => [f.name, jsonSchemaOf(f.type, false)])),
        required: t.fields.filter((f) => f.required).map((f) => f.name) });
    }
    if (t.type === 'list') return n({ type: 'array', items: jsonSchemaOf(t.element, !t['element-required']) });
    return n({ type: 'object', additionalProperties: jsonSchemaOf(t.value, !t['value-required']) });
  }
  const m = /^decimal\(38,(\d+)\)$/.exec(t);
  if (m) return n({ type: 'number', multipleOf: Number(`1e-${m[1]}`) });
  switch (t) {
    case 'boolean': return n({ type: 'boolean' });
    case 'int': return n({ type: 'integer', minimum: -2147483648, maximum: 2147483647 });
    case 'long': return n({ type: 'integer' });
    case 'double': return n({ type: 'number' });
    case 'date': return n({ type: 'string', format: 'date' });
    case 'time': return n({ type: 'string', format: 'time' });
    case 'timestamptz': return n({ type: 'string', format: 'date-time' });
    case 'uuid': return n({ type: 'string', format: 'uuid' });
    case 'binary': return n({ type: 'string', contentEncoding: 'base64' });
    default: return n({ type: 'string' });
  }
}

// ---------------------------------------------------------------- values
// Each generator returns {json: text, v: canonical value}. Canonical forms: boolean,
// int/float/double as numbers, long/time/timestamps as decimal strings of the integer,
// decimals as {u: unscaled string, s: scale}, dates as day numbers, uuid as lowercase
// text, fixed/binary as hex, strings as-is, lists as arrays, maps as [key, value] pairs,
// structs as objects.
const pad = (n, w) => String(n).padStart(w, '0');
function civil(days) {
  const d = new Date(days * 86400000);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`;
}
function timeText(us) {
  const s = Math.floor(us / 1e6), f = us % 1e6;
  return `${pad(Math.floor(s / 3600), 2)}:${pad(Math.floor(s / 60) % 60, 2)}:${pad(s % 60, 2)}` +
    (f || chance(0.3) ? '.' + pad(f, 6) : '');
}
const MIN_DAY = -719162, MAX_DAY = 2932896;  // 0001-01-01 .. 9999-12-31
const STRINGS = ['', 'a', 'héllo wörld', '日本語テキスト', '🚀🎉 emoji', 'quote " backslash \\ tab \t nl \n',
  '\u0001\u001f control', 'Ωmega', 'zzzz', '\u00ff\u0100', 'A'.repeat(70), 'é'.repeat(40) + 'z'];

function genPrim(t) {
  if (typeof t === 'object' && t.enum) { const s = pick(t.enum); return { json: JSON.stringify(s), v: s }; }
  const dm = /^decimal\((\d+),(\d+)\)$/.exec(t);
  if (dm) {
    const P = Number(dm[1]), S = Number(dm[2]);
    let u = chance(0.2) ? 10n ** BigInt(P) - 1n : bigRand(1 + int(P));
    if (chance(0.5)) u = -u;
    const abs = (u < 0n ? -u : u).toString().padStart(S + 1, '0');
    let text = (u < 0n ? '-' : '') + (S ? abs.slice(0, abs.length - S) + '.' + abs.slice(abs.length - S) : abs);
    if (S && chance(0.2)) text += '00';  // exact trailing zeros are accepted
    return { json: text, v: { u: u.toString(), s: S } };
  }
  const fm = /^fixed\[(\d+)\]$/.exec(t);
  if (fm) { const b = bytes(Number(fm[1])); return { json: JSON.stringify(b.toString('base64')), v: hex(b) }; }
  switch (t) {
    case 'boolean': { const b = chance(0.5); return { json: String(b), v: b }; }
    case 'int': { const v = pick([-2147483648, 2147483647, 0, -1, int(1000), int(2 ** 31) - 2 ** 30]); return { json: String(v), v }; }
    case 'long': {
      const v = pick([-(2n ** 63n), 2n ** 63n - 1n, 0n, BigInt(int(1e9)) * 1000003n, -BigInt(int(1e6))]);
      return { json: v.toString(), v: v.toString() };
    }
    case 'float': {
      const v = Math.fround(pick([3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45, 0, 1.5, (rnd() - 0.5) * 1e6]));
      return { json: String(v), v };
    }
    case 'double': {
      const v = pick([1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 0, -2.5, (rnd() - 0.5) * 1e12, rnd()]);
      return { json: String(v), v };
    }
    case 'date': {
      const d = pick([MIN_DAY, MAX_DAY, 0, -1, MIN_DAY + int(MAX_DAY - MIN_DAY)]);
      return { json: JSON.stringify(civil(d)), v: d };
    }
    case 'time': { const us = pick([0, 86399999999, int(86400) * 1e6 + int(1e6)]); return { json: JSON.stringify(timeText(us)), v: String(us) }; }
    case 'timestamp':
    case 'timestamptz': {
      const day = pick([MIN_DAY, MAX_DAY, 0, -1, MIN_DAY + int(MAX_DAY - MIN_DAY)]);
      const us = pick([0, 86399999999, int(86400) * 1e6 + int(1e6)]);
      let text = `${civil(day)}T${timeText(us)}`;
      let micros = BigInt(day) * 86400000000n + BigInt(us);
      if (t === 'timestamptz') {
        if (chance(0.5) || day === MIN_DAY || day === MAX_DAY) {
          text += 'Z';
        } else {
          // Same instant written with a +05:30 offset (local time 5h30 later).
          const shifted = micros + 19800000000n;
          const sd = Number(shifted / 86400000000n - (shifted % 86400000000n < 0n ? 1n : 0n));
          const su = Number(shifted - BigInt(sd) * 86400000000n);
          text = `${civil(sd)}T${timeText(su)}+05:30`;
        }
      }
      return { json: JSON.stringify(text), v: micros.toString() };
    }
    case 'string': {
      let s = pick(STRINGS);
      if (chance(0.05)) s = 'long-' + 'ß✓'.repeat(2000 + int(3000));
      if (chance(0.3)) s += String(int(1000));
      return { json: JSON.stringify(s), v: s };
    }
    case 'uuid': {
      const h = hex(bytes(16));
      const text = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
      return { json: JSON.stringify(chance(0.3) ? text.toUpperCase() : text), v: text };
    }
    case 'binary': { const b = bytes(pick([0, 1, 5, 17, 100])); return { json: JSON.stringify(b.toString('base64')), v: hex(b) }; }
  }
  throw new Error('unknown type ' + JSON.stringify(t));
}

function genValue(t, depth) {
  if (typeof t === 'object' && t.type === 'struct') {
    const parts = [], v = {};
    for (const f of t.fields) {
      const missing = !f.required && chance(0.15);
      if (missing) { v[f.name] = null; continue; }
      if (!f.required && chance(0.15)) { parts.push(`${JSON.stringify(f.name)}:null`); v[f.name] = null; continue; }
      const c = genValue(f.type, depth + 1);
      parts.push(`${JSON.stringify(f.name)}:${c.json}`);
      v[f.name] = c.v;
    }
    if (chance(0.2)) parts.splice(int(parts.length + 1), 0, `"__extra__":{"dropped":[1,"x",{"y":null}]}`);
    for (let i = parts.length - 1; i > 0; i--) { const j = int(i + 1); [parts[i], parts[j]] = [parts[j], parts[i]]; }
    return { json: `{${parts.join(',')}}`, v };
  }
  if (typeof t === 'object' && t.type === 'list') {
    const n = pick([0, 0, 1, 2, 3, 5]);
    const items = [];
    for (let i = 0; i < n; i++) {
      items.push(!t['element-required'] && chance(0.2) ? { json: 'null', v: null } : genValue(t.element, depth + 1));
    }
    return { json: `[${items.map((c) => c.json).join(',')}]`, v: items.map((c) => c.v) };
  }
  if (typeof t === 'object' && t.type === 'map') {
    const n = pick([0, 0, 1, 2, 4]);
    const keys = new Set();
    while (keys.size < n) keys.add(pick(['k', 'ключ', '键', '1', '2', '', 'long key ' + int(100)]) + int(50));
    const entries = [...keys].map((k) => [k, !t['value-required'] && chance(0.2) ? { json: 'null', v: null } : genValue(t.value, depth + 1)]);
    return { json: `{${entries.map(([k, c]) => `${JSON.stringify(k)}:${c.json}`).join(',')}}`, v: entries.map(([k, c]) => [k, c.v]) };
  }
  return genPrim(t);
}

// ---------------------------------------------------------------- normalizers
const kind = (t) => (typeof t === 'object' ? (t.enum ? 'string' : t.type) : t.replace(/[[(].*/, ''));

function fromDuck(t, x) {
  if (x === null || x === undefined) return null;
  switch (kind(t)) {
    case 'struct': return Object.fromEntries(t.fields.map((f) => [f.name, fromDuck(f.type, x.entries[f.name])]));
    case 'list': return x.items.map((e) => fromDuck(t.element, e));
    case 'map': return x.entries.map((e) => [e.key, fromDuck(t.value, e.value)]);
    case 'long': return x.toString();
    case 'decimal': {
      const S = Number(/,(\d+)\)/.exec(t)[1]);
      if (typeof x === 'object' && 'value' in x) return { u: x.value.toString(), s: x.scale };
      // Small decimals come back as JS numbers / strings in some versions.
      return { u: BigInt(Math.round(Number(x) * 10 ** S)).toString(), s: S };
    }
    case 'date': return x.days;
    case 'time': return x.micros.toString();
    case 'timestamp': case 'timestamptz': return x.micros.toString();
    case 'uuid': return x.toString();
    case 'fixed': case 'binary': return hex(x.bytes);
    default: return x;
  }
}

// hyparquet: parsers keep timestamps/dates raw; decimals are JS numbers (its own
// conversion), so the expected side is converted the same way.
function fromHyparquet(t, x) {
  if (x === null || x === undefined) return null;
  switch (kind(t)) {
    case 'struct': return Object.fromEntries(t.fields.map((f) => [f.name, fromHyparquet(f.type, x[f.name])]));
    case 'list': return x.map((e) => fromHyparquet(t.element, e));
    case 'map': return Object.entries(x).map(([k, v]) => [k, fromHyparquet(t.value, v)]).sort(cmpEntry);
    case 'long': case 'time': case 'timestamp': case 'timestamptz': return BigInt(x).toString();
    case 'decimal': return x;
    case 'fixed': case 'binary': return hex(x);
    default: return x;
  }
}
const cmpEntry = (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
function expectedForHyparquet(t, v) {
  if (v === null) return null;
  switch (kind(t)) {
    case 'struct': return Object.fromEntries(t.fields.map((f) => [f.name, expectedForHyparquet(f.type, v[f.name])]));
    case 'list': return v.map((e) => expectedForHyparquet(t.element, e));
    case 'map': return v.map(([k, e]) => [k, expectedForHyparquet(t.value, e)]).sort(cmpEntry);
    case 'decimal': return Number(BigInt(v.u)) / 10 ** v.s;
    default: return v;
  }
}

// ---------------------------------------------------------------- statistics
// Walks expected rows like the shredder: per leaf path, the non-null values and the
// number of null slots.
function leaves(t, path, out, inRepeated, id) {
  switch (kind(t)) {
    case 'struct': for (const f of t.fields) leaves(f.type, [...path, f.name], out, inRepeated, f.id); break;
    case 'list': leaves(t.element, [...path, 'list', 'element'], out, true, t['element-id']); break;
    case 'map':
      leaves('string', [...path, 'key_value', 'key'], out, true, t['key-id']);
      leaves(t.value, [...path, 'key_value', 'value'], out, true, t['value-id']);
      break;
    default: out.push({ path: path.join('.'), id, type: t, values: [], nulls: 0, inRepeated });
  }
  return out;
}
function collect(t, v, path, byPath) {
  const k = kind(t);
  if (v === null || (k === 'list' && v.length === 0) || (k === 'map' && v.length === 0)) {
    for (const l of leaves(t, path, [], false)) byPath.get(l.path).nulls++;
    return;
  }
  switch (k) {
    case 'struct': for (const f of t.fields) collect(f.type, v[f.name], [...path, f.name], byPath); break;
    case 'list': for (const e of v) collect(t.element, e, [...path, 'list', 'element'], byPath); break;
    case 'map':
      for (const [key, e] of v) {
        collect('string', key, [...path, 'key_value', 'key'], byPath);
        collect(t.value, e, [...path, 'key_value', 'value'], byPath);
      }
      break;
    default: byPath.get(path.join('.')).values.push(v);
  }
}
const utf8Less = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0;
// Parquet min/max of BYTE_ARRAY strings longer than 64 bytes are truncated by the
// writer: min to a prefix of at most 64 bytes, max to such a prefix with its last code
// point incremented.
function truncMin(s) {
  const b = Buffer.from(s);
  if (b.length <= 64) return s;
  let out = '';
  for (const ch of s) { if (Buffer.byteLength(out + ch) > 64) break; out += ch; }
  return out;
}
function truncMax(s) {
  if (Buffer.byteLength(s) <= 64) return s;
  const cps = [];
  for (const ch of s) { if (Buffer.byteLength(cps.join('') + ch) > 64) break; cps.push(ch); }
  while (cps.length) {
    let cp = cps.pop().codePointAt(0) + 1;
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xe000;
    if (cp > 0x10ffff) continue;
    const cand = cps.join('') + String.fromCodePoint(cp);
    if (Buffer.byteLength(cand) <= 64) return cand;
  }
  return null;
}
function expectedStats(leaf) {
  const vals = leaf.values;
  if (!vals.length) return null;
  const k = kind(leaf.type);
  if (['int', 'double', 'float'].includes(k)) {
    let lo = Math.min(...vals), hi = Math.max(...vals);
    const f = k === 'float' ? Math.fround : (x) => x;  // DuckDB prints floats at float precision
    return { min: lo, max: hi, cmp: (a, b) => f(Number(a)) === b };
  }
  if (k === 'long') {
    const b = vals.map(BigInt);
    return { min: b.reduce((a, c) => (c < a ? c : a)), max: b.reduce((a, c) => (c > a ? c : a)), cmp: (a, b2) => BigInt(a) === b2 };
  }
  if (k === 'date') {
    return { min: civil(Math.min(...vals)), max: civil(Math.max(...vals)), cmp: (a, b) => a === b };
  }
  if (k === 'decimal') {
    const b = vals.map((d) => BigInt(d.u));
    const s = vals[0].s;
    const fmt = (u) => { const neg = u < 0n; const a = (neg ? -u : u).toString().padStart(s + 1, '0'); return (neg ? '-' : '') + (s ? a.slice(0, a.length - s) + '.' + a.slice(a.length - s) : a); };
    // DuckDB renders decimals its own way ("-.5"): compare unscaled values.
    const unscaled = (txt) => {
      const neg = txt.startsWith('-');
      const [ip, fp = ''] = txt.replace('-', '').split('.');
      const u = BigInt((ip || '0') + fp.padEnd(s, '0').slice(0, s));
      return neg ? -u : u;
    };
    return { min: fmt(b.reduce((a, c) => (c < a ? c : a))), max: fmt(b.reduce((a, c) => (c > a ? c : a))),
      cmp: (a, b2) => unscaled(a) === unscaled(b2) };
  }
  if (k === 'string' && typeof leaf.type === 'string') {
    let lo = vals[0], hi = vals[0];
    for (const v of vals) { if (utf8Less(v, lo)) lo = v; if (utf8Less(hi, v)) hi = v; }
    return { min: truncMin(lo), max: truncMax(hi), cmp: (a, b) => a === b };
  }
  if (k === 'uuid') {  // unsigned bytes = lexicographic order of the lowercase hex text
    const sorted = [...vals].sort();
    return { min: sorted[0], max: sorted[sorted.length - 1], cmp: (a, b) => a === b };
  }
  if (k === 'boolean') {
    return { min: vals.some((v) => !v) ? 'false' : 'true', max: vals.some((v) => v) ? 'true' : 'false', cmp: (a, b) => a === b };
  }
  return null;  // other types: null counts only (DuckDB renders their bounds in its own formats)
}

// Iceberg single-value serialization (Iceberg spec Appendix D) of the lower and upper
// bound of a leaf's values, computed here from the generated values; strings truncated
// to 16 code points and binary to 16 bytes (Java's truncate(16)).
function le(bytesN, v) {
  const b = Buffer.alloc(bytesN);
  if (bytesN === 4) b.writeInt32LE(v); else b.writeBigInt64LE(BigInt(v));
  return b.toString('hex');
}
function minimalBigEndian(u) {
  let bytes = 1;
  while (u < -(1n << BigInt(8 * bytes - 1)) || u >= (1n << BigInt(8 * bytes - 1))) bytes++;
  const m = (1n << BigInt(8 * bytes)) - 1n;
  return ((u & m)).toString(16).padStart(2 * bytes, '0');
}
function incrementCodePoints(cps) {
  while (cps.length) {
    let cp = cps.pop().codePointAt(0) + 1;
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xe000;
    if (cp <= 0x10ffff) return cps.join('') + String.fromCodePoint(cp);
  }
  return null;
}
function icebergBounds(leaf) {
  const vals = leaf.values;
  if (!vals.length) return null;
  const k = kind(leaf.type);
  const minmax = (less) => {
    let lo = vals[0], hi = vals[0];
    for (const v of vals) { if (less(v, lo)) lo = v; if (less(hi, v)) hi = v; }
    return [lo, hi];
  };
  switch (k) {
    case 'boolean': return [vals.every((v) => v) ? '01' : '00', vals.some((v) => v) ? '01' : '00'];
    case 'int': case 'date': { const [a, b] = minmax((x, y) => x < y); return [le(4, a), le(4, b)]; }
    case 'long': case 'time': case 'timestamp': case 'timestamptz': {
      const [a, b] = minmax((x, y) => BigInt(x) < BigInt(y)); return [le(8, a), le(8, b)];
    }
    case 'float': case 'double': {
      const [a, b] = minmax((x, y) => x < y);
      const w = k === 'float' ? 4 : 8;
      const enc = (x) => { const buf = Buffer.alloc(w); if (w === 4) buf.writeFloatLE(x); else buf.writeDoubleLE(x); return buf.toString('hex'); };
      return [enc(a), enc(b)];
    }
    case 'decimal': { const [a, b] = minmax((x, y) => BigInt(x.u) < BigInt(y.u)); return [minimalBigEndian(BigInt(a.u)), minimalBigEndian(BigInt(b.u))]; }
    case 'string': {
      const [a, b] = minmax(utf8Less);
      const lo = [...a].slice(0, 16).join('');
      const cps = [...b];
      const hi = cps.length <= 16 ? b : incrementCodePoints(cps.slice(0, 16));
      return [Buffer.from(lo).toString('hex'), hi === null ? null : Buffer.from(hi).toString('hex')];
    }
    case 'uuid': { const [a, b] = minmax((x, y) => x < y); return [a.replaceAll('-', ''), b.replaceAll('-', '')]; }
    case 'fixed': { const [a, b] = minmax((x, y) => x < y); return [a, b]; }
    case 'binary': {
      const [a, b] = minmax((x, y) => x < y);  // hex text order = byte order
      let hi = b;
      if (b.length > 32) {
        const bytes = [...Buffer.from(b.slice(0, 32), 'hex')];
        while (bytes.length && bytes[bytes.length - 1] === 0xff) bytes.pop();
        if (bytes.length) { bytes[bytes.length - 1]++; hi = Buffer.from(bytes).toString('hex'); } else hi = null;
      }
      return [a.slice(0, 32), hi];
    }
  }
  return null;
}

// Expected (name, field_id) in parquet_schema order.
function schemaElements(fields, out) {
  for (const f of fields) {
    const t = f.type;
    out.push([f.name, f.id]);
    if (typeof t === 'object' && t.type === 'struct') schemaElements(t.fields, out);
    if (typeof t === 'object' && t.type === 'list') {
      out.push(['list', null]);
      schemaElements([{ name: 'element', id: t['element-id'], type: t.element }], out);
    }
    if (typeof t === 'object' && t.type === 'map') {
      out.push(['key_value', null]);
      schemaElements([{ name: 'key', id: t['key-id'], type: t.key }, { name: 'value', id: t['value-id'], type: t.value }], out);
    }
  }
  return out;
}

// ---------------------------------------------------------------- the test
const dir = mkdtempSync(join(tmpdir(), 'icestream-parquet-interop-'));
const duck = await (await DuckDBInstance.create(':memory:')).connect();
let failures = 0, checkedValues = 0, checkedStats = 0, checkedBounds = 0;

async function runCase(c) {
  const jsonSchemaMode = c % 3 === 2;
  const schema = makeSchema(jsonSchemaMode);
  const root = { type: 'struct', fields: schema.fields };
  const iceberg = { type: 'struct', 'schema-id': 0, fields: icebergType(root).fields };
  const nrows = pick([1, 50, 300, 2000]);
  const rows = [];
  const lines = [];
  let rejected = 0;
  for (let i = 0; i < nrows; i++) {
    const g = genValue(root, 0);
    rows.push(g.v);
    lines.push(g.json);
    if (chance(0.02)) { lines.push('{"this is": "not valid'); rejected++; }
    if (chance(0.02)) { lines.push('[1,2,3]'); rejected++; }
  }
  const schemaPath = join(dir, `s${c}.json`), inPath = join(dir, `r${c}.jsonl`), outPath = join(dir, `o${c}.parquet`);
  const schemaDoc = jsonSchemaMode ? { $schema: 'http://json-schema.org/draft-07/schema#', ...jsonSchemaOf(root, false) } : iceberg;
  writeFileSync(schemaPath, JSON.stringify(schemaDoc));
  writeFileSync(inPath, lines.join('\n') + '\n');
  const codec = pick(['zstd', 'snappy', 'gzip', 'none']);
  const args = ['convert', '--schema', schemaPath, '--input', inPath, '--output', outPath, '--compression', codec,
    '--threads', String(1 + int(2))];
  if (!process.env.ICESTREAM_INTEROP_VERBOSE) args.push('--quiet');
  if (chance(0.5)) args.push('--row-group-size', String(pick([20000, 200000])), '--page-size', String(pick([1000, 8192])));
  if (chance(0.3)) args.push('--no-dictionary');
  args.push('--print-metrics');
  const out = execFileSync(binary, args, { encoding: 'utf8' });
  if (chance(0.3)) {
    // The file must not depend on the number of threads.
    const other = outPath + '.t';
    const targs = args.map((a, i) => (args[i - 1] === '--output' ? other : args[i - 1] === '--threads' ? (a === '1' ? '2' : '1') : a));
    execFileSync(binary, targs, { encoding: 'utf8' });
    assert.ok(readFileSync(other).equals(readFileSync(outPath)), `case ${c}: --threads changed the file`);
  }
  assert.match(out, new RegExp(`rows written: ${nrows}\\n`), `case ${c}: ${out}`);
  assert.match(out, new RegExp(`rows rejected: ${rejected}\\n`), `case ${c}: ${out}`);

  // The Iceberg types the file holds (JSON Schema mode: as the mapping produced them).
  // (hyparquet: DuckDB's parquet_kv_metadata escapes quotes.)
  const file = await asyncBufferFromFile(outPath);
  const md = await parquetMetadataAsync(file);
  const kv = Object.fromEntries(md.key_value_metadata.map((e) => [e.key, e.value]));
  const written = JSON.parse(kv['iceberg.schema']);
  if (!jsonSchemaMode) assert.deepEqual(written, iceberg, `case ${c}: iceberg.schema footer entry`);
  const wroot = { type: 'struct', fields: written.fields };

  // DuckDB, value by value.
  const res = await duck.runAndReadAll(`select * from read_parquet('${outPath}')`);
  const got = res.getRowObjects().map((r) => fromDuck(wroot, { entries: r }));
  assert.equal(got.length, nrows, `case ${c}: DuckDB row count`);
  for (let i = 0; i < nrows; i++) {
    assert.deepEqual(got[i], rows[i], `case ${c} (${codec}) row ${i}: DuckDB value differs`);
    checkedValues++;
  }

  // hyparquet, value by value.
  const hrows = await parquetReadObjects({
    file, compressors, utf8: false,
    parsers: {
      timestampFromMilliseconds: (v) => v, timestampFromMicroseconds: (v) => v, timestampFromNanoseconds: (v) => v,
      dateFromDays: (v) => v,
      stringFromBytes: (b) => b && new TextDecoder().decode(b),
      jsonFromBytes: (b) => b,
      uuidFromBytes: (b) => b && (() => { const h = hex(b); return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`; })(),
    },
  });
  assert.equal(hrows.length, nrows, `case ${c}: hyparquet row count`);
  for (let i = 0; i < nrows; i++) {
    assert.deepEqual(fromHyparquet(wroot, hrows[i]), expectedForHyparquet(wroot, rows[i]),
      `case ${c} (${codec}) row ${i}: hyparquet value differs`);
  }
  assert.equal(Number(md.num_rows), nrows);

  // Field ids (Iceberg mode: the ids we chose; JSON Schema mode: the ids the footer names).
  const ps = (await duck.runAndReadAll(`select name, field_id from parquet_schema('${outPath}')`)).getRowObjects();
  const wantIds = schemaElements(written.fields, []);
  assert.deepEqual(ps.slice(1).map((r) => [r.name, r.field_id === null ? null : Number(r.field_id)]), wantIds,
    `case ${c}: parquet_schema field ids`);
  if (jsonSchemaMode) {
    assert.deepEqual(md.schema.slice(1).map((e) => [e.name, e.field_id ?? null]), wantIds, `case ${c}: hyparquet field ids`);
  }

  // Statistics: DuckDB's view of every column chunk against the generated data of
  // that row group (rows are in input order, so row group g holds the next
  // row_group_num_rows rows).
  const meta = (await duck.runAndReadAll(`select row_group_id g, row_group_num_rows nr, path_in_schema::varchar p,
      stats_null_count n, stats_min_value::varchar mn, stats_max_value::varchar mx
      from parquet_metadata('${outPath}') order by row_group_id`)).getRowObjects();
  const groups = new Map();
  for (const m of meta) {
    const g = groups.get(Number(m.g)) ?? { rows: Number(m.nr), chunks: new Map() };
    g.chunks.set(String(m.p).split(', ').join('.'), m);
    groups.set(Number(m.g), g);
  }
  let first = 0;
  for (const [gi, g] of [...groups.entries()].sort((a, b) => a[0] - b[0])) {
    const byPath = new Map(leaves(wroot, [], [], false).map((l) => [l.path, l]));
    for (const r of rows.slice(first, first + g.rows)) collect(wroot, r, [], byPath);
    first += g.rows;
    for (const [p, leaf] of byPath) {
      const m = g.chunks.get(p);
      assert.ok(m, `case ${c}: no metadata for ${p} in row group ${gi}`);
      assert.equal(Number(m.n), leaf.nulls, `case ${c}: null count of ${p} in row group ${gi}`);
      const e = expectedStats(leaf);
      if (!e) continue;
      assert.ok(e.cmp(m.mn, e.min), `case ${c}: min of ${p} in row group ${gi}: got ${m.mn} want ${e.min}`);
      assert.ok(e.cmp(m.mx, e.max), `case ${c}: max of ${p} in row group ${gi}: got ${m.mx} want ${e.max}`);
      checkedStats++;
    }
  }
  assert.equal(first, nrows, `case ${c}: row groups hold ${first} rows`);

  // The Iceberg metrics the writer reported, against DuckDB's metadata and against
  // bounds computed here from the generated values.
  const metrics = JSON.parse(out.trim().split('\n').pop());
  assert.equal(metrics.record_count, nrows);
  assert.equal(metrics.file_size, statSync(outPath).size);
  const allMeta = (await duck.runAndReadAll(`select row_group_id g, column_id, path_in_schema::varchar p,
      dictionary_page_offset d, data_page_offset o, total_compressed_size s, num_values v, stats_null_count n
      from parquet_metadata('${outPath}')`)).getRowObjects();
  const splits = [];
  for (const m of allMeta) if (Number(m.column_id) === 0) splits[Number(m.g)] = Number(m.d ?? m.o);
  assert.deepEqual(metrics.split_offsets, splits, `case ${c}: split offsets`);
  const allLeaves = leaves(wroot, [], [], false);
  const whole = new Map(allLeaves.map((l) => [l.path, l]));
  for (const r of rows) collect(wroot, r, [], whole);
  assert.equal(metrics.columns.length, allLeaves.length);
  allLeaves.forEach((leaf, i) => {
    const mc = metrics.columns[i];
    const chunks = allMeta.filter((m) => String(m.p).split(', ').join('.') === leaf.path);
    assert.equal(mc.field_id, leaf.id, `case ${c}: field id of ${leaf.path}`);
    assert.equal(mc.column_size, chunks.reduce((a, m) => a + Number(m.s), 0), `case ${c}: column size of ${leaf.path}`);
    if (leaf.inRepeated) {
      assert.ok(!('value_count' in mc) && !('lower_bound' in mc), `case ${c}: ${leaf.path} is inside a list/map`);
      return;
    }
    assert.equal(mc.value_count, chunks.reduce((a, m) => a + Number(m.v), 0), `case ${c}: value count of ${leaf.path}`);
    assert.equal(mc.null_count, whole.get(leaf.path).nulls, `case ${c}: null count of ${leaf.path}`);
    const b = icebergBounds(whole.get(leaf.path));
    assert.equal(mc.lower_bound ?? null, b ? b[0] : null, `case ${c}: Iceberg lower bound of ${leaf.path}`);
    assert.equal(mc.upper_bound ?? null, b ? b[1] : null, `case ${c}: Iceberg upper bound of ${leaf.path}`);
    if (['float', 'double'].includes(kind(leaf.type))) assert.equal(mc.nan_count, 0);
    if (b) checkedBounds++;
  });
}

// Every row of the JSON Schema -> Iceberg mapping table (kds-delivery-spec.md §2.5), as
// DuckDB sees the file, and the CLI's report of rejected lines.
async function mappingTableAndRejections() {
  const schema = {
    $schema: 'http://json-schema.org/draft-04/schema#', type: 'object', required: ['s'],
    properties: {
      s: { type: 'string' }, ts: { type: 'string', format: 'date-time' }, d: { type: 'string', format: 'date' },
      t: { type: 'string', format: 'time' }, u: { type: 'string', format: 'uuid' },
      b1: { type: 'string', format: 'byte' }, b2: { type: 'string', contentEncoding: 'base64' },
      i: { type: 'integer', minimum: 0, maximum: 100 }, l: { type: 'integer', maximum: 2147483648 },
      dec: { type: 'number', multipleOf: 0.001 }, x: { type: 'number' }, ok: { type: 'boolean' },
      st: { type: 'object', properties: { a: { type: 'integer' } } },
      m: { type: 'object', additionalProperties: { type: 'boolean' } },
      arr: { type: 'array', items: { type: 'string' } }, e: { enum: ['x', 'y'] },
    },
  };
  const want = {  // column -> DuckDB type
    s: 'VARCHAR', ts: 'TIMESTAMP WITH TIME ZONE', d: 'DATE', t: 'TIME', u: 'UUID', b1: 'BLOB', b2: 'BLOB',
    i: 'INTEGER', l: 'BIGINT', dec: 'DECIMAL(38,3)', x: 'DOUBLE', ok: 'BOOLEAN', st: 'STRUCT(a BIGINT)',
    m: 'MAP(VARCHAR, BOOLEAN)', arr: 'VARCHAR[]', e: 'VARCHAR',
  };
  const lines = [
    '{"s":"a","ts":"2024-01-02T03:04:05.5+01:00","d":"2024-02-29","t":"12:00:00","u":"00112233-4455-6677-8899-aabbccddeeff",' +
      '"b1":"AQI=","b2":"","i":100,"l":2147483648,"dec":-1.5,"x":1e-3,"ok":false,"st":{"a":1},"m":{"k":true},"arr":["p"],"e":"y"}',
    '{"i":1}',                     // 2: MISSING_REQUIRED_FIELD
    '{"s":"b","i":101}',           // 3: VALUE_OUT_OF_RANGE
    '',                            // 4: blank, skipped
    '{"s":"c","dec":0.0001}',      // 5: VALUE_OUT_OF_RANGE
    '{"s":"d","ok":"yes"}',        // 6: TYPE_MISMATCH
    '{"s":"e",',                   // 7: MALFORMED_JSON
    '{"s":"f","junk":' + '['.repeat(20) + ']'.repeat(20) + '}',  // 8: NESTING_TOO_DEEP
    '{"s":"g","e":"z"}',           // 9: VALUE_OUT_OF_RANGE
    '{"s":"h"}',
  ];
  const schemaPath = join(dir, 'map.json'), inPath = join(dir, 'map.jsonl'), outPath = join(dir, 'map.parquet');
  writeFileSync(schemaPath, JSON.stringify(schema));
  writeFileSync(inPath, lines.join('\n'));  // no final newline
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(binary, ['convert', '--schema', schemaPath, '--input', inPath, '--output', outPath], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /rows written: 2\n/);
  assert.match(r.stdout, /rows rejected: 7\n/);
  const codes = r.stderr.trim().split('\n').map((l) => /^line (\d+): ([A-Z_]+): /.exec(l).slice(1, 3).join(' '));
  assert.deepEqual(codes, ['2 MISSING_REQUIRED_FIELD', '3 VALUE_OUT_OF_RANGE', '5 VALUE_OUT_OF_RANGE', '6 TYPE_MISMATCH',
    '7 MALFORMED_JSON', '8 NESTING_TOO_DEEP', '9 VALUE_OUT_OF_RANGE'], r.stderr);
  const cols = (await duck.runAndReadAll(`describe select * from read_parquet('${outPath}')`)).getRowObjects();
  assert.deepEqual(Object.fromEntries(cols.map((c) => [c.column_name, c.column_type])), want);
  const rows = (await duck.runAndReadAll(`select s, ts::varchar ts, "dec"::varchar "dec", b1, m::varchar m from read_parquet('${outPath}')`)).getRowObjectsJson();
  assert.equal(rows.length, 2);
  assert.equal(rows[0].ts, '2024-01-02 02:04:05.5+00');
  assert.equal(rows[0].dec, '-1.500');
  assert.equal(rows[1].s, 'h');
}

const t0 = Date.now();
try {
  await mappingTableAndRejections();
} catch (e) {
  failures++;
  console.error(`FAIL mapping table / rejections: ${e.message.slice(0, 4000)}`);
}
for (let c = 0; c < CASES; c++) {
  try {
    await runCase(c);
  } catch (e) {
    failures++;
    console.error(`FAIL case ${c} (seed ${SEED}): ${e.message.slice(0, 4000)}`);
  }
}
if (process.env.ICESTREAM_INTEROP_KEEP) console.log('kept ' + dir); else rmSync(dir, { recursive: true, force: true });
console.log(`parquet interop: ${CASES} cases, ${checkedValues} rows compared with DuckDB and hyparquet, ` +
  `${checkedStats} min/max pairs checked, ${checkedBounds} Iceberg bound pairs checked, ` +
  `${((Date.now() - t0) / 1000).toFixed(1)} s`);
console.log(`${CASES + 1 - failures} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
