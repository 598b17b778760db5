// Query-side cost of a table for bench/table-delivery: the live data files of the current
// snapshot (REST catalog over plain HTTP -> manifest list -> manifests, decoded with
// avsc), then DuckDB reads every row of every column of all of them
// (SELECT count(*), sum(hash(COLUMNS(*))) over read_parquet([...])), RUNS times, each on
// a new in-memory database. Prints {"files", "bytes", "rows", "plan_ms", "read_ms": [...]}.
//
// Usage: node query_time.mjs NPM_DIR CATALOG_URL WAREHOUSE NAMESPACE TABLE [RUNS]
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readFile } from 'node:fs/promises';

const [npmDirArg, catalog, warehouse, namespace, table, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 3);
const require = createRequire(join(resolve(npmDirArg), 'package.json'));
const avro = (await import(pathToFileURL(require.resolve('avsc')).href)).default;
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);

const local = (loc) => {
  if (!loc.startsWith('file://')) throw new Error(`not a local file: ${loc}`);
  return loc.slice('file://'.length);
};
function decode(buf) {
  return new Promise((res, rej) => {
    const out = [];
    const dec = new avro.streams.BlockDecoder({
      parseHook: (s) => avro.Type.forSchema(s, { registry: { long: avro.types.LongType.__with({
        fromBuffer: (b) => b.readBigInt64LE(), toBuffer: (n) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
        fromJSON: BigInt, toJSON: Number, isValid: (n) => typeof n === 'bigint', compare: (a, b) => (a < b ? -1 : a > b ? 1 : 0) }) } }) });
    dec.on('data', (r) => out.push(r)).on('end', () => res(out)).on('error', rej);
    dec.end(buf);
  });
}

const t0 = performance.now();
const cfg = await (await fetch(`${catalog}/v1/config?warehouse=${encodeURIComponent(warehouse)}`)).json();
const prefix = cfg.overrides?.prefix ?? cfg.defaults?.prefix;
const r = await fetch(`${catalog}/v1/${encodeURIComponent(prefix)}/namespaces/${encodeURIComponent(namespace)}/tables/${encodeURIComponent(table)}`);
if (!r.ok) throw new Error(`load table: ${r.status}`);
// Snapshot ids exceed 2^53: integers of 16+ digits are read as strings.
const md = JSON.parse((await r.text()).replace(/([:\[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"')).metadata;
const current = String(md['current-snapshot-id']);
const manifestList = md.snapshots.find((s) => String(s['snapshot-id']) === current)['manifest-list'];
const files = [];
let bytes = 0n;
for (const mf of await decode(await readFile(local(manifestList)))) {
  if (mf.content !== 0) continue;
  for (const e of await decode(await readFile(local(mf.manifest_path)))) {
    if (e.status === 2 || e.data_file.content !== 0) continue;
    files.push(local(e.data_file.file_path));
    bytes += e.data_file.file_size_in_bytes;
  }
}
const planMs = performance.now() - t0;
const list = '[' + files.map((f) => `'${f.replace(/'/g, "''")}'`).join(',') + ']';
const readMs = [];
let rows = null;
for (let i = 0; i < runs; i++) {
  const db = await (await DuckDBInstance.create(':memory:')).connect();
  const s = performance.now();
  const res = (await db.runAndReadAll(`select count(*) as n, sum(hash(COLUMNS(*))) from read_parquet(${list})`)).getRows();
  readMs.push(performance.now() - s);
  rows = Number(res[0][0]);
  db.closeSync?.();
}
console.log(JSON.stringify({ files: files.length, bytes: Number(bytes), rows, plan_ms: planMs, read_ms: readMs }));
