// Writes a small Iceberg v2 table without icestream's code, as an independent writer for
// the interop tests: Parquet data by DuckDB (field ids and the iceberg.schema key set),
// manifests and manifest lists by avsc, metadata JSON by hand (formats.md, Iceberg spec
// "Manifests", "Manifest Lists", "Table Metadata").
//
//   node make_iceberg_table.mjs NPM_DIR WAREHOUSE_DIR BASE_URL
//
// The table is WAREHOUSE_DIR/db/t1, its location BASE_URL/db/t1. Two snapshots:
//   1 (append):  one data file, rows id 0..999, data 'row-<id>', ts 2024-01-01 + id s
//   2 (delete):  one position-delete file removing positions 0..9 of that data file
// metadata/v1.metadata.json has snapshot 1 only, v2.metadata.json both; the uuid and
// snapshot ids below are fixed so tests can assert them.
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export const TABLE_UUID = '9c12d441-03fe-4693-9a96-a0705ddf69c1';
export const SNAPSHOT_1 = 3051729675574597004n;
export const SNAPSHOT_2 = 7411374843456390127n;

const [npmDir, warehouse, baseUrl] = process.argv.slice(2);
if (!npmDir || !warehouse || !baseUrl) {
  console.error('usage: make_iceberg_table.mjs NPM_DIR WAREHOUSE_DIR BASE_URL');
  process.exit(2);
}
const require = createRequire(join(npmDir, 'package.json'));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
const avro = (await load('avsc')).default;
const { DuckDBInstance } = await load('@duckdb/node-api');

const tableDir = join(warehouse, 'db', 't1');
const location = `${baseUrl.replace(/\/$/, '')}/db/t1`;
for (const sub of ['data', 'metadata']) mkdirSync(join(tableDir, sub), { recursive: true });

const schema = {
  type: 'struct', 'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'data', required: false, type: 'string' },
    { id: 3, name: 'ts', required: false, type: 'timestamptz' },
  ],
};

// ---- data files (DuckDB)
const duck = await (await DuckDBInstance.create(':memory:')).connect();
const dataName = `data-${randomUUID()}.parquet`;
const deleteName = `pos-deletes-${randomUUID()}.parquet`;
await duck.run(`COPY (SELECT i::BIGINT AS id, 'row-' || i AS data,
                             TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(i) AS ts
                      FROM range(1000) r(i))
                TO '${join(tableDir, 'data', dataName)}'
                (FORMAT parquet, COMPRESSION zstd, FIELD_IDS {id: 1, data: 2, ts: 3},
                 KV_METADATA {'iceberg.schema': '${JSON.stringify(schema)}'})`);
// Position deletes: reserved field ids file_path 2147483546, pos 2147483545.
await duck.run(`COPY (SELECT '${location}/data/${dataName}' AS file_path, i::BIGINT AS pos FROM range(10) r(i))
                TO '${join(tableDir, 'data', deleteName)}'
                (FORMAT parquet, COMPRESSION snappy, FIELD_IDS {file_path: 2147483546, pos: 2147483545})`);
const sizeOf = (name) => statSync(join(tableDir, 'data', name)).size;

// ---- Avro schemas with Iceberg field ids
const nullable = (name, id, type) => ({ name, 'field-id': id, type: ['null', type], default: null });
const intMap = (keyId, valueId, valueType) => ({
  type: 'array', logicalType: 'map',
  items: { type: 'record', name: `k${keyId}_v${valueId}`,
           fields: [{ name: 'key', type: 'int', 'field-id': keyId }, { name: 'value', type: valueType, 'field-id': valueId }] },
});
const dataFileType = {
  type: 'record', name: 'r2',
  fields: [
    { name: 'content', type: 'int', 'field-id': 134 },
    { name: 'file_path', type: 'string', 'field-id': 100 },
    { name: 'file_format', type: 'string', 'field-id': 101 },
    { name: 'partition', 'field-id': 102, type: { type: 'record', name: 'r102', fields: [] } },
    { name: 'record_count', type: 'long', 'field-id': 103 },
    { name: 'file_size_in_bytes', type: 'long', 'field-id': 104 },
    nullable('column_sizes', 108, intMap(117, 118, 'long')),
    nullable('value_counts', 109, intMap(119, 120, 'long')),
    nullable('null_value_counts', 110, intMap(121, 122, 'long')),
    nullable('lower_bounds', 125, intMap(126, 127, 'bytes')),
    nullable('upper_bounds', 128, intMap(129, 130, 'bytes')),
    nullable('key_metadata', 131, 'bytes'),
    nullable('split_offsets', 132, { type: 'array', items: 'long', 'element-id': 133 }),
    nullable('equality_ids', 135, { type: 'array', items: 'int', 'element-id': 136 }),
    nullable('sort_order_id', 140, 'int'),
  ],
};
const entrySchema = {
  type: 'record', name: 'manifest_entry',
  fields: [
    { name: 'status', type: 'int', 'field-id': 0 },
    nullable('snapshot_id', 1, 'long'),
    nullable('sequence_number', 3, 'long'),
    nullable('file_sequence_number', 4, 'long'),
    { name: 'data_file', 'field-id': 2, type: dataFileType },
  ],
};
const manifestFileSchema = {
  type: 'record', name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500 },
    { name: 'manifest_length', type: 'long', 'field-id': 501 },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502 },
    { name: 'content', type: 'int', 'field-id': 517 },
    { name: 'sequence_number', type: 'long', 'field-id': 515 },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516 },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503 },
    { name: 'added_files_count', type: 'int', 'field-id': 504 },
    { name: 'existing_files_count', type: 'int', 'field-id': 505 },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506 },
    { name: 'added_rows_count', type: 'long', 'field-id': 512 },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513 },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514 },
    nullable('partitions', 507, {
      type: 'array', 'element-id': 508,
      items: { type: 'record', name: 'r508',
               fields: [{ name: 'contains_null', type: 'boolean', 'field-id': 509 }, nullable('contains_nan', 518, 'boolean'),
                        nullable('lower_bound', 510, 'bytes'), nullable('upper_bound', 511, 'bytes')] },
    }),
    nullable('key_metadata', 519, 'bytes'),
  ],
};

// Snapshot ids exceed 2^53: a long type over BigInt.
const int64 = avro.types.LongType.__with({
  fromBuffer: (b) => b.readBigInt64LE(),
  toBuffer: (v) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v)); return b; },
  fromJSON: (v) => BigInt(v),
  toJSON: (v) => Number(v),
  isValid: (v) => typeof v === 'bigint' || Number.isSafeInteger(v),
  compare: (a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0),
});

// Writes an Avro container file. The header must carry the raw schema (with field ids):
// avsc writes the header on the first record, from its `_schema`, so that is set to the
// raw JSON while the records are encoded with the BigInt-aware type.
async function writeAvro(name, rawSchema, meta, records) {
  const path = join(tableDir, 'metadata', name);
  const type = avro.Type.forSchema(rawSchema, { registry: { long: int64 } });
  const metadata = {};
  for (const [k, v] of Object.entries(meta)) metadata[k] = Buffer.from(String(v));
  const encoder = avro.createFileEncoder(path, type, { codec: 'deflate', metadata });
  encoder._schema = rawSchema;
  const closed = new Promise((resolve, reject) => {
    encoder.on('error', reject);
    encoder.on('finish', resolve);
  });
  for (const r of records) encoder.write(r);
  encoder.end();
  await closed;
  await new Promise((resolve) => setTimeout(resolve, 50));  // the file stream closes after 'finish'
  return { path: `${location}/metadata/${name}`, length: statSync(path).size };
}

const long8 = (v) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v)); return b; };
const dataFile = (content, name, rows, bounds) => ({
  content, file_path: `${location}/data/${name}`, file_format: 'PARQUET', partition: {},
  record_count: rows, file_size_in_bytes: sizeOf(name),
  column_sizes: null, value_counts: null, null_value_counts: null,
  lower_bounds: bounds ? [{ key: 1, value: long8(bounds[0]) }] : null,
  upper_bounds: bounds ? [{ key: 1, value: long8(bounds[1]) }] : null,
  key_metadata: null, split_offsets: null, equality_ids: null, sort_order_id: content === 0 ? 0 : null,
});
const manifestMeta = (content) => ({
  schema: JSON.stringify(schema), 'schema-id': 0, 'partition-spec': '[]', 'partition-spec-id': 0,
  'format-version': 2, content,
});
// Entries leave sequence numbers null: they inherit their manifest's (spec, "Sequence
// Number Inheritance").
const dataManifest = await writeAvro(`m-data-${randomUUID()}.avro`, entrySchema, manifestMeta('data'), [
  { status: 1, snapshot_id: SNAPSHOT_1, sequence_number: null, file_sequence_number: null,
    data_file: dataFile(0, dataName, 1000, [0, 999]) },
]);
const deleteManifest = await writeAvro(`m-deletes-${randomUUID()}.avro`, entrySchema, manifestMeta('deletes'), [
  { status: 1, snapshot_id: SNAPSHOT_2, sequence_number: null, file_sequence_number: null,
    data_file: dataFile(1, deleteName, 10, null) },
]);
const listEntry = (m, content, seq, snapshot, rows) => ({
  manifest_path: m.path, manifest_length: m.length, partition_spec_id: 0, content,
  sequence_number: seq, min_sequence_number: seq, added_snapshot_id: snapshot,
  added_files_count: 1, existing_files_count: 0, deleted_files_count: 0,
  added_rows_count: rows, existing_rows_count: 0, deleted_rows_count: 0, partitions: [], key_metadata: null,
});
const listMeta = (snapshot, parent, seq) => ({
  'snapshot-id': snapshot, 'parent-snapshot-id': parent ?? 'null', 'sequence-number': seq, 'format-version': 2,
});
const list1 = await writeAvro(`snap-${SNAPSHOT_1}-${randomUUID()}.avro`, manifestFileSchema, listMeta(SNAPSHOT_1, null, 1),
  [listEntry(dataManifest, 0, 1, SNAPSHOT_1, 1000)]);
const list2 = await writeAvro(`snap-${SNAPSHOT_2}-${randomUUID()}.avro`, manifestFileSchema, listMeta(SNAPSHOT_2, SNAPSHOT_1, 2),
  [listEntry(dataManifest, 0, 1, SNAPSHOT_1, 1000), listEntry(deleteManifest, 1, 2, SNAPSHOT_2, 10)]);

// ---- table metadata. JSON.stringify cannot write 64-bit integers exactly, so snapshot
// ids go in as placeholders and are replaced by their digits afterwards.
const now = Date.now();
const snapshot1 = { 'snapshot-id': '@S1@', 'sequence-number': 1, 'timestamp-ms': now, 'manifest-list': list1.path,
                    summary: { operation: 'append' }, 'schema-id': 0 };
const snapshot2 = { 'snapshot-id': '@S2@', 'parent-snapshot-id': '@S1@', 'sequence-number': 2, 'timestamp-ms': now,
                    'manifest-list': list2.path, summary: { operation: 'delete' }, 'schema-id': 0 };
function metadata(snapshots, current, seq) {
  const doc = {
    'format-version': 2, 'table-uuid': TABLE_UUID, location, 'last-sequence-number': seq,
    'last-updated-ms': now, 'last-column-id': 3, 'current-schema-id': 0, schemas: [schema],
    'default-spec-id': 0, 'partition-specs': [{ 'spec-id': 0, fields: [] }], 'last-partition-id': 999,
    'default-sort-order-id': 0, 'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { 'write.parquet.compression-codec': 'zstd' },
    'current-snapshot-id': current, refs: { main: { 'snapshot-id': current, type: 'branch' } },
    snapshots, 'snapshot-log': snapshots.map((s) => ({ 'timestamp-ms': now, 'snapshot-id': s['snapshot-id'] })),
    'metadata-log': [],
  };
  return JSON.stringify(doc, null, 2).replaceAll('"@S1@"', String(SNAPSHOT_1)).replaceAll('"@S2@"', String(SNAPSHOT_2));
}
writeFileSync(join(tableDir, 'metadata', 'v1.metadata.json'), metadata([snapshot1], '@S1@', 1));
writeFileSync(join(tableDir, 'metadata', 'v2.metadata.json'), metadata([snapshot1, snapshot2], '@S2@', 2));
writeFileSync(join(tableDir, 'metadata', 'version-hint.text'), '2');
console.log(`table ${location} in ${tableDir}`);
