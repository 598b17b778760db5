// DuckDB's JSON -> Parquet path for the benchmark: read_json with the column types the
// icestream schema mapping produces, COPY to Parquet with ZSTD. Prints the COPY's own
// time and the CPU-seconds of the process during it, all threads ("seconds: S cpu: C"),
// which leave out node's and DuckDB's start-up.
//   node duckdb_convert.mjs NPM_DIR THREADS IN.jsonl OUT.parquet [COLUMNS]
// COLUMNS: a DuckDB struct literal of column types (default: the card transactions').
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [npmDir, threads, input, output, columnsArg] = process.argv.slice(2);
const require = createRequire(join(resolve(npmDir), 'package.json'));
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);
const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const c = await db.connect();
const columns = columnsArg ?? `{
  transaction_id: 'UUID', event_time: 'TIMESTAMPTZ', amount: 'DECIMAL(38,2)', currency: 'VARCHAR',
  card: 'STRUCT(card_id VARCHAR, brand VARCHAR, last4 VARCHAR, expiry VARCHAR, issuer_country VARCHAR)',
  merchant: 'STRUCT(merchant_id BIGINT, name VARCHAR, mcc INTEGER, city VARCHAR, country VARCHAR,
                    location STRUCT(lat DOUBLE, lon DOUBLE))',
  status: 'VARCHAR', is_online: 'BOOLEAN', risk_score: 'DOUBLE', tags: 'VARCHAR[]',
  customer_id: 'BIGINT', installments: 'INTEGER', settlement_date: 'DATE'}`;
const t0 = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
await c.run(`COPY (SELECT * FROM read_json('${input}', format = 'newline_delimited', columns = ${columns}))
             TO '${output}' (FORMAT parquet, COMPRESSION zstd)`);
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
console.log(`seconds: ${secs} cpu: ${(cpu.user + cpu.system) / 1e6}`);
