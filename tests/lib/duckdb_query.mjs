// Runs one SQL statement in DuckDB (@duckdb/node-api, its built-in Parquet reader) and
// prints the rows as JSON lines in read_table.mjs's canonical form, typed by an Iceberg
// schema: long and timestamp(tz) as exact integers (micros), int/double as numbers,
// decimal as "12.30", date as "YYYY-MM-DD", string as is, null as null. The independent
// side of `icestream table files --format duckdb` (tests/interop/test_table_tool.py).
//
//   node duckdb_query.mjs NPM_DIR SQL_FILE SCHEMA_JSON_FILE
import { readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [npmDir, sqlFile, schemaFile] = process.argv.slice(2);
const require = createRequire(join(resolve(npmDir), 'package.json'));
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);
const schema = JSON.parse(readFileSync(schemaFile, 'utf8'));
const sql = readFileSync(sqlFile, 'utf8');

const pad = (n, w = 2) => String(n).padStart(w, '0');
function canonical(v, type) {
  if (v === null || v === undefined) return null;
  const dec = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(type);
  if (dec) {
    const s = Number(dec[2]);
    const neg = v.value < 0n;
    let digits = (neg ? -v.value : v.value).toString().padStart(s + 1, '0');
    if (s > 0) digits = `${digits.slice(0, -s)}.${digits.slice(-s)}`;
    return (neg ? '-' : '') + digits;
  }
  switch (type) {
    case 'boolean': return v;
    case 'int': case 'double': case 'float': return Number(v);
    case 'long': return BigInt(v);
    case 'timestamp': case 'timestamptz': return BigInt(v.micros);
    case 'date': {
      const d = new Date(Number(v.days) * 86400000);
      return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
    }
    case 'string': return v;
    default: throw new Error(`duckdb_query.mjs: no canonical form for ${JSON.stringify(type)}`);
  }
}
const stringify = (x) => JSON.stringify(x, (k, v) => (typeof v === 'bigint' ? `\u0000big:${v}` : v))
  .replace(/"\\u0000big:(-?\d+)"/g, '$1');

const db = await (await DuckDBInstance.create(':memory:')).connect();
const result = await db.runAndReadAll(sql);
let out = '';
for (const r of result.getRowObjects()) {
  out += stringify(Object.fromEntries(schema.fields.map((f) => [f.name, canonical(r[f.name], f.type)]))) + '\n';
}
const buf = Buffer.from(out);
for (let off = 0; off < buf.length;) {
  try {
    off += writeSync(1, buf, off, buf.length - off);
  } catch (e) {
    if (e.code !== 'EAGAIN') throw e;
  }
}
