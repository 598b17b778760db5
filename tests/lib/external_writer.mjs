// An external writer of an Iceberg table, for tests: it commits to a table through the
// REST catalog over plain HTTP (CommitTableRequest with assert-table-uuid and
// assert-ref-snapshot-id on main), the way another engine would, so that a channel that
// writes the same table meets real commit conflicts. Its commits only add files or
// change nothing, plus a table property, so the channel must tolerate them:
//   - "rewrite": a new snapshot whose manifest list is the current one re-encoded by
//     avsc for the new snapshot (same manifests, no data change; operation replace);
//   - "append": a copy of a live data file under <location>/data/external-<n>.parquet,
//     with a manifest (one ADDED entry, the source entry's metrics) and a manifest list
//     (the current manifests plus the new one) written by avsc (operation append).
// Snapshot ids of the channel are kept exact (no JS doubles).
//
// Usage: node external_writer.mjs NPM_DIR --catalog URL --warehouse W --namespace NS --table T
//          [--s3-endpoint URL --access-key AK --secret-key SK]
//          --seconds S [--append-every K] [--pause-ms M] [--max-appends N]
// Runs for S seconds (from the moment the table has a snapshot), then prints
//   {"commits": n, "conflicts": n409, "rewrites": n, "appends": [{"file_path", "source", "record_count"}]}
import { randomUUID } from 'node:crypto';
import { writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { installFetchShim, putObject } from './fetch_shim.mjs';

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
for (let i = 0; i < args.length; i += 2) opt[args[i].slice(2)] = args[i + 1];
installFetchShim({ s3: opt['s3-endpoint'] ? { endpoint: opt['s3-endpoint'], accessKey: opt['access-key'],
  secretKey: opt['secret-key'], region: 'us-east-1' } : null });
const require = createRequire(join(npmDir, 'package.json'));
const avro = (await import(pathToFileURL(require.resolve('avsc')).href)).default;

const seconds = Number(opt.seconds ?? 10);
const appendEvery = Number(opt['append-every'] ?? 5);
const maxAppends = Number(opt['max-appends'] ?? 1e9);
const pauseMs = Number(opt['pause-ms'] ?? 20);

// JSON with exact 64-bit integers (16+ digits -> BigInt).
function parseExact(text) {
  let out = '';
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1); i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const tok = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 64))[0];
      out += /^-?\d{16,}$/.test(tok) ? `"\\u0000big:${tok}"` : tok; i += tok.length;
    } else { out += c; i++; }
  }
  return JSON.parse(out, (k, v) => (typeof v === 'string' && v.startsWith('\u0000big:') ? BigInt(v.slice(5)) : v));
}
const stringify = (v) => JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `\u0000big:${x}` : x))
  .replace(/"\\u0000big:(-?\d+)"/g, '$1');

const bigLong = avro.types.LongType.__with({
  fromBuffer: (b) => b.readBigInt64LE(),
  toBuffer: (n) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
  fromJSON: BigInt, toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});
async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`GET ${url}: ${r.status}`);
  return Buffer.from(await r.arrayBuffer());
}
function decodeAvro(buf) {
  return new Promise((res, rej) => {
    const records = [];
    let meta;
    const dec = new avro.streams.BlockDecoder({ parseHook: (s) => avro.Type.forSchema(s, { registry: { long: bigLong } }) });
    dec.on('metadata', (t, c, h) => { meta = h.meta; });
    dec.on('data', (r) => records.push(r)).on('end', () => res({
      rawSchema: JSON.parse(meta['avro.schema'].toString()),
      meta: Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith('avro.')).map(([k, v]) => [k, v.toString()])),
      records })).on('error', rej);
    dec.end(buf);
  });
}
// Avro object container file with the raw schema (field ids kept) in its header.
function encodeAvro(rawSchema, meta, records) {
  return new Promise((res, rej) => {
    const type = avro.Type.forSchema(rawSchema, { registry: { long: bigLong } });
    const enc = new avro.streams.BlockEncoder(type, { codec: 'deflate',
      metadata: Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, Buffer.from(String(v))])) });
    enc._schema = rawSchema;  // header carries the raw schema, not avsc's export of the Type
    const chunks = [];
    enc.on('data', (c) => chunks.push(c)).on('end', () => res(Buffer.concat(chunks))).on('error', rej);
    for (const r of records) enc.write(r);
    enc.end();
  });
}

const base = opt.catalog.replace(/\/$/, '');
const cfg = await (await fetch(`${base}/v1/config?warehouse=${encodeURIComponent(opt.warehouse)}`)).json();
const prefix = cfg.overrides?.prefix ?? cfg.defaults?.prefix;
const tableUrl = `${base}/v1/${prefix ? encodeURIComponent(prefix) + '/' : ''}namespaces/${encodeURIComponent(opt.namespace)}/tables/${encodeURIComponent(opt.table)}`;

async function loadTable() {
  const r = await fetch(tableUrl);
  if (r.status === 404) return null;
  if (!r.ok) throw new Error(`load: ${r.status} ${await r.text()}`);
  return parseExact(await r.text()).metadata;
}

const result = { commits: 0, conflicts: 0, other_errors: 0, rewrites: 0, appends: [] };
let nextId = BigInt(Date.now()) * 1000n;  // < 2^53, distinct from the channel's random ids
let started = null;
let n = 0;
while (started === null || Date.now() - started < seconds * 1000) {
  const md = await loadTable();
  const current = md?.['current-snapshot-id'];
  if (!md || current === undefined || current === null || BigInt(current) < 0n) {
    if (started === null && Date.now() - (globalThis.__t0 ??= Date.now()) > 120000) throw new Error('table never got a snapshot');
    await new Promise((r) => setTimeout(r, 100));
    continue;
  }
  started ??= Date.now();
  const snap = md.snapshots.find((s) => BigInt(s['snapshot-id']) === BigInt(current));
  const seq = BigInt(md['last-sequence-number']) + 1n;
  const sid = nextId++;
  const list = await decodeAvro(await fetchBytes(snap['manifest-list']));
  const doAppend = appendEvery > 0 && (n % appendEvery === appendEvery - 1) && result.appends.length < maxAppends;
  n++;
  let records = list.records;
  let summary = { operation: 'replace', 'external.writer': 'rewrite' };
  let appended = null;
  if (doAppend) {
    // Copy one live data file (the first ADDED/EXISTING entry of the first data manifest).
    let source = null, sourceManifest = null;
    for (const mf of list.records) {
      if (mf.content !== 0) continue;
      const m = await decodeAvro(await fetchBytes(mf.manifest_path));
      const e = m.records.find((x) => x.status !== 2 && x.data_file.content === 0);
      if (e) { source = e; sourceManifest = { mf, m }; break; }
    }
    if (source) {
      const newPath = `${md.location}/data/external-${randomUUID()}.parquet`;
      await putObject(newPath, await fetchBytes(source.data_file.file_path));
      const entry = { ...source, status: 1, snapshot_id: sid, sequence_number: null, file_sequence_number: null,
        data_file: { ...source.data_file, file_path: newPath } };
      const manifestPath = `${md.location}/metadata/external-${randomUUID()}-m0.avro`;
      const manifestBytes = await encodeAvro(sourceManifest.m.rawSchema, sourceManifest.m.meta, [entry]);
      await putObject(manifestPath, manifestBytes);
      const mfNew = { ...sourceManifest.mf, manifest_path: manifestPath, manifest_length: BigInt(manifestBytes.length),
        sequence_number: seq, min_sequence_number: seq, added_snapshot_id: sid, added_files_count: 1,
        existing_files_count: 0, deleted_files_count: 0, added_rows_count: source.data_file.record_count,
        existing_rows_count: 0n, deleted_rows_count: 0n };
      records = [mfNew, ...list.records];
      summary = { operation: 'append', 'external.writer': 'append', 'added-data-files': '1',
        'added-records': String(source.data_file.record_count) };
      appended = { file_path: newPath, source: source.data_file.file_path, record_count: Number(source.data_file.record_count),
        size: source.data_file.file_size_in_bytes };
    }
  }
  // Carry the parent's totals, as engines do (readers take row counts from them).
  for (const key of ['total-records', 'total-data-files', 'total-files-size', 'total-delete-files',
                     'total-position-deletes', 'total-equality-deletes']) {
    if (snap.summary?.[key] !== undefined) summary[key] = snap.summary[key];
  }
  if (appended && summary['total-records'] !== undefined) {
    summary['total-records'] = String(BigInt(summary['total-records']) + BigInt(appended.record_count));
    summary['total-data-files'] = String(BigInt(summary['total-data-files'] ?? '0') + 1n);
    if (summary['total-files-size'] !== undefined) summary['total-files-size'] = String(BigInt(summary['total-files-size']) + appended.size);
  }
  if (appended) {
    summary['added-files-size'] = String(appended.size);
    delete appended.size;
  }
  const listPath = `${md.location}/metadata/snap-${sid}-1-${randomUUID()}.avro`;
  await putObject(listPath, await encodeAvro(list.rawSchema, { ...list.meta, 'snapshot-id': String(sid),
    'parent-snapshot-id': String(current), 'sequence-number': String(seq) }, records));
  const body = {
    requirements: [{ type: 'assert-table-uuid', uuid: md['table-uuid'] },
                   { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': BigInt(current) }],
    updates: [
      { action: 'add-snapshot', snapshot: { 'snapshot-id': sid, 'parent-snapshot-id': BigInt(current), 'sequence-number': seq,
        'timestamp-ms': Date.now(), 'manifest-list': listPath, summary, 'schema-id': md['current-schema-id'] } },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': sid },
      { action: 'set-properties', updates: { 'external.commits': String(result.commits + 1) } },
    ],
  };
  const r = await fetch(tableUrl, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: stringify(body) });
  const text = await r.text();
  if (r.status === 200) {
    result.commits++;
    if (appended) result.appends.push(appended); else result.rewrites++;
  } else if (r.status === 409) {
    result.conflicts++;
  } else {
    result.other_errors++;
    console.error(`commit: ${r.status} ${text}`);
  }
  if (pauseMs) await new Promise((res) => setTimeout(res, pauseMs));
}
emit(JSON.stringify(result));
