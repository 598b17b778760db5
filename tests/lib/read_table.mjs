// An independent reader of an Iceberg v2 table, for the black-box tests of streaming-table
// channels. It does not use any icestream code:
//   - the table metadata comes from the REST catalog over plain HTTP (GET /v1/config for
//     the warehouse prefix, then GET .../namespaces/{ns}/tables/{t}), or from a metadata
//     file location given directly;
//   - icebird reads every row of the current snapshot;
//   - separately, avsc decodes the manifest list and manifests of the current snapshot
//     (sequence-number inheritance applied) to list the live data files, and DuckDB reads
//     each of them with read_parquet; parquet_schema must carry the Iceberg field id of
//     every column (a file written before an optional column was added may lack it: it
//     reads as null), parquet_metadata gives the codec of each column chunk;
//   - both readers must return the same rows (icebird's lossy types - ms timestamps,
//     float decimals, UTF-8-decoded binary - are compared in icebird's precision);
//   - every row's partition value must be the transform of its source column, record
//     counts and file sizes must match the manifests, and the column bounds and null
//     counts of top-level primitive columns must hold for the rows.
// file:// and s3:// locations are served by fetch_shim.mjs (s3:// as SigV4-signed GETs
// against --s3-endpoint).
//
// Usage: node read_table.mjs NPM_DIR (--catalog URL --warehouse W --namespace NS --table T
//                                     | --metadata-location LOC)
//                                    [--s3-endpoint URL --access-key AK --secret-key SK]
//                                    [--snapshot-id ID] [--skip-icebird] [--file-keys COLUMN]
// Prints one JSON document (see `out` below): rows in canonical form
//   boolean/int/double -> JSON number/bool, long/timestamp(tz) micros -> JSON integer
//   (exact), time -> micros, date -> "YYYY-MM-DD", decimal(p,s) -> "123.40" (s digits),
//   uuid -> lower-case string, binary/fixed -> hex, struct -> object, list -> array,
//   map -> object, null -> null.
// --file-keys COLUMN adds to each file of `files` the values of that (top-level) column in
// its rows (`keys`, in DuckDB's canonical form), so a test can tell which snapshot added
// which rows.
// Exits 1 with a message when any check fails.
import { mkdtempSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { installFetchShim, s3Parts } from './fetch_shim.mjs';

// Writes all of text to stdout before the process may exit (stdout can be a non-blocking pipe).
function emit(text) {
  const buf = Buffer.from(text.endsWith('\n') ? text : text + '\n');
  for (let off = 0; off < buf.length;) {
    try {
      off += writeSync(1, buf, off, buf.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}


const args = process.argv.slice(2);
const npmDir = resolve(args.shift() ?? '');
const opt = {};
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
  const name = a.slice(2);
  if (name === 'skip-icebird') opt[name] = true;
  else opt[name] = args[++i];
}
if (!opt['metadata-location'] && !(opt.catalog && opt.warehouse && opt.namespace && opt.table)) {
  console.error('usage: read_table.mjs NPM_DIR (--catalog URL --warehouse W --namespace NS --table T | --metadata-location LOC) ...');
  process.exit(2);
}

installFetchShim({ s3: opt['s3-endpoint'] ? { endpoint: opt['s3-endpoint'], accessKey: opt['access-key'] ?? 'test',
  secretKey: opt['secret-key'] ?? 'test', region: 'us-east-1' } : null });
const require = createRequire(join(npmDir, 'package.json'));
const load = async (p) => import(pathToFileURL(require.resolve(p)).href);
const avro = (await load('avsc')).default;
const { DuckDBInstance } = await load('@duckdb/node-api');
const { icebergRead } = await import(pathToFileURL(join(npmDir, 'node_modules/icebird/src/index.js')).href);

class CheckFailed extends Error {}
function check(cond, msg) {
  if (!cond) throw new CheckFailed(typeof msg === 'function' ? msg() : msg);
}

// ---------------------------------------------------------------- JSON with exact longs
// Integers of 16+ digits (snapshot ids) become BigInt; the rest is JSON.parse.
function parseJsonExact(text) {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 64));
      const tok = m[0];
      out += (!m[1] && !m[2] && tok.replace('-', '').length >= 16) ? `"\\u0000big:${tok}"` : tok;
      i += tok.length;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out, (k, v) => (typeof v === 'string' && v.startsWith('\u0000big:') ? BigInt(v.slice(5)) : v));
}
const stringify = (v) => JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `\u0000big:${x}` : x))
  .replace(/"\\u0000big:(-?\d+)"/g, '$1');
const asBig = (v) => (v === null || v === undefined ? v : BigInt(v));

async function fetchBytes(url) {
  const r = await fetch(url);
  check(r.ok, `GET ${url}: ${r.status}`);
  return Buffer.from(await r.arrayBuffer());
}

// ---------------------------------------------------------------- metadata
async function loadMetadata() {
  if (opt['metadata-location']) {
    const loc = opt['metadata-location'];
    return { metadataLocation: loc, metadata: parseJsonExact((await fetchBytes(loc)).toString('utf8')) };
  }
  const base = opt.catalog.replace(/\/$/, '');
  const cfgResp = await fetch(`${base}/v1/config?warehouse=${encodeURIComponent(opt.warehouse)}`);
  check(cfgResp.ok, `GET /v1/config: ${cfgResp.status}`);
  const cfg = await cfgResp.json();
  const prefix = cfg.overrides?.prefix ?? cfg.defaults?.prefix;
  const ns = opt.namespace.split('.').map(encodeURIComponent).join('%1F');
  const url = `${base}/v1/${prefix ? encodeURIComponent(prefix) + '/' : ''}namespaces/${ns}/tables/${encodeURIComponent(opt.table)}`;
  const r = await fetch(url);
  const text = await r.text();
  if (r.status === 404) {
    emit(stringify({ exists: false, status: 404, error: JSON.parse(text) }));
    process.exit(0);
  }
  check(r.ok, `GET ${url}: ${r.status} ${text}`);
  const result = parseJsonExact(text);
  return { metadataLocation: result['metadata-location'], metadata: result.metadata, prefix };
}

// ---------------------------------------------------------------- avro (avsc)
const bigLong = avro.types.LongType.__with({
  fromBuffer: (b) => b.readBigInt64LE(),
  toBuffer: (n) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
  fromJSON: BigInt, toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});
function decodeAvro(buf) {
  return new Promise((res, rej) => {
    const records = [];
    let meta = null;
    const dec = new avro.streams.BlockDecoder({ parseHook: (schema) => avro.Type.forSchema(schema, { registry: { long: bigLong } }) });
    dec.on('metadata', (type, codec, header) => { meta = header.meta; });
    dec.on('data', (r) => records.push(r));
    dec.on('end', () => {
      const m = Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, v.toString('utf8')]));
      res({ schema: JSON.parse(m['avro.schema']), meta: m, records });
    });
    dec.on('error', rej);
    dec.end(buf);
  });
}

// ---------------------------------------------------------------- Iceberg types
const isPrimitive = (t) => typeof t === 'string';
const decimalOf = (t) => { const m = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(t); return m ? { p: +m[1], s: +m[2] } : null; };
function allIds(type, out = new Map(), name = null) {
  if (isPrimitive(type)) return out;
  if (type.type === 'struct') {
    for (const f of type.fields) { out.set(f.id, f.name); allIds(f.type, out); }
  } else if (type.type === 'list') {
    out.set(type['element-id'], null); allIds(type.element, out);
  } else if (type.type === 'map') {
    out.set(type['key-id'], null); out.set(type['value-id'], null); allIds(type.key, out); allIds(type.value, out);
  }
  return out;
}
// Ids a data file may lack: a file written before a column was added (schema evolution)
// reads that column as null, which the Iceberg spec allows only for optional fields. An
// id may be missing when its field, or a missing ancestor of it, is optional.
function missableIds(type, present, out = new Set(), underMissingOptional = false) {
  if (isPrimitive(type)) return out;
  const visit = (id, required, child) => {
    const missingOptional = underMissingOptional || (!present.has(id) && !required);
    if (missingOptional) out.add(id);
    missableIds(child, present, out, missingOptional);
  };
  if (type.type === 'struct') {
    for (const f of type.fields) visit(f.id, f.required, f.type);
  } else if (type.type === 'list') {
    visit(type['element-id'], type['element-required'], type.element);
  } else if (type.type === 'map') {
    visit(type['key-id'], true, type.key);
    visit(type['value-id'], type['value-required'], type.value);
  }
  return out;
}
const pad = (n, w = 2) => String(n).padStart(w, '0');
function dateString(days) {
  const d = new Date(Number(days) * 86400000);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}
function decimalString(unscaled, scale) {
  const neg = unscaled < 0n;
  let digits = (neg ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  if (scale > 0) digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return (neg ? '-' : '') + digits;
}
const hex = (bytes) => Buffer.from(bytes).toString('hex');

// DuckDB value object -> canonical form, by Iceberg type.
function fromDuck(v, type) {
  if (v === null || v === undefined) return null;
  if (!isPrimitive(type)) {
    if (type.type === 'struct') {
      const e = v.entries;
      return Object.fromEntries(type.fields.map((f) => [f.name, fromDuck(e[f.name], f.type)]));
    }
    if (type.type === 'list') return v.items.map((x) => fromDuck(x, type.element));
    if (type.type === 'map') {
      return Object.fromEntries(v.entries.map(({ key, value }) => {
        const k = fromDuck(key, type.key);
        return [typeof k === 'string' ? k : stringify(k), fromDuck(value, type.value)];
      }));
    }
    throw new CheckFailed(`unknown type ${JSON.stringify(type)}`);
  }
  const dec = decimalOf(type);
  if (dec) return decimalString(v.value, v.scale);
  switch (type) {
    case 'boolean': return v;
    case 'int': return Number(v);
    case 'long': return BigInt(v);
    case 'float': case 'double': return Number.isFinite(v) ? v : String(v);
    case 'date': return dateString(v.days);
    case 'time': return Number(v.micros);
    case 'timestamp': case 'timestamptz': return BigInt(v.micros);
    case 'string': return v;
    case 'uuid': return v.toString().toLowerCase();
    case 'binary': return hex(v.bytes);
    default:
      if (/^fixed\[\d+\]$/.test(type)) return hex(v.bytes);
      throw new CheckFailed(`unsupported type ${type}`);
  }
}

// Canonical -> what icebird (hyparquet 1.19 defaults) can return, for the comparison.
const utf8 = new TextDecoder();
function lossy(v, type) {
  if (v === null) return null;
  if (!isPrimitive(type)) {
    if (type.type === 'struct') return Object.fromEntries(type.fields.map((f) => [f.name, lossy(v[f.name], f.type)]));
    if (type.type === 'list') return v.map((x) => lossy(x, type.element));
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, lossy(x, type.value)]));
  }
  const dec = decimalOf(type);
  if (dec) {
    const unscaled = BigInt(v.replace('.', ''));
    return Number(unscaled) * 10 ** -dec.s;  // icebird's own formula
  }
  switch (type) {
    case 'timestamp': case 'timestamptz': return Number(v / 1000n);  // a Date of ms
    case 'binary': return utf8.decode(Buffer.from(v, 'hex'));       // utf8 by default
    case 'long': return v;
    default: return v;
  }
}
function fromIcebird(v, type) {
  if (v === null || v === undefined) return null;
  if (!isPrimitive(type)) {
    if (type.type === 'struct') return Object.fromEntries(type.fields.map((f) => [f.name, fromIcebird(v[f.name], f.type)]));
    if (type.type === 'list') return Array.from(v, (x) => fromIcebird(x, type.element));
    let entries;
    if (v instanceof Map) entries = [...v.entries()];
    else if (Array.isArray(v)) entries = v.map((e) => [e.key, e.value]);
    else entries = Object.entries(v);
    return Object.fromEntries(entries.map(([k, x]) => [String(k), fromIcebird(x, type.value)]));
  }
  if (decimalOf(type)) return Number(v);
  switch (type) {
    case 'int': case 'double': case 'float': return Number(v);
    case 'long': return BigInt(v);
    case 'time': return Number(v);
    case 'timestamp': case 'timestamptz': return v instanceof Date ? v.getTime() : Number(BigInt(v) / 1000n);
    case 'date': return v instanceof Date ? dateString(v.getTime() / 86400000) : dateString(v);
    case 'uuid': {
      if (typeof v === 'string') return v.toLowerCase();
      const h = hex(v);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }
    case 'binary': return typeof v === 'string' ? v : utf8.decode(v);
    default: return v;
  }
}

// Partition transforms (Iceberg spec) of a canonical value.
function transform(name, v, srcType) {
  if (v === null) return null;
  if (name === 'identity') return v;
  if (!['date', 'timestamp', 'timestamptz'].includes(srcType)) return undefined;  // not checked
  const micros = (srcType === 'date') ? BigInt(Date.parse(v + 'T00:00:00Z')) * 1000n : BigInt(v);
  const floorDiv = (a, b) => { const q = a / b; return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q; };
  const d = new Date(Number(floorDiv(micros, 1000n)));
  switch (name) {
    case 'hour': return Number(floorDiv(micros, 3600000000n));
    case 'day': return Number(floorDiv(micros, 86400000000n));
    case 'month': return (d.getUTCFullYear() - 1970) * 12 + d.getUTCMonth();
    case 'year': return d.getUTCFullYear() - 1970;
    default: return undefined;  // not checked
  }
}

// Single-value serialization (Iceberg spec Appendix D) of bounds, decoded for the
// top-level types whose order is easy to state.
function decodeBound(buf, type) {
  switch (type) {
    case 'int': return BigInt(buf.readInt32LE(0));
    case 'date': return BigInt(buf.readInt32LE(0));
    case 'long': case 'timestamp': case 'timestamptz': case 'time':
      return buf.length === 4 ? BigInt(buf.readInt32LE(0)) : buf.readBigInt64LE(0);
    case 'double': return buf.length === 4 ? buf.readFloatLE(0) : buf.readDoubleLE(0);
    case 'boolean': return buf[0] !== 0;
    default: return undefined;
  }
}
function orderKey(v, type) {
  switch (type) {
    case 'int': case 'long': case 'timestamp': case 'timestamptz': case 'time': return BigInt(v);
    case 'date': return BigInt(Date.parse(v + 'T00:00:00Z') / 86400000);
    case 'double': return typeof v === 'number' ? v : undefined;
    case 'boolean': return v;
    default: return undefined;
  }
}

// ---------------------------------------------------------------- main
const work = mkdtempSync(join(tmpdir(), 'read-table-'));
let exitCode = 0;
try {
  const { metadataLocation, metadata, prefix } = await loadMetadata();
  check(metadata['format-version'] === 2, `format-version ${metadata['format-version']}`);
  const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
  check(schema, 'current schema missing');
  const spec = metadata['partition-specs'].find((s) => s['spec-id'] === metadata['default-spec-id']);
  const current = metadata['current-snapshot-id'];
  const wanted = opt['snapshot-id'] ? BigInt(opt['snapshot-id']) : (current === undefined || current === null || current === -1 ? null : asBig(current));
  check(wanted === null || metadata.refs?.main === undefined || opt['snapshot-id'] || asBig(metadata.refs.main['snapshot-id']) === wanted,
        'current-snapshot-id differs from refs.main');
  const snapshot = wanted === null ? null : metadata.snapshots.find((s) => asBig(s['snapshot-id']) === wanted);
  check(wanted === null || snapshot, `snapshot ${wanted} not in metadata`);

  const out = {
    exists: true, prefix: prefix ?? null, metadata_location: metadataLocation, location: metadata.location,
    table_uuid: metadata['table-uuid'], format_version: metadata['format-version'],
    last_sequence_number: metadata['last-sequence-number'], properties: metadata.properties ?? {},
    schema, schemas: metadata.schemas.length, partition_specs: metadata['partition-specs'],
    default_spec_id: metadata['default-spec-id'],
    current_snapshot_id: wanted === null ? null : String(wanted),
    snapshots: (metadata.snapshots ?? []).map((s) => ({
      snapshot_id: String(s['snapshot-id']), parent_snapshot_id: s['parent-snapshot-id'] == null ? null : String(s['parent-snapshot-id']),
      sequence_number: Number(s['sequence-number']), timestamp_ms: Number(s['timestamp-ms']),
      manifest_list: s['manifest-list'], summary: s.summary, schema_id: s['schema-id'] ?? null })),
    snapshot_log: (metadata['snapshot-log'] ?? []).map((e) => String(e['snapshot-id'])),
    files: [], delete_files: 0, rows: [], icebird_rows: null,
  };
  if (!snapshot) {
    emit(stringify(out));
    process.exit(0);
  }

  // avsc: manifest list -> manifests -> live data files.
  const list = await decodeAvro(await fetchBytes(snapshot['manifest-list']));
  check(list.meta['format-version'] === '2', 'manifest list format-version');
  check(list.meta['snapshot-id'] === String(wanted), () => `manifest list snapshot-id ${list.meta['snapshot-id']} != ${wanted}`);
  const live = [];
  const seenPaths = new Set();
  for (const mf of list.records) {
    const manifestBytes = await fetchBytes(mf.manifest_path);
    check(BigInt(manifestBytes.length) === mf.manifest_length, `manifest_length of ${mf.manifest_path}`);
    const m = await decodeAvro(manifestBytes);
    check(m.meta['format-version'] === '2', 'manifest format-version');
    check(m.meta.content === (mf.content === 0 ? 'data' : 'deletes'), 'manifest content');
    let added = 0, existing = 0, deleted = 0;
    for (const e of m.records) {
      const d = e.data_file;
      if (e.status === 1) added++; else if (e.status === 0) existing++; else deleted++;
      if (e.status === 2) continue;
      const seq = e.sequence_number ?? (e.status === 1 ? mf.sequence_number : null);
      check(seq !== null, 'EXISTING entry without sequence number');
      if (d.content !== 0) { out.delete_files++; continue; }
      check(!seenPaths.has(d.file_path), `data file listed twice: ${d.file_path}`);
      seenPaths.add(d.file_path);
      live.push({ entry: e, data: d, sequence_number: seq, snapshot_id: e.snapshot_id ?? mf.added_snapshot_id,
        spec_id: mf.partition_spec_id, manifest: mf.manifest_path });
    }
    check(mf.added_files_count === added && mf.existing_files_count === existing && mf.deleted_files_count === deleted,
          `file counts of ${mf.manifest_path}`);
  }

  // DuckDB: every live data file.
  const db = await (await DuckDBInstance.create(':memory:')).connect();
  const expectIds = allIds(schema);
  const topTypes = Object.fromEntries(schema.fields.map((f) => [f.id, f]));
  let n = 0;
  for (const f of live) {
    const d = f.data;
    let localPath;
    if (d.file_path.startsWith('file://')) {
      localPath = d.file_path.slice('file://'.length);
    } else {
      check(s3Parts(d.file_path), `unsupported location ${d.file_path}`);
      localPath = join(work, `f${n++}.parquet`);
      writeFileSync(localPath, await fetchBytes(d.file_path));
    }
    const q = (sql) => db.runAndReadAll(sql);
    const lit = `'${localPath.replace(/'/g, "''")}'`;
    // Field ids.
    const ps = (await q(`select name, field_id from parquet_schema(${lit})`)).getRowObjectsJson();
    const got = new Map();
    for (const r of ps) if (r.field_id !== null && r.field_id !== undefined) got.set(Number(r.field_id), r.name);
    const missable = missableIds(schema, got);
    for (const [id, name] of expectIds) {
      check(got.has(id) || missable.has(id),
            `${d.file_path}: no Parquet column with field id ${id} (${name ?? 'element/key/value'}), which is required`);
      if (name !== null && got.has(id)) check(got.get(id) === name, `${d.file_path}: field id ${id} is "${got.get(id)}", not "${name}"`);
    }
    for (const id of got.keys()) check(expectIds.has(id), `${d.file_path}: unknown field id ${id}`);
    const pm = (await q(`select row_group_id, compression, num_values from parquet_metadata(${lit})`)).getRowObjectsJson();
    const codecs = [...new Set(pm.map((r) => r.compression))].sort();
    // Rows.
    const res = await q(`select * from read_parquet(${lit})`);
    const rows = res.getRowObjects().map((r) => Object.fromEntries(schema.fields.map((fl) => [fl.name, fromDuck(r[fl.name], fl.type)])));
    check(BigInt(rows.length) === d.record_count, `${d.file_path}: ${rows.length} rows, manifest says ${d.record_count}`);
    const size = statSync(localPath).size;
    check(BigInt(size) === d.file_size_in_bytes, `${d.file_path}: ${size} bytes, manifest says ${d.file_size_in_bytes}`);
    // Partition values.
    const fileSpec = metadata['partition-specs'].find((s) => s['spec-id'] === f.spec_id);
    const partition = {};
    for (const pf of fileSpec.fields) {
      const pv = d.partition[pf.name];
      partition[pf.name] = pv === undefined ? null : (typeof pv === 'bigint' ? Number(pv) : pv);
      const src = schema.fields.find((x) => x.id === pf['source-id']);
      check(src, `partition source ${pf['source-id']} is not a top-level column`);
      for (const r of rows) {
        const want = transform(pf.transform, r[src.name], src.type);
        if (want === undefined) continue;
        check(want === partition[pf.name], () => `${d.file_path}: row ${stringify(r)} belongs to ${pf.name}=${want}, file is in ${partition[pf.name]}`);
      }
    }
    // Metrics of top-level primitive columns.
    const mapOf = (arr) => new Map((arr ?? []).map((kv) => [kv.key, kv.value]));
    const nulls = mapOf(d.null_value_counts), lower = mapOf(d.lower_bounds), upper = mapOf(d.upper_bounds);
    const values = mapOf(d.value_counts);
    for (const [idStr, fl] of Object.entries(topTypes)) {
      const id = Number(idStr);
      if (!isPrimitive(fl.type)) continue;
      const col = rows.map((r) => r[fl.name]);
      if (nulls.has(id)) check(nulls.get(id) === BigInt(col.filter((x) => x === null).length), `${d.file_path}: null count of ${fl.name}`);
      if (values.has(id)) check(values.get(id) === BigInt(rows.length), `${d.file_path}: value count of ${fl.name}`);
      for (const [bounds, cmp] of [[lower, (b, v) => b <= v], [upper, (b, v) => b >= v]]) {
        if (!bounds.has(id)) continue;
        const b = decodeBound(bounds.get(id), fl.type);
        if (b === undefined) continue;
        for (const v of col) {
          if (v === null) continue;
          const k = orderKey(v, fl.type);
          if (k === undefined) continue;
          check(cmp(b, k), () => `${d.file_path}: bound ${b} of ${fl.name} does not hold for ${v}`);
        }
      }
    }
    out.files.push({ file_path: d.file_path, record_count: Number(d.record_count), file_size_in_bytes: Number(d.file_size_in_bytes),
      partition, spec_id: f.spec_id, sequence_number: Number(f.sequence_number), snapshot_id: String(f.snapshot_id),
      codecs, row_groups: new Set(pm.map((r) => r.row_group_id)).size, file_format: d.file_format,
      field_ids: [...got.keys()].filter((id) => expectIds.has(id)).sort((x, y) => x - y),
      ...(opt['file-keys'] ? { keys: rows.map((r) => r[opt['file-keys']]) } : {}) });
    for (const r of rows) out.rows.push(r);
  }
  db.closeSync?.();

  // icebird: every row of the same snapshot, compared with DuckDB's in icebird's precision.
  if (!opt['skip-icebird'] && live.length > 0) {
    // icebird compares snapshot ids as JS numbers: give it the one snapshot it reads.
    const forIcebird = JSON.parse(stringify({ ...metadata, snapshots: [snapshot] }));
    forIcebird.snapshots[0]['snapshot-id'] = Number(snapshot['snapshot-id']);
    forIcebird['current-snapshot-id'] = Number(snapshot['snapshot-id']);
    const irows = await icebergRead({ tableUrl: metadata.location, metadata: forIcebird });
    out.icebird_rows = irows.length;
    const key = (r) => stringify(r);
    const a = irows.map((r) => key(Object.fromEntries(schema.fields.map((fl) => [fl.name, fromIcebird(r[fl.name], fl.type)])))).sort();
    const b = out.rows.map((r) => key(Object.fromEntries(schema.fields.map((fl) => [fl.name, lossy(r[fl.name], fl.type)])))).sort();
    check(a.length === b.length, `icebird read ${a.length} rows, DuckDB ${b.length}`);
    for (let i = 0; i < a.length; i++) check(a[i] === b[i], () => `icebird and DuckDB disagree:\n  icebird ${a[i]}\n  duckdb  ${b[i]}`);
  }
  emit(stringify(out));
} catch (e) {
  console.error(e instanceof CheckFailed ? `read_table: ${e.message}` : e.stack ?? String(e));
  exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exit(exitCode);
