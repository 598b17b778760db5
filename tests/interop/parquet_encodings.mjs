// Interop test of the writer's value encodings: integer columns at their edges (INT64 and
// INT32 min/max, deltas that wrap, all-equal values, sequences, one-value pages, nulls)
// and double, decimal(38,2) and decimal(38,0) columns (extremes, signed zeros, subnormals,
// the precision's min and max, negatives, nulls) go through `icestream convert`; DuckDB
// (@duckdb/node-api) and hyparquet read every file back value by value, and DuckDB's
// parquet_metadata must show the encoding the writer is meant to pick (DELTA_BINARY_PACKED
// integers and DELTA_BYTE_ARRAY decimals where smaller than PLAIN; BYTE_STREAM_SPLIT for
// uniformly random doubles, column u, PLAIN for doubles parsed from short decimals, column c).
//
// NaN, infinities and decimal(38,2) min/max, which JSON cannot carry or convert refuses, come
// from a file DuckDB writes, copied by `icestream parquet copy` (the same writer).
//
// Usage: node parquet_encodings.mjs ICESTREAM_BINARY NPM_DIR
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';

const [binaryArg, npmDirArg] = process.argv.slice(2);
if (!binaryArg || !npmDirArg) {
  console.error('usage: parquet_encodings.mjs ICESTREAM_BINARY NPM_DIR');
  process.exit(2);
}
const binary = resolve(binaryArg), npmDir = resolve(npmDirArg);
const require = createRequire(join(npmDir, 'package.json'));
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);
const { parquetReadObjects, asyncBufferFromFile } = await import(
  pathToFileURL(join(npmDir, 'node_modules/hyparquet/src/node.js')).href);
const { compressors } = await import(
  pathToFileURL(join(npmDir, 'node_modules/hyparquet-compressors/src/index.js')).href);

const I64_MIN = -(2n ** 63n), I64_MAX = 2n ** 63n - 1n, I32_MIN = -(2 ** 31), I32_MAX = 2 ** 31 - 1;
let seed = 20261202;
const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const rand64 = () => BigInt.asIntN(64, (BigInt(Math.floor(rnd() * 2 ** 32)) << 32n) | BigInt(Math.floor(rnd() * 2 ** 32)));

// case name -> { l: [bigint|null], i: [number|null], delta: whether column l must be
// delta-encoded }; every case also has a double column d (doubleFor), double columns u
// (uniform in [0, 1)) and c (coordinates like 12.3456), a decimal(38,2) column m (decimalFor) and a decimal(38,0)
// column z (wholeFor).
const cases = {};
const n = (k, f) => Array.from({ length: k }, (_, j) => f(j));
cases.alternating_extremes = { l: n(1000, (j) => (j % 2 ? I64_MIN : I64_MAX)), i: n(1000, (j) => (j % 2 ? I32_MIN : I32_MAX)), delta: true };
cases.wrapping_ramp = { l: n(300, (j) => BigInt.asIntN(64, I64_MAX - 150n + BigInt(j))),
  i: n(300, (j) => ((I32_MAX - 150 + j) | 0)), delta: true };
cases.all_equal = { l: n(500, () => I64_MIN), i: n(500, () => I32_MAX), delta: true };
cases.sequence_with_nulls = { l: n(5000, (j) => (j % 7 === 3 ? null : 1000000000n + BigInt(j))),
  i: n(5000, (j) => (j % 5 === 0 ? null : j * 3 - 7000)), delta: true };
cases.one_value = { l: [I64_MIN], i: [I32_MIN], delta: false };  // header only: PLAIN is as small
cases.mixed_edges = { l: [0n, I64_MAX, I64_MIN, -1n, 1n, null, I64_MIN + 1n, I64_MAX - 1n, 12345678901234n],
  i: [0, I32_MAX, I32_MIN, -1, 1, null, I32_MIN + 1, I32_MAX - 1, 123456789], delta: false };  // 64-bit deltas: PLAIN is smaller
cases.small_numbers = { l: n(3000, () => BigInt(Math.floor(rnd() * 1000000))), i: n(3000, () => Math.floor(rnd() * 100) - 50), delta: true };
cases.random_full_width = { l: n(3000, () => rand64()), i: n(3000, () => (Math.floor(rnd() * 2 ** 32) | 0)), delta: false };
cases.all_null = { l: n(50, () => null), i: n(50, () => null), delta: false };

const DOUBLES = [0, -0, 1.5, -2.25, Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, 5e-324 * 3,
  2.2250738585072014e-308, 0.1, 1 / 3, 123456.789, -1e-300];
const doubleFor = (j) => (j % 11 === 4 ? null : j < DOUBLES.length ? DOUBLES[j] : (rnd() - 0.5) * 10 ** Math.floor(rnd() * 40 - 20));
const MAX38 = '9'.repeat(36) + '.99';
const DECIMALS = ['0.00', '-0.01', '12.34', MAX38, '-' + MAX38, '-128.00', '127.99', '0.10', '-92233720368547758.08'];
const decimalFor = (j) => (j % 13 === 6 ? null : j < DECIMALS.length ? DECIMALS[j]
  : ((rnd() < 0.5 ? -1 : 1) * Math.floor(rnd() * 2000000) / 100).toFixed(2));
const WHOLES = ['0', '9'.repeat(38), '-' + '9'.repeat(38), '-1', '1', '-9223372036854775809', '18446744073709551616'];
const wholeFor = (j) => (j % 17 === 5 ? null : j < WHOLES.length ? WHOLES[j]
  : String(Math.floor(rnd() * 1000000)));
for (const c of Object.values(cases)) {
  c.d = c.l.map((_, j) => doubleFor(j));
  c.c = c.l.map((_, j) => (j % 19 === 2 ? null : (Math.floor(rnd() * 1800000) - 900000) / 10000));
  c.u = c.l.map((_, j) => (j % 23 === 8 ? null : rnd()));
  c.m = c.l.map((_, j) => decimalFor(j));
  c.z = c.l.map((_, j) => wholeFor(j));
}
const jsonDouble = (v) => (v === null ? 'null' : Object.is(v, -0) ? '-0.0' : String(v));

const dir = mkdtempSync(join(tmpdir(), 'icestream-encodings-'));
const db = await DuckDBInstance.create(':memory:');
const duck = await db.connect();
const schema = { type: 'struct', 'schema-id': 0, fields: [
  { id: 1, name: 'l', required: false, type: 'long' }, { id: 2, name: 'i', required: false, type: 'int' },
  { id: 3, name: 'd', required: false, type: 'double' },
  { id: 6, name: 'c', required: false, type: 'double' },
  { id: 7, name: 'u', required: false, type: 'double' },
  { id: 4, name: 'm', required: false, type: 'decimal(38, 2)' },
  { id: 5, name: 'z', required: false, type: 'decimal(38, 0)' }] };
writeFileSync(join(dir, 'schema.json'), JSON.stringify(schema));
let checked = 0;
try {
  for (const [name, c] of Object.entries(cases)) {
    for (const extra of [[], ['--page-size', '1000'], ['--threads', '2']]) {
      const inPath = join(dir, `${name}.jsonl`), outPath = join(dir, `${name}.parquet`);
      writeFileSync(inPath, c.l.map((v, j) => `{"l":${v === null ? 'null' : v.toString()},"i":${c.i[j]},"d":${jsonDouble(c.d[j])},"c":${jsonDouble(c.c[j])},"u":${jsonDouble(c.u[j])},"m":${c.m[j] ?? 'null'},"z":${c.z[j] ?? 'null'}}`).join('\n') + '\n');
      execFileSync(binary, ['convert', '--schema', join(dir, 'schema.json'), '--input', inPath, '--output', outPath,
        '--compression', 'zstd', '--no-dictionary', '--quiet', ...extra]);
      const what = `${name} ${extra.join(' ')}`;

      const res = await duck.runAndReadAll(`select l::VARCHAR l, i, d, c, u, m::VARCHAR m, z::VARCHAR z from read_parquet('${outPath}')`);
      const rows = res.getRowObjects();
      assert.equal(rows.length, c.l.length, `${what}: DuckDB row count`);
      const file = await asyncBufferFromFile(outPath);
      const hrows = await parquetReadObjects({ file, compressors });
      assert.equal(hrows.length, c.l.length, `${what}: hyparquet row count`);
      for (let j = 0; j < c.l.length; j++) {
        const wantL = c.l[j] === null ? null : c.l[j].toString();
        assert.equal(rows[j].l, wantL, `${what} row ${j}: DuckDB long`);
        assert.equal(rows[j].i, c.i[j], `${what} row ${j}: DuckDB int`);
        assert.equal(hrows[j].l === null ? null : BigInt(hrows[j].l).toString(), wantL, `${what} row ${j}: hyparquet long`);
        assert.equal(hrows[j].i, c.i[j], `${what} row ${j}: hyparquet int`);
        assert.ok(Object.is(rows[j].d, c.d[j]), `${what} row ${j}: DuckDB double ${rows[j].d} != ${c.d[j]}`);
        assert.ok(Object.is(hrows[j].d, c.d[j]), `${what} row ${j}: hyparquet double ${hrows[j].d} != ${c.d[j]}`);
        for (const col of ['c', 'u']) {
          assert.ok(Object.is(rows[j][col], c[col][j]), `${what} row ${j}: DuckDB double ${col} ${rows[j][col]} != ${c[col][j]}`);
          assert.ok(Object.is(hrows[j][col], c[col][j]), `${what} row ${j}: hyparquet double ${col} ${hrows[j][col]} != ${c[col][j]}`);
        }
        for (const col of ['m', 'z']) {
          assert.equal(rows[j][col], c[col][j], `${what} row ${j}: DuckDB decimal ${col}`);
          // hyparquet reads decimals as JS numbers: equal to the text's nearest double.
          if (c[col][j] === null) {
            assert.equal(hrows[j][col], null, `${what} row ${j}: hyparquet decimal ${col}`);
          } else {
            const want = Number(c[col][j]);
            assert.ok(Math.abs(hrows[j][col] - want) <= Math.abs(want) * 1e-15,
              `${what} row ${j}: hyparquet decimal ${col} ${hrows[j][col]} != ${c[col][j]}`);
          }
        }
        checked++;
      }
      // The writer's choice, as DuckDB sees it.
      const md = (await duck.runAndReadAll(
        `select path_in_schema p, encodings e from parquet_metadata('${outPath}')`)).getRowObjects();
      const encL = md.filter((r) => r.p === 'l').map((r) => r.e).join(' ');
      const encD = md.filter((r) => r.p === 'd').map((r) => r.e).join(' ');
      const encC = md.filter((r) => r.p === 'c').map((r) => r.e).join(' ');
      const encU = md.filter((r) => r.p === 'u').map((r) => r.e).join(' ');
      const encM = md.filter((r) => r.p === 'm').map((r) => r.e).join(' ');
      const encZ = md.filter((r) => r.p === 'z').map((r) => r.e).join(' ');
      // Doubles: BYTE_STREAM_SPLIT where a sample of the chunk's first page compresses
      // smaller split (random mantissas under few exponents), PLAIN for short decimals;
      // d (random mantissas over 40 decades) goes either way.
      assert.doesNotMatch(encD + encC + encU, /DELTA/, `${what}: d ${encD}, c ${encC}, u ${encU}`);
      if (c.l.length >= 3000 && extra.length === 0) {
        assert.match(encU, /BYTE_STREAM_SPLIT/, `${what}: u ${encU}`);
        assert.doesNotMatch(encC, /BYTE_STREAM_SPLIT/, `${what}: c ${encC}`);
      }
      // Decimals: DELTA_BYTE_ARRAY where their shared sign bytes make it smaller than PLAIN
      // (a page of many amounts), PLAIN for a single value (two length headers cost more).
      for (const [col, enc] of [['m', encM], ['z', encZ]]) {
        assert.doesNotMatch(enc, /BYTE_STREAM_SPLIT|DELTA_BINARY/, `${what}: ${col} ${enc}`);
        if (c.l.length >= 300) assert.match(enc, /DELTA_BYTE_ARRAY/, `${what}: ${col} ${enc}`);
        if (c.l.length === 1) assert.doesNotMatch(enc, /DELTA/, `${what}: ${col} ${enc}`);
      }
      if (c.delta && extra.length === 0) {
        assert.match(encL, /DELTA_BINARY_PACKED/, `${what}: column l encodings ${encL}`);
      } else if (!c.delta) {
        assert.doesNotMatch(encL, /DELTA_BINARY_PACKED/, `${what}: column l encodings ${encL}`);
      }
    }
  }
  // Values JSON cannot carry (NaN, infinities) go through `icestream parquet copy` of a
  // file DuckDB wrote: doubles with NaN, +-inf, -0.0 and subnormals among uniform ones (so
  // the chunk is BYTE_STREAM_SPLIT), decimal(38,2) with its min and max, PLAIN: `parquet
  // copy` writes as the table channel does, no DELTA_BYTE_ARRAY (icebird 0.3 reads none).
  const src = join(dir, 'edges.parquet'), copy = join(dir, 'edges-copy.parquet');
  await duck.run(`COPY (SELECT CASE WHEN i % 7 = 3 THEN NULL WHEN i = 0 THEN 'nan'::DOUBLE
      WHEN i = 1 THEN 'inf'::DOUBLE WHEN i = 2 THEN '-inf'::DOUBLE WHEN i = 4 THEN -0.0::DOUBLE
      WHEN i = 5 THEN 5e-324 WHEN i = 6 THEN -2.2250738585072014e-308 WHEN i = 8 THEN 0.0::DOUBLE
      ELSE (hash(i) % 1000000007) / 1000000007.0 END AS f,
    CASE WHEN i % 11 = 5 THEN NULL WHEN i = 0 THEN '${MAX38}'::DECIMAL(38,2)
      WHEN i = 1 THEN '-${MAX38}'::DECIMAL(38,2)
      ELSE (((hash(i) % 20001)::BIGINT - 10000)::VARCHAR || '.' || lpad((hash(i) % 97)::VARCHAR, 2, '0'))::DECIMAL(38,2)
      END AS m FROM range(20000) t(i)) TO '${src}' (FORMAT parquet)`);
  execFileSync(binary, ['parquet', 'copy', src, copy]);
  const encs = (await duck.runAndReadAll(`select path_in_schema p, encodings e from parquet_metadata('${copy}')`))
    .getRowObjects();
  assert.match(encs.find((r) => r.p === 'f').e, /BYTE_STREAM_SPLIT/, 'edges: f ' + JSON.stringify(encs));
  assert.doesNotMatch(encs.find((r) => r.p === 'm').e, /DELTA/, 'edges: m ' + JSON.stringify(encs));
  const asText = async (path) => (await duck.runAndReadAll(
    `select f::VARCHAR f, m::VARCHAR m from read_parquet('${path}')`)).getRowObjects();
  const [want, got] = [await asText(src), await asText(copy)];
  assert.equal(got.length, 20000, 'edges: DuckDB row count');
  for (let j = 0; j < want.length; j++) assert.deepEqual(got[j], want[j], `edges row ${j}: DuckDB`);
  const [hwant, hgot] = [await parquetReadObjects({ file: await asyncBufferFromFile(src), compressors }),
    await parquetReadObjects({ file: await asyncBufferFromFile(copy), compressors })];
  for (let j = 0; j < hwant.length; j++) {
    assert.ok(Object.is(hgot[j].f, hwant[j].f), `edges row ${j}: hyparquet double ${hgot[j].f} != ${hwant[j].f}`);
    assert.ok(Object.is(hgot[j].m, hwant[j].m), `edges row ${j}: hyparquet decimal ${hgot[j].m} != ${hwant[j].m}`);
  }
  assert.ok(Number.isNaN(hgot[0].f) && hgot[1].f === Infinity && hgot[2].f === -Infinity && Object.is(hgot[4].f, -0)
    && hgot[5].f === 5e-324, 'edges: the special doubles');
  console.log(`parquet encodings: ${Object.keys(cases).length} cases x 3 writer settings, ${checked} rows read by DuckDB and hyparquet; 20000 edge rows copied`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
