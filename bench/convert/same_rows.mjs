// The benchmark's correctness check: DuckDB reads icestream's file and its own and counts
// the rows each has that the other lacks (EXCEPT ALL, every column compared by value).
// Prints "rows A B, only in icestream's X, only in DuckDB's Y"; X = Y = 0 means that an
// independent reader sees exactly the values DuckDB itself made from the same input.
//   node same_rows.mjs NPM_DIR ICESTREAM.parquet DUCKDB.parquet
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [npmDir, ice, duck] = process.argv.slice(2);
const require = createRequire(join(resolve(npmDir), 'package.json'));
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const one = async (sql) => String((await c.runAndReadAll(sql)).getRows()[0][0]);
const q = (p) => `'${p.replaceAll("'", "''")}'`;
const a = await one(`SELECT count(*) FROM ${q(ice)}`);
const b = await one(`SELECT count(*) FROM ${q(duck)}`);
const x = await one(`SELECT count(*) FROM (FROM ${q(ice)} EXCEPT ALL FROM ${q(duck)})`);
const y = await one(`SELECT count(*) FROM (FROM ${q(duck)} EXCEPT ALL FROM ${q(ice)})`);
console.log(`rows ${a} ${b}, only in icestream's ${x}, only in DuckDB's ${y}`);
