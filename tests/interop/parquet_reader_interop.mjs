// Interop test of the Parquet reader: DuckDB (@duckdb/node-api) writes files with many
// types (every Iceberg primitive, unsigned and narrow integers, millisecond timestamps,
// enums, nested lists, structs and maps with nulls and empties), every codec, Parquet
// versions 1 and 2 (PLAIN, dictionary, DELTA_*, BYTE_STREAM_SPLIT, v2 data pages) and
// several row groups, with FIELD_IDS set. Then, for each file:
//   1. `icestream parquet cat` prints its rows; they must equal, value by value, what
//      DuckDB's read_parquet returns;
//   2. `icestream parquet schema` must carry DuckDB's field ids;
//   3. `icestream parquet copy` rewrites it with the project's writer (rows copied
//      through the reader); DuckDB must read the copy with the same values, and so must
//      `parquet cat`; a copy of that copy (our writer's file read back) too.
// A file with columns the reader cannot read (UBIGINT, INTERVAL) must print the other
// columns and name the skipped ones on stderr.
//
// Usage: node parquet_reader_interop.mjs ICESTREAM_BINARY NPM_DIR [ROWS]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import assert from 'node:assert/strict';

const [binaryArg, npmDirArg, rowsArg] = process.argv.slice(2);
if (!binaryArg || !npmDirArg) {
  console.error('usage: parquet_reader_interop.mjs ICESTREAM_BINARY NPM_DIR [ROWS]');
  process.exit(2);
}
const binary = resolve(binaryArg);
const require = createRequire(join(resolve(npmDirArg), 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');
const ROWS = Number(rowsArg ?? 3000);

const dir = mkdtempSync(join(tmpdir(), 'pq-reader-'));
const db = await (await DuckDBInstance.create(':memory:')).connect();
const q = async (sql) => (await db.runAndReadAll(sql)).getRowObjects();

// ------------------------------------------------------------ columns
// shape: 'p' primitive, {list: shape}, {struct: {name: shape}}, {map: [shape, shape]}.
const NUL = (p, e) => `CASE WHEN random() < ${p} THEN NULL ELSE ${e} END`;
const COLUMNS = [
  ['rid', 'i', 'p'],
  ['b', NUL(0.1, 'random() < 0.5'), 'p'],
  ['ti', NUL(0.1, '(random() * 250 - 125)::TINYINT'), 'p'],
  ['si', NUL(0.1, '(random() * 65000 - 32500)::SMALLINT'), 'p'],
  ['i32', NUL(0.1, "CASE WHEN i % 50 = 0 THEN 2147483647 WHEN i % 51 = 0 THEN -2147483648 ELSE (random() * 2e9 - 1e9)::INTEGER END"), 'p'],
  ['i64', NUL(0.1, "CASE WHEN i % 50 = 0 THEN 9223372036854775807 WHEN i % 51 = 0 THEN -9223372036854775808 ELSE (random() * 9e18 - 4.5e18)::BIGINT END"), 'p'],
  ['seq', 'i * 3 + 1000000000000', 'p'],
  ['ut', NUL(0.1, '(random() * 255)::UTINYINT'), 'p'],
  ['us', NUL(0.1, '(random() * 65535)::USMALLINT'), 'p'],
  ['ui', NUL(0.1, '(random() * 4294967295)::UINTEGER'), 'p'],
  ['f', NUL(0.1, "CASE WHEN i % 97 = 0 THEN 'nan'::FLOAT WHEN i % 89 = 0 THEN '-inf'::FLOAT ELSE (random() * 2000 - 1000)::FLOAT END"), 'p'],
  ['d', NUL(0.1, "CASE WHEN i % 97 = 0 THEN 'nan'::DOUBLE WHEN i % 89 = 0 THEN 'inf'::DOUBLE ELSE random() * 1e6 - 5e5 END"), 'p'],
  ['dec4', NUL(0.1, '(random() * 198 - 99)::DECIMAL(4,2)'), 'p'],
  ['dec9', NUL(0.1, '(random() * 1e6 - 5e5)::DECIMAL(9,3)'), 'p'],
  ['dec18', NUL(0.1, '(random() * 1e12 - 5e11)::DECIMAL(18,6)'), 'p'],
  ['dec38', NUL(0.1, "((random() * 1e15)::DECIMAL(38,10) * (random() * 1e12)::DECIMAL(38,0) - 1e20)::DECIMAL(38,10)"), 'p'],
  ['dt', NUL(0.1, "DATE '1970-01-01' + (random() * 200000 - 100000)::INTEGER"), 'p'],
  ['tm', NUL(0.1, "TIME '00:00:00' + to_microseconds((random() * 86399999999)::BIGINT)"), 'p'],
  ['ts', NUL(0.1, 'make_timestamp((random() * 6e15 - 3e15)::BIGINT)'), 'p'],
  ['tz', NUL(0.1, 'make_timestamp((random() * 6e15 - 3e15)::BIGINT)::TIMESTAMPTZ'), 'p'],
  ['tms', NUL(0.1, 'make_timestamp((random() * 6e15 - 3e15)::BIGINT)::TIMESTAMP_MS'), 'p'],
  ['s', NUL(0.1, "(['', 'a', 'héllo wörld', '日本語', '🚀', 'quote \" back \\\\ tab' || chr(9)])[1 + (i % 6)] || (i % 37)::VARCHAR"), 'p'],
  ['su', NUL(0.05, "'prefix/common/' || md5(i::VARCHAR)"), 'p'],
  ['bl', NUL(0.1, 'unhex(md5(i::VARCHAR))::BLOB'), 'p'],
  ['u', NUL(0.1, 'uuid()'), 'p'],
  ['en', NUL(0.1, "(['red', 'green', 'blüe'])[1 + (i % 3)]::ENUM('red', 'green', 'blüe')"), 'p'],
  ['li', NUL(0.1, 'CASE WHEN random() < 0.2 THEN []::INTEGER[] ELSE [i::INTEGER, NULL, (i * 2)::INTEGER] END'), { list: 'p' }],
  ['ls', NUL(0.1, "CASE WHEN random() < 0.2 THEN []::VARCHAR[] ELSE ['x' || (i % 5), NULL] END"), { list: 'p' }],
  ['st', NUL(0.1, "{'a': " + NUL(0.2, 'i::INTEGER') + ", 'b': " + NUL(0.2, "['p', 'q' || i]") +
    ", 'c': " + NUL(0.2, "{'x': random()}") + '}'), { struct: { a: 'p', b: { list: 'p' }, c: { struct: { x: 'p' } } } }],
  ['mp', NUL(0.1, "CASE WHEN random() < 0.2 THEN MAP {}::MAP(VARCHAR, DOUBLE) ELSE MAP {'k' || (i % 3): random(), 'z': " +
    NUL(0.3, 'random()') + '} END'), { map: ['p', 'p'] }],
  ['lst', NUL(0.1, "[{'k': i::INTEGER, 'v': 'v' || i}, NULL, {'k': NULL, 'v': NULL}]"), { list: { struct: { k: 'p', v: 'p' } } }],
  ['ll', NUL(0.1, '[[i::INTEGER], [], NULL, [NULL, 1]]'), { list: { list: 'p' } }],
];

// FIELD_IDS {...} with ids from 1, depth first (what Iceberg assigns).
let nextId = 1;
function ids(shape) {
  const id = nextId++;
  if (shape === 'p') return String(id);
  if (shape.list) return `{__duckdb_field_id: ${id}, element: ${ids(shape.list)}}`;
  if (shape.map) return `{__duckdb_field_id: ${id}, key: ${ids(shape.map[0])}, value: ${ids(shape.map[1])}}`;
  return `{__duckdb_field_id: ${id}, ${Object.entries(shape.struct).map(([k, s]) => `${k}: ${ids(s)}`).join(', ')}}`;
}
const FIELD_IDS = `{${COLUMNS.map(([n, , s]) => `${n}: ${ids(s)}`).join(', ')}}`;
const SELECT = `SELECT ${COLUMNS.map(([n, e]) => `${e} AS ${n}`).join(', ')} FROM range(0, ${ROWS}) t(i)`;

// ------------------------------------------------------------ canonical values
const pad = (n, w) => String(n).padStart(w, '0');
function day(days) {
  const d = new Date(Number(days) * 86400000);
  const y = d.getUTCFullYear();
  return `${y < 0 ? '-' : ''}${pad(Math.abs(y), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`;
}
function timeOfDay(us) {
  us = BigInt(us);
  const h = us / 3600000000n, m = (us / 60000000n) % 60n, s = (us / 1000000n) % 60n, f = us % 1000000n;
  return `${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}.${pad(f, 6)}`;
}
function timestamp(us) {
  us = BigInt(us);
  let days = us / 86400000000n, rest = us % 86400000000n;
  if (rest < 0n) { rest += 86400000000n; days -= 1n; }
  return `${day(days)}T${timeOfDay(rest)}`;
}
function decimal(v, scale) {
  const neg = v < 0n;
  let s = (neg ? -v : v).toString().padStart(scale + 1, '0');
  if (scale > 0) s = s.slice(0, s.length - scale) + '.' + s.slice(s.length - scale);
  return (neg ? '-' : '') + s;
}

// DuckDB value -> the form `parquet cat` prints (json_rows.h).
function canon(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return v;
  }
  const name = v.constructor?.name ?? '';
  switch (name) {
    case 'DuckDBDecimalValue': return decimal(v.value, v.scale);
    case 'DuckDBDateValue': return day(v.days);
    case 'DuckDBTimeValue': return timeOfDay(v.micros);
    case 'DuckDBTimestampValue': return timestamp(v.micros);
    case 'DuckDBTimestampTZValue': return timestamp(v.micros) + '+00:00';
    case 'DuckDBTimestampMillisecondsValue': return timestamp(BigInt(v.millis) * 1000n);
    case 'DuckDBBlobValue': return Buffer.from(v.bytes).toString('hex');
    case 'DuckDBUUIDValue': return v.toString();
    case 'DuckDBListValue': return v.items.map(canon);
    case 'DuckDBStructValue': return Object.fromEntries(Object.entries(v.entries).map(([k, x]) => [k, canon(x)]));
    case 'DuckDBMapValue': return v.entries.map((e) => ({ key: canon(e.key), value: canon(e.value) }));
    default: throw new Error(`unexpected DuckDB value ${name}: ${v}`);
  }
}

// JSON with integers as BigInt (longs are printed in full).
function parseJson(text) {
  let i = 0;
  const ws = () => { while (/\s/.test(text[i])) i++; };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++; const o = {}; ws();
      if (text[i] === '}') { i++; return o; }
      for (;;) { const k = value(); ws(); i++; o[k] = value(); ws(); if (text[i++] === '}') return o; }
    }
    if (c === '[') {
      i++; const a = []; ws();
      if (text[i] === ']') { i++; return a; }
      for (;;) { a.push(value()); ws(); if (text[i++] === ']') return a; }
    }
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const s = JSON.parse(text.slice(i, j + 1)); i = j + 1; return s;
    }
    const m = /^-?\d+(\.\d+)?([eE][-+]?\d+)?|^true|^false|^null/.exec(text.slice(i, i + 64));
    assert.ok(m, `bad JSON at ${i}: ${text.slice(i, i + 40)}`);
    i += m[0].length;
    if (m[0] === 'true') return true;
    if (m[0] === 'false') return false;
    if (m[0] === 'null') return null;
    return m[1] || m[2] ? Number(m[0]) : BigInt(m[0]);
  };
  return value();
}

function same(ours, theirs, path) {
  if (typeof theirs === 'number' && typeof ours === 'bigint') theirs = BigInt(theirs);
  if (typeof theirs === 'bigint' && typeof ours === 'number') ours = BigInt(ours);
  if (typeof ours === 'number' && typeof theirs === 'number') {
    // FLOAT columns: DuckDB gives the float's double value, we print the shortest float.
    if (ours === theirs || (Math.fround(theirs) === theirs && Math.fround(ours) === theirs)) return;
    assert.fail(`${path}: ${ours} != ${theirs}`);
  }
  if (Array.isArray(theirs)) {
    assert.ok(Array.isArray(ours), `${path}: not an array: ${JSON.stringify(ours, big)}`);
    assert.equal(ours.length, theirs.length, `${path}: length`);
    theirs.forEach((t, k) => same(ours[k], t, `${path}[${k}]`));
    return;
  }
  if (theirs !== null && typeof theirs === 'object') {
    assert.ok(ours !== null && typeof ours === 'object', `${path}: not an object`);
    assert.deepEqual(Object.keys(ours), Object.keys(theirs), `${path}: keys`);
    for (const k of Object.keys(theirs)) same(ours[k], theirs[k], `${path}.${k}`);
    return;
  }
  assert.equal(ours, theirs, path);
}
const big = (k, v) => (typeof v === 'bigint' ? v.toString() : v);

function icestream(args, opts = {}) {
  const r = spawnSync(binary, args, { encoding: 'utf8', maxBuffer: 1 << 30, ...opts });
  if (r.status !== 0) throw new Error(`icestream ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r;
}

async function duckRows(file) {
  return (await q(`SELECT * FROM read_parquet('${file}') ORDER BY rid`)).map((r) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, canon(v)])));
}

function catRows(file) {
  const out = icestream(['parquet', 'cat', file]).stdout;
  return out.split('\n').filter((l) => l).map(parseJson).sort((a, b) => (a.rid < b.rid ? -1 : a.rid > b.rid ? 1 : 0));
}

function compare(ours, theirs, what) {
  assert.equal(ours.length, theirs.length, `${what}: row count`);
  for (let k = 0; k < theirs.length; k++) same(ours[k], theirs[k], `${what} row ${k}`);
}

// ------------------------------------------------------------ the files
const CONFIGS = [
  { version: 'V1', codec: 'snappy', rowGroup: 100000 },
  { version: 'V2', codec: 'zstd', rowGroup: 1000 },
  { version: 'V1', codec: 'gzip', rowGroup: 700 },
  { version: 'V2', codec: 'uncompressed', rowGroup: 100000 },
  { version: 'V2', codec: 'snappy', rowGroup: 2048 },
  { version: 'V1', codec: 'zstd', rowGroup: 1500 },
];
const encodingsSeen = new Set();
let checked = 0;
try {
  for (const [n, cfg] of CONFIGS.entries()) {
    await db.run(`SELECT setseed(${(n + 1) / 10})`);
    const src = join(dir, `duck_${n}.parquet`);
    await db.run(`COPY (${SELECT}) TO '${src}' (FORMAT parquet, COMPRESSION ${cfg.codec}, PARQUET_VERSION ${cfg.version}, ` +
      `ROW_GROUP_SIZE ${cfg.rowGroup}, FIELD_IDS ${FIELD_IDS})`);
    for (const r of await q(`SELECT DISTINCT encodings FROM parquet_metadata('${src}')`)) encodingsSeen.add(r.encodings);
    const what = `${cfg.version}/${cfg.codec}/rg${cfg.rowGroup}`;

    const theirs = await duckRows(src);
    compare(catRows(src), theirs, `${what} cat`);

    // Field ids as DuckDB reports them.
    const schema = JSON.parse(icestream(['parquet', 'schema', src]).stdout);
    const ourIds = [];
    const walk = (t) => {
      if (typeof t !== 'object') return;
      if (t.type === 'struct') for (const f of t.fields) { ourIds.push(f.id); walk(f.type); }
      if (t.type === 'list') { ourIds.push(t['element-id']); walk(t.element); }
      if (t.type === 'map') { ourIds.push(t['key-id'], t['value-id']); walk(t.key); walk(t.value); }
    };
    walk(schema);
    const duckIds = (await q(`SELECT field_id FROM parquet_schema('${src}') WHERE field_id IS NOT NULL`)).map((r) => Number(r.field_id));
    assert.deepEqual(ourIds.sort((a, b) => a - b), duckIds.sort((a, b) => a - b), `${what}: field ids`);

    // Rows copied through the reader into the project's writer.
    const copy = join(dir, `copy_${n}.parquet`);
    icestream(['parquet', 'copy', src, copy, '--compression', ['zstd', 'snappy', 'gzip', 'none'][n % 4]]);
    compare(await duckRows(copy), theirs, `${what} copy read by DuckDB`);
    compare(catRows(copy), theirs, `${what} copy read by parquet cat`);
    // And once more from our own writer's file (dictionary pages, our page layout).
    const copy2 = join(dir, `copy2_${n}.parquet`);
    icestream(['parquet', 'copy', copy, copy2, '--compression', 'snappy']);
    compare(await duckRows(copy2), theirs, `${what} copy of the copy read by DuckDB`);
    checked += theirs.length;
    console.log(`ok ${what}: ${theirs.length} rows`);
  }

  // Columns the reader refuses are named and left out; the rest prints.
  const odd = join(dir, 'odd.parquet');
  await db.run(`COPY (SELECT i AS rid, i::UBIGINT AS ub, to_days(i::INTEGER) AS iv, 'x' || i AS s FROM range(0, 10) t(i)) ` +
    `TO '${odd}' (FORMAT parquet, FIELD_IDS {rid: 1, ub: 2, iv: 3, s: 4})`);
  const r = icestream(['parquet', 'cat', odd]);
  assert.match(r.stderr, /ub: .*UINT|ub: .*unsigned/i, 'UBIGINT named on stderr');
  assert.match(r.stderr, /iv: /, 'INTERVAL named on stderr');
  const rows = r.stdout.split('\n').filter((l) => l).map(parseJson);
  assert.equal(rows.length, 10);
  assert.deepEqual(Object.keys(rows[3]), ['rid', 's']);
  assert.equal(rows[3].s, 'x3');
  console.log(`encodings seen in DuckDB's files: ${[...encodingsSeen].sort().join(' | ')}`);
  console.log(`${checked} rows compared value by value`);
  console.log(`${CONFIGS.length + 1} passed, 0 failed`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
