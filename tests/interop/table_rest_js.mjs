// iceberg-js (an independent REST catalog client) watches a table while a streaming-table
// channel writes it: loadConfig gives the warehouse prefix, the namespace and table are
// listed, and loadTable is called over and over. Every load must give coherent metadata
// (format v2, the same table uuid and schema, current-snapshot-id = refs.main, a
// current snapshot that exists, sequence numbers that never go back) and the snapshot
// count must grow while records flow.
//
// Usage: node table_rest_js.mjs NPM_DIR CATALOG_URL WAREHOUSE NAMESPACE TABLE SECONDS MIN_SNAPSHOTS
// Prints {"loads": n, "snapshots": [first, last], "metadata_locations": k}.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [npmDirArg, baseUrl, warehouse, namespace, table, secondsArg, minArg] = process.argv.slice(2);
const require = createRequire(join(resolve(npmDirArg), 'package.json'));
const { IcebergRestCatalog } = await import(pathToFileURL(require.resolve('iceberg-js')).href);

const catalog = new IcebergRestCatalog({ baseUrl, auth: { type: 'bearer', token: 'any' }, warehouse });
const config = await catalog.loadConfig();
assert.ok(config.overrides?.prefix || config.defaults?.prefix, `no prefix in ${JSON.stringify(config)}`);
const ns = { namespace: [namespace] };
const id = { namespace: [namespace], name: table };

const deadline = Date.now() + Number(secondsArg) * 1000;
let loads = 0, uuid = null, schemaJson = null, lastSeq = -1, firstCount = null, lastCount = 0;
const locations = new Set();
while (Date.now() < deadline) {
  const namespaces = (await catalog.listNamespaces()).namespaces.map((n) => n.namespace.join('.'));
  if (!namespaces.includes(namespace)) { await new Promise((r) => setTimeout(r, 100)); continue; }
  const tables = (await catalog.listTables(ns)).identifiers ?? [];
  if (!tables.some((t) => t.name === table)) { await new Promise((r) => setTimeout(r, 100)); continue; }
  const res = await catalog.loadTableResult(id);
  const md = res.metadata;
  loads++;
  locations.add(res['metadata-location']);
  assert.equal(md['format-version'], 2);
  uuid ??= md['table-uuid'];
  assert.equal(md['table-uuid'], uuid, 'table uuid changed');
  const schema = JSON.stringify(md.schemas.find((s) => s['schema-id'] === md['current-schema-id']));
  schemaJson ??= schema;
  assert.equal(schema, schemaJson, 'schema changed while writing');
  assert.ok(md['last-sequence-number'] >= lastSeq, 'last-sequence-number went back');
  lastSeq = md['last-sequence-number'];
  const snaps = md.snapshots ?? [];
  if (snaps.length) {
    // JS doubles: ids are compared as iceberg-js parsed them (the same rounding on both sides).
    assert.equal(md['current-snapshot-id'], md.refs?.main?.['snapshot-id'], 'current-snapshot-id != refs.main');
    assert.ok(snaps.some((s) => s['snapshot-id'] === md['current-snapshot-id']), 'current snapshot missing');
    assert.ok(snaps.every((s) => s['sequence-number'] <= md['last-sequence-number']));
  }
  firstCount ??= snaps.length;
  assert.ok(snaps.length >= lastCount, 'snapshots disappeared');
  lastCount = snaps.length;
  await new Promise((r) => setTimeout(r, 150));
}
assert.ok(loads > 5, `only ${loads} loads`);
assert.ok(lastCount - firstCount >= Number(minArg), `snapshots grew from ${firstCount} to ${lastCount} only`);
console.log(JSON.stringify({ loads, snapshots: [firstCount, lastCount], metadata_locations: locations.size }));
