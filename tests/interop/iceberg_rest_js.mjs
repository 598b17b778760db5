// The REST catalog driven by an independent client, iceberg-js: warehouse prefix from
// /v1/config, namespaces, create/load/list tables, commits with requirements (a
// conflicting commit gets 409 CommitFailedException), register, rename, drop, and the
// error types of missing things.
//
// Usage: node iceberg_rest_js.mjs ICESTREAM_BINARY NPM_DIR
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { startServer } from '../lib/server.mjs';

const [binaryArg, npmDirArg] = process.argv.slice(2);
if (!binaryArg || !npmDirArg) {
  console.error('usage: iceberg_rest_js.mjs ICESTREAM_BINARY NPM_DIR');
  process.exit(2);
}
const npmDir = resolve(npmDirArg);
const require = createRequire(join(npmDir, 'package.json'));
const { IcebergRestCatalog, IcebergError } = await import(pathToFileURL(require.resolve('iceberg-js')).href);

async function expectError(promise, status, type) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof IcebergError, `expected an IcebergError, got ${e}`);
    assert.equal(e.status, status, `status of ${e.message}`);
    if (type) assert.equal(e.icebergType, type, e.message);
    return e;
  }
  assert.fail(`expected HTTP ${status} ${type ?? ''}`);
}

const server = await startServer(resolve(binaryArg));
try {
  const baseUrl = `${server.endpoint}/iceberg`;
  const auth = { type: 'bearer', token: 'any' };
  const catalog = new IcebergRestCatalog({ baseUrl, auth, warehouse: 'arn:aws:s3tables:us-east-1:000000000000:bucket/js-wh' });
  const config = await catalog.loadConfig();
  assert.equal(config.overrides.prefix, 'js-wh');
  assert.ok(config.endpoints.includes('POST /v1/{prefix}/namespaces/{namespace}/tables/{table}'));

  // Namespaces.
  await catalog.createNamespace({ namespace: ['analytics'] }, { properties: { owner: 'ice' } });
  await catalog.createNamespace({ namespace: ['analytics', 'daily'] });
  await expectError(catalog.createNamespace({ namespace: ['analytics'] }), 409, 'AlreadyExistsException');
  assert.equal(await catalog.namespaceExists({ namespace: ['analytics'] }), true);
  assert.equal(await catalog.namespaceExists({ namespace: ['nope'] }), false);
  assert.deepEqual((await catalog.listNamespaces()).namespaces, [{ namespace: ['analytics'] }]);
  assert.deepEqual((await catalog.listNamespaces({ parent: { namespace: ['analytics'] } })).namespaces,
                   [{ namespace: ['analytics', 'daily'] }]);
  assert.deepEqual((await catalog.loadNamespaceMetadata({ namespace: ['analytics'] })).properties, { owner: 'ice' });
  const upd = await catalog.updateNamespaceProperties({ namespace: ['analytics'] },
                                                       { removals: ['owner', 'absent'], updates: { team: 'x' } });
  assert.deepEqual(upd.removed, ['owner']);
  assert.deepEqual(upd.missing, ['absent']);
  assert.deepEqual(upd.updated, ['team']);
  await expectError(catalog.loadNamespaceMetadata({ namespace: ['nope'] }), 404, 'NoSuchNamespaceException');

  // The default warehouse (no prefix) is a different warehouse.
  const plain = new IcebergRestCatalog({ baseUrl, auth });
  assert.deepEqual((await plain.listNamespaces()).namespaces, []);

  // Tables.
  const schema = {
    type: 'struct', 'schema-id': 0,
    fields: [
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 'ts', required: false, type: 'timestamptz' },
      { id: 3, name: 'payload', required: false, type: { type: 'struct', fields: [
        { id: 4, name: 'a', required: false, type: 'string' },
        { id: 5, name: 'b', required: false, type: 'decimal(10, 2)' } ] } },
    ],
  };
  const ns = { namespace: ['analytics'] };
  const id = { namespace: ['analytics'], name: 'events' };
  const created = await catalog.createTableResult(ns, {
    name: 'events', schema,
    'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 2, name: 'ts_day', transform: 'day' },
                                               { 'source-id': 1, name: 'id_bucket', transform: 'bucket[8]' }] },
    'write-order': { 'order-id': 1, fields: [{ 'source-id': 1, transform: 'identity', direction: 'asc', 'null-order': 'nulls-first' }] },
    properties: { 'write.format.default': 'parquet' },
  });
  const md = created.metadata;
  assert.equal(md['format-version'], 2);
  assert.match(md['table-uuid'], /^[0-9a-f-]{36}$/);
  assert.equal(md['last-column-id'], 5);
  assert.deepEqual(md['partition-specs'][0].fields.map((f) => [f['field-id'], f['source-id'], f.transform]),
                   [[1000, 2, 'day'], [1001, 1, 'bucket[8]']]);
  assert.equal(md['last-partition-id'], 1001);
  assert.equal(md['default-sort-order-id'], 1);
  assert.equal(md.properties['write.format.default'], 'parquet');
  assert.match(created['metadata-location'], /\/js-wh\/analytics\/events-[0-9a-f]{8}\/metadata\/00000-.*\.metadata\.json$/);
  assert.ok(created.etag);
  await expectError(catalog.createTable(ns, { name: 'events', schema }), 409, 'AlreadyExistsException');
  await expectError(catalog.createTable({ namespace: ['nope'] }, { name: 't', schema }), 404, 'NoSuchNamespaceException');
  await expectError(catalog.createTable(ns, { name: 'bad', schema: { type: 'struct', fields: [{ id: 1, name: 'x', required: true, type: 'nonsense' }] } }),
                    400, 'BadRequestException');
  assert.deepEqual((await catalog.listTables(ns)).identifiers, [id]);
  assert.equal(await catalog.tableExists(id), true);
  assert.equal(await catalog.tableExists({ namespace: ['analytics'], name: 'nope' }), false);
  const loaded = await catalog.loadTableResult(id);
  assert.equal(loaded['metadata-location'], created['metadata-location']);
  assert.equal(loaded.etag, created.etag);
  assert.equal(await catalog.loadTableResult(id, { ifNoneMatch: loaded.etag }), null);  // 304

  // Commit a snapshot (ids small enough for JavaScript numbers).
  const uuid = md['table-uuid'];
  const snapshot = (sid, parent, seq) => ({
    'snapshot-id': sid, ...(parent ? { 'parent-snapshot-id': parent } : {}), 'sequence-number': seq,
    'timestamp-ms': Date.now(), 'manifest-list': `${md.location}/metadata/snap-${sid}.avro`,
    summary: { operation: 'append', 'added-data-files': '0' }, 'schema-id': 0 });
  const commit1 = await catalog.commitTable(id, {
    requirements: [{ type: 'assert-table-uuid', uuid }, { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }],
    updates: [{ action: 'add-snapshot', snapshot: snapshot(1001, null, 1) },
              { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 1001 }],
  });
  assert.match(commit1['metadata-location'], /\/metadata\/00001-/);
  assert.equal(commit1.metadata['current-snapshot-id'], 1001);
  assert.equal(commit1.metadata['last-sequence-number'], 1);
  assert.equal(commit1.metadata['metadata-log'][0]['metadata-file'], created['metadata-location']);

  // A second writer that still believes main has no snapshot loses: 409 CommitFailed.
  const conflict = await expectError(catalog.commitTable(id, {
    requirements: [{ type: 'assert-table-uuid', uuid }, { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }],
    updates: [{ action: 'add-snapshot', snapshot: snapshot(1002, null, 1) },
              { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 1002 }],
  }), 409, 'CommitFailedException');
  assert.ok(conflict.isConflict());
  assert.equal((await catalog.loadTable(id))['current-snapshot-id'], 1001);
  // It reloads and retries on top of 1001.
  const commit2 = await catalog.commitTable(id, {
    requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 1001 }],
    updates: [{ action: 'add-snapshot', snapshot: snapshot(1002, 1001, 2) },
              { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 1002 },
              { action: 'set-properties', updates: { 'commit.note': 'second' } }],
  });
  assert.equal(commit2.metadata['current-snapshot-id'], 1002);
  assert.deepEqual(commit2.metadata['snapshot-log'].map((e) => e['snapshot-id']), [1001, 1002]);
  await expectError(catalog.commitTable(id, { requirements: [], updates: [{ action: 'frobnicate' }] }), 400, 'BadRequestException');
  await expectError(catalog.commitTable(id, { requirements: [{ type: 'assert-sky-is-blue' }], updates: [] }), 400);
  await expectError(catalog.commitTable({ namespace: ['analytics'], name: 'nope' }, {
    requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] }), 404, 'NoSuchTableException');
  // A stale sequence number is an invalid update, not a conflict.
  await expectError(catalog.commitTable(id, { requirements: [], updates: [{ action: 'add-snapshot', snapshot: snapshot(1003, 1002, 2) }] }),
                    400, 'BadRequestException');

  // A second name for a live table's metadata would make two tables share files (one's
  // orphan cleanup would delete the other's): refused. Dropped from the catalog (files
  // kept), the table registers again under another name, and is renamed and dropped.
  await expectError(catalog.registerTable(ns, { name: 'events_copy', 'metadata-location': commit2['metadata-location'] }),
                    400, 'BadRequestException');
  await catalog.dropTable(id, { purge: false });
  await expectError(catalog.loadTable(id), 404, 'NoSuchTableException');
  const reg = await catalog.registerTableResult(ns, { name: 'events_copy', 'metadata-location': commit2['metadata-location'] });
  assert.equal(reg.metadata['table-uuid'], uuid);
  await expectError(catalog.registerTable(ns, { name: 'events_copy', 'metadata-location': commit2['metadata-location'] }),
                    409, 'AlreadyExistsException');
  await catalog.renameTable({ source: { namespace: ['analytics'], name: 'events_copy' },
                              destination: { namespace: ['analytics', 'daily'], name: 'renamed' } });
  assert.equal(await catalog.tableExists({ namespace: ['analytics', 'daily'], name: 'renamed' }), true);
  assert.equal(await catalog.tableExists({ namespace: ['analytics'], name: 'events_copy' }), false);
  await expectError(catalog.dropNamespace({ namespace: ['analytics', 'daily'] }), 409, 'NamespaceNotEmptyException');
  await catalog.dropTable({ namespace: ['analytics', 'daily'], name: 'renamed' }, { purge: true });
  await catalog.dropNamespace({ namespace: ['analytics', 'daily'] });
  await expectError(catalog.dropTable(id), 404, 'NoSuchTableException');
  await catalog.dropNamespace(ns);
  assert.deepEqual((await catalog.listNamespaces()).namespaces, []);
  console.log('iceberg-js REST catalog test passed');
} catch (e) {
  console.error(server.log());
  throw e;
} finally {
  await server.stop();
}
