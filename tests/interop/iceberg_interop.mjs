// Iceberg interop, both directions, with independent implementations:
//  1. A partitioned table written by icestream's library (iceberg_tool write: four
//     appends, a compaction, one more append; real Parquet data files) is read by
//     icebird (rows, through the file:// fetch shim); its manifest list and manifests
//     are decoded by avsc and checked field by field (header metadata, field ids in the
//     Avro schema, counts, sequence numbers, partition values, column metrics and
//     bounds against the rows); its data files are read by DuckDB (rows, field ids).
//  2. A table written by DuckDB + avsc (tests/lib/make_iceberg_table.mjs) is read
//     by the library (iceberg_tool read), v1 and v2 metadata.
//
// Usage: node iceberg_interop.mjs ICEBERG_TOOL NPM_DIR [SEED]
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [toolArg, npmDirArg, seedArg] = process.argv.slice(2);
if (!toolArg || !npmDirArg) {
  console.error('usage: iceberg_interop.mjs ICEBERG_TOOL NPM_DIR [SEED]');
  process.exit(2);
}
const tool = resolve(toolArg);
const npmDir = resolve(npmDirArg);
const seed = seedArg ?? '11';
const here = dirname(fileURLToPath(import.meta.url));
const libDir = resolve(here, '../lib');  // the project's own test tools
const require = createRequire(join(npmDir, 'package.json'));
const load = (p) => import(pathToFileURL(require.resolve(p)).href);

await import(pathToFileURL(join(libDir, 'file_fetch.mjs')).href);  // before icebird
const { icebergRead, icebergMetadata } = await import(
  pathToFileURL(join(npmDir, 'node_modules/icebird/src/index.js')).href);  // ESM-only exports
const avro = (await load('avsc')).default;
const { DuckDBInstance } = await load('@duckdb/node-api');

const fromUrl = (u) => fileURLToPath(u);
const work = mkdtempSync(join(tmpdir(), 'iceberg-interop-'));

// avsc with exact 64-bit longs (snapshot ids exceed 2^53).
const bigLong = avro.types.LongType.__with({
  fromBuffer: (b) => b.readBigInt64LE(),
  toBuffer: (n) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
  fromJSON: BigInt, toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});
function readAvro(path) {
  const header = avro.extractFileHeader(path);
  const schemaJson = header.meta['avro.schema'];  // already parsed by avsc
  const meta = Object.fromEntries(Object.entries(header.meta).filter(([k]) => k !== 'avro.schema')
    .map(([k, v]) => [k, v.toString()]));
  const type = avro.Type.forSchema(schemaJson, { registry: { long: bigLong } });
  return new Promise((res, rej) => {
    const records = [];
    avro.createFileDecoder(path, { readerSchema: type })
      .on('data', (r) => records.push(r)).on('end', () => res({ schema: schemaJson, meta, records })).on('error', rej);
  });
}
const field = (recordSchema, name) => recordSchema.fields.find((f) => f.name === name);
const unwrap = (t) => (Array.isArray(t) ? t.find((b) => b !== 'null') : t);
const le64 = (hex) => Buffer.from(hex, 'hex').readBigInt64LE();

try {
  // ------------------------------------------------------------ 1. our table
  const root = join(work, 'ours');
  const info = JSON.parse(execFileSync(tool, ['write', root, seed], { encoding: 'utf8', maxBuffer: 64 << 20 }));
  const metadata = JSON.parse(readFileSync(fromUrl(info.metadata_location), 'utf8'));
  assert.equal(metadata['format-version'], 2);
  assert.equal(metadata['last-sequence-number'], info.commits.length);

  // icebird reads every row.
  const metadataFileName = basename(fromUrl(info.metadata_location));
  const icebirdMeta = await icebergMetadata({ tableUrl: info.table_location, metadataFileName });
  assert.equal(icebirdMeta.snapshots.length, info.commits.length);
  const rows = await icebergRead({ tableUrl: info.table_location, metadataFileName });
  assert.equal(rows.length, info.rows.length, 'icebird row count');
  const expectedById = new Map(info.rows.map((r) => [r.id, r]));
  const seen = new Set();
  for (const r of rows) {
    const id = Number(r.id);
    const e = expectedById.get(id);
    assert.ok(e, `unexpected row id ${id}`);
    assert.ok(!seen.has(id), `row ${id} read twice`);
    seen.add(id);
    assert.equal(r.kind ?? null, e.kind);
    assert.equal(new Date(r.ts).getTime(), e.ts_ms, `ts of ${id}`);
    assert.ok(Math.abs(Number(r.amount) - e.amount) < 1e-9, `amount of ${id}: ${r.amount} vs ${e.amount}`);
    assert.deepEqual(r.tags ?? [], e.tags);
  }

  // avsc: the manifest list of the current snapshot, field by field.
  // JSON.parse rounds 63-bit ids; the rounded values still single out the snapshot.
  const current = metadata.snapshots.find((s) => s['snapshot-id'] === metadata['current-snapshot-id']);
  const list = await readAvro(fromUrl(current['manifest-list']));
  assert.equal(list.meta['format-version'], '2');
  assert.equal(list.meta['snapshot-id'], String(info.current_snapshot_id));
  assert.equal(list.meta['sequence-number'], String(info.commits.length));
  assert.equal(list.schema.name, 'manifest_file');
  const listIds = Object.fromEntries(list.schema.fields.map((f) => [f.name, f['field-id']]));
  assert.deepEqual(listIds, { manifest_path: 500, manifest_length: 501, partition_spec_id: 502, content: 517,
    sequence_number: 515, min_sequence_number: 516, added_snapshot_id: 503, added_files_count: 504,
    existing_files_count: 505, deleted_files_count: 506, added_rows_count: 512, existing_rows_count: 513,
    deleted_rows_count: 514, partitions: 507, key_metadata: 519 });
  assert.equal(unwrap(field(list.schema, 'partitions').type)['element-id'], 508);

  const expectedFiles = new Map(info.live_files.map((f) => [f.file_path, f]));
  const rowsByFile = new Map();
  for (const r of info.rows) {
    if (!rowsByFile.has(r.file)) rowsByFile.set(r.file, []);
    rowsByFile.get(r.file).push(r);
  }
  const liveSeen = new Set();
  const statusCount = [0, 0, 0];
  for (const mf of list.records) {
    const mpath = fromUrl(mf.manifest_path);
    assert.equal(mf.manifest_length, BigInt(statSync(mpath).size), 'manifest_length');
    assert.equal(mf.partition_spec_id, 0);
    assert.equal(mf.content, 0);
    assert.ok(mf.sequence_number >= 1n && mf.min_sequence_number <= mf.sequence_number);
    const manifest = await readAvro(mpath);
    // Header metadata and the Avro schema's Iceberg attributes.
    assert.equal(manifest.meta['format-version'], '2');
    assert.equal(manifest.meta.content, 'data');
    assert.equal(manifest.meta['partition-spec-id'], '0');
    assert.deepEqual(JSON.parse(manifest.meta.schema), info.schema);
    assert.equal(manifest.meta['schema-id'], String(info.schema['schema-id']));
    assert.deepEqual(JSON.parse(manifest.meta['partition-spec']).map((f) => [f['field-id'], f['source-id'], f.transform, f.name]),
                     [[1000, 2, 'day', 'ts_day'], [1001, 3, 'identity', 'kind']]);
    assert.equal(manifest.schema.name, 'manifest_entry');
    const entryIds = Object.fromEntries(manifest.schema.fields.map((f) => [f.name, f['field-id']]));
    assert.deepEqual(entryIds, { status: 0, snapshot_id: 1, sequence_number: 3, file_sequence_number: 4, data_file: 2 });
    const df = field(manifest.schema, 'data_file').type;
    const dfIds = Object.fromEntries(df.fields.map((f) => [f.name, f['field-id']]));
    assert.deepEqual(dfIds, { content: 134, file_path: 100, file_format: 101, partition: 102, record_count: 103,
      file_size_in_bytes: 104, column_sizes: 108, value_counts: 109, null_value_counts: 110, nan_value_counts: 137,
      lower_bounds: 125, upper_bounds: 128, key_metadata: 131, split_offsets: 132, equality_ids: 135,
      sort_order_id: 140, referenced_data_file: 143 });
    const partType = field(df, 'partition').type;
    assert.deepEqual(partType.fields.map((f) => [f.name, f['field-id'], unwrap(f.type).logicalType ?? unwrap(f.type)]),
                     [['ts_day', 1000, 'date'], ['kind', 1001, 'string']]);
    const lb = unwrap(field(df, 'lower_bounds').type);
    assert.equal(lb.logicalType, 'map');
    assert.deepEqual(lb.items.fields.map((f) => f['field-id']), [126, 127]);
    assert.equal(unwrap(field(df, 'split_offsets').type)['element-id'], 133);

    let added = 0, existing = 0, deleted = 0, addedRows = 0n, existingRows = 0n;
    for (const e of manifest.records) {
      const d = e.data_file;
      statusCount[e.status]++;
      if (e.status === 1) {
        added++; addedRows += d.record_count;
        assert.equal(e.sequence_number, null, 'ADDED entries inherit their sequence number');
        assert.equal(e.file_sequence_number, null);
        assert.equal(e.snapshot_id, mf.added_snapshot_id);
      } else {
        assert.notEqual(e.sequence_number, null, 'EXISTING/DELETED entries carry sequence numbers');
        assert.notEqual(e.file_sequence_number, null);
        if (e.status === 0) { existing++; existingRows += d.record_count; } else { deleted++; }
      }
      if (e.status === 2) {
        assert.ok(!expectedFiles.has(d.file_path), `deleted file ${d.file_path} must not be live`);
        continue;
      }
      const x = expectedFiles.get(d.file_path);
      assert.ok(x, `unexpected live file ${d.file_path}`);
      assert.ok(!liveSeen.has(d.file_path), `file listed twice: ${d.file_path}`);
      liveSeen.add(d.file_path);
      const dataSeq = e.status === 1 ? mf.sequence_number : e.sequence_number;
      assert.equal(dataSeq, BigInt(x.added_sequence_number), `sequence number of ${d.file_path}`);
      assert.equal(d.content, 0);
      assert.equal(d.file_format, 'PARQUET');
      assert.equal(d.record_count, BigInt(x.record_count));
      assert.equal(d.file_size_in_bytes, BigInt(statSync(fromUrl(d.file_path)).size));
      assert.deepEqual([d.partition.ts_day, d.partition.kind], x.partition);
      const asMap = (arr, f) => Object.fromEntries((arr ?? []).map((kv) => [String(kv.key), f(kv.value)]));
      assert.deepEqual(asMap(d.column_sizes, Number), x.column_sizes);
      assert.deepEqual(asMap(d.value_counts, Number), x.value_counts);
      assert.deepEqual(asMap(d.null_value_counts, Number), x.null_value_counts);
      assert.deepEqual(asMap(d.lower_bounds, (b) => b.toString('hex')), x.lower_bounds);
      assert.deepEqual(asMap(d.upper_bounds, (b) => b.toString('hex')), x.upper_bounds);
      assert.deepEqual((d.split_offsets ?? []).map(Number), x.split_offsets);
      assert.equal(d.sort_order_id, 0);
      // Bounds and counts agree with the rows of the file (independently computed).
      const fr = rowsByFile.get(d.file_path);
      const ids = fr.map((r) => BigInt(r.id));
      const min = ids.reduce((a, b) => (b < a ? b : a)), max = ids.reduce((a, b) => (b > a ? b : a));
      const lower = asMap(d.lower_bounds, (b) => b), upper = asMap(d.upper_bounds, (b) => b);
      assert.equal(lower['1'].readBigInt64LE(), min);
      assert.equal(upper['1'].readBigInt64LE(), max);
      const tss = fr.map((r) => BigInt(r.ts_ms) * 1000n);
      assert.equal(lower['2'].readBigInt64LE(), tss.reduce((a, b) => (b < a ? b : a)));
      assert.equal(upper['2'].readBigInt64LE(), tss.reduce((a, b) => (b > a ? b : a)));
      assert.equal(Number(asMap(d.null_value_counts, Number)['3']), fr.filter((r) => r.kind === null).length);
      const day = Number(lower['2'].readBigInt64LE() / 86400000000n);
      assert.equal(d.partition.ts_day, day);
    }
    assert.equal(mf.added_files_count, added);
    assert.equal(mf.existing_files_count, existing);
    assert.equal(mf.deleted_files_count, deleted);
    assert.equal(mf.added_rows_count, addedRows);
    assert.equal(mf.existing_rows_count, existingRows);
    // Partition summaries: day bounds as 4-byte dates, kind bounds as UTF-8.
    const live = manifest.records.filter((e) => e.status !== 2);
    const allEntries = manifest.records;
    const days = allEntries.map((e) => e.data_file.partition.ts_day);
    assert.equal(mf.partitions.length, 2);
    assert.equal(mf.partitions[0].contains_null, false);
    assert.equal(mf.partitions[0].lower_bound.readInt32LE(), Math.min(...days));
    assert.equal(mf.partitions[0].upper_bound.readInt32LE(), Math.max(...days));
    const kinds = allEntries.map((e) => e.data_file.partition.kind);
    assert.equal(mf.partitions[1].contains_null, kinds.includes(null));
    const nonNull = kinds.filter((k) => k !== null).sort();
    if (nonNull.length) {
      assert.equal(mf.partitions[1].lower_bound.toString(), nonNull[0]);
      assert.equal(mf.partitions[1].upper_bound.toString(), nonNull[nonNull.length - 1]);
    }
    assert.ok(live.length >= 0);
  }
  assert.equal(liveSeen.size, expectedFiles.size, 'every live file is in a manifest');
  assert.ok(statusCount[0] + statusCount[2] > 0, 'the compaction left EXISTING or DELETED entries to check');

  // DuckDB reads the data files: rows, sums and the Parquet field ids.
  const db = await (await DuckDBInstance.create(':memory:')).connect();
  const fileList = info.live_files.map((f) => `'${fromUrl(f.file_path)}'`).join(',');
  const agg = (await db.runAndReadAll(
    `select count(*)::BIGINT as n, count(distinct id)::BIGINT as ids, sum(amount)::DOUBLE as s, min(id)::BIGINT as lo,
            max(id)::BIGINT as hi, sum(len(tags))::BIGINT as tags from read_parquet([${fileList}])`)).getRowObjectsJson()[0];
  assert.equal(Number(agg.n), info.rows.length);
  assert.equal(Number(agg.ids), info.rows.length);
  const sum = info.rows.reduce((a, r) => a + r.amount, 0);
  assert.ok(Math.abs(Number(agg.s) - sum) < 1e-6, `sum ${agg.s} vs ${sum}`);
  assert.equal(Number(agg.lo), Math.min(...info.rows.map((r) => r.id)));
  assert.equal(Number(agg.hi), Math.max(...info.rows.map((r) => r.id)));
  assert.equal(Number(agg.tags), info.rows.reduce((a, r) => a + r.tags.length, 0));
  const fieldIds = (await db.runAndReadAll(
    `select name, field_id from parquet_schema('${fromUrl(info.live_files[0].file_path)}') where field_id is not null`))
    .getRowObjectsJson();
  const ids = Object.fromEntries(fieldIds.map((r) => [r.name, Number(r.field_id)]));
  assert.equal(ids.id, 1);
  assert.equal(ids.ts, 2);
  assert.equal(ids.kind, 3);
  assert.equal(ids.amount, 4);
  assert.equal(ids.tags, 5);
  assert.ok(Object.values(ids).includes(6), 'list element id 6');

  // ------------------------------------------------------------ 2. their table
  const wh = join(work, 'theirs');
  execFileSync(process.execPath, [join(libDir, 'make_iceberg_table.mjs'), npmDir, wh, pathToFileURL(wh).href],
               { stdio: ['ignore', 'ignore', 'inherit'] });
  const s1 = '3051729675574597004', s2 = '7411374843456390127';
  const theirs = (v) => JSON.parse(execFileSync(tool, ['read', pathToFileURL(join(wh, `db/t1/metadata/v${v}.metadata.json`)).href],
                                                { encoding: 'utf8' }));
  const v2 = theirs(2);
  assert.equal(v2.format_version, 2);
  assert.equal(v2.table_uuid, '9c12d441-03fe-4693-9a96-a0705ddf69c1');
  assert.equal(String(v2.current_snapshot_id), s2);
  assert.equal(v2.last_sequence_number, 2);
  assert.deepEqual(v2.schema.fields.map((f) => [f.id, f.name, f.type]), [[1, 'id', 'long'], [2, 'data', 'string'], [3, 'ts', 'timestamptz']]);
  assert.equal(v2.snapshots.length, 2);
  const [first, second] = v2.snapshots;
  assert.equal(String(first.snapshot_id), s1);
  assert.equal(first.entries.length, 1);
  const dataEntry = second.entries.find((e) => e.content === 0);
  const deleteEntry = second.entries.find((e) => e.content === 1);
  assert.equal(second.operation, 'delete');
  assert.equal(second.entries.length, 2);
  assert.equal(dataEntry.record_count, 1000);
  assert.equal(dataEntry.sequence_number, 1);          // inherited from its manifest
  assert.equal(String(dataEntry.snapshot_id), s1);
  assert.equal(dataEntry.file_size_in_bytes, statSync(fromUrl(dataEntry.file_path)).size);
  assert.equal(le64(dataEntry.lower_bounds['1']), 0n);
  assert.equal(le64(dataEntry.upper_bounds['1']), 999n);
  assert.equal(deleteEntry.record_count, 10);
  assert.equal(deleteEntry.sequence_number, 2);
  assert.equal(deleteEntry.file_sequence_number, 2);
  assert.equal(String(deleteEntry.snapshot_id), s2);
  const v1 = theirs(1);
  assert.equal(v1.snapshots.length, 1);
  assert.equal(String(v1.current_snapshot_id), s1);
  console.log(`iceberg interop passed (seed ${seed}: ${info.rows.length} rows, ${info.live_files.length} files, ` +
              `${info.commits.length} commits, entries by status ${statusCount})`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
