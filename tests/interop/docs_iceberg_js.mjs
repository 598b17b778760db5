// Runs the iceberg-js snippet of docs/iceberg.md, as written there, against a real server
// whose catalog needs a bearer token: only the address and the token are substituted.
// It runs twice: on the node running this test and on Debian 12's own Node (18, which
// scripts/install-deps unpacks into .cache/debian-node), because that is the Node a new
// user on Debian has. Then checks, over plain HTTP, that the table the snippet created
// is there and that the catalog really refused an anonymous call.
//
// Usage: node docs_iceberg_js.mjs ICESTREAM_BINARY NPM_DIR
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startServer } from '../lib/server.mjs';

const [binaryArg, npmDirArg] = process.argv.slice(2);
if (!binaryArg || !npmDirArg) {
  console.error('usage: docs_iceberg_js.mjs ICESTREAM_BINARY NPM_DIR');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const doc = readFileSync(resolve(here, '../../docs/iceberg.md'), 'utf8');
const marker = doc.indexOf('<!-- tested: iceberg-js -->');
assert.ok(marker >= 0, 'docs/iceberg.md lost its tested iceberg-js snippet');
const block = /```js\n([\s\S]*?)```/.exec(doc.slice(marker));
assert.ok(block, 'no ```js block after the marker');
const snippet = block[1];
assert.ok(snippet.includes('http://127.0.0.1:4567') && snippet.includes('my-catalog-token'));

const token = 'doc-token-' + process.pid;
const npmDir = resolve(npmDirArg);
const config = join(npmDir, `docs-iceberg-${process.pid}.toml`);
writeFileSync(config, `[[credentials]]\naccess_key_id = "AKDOC"\nsecret_access_key = "doc-secret"\n\n` +
                      `[auth]\nbearer_tokens = ["${token}"]\n`);
const server = await startServer(resolve(binaryArg), { extraArgs: ['--config', config] });
// Beside node_modules, so that `import ... from 'iceberg-js'` resolves as in a project.
const script = join(npmDir, `docs-iceberg-${process.pid}.mjs`);
try {
  const debianRoot = resolve(here, '../../.cache/debian-node');
  const debianNode = join(debianRoot, 'usr/bin/node');
  assert.ok(existsSync(debianNode), `${debianNode} is missing: run scripts/install-deps`);
  const nodes = [
    { name: process.version, bin: process.execPath, env: process.env },
    { name: 'Debian 12', bin: debianNode,
      env: { ...process.env, LD_LIBRARY_PATH: join(debianRoot, 'usr/lib/x86_64-linux-gnu') } },
  ];
  for (const [i, node] of nodes.entries()) {
    // Each run makes its own warehouse, so that both create the namespace and the table.
    const warehouse = i === 0 ? 'analytics' : 'analytics-debian';
    writeFileSync(script, snippet.replaceAll('http://127.0.0.1:4567', server.endpoint)
                                  .replaceAll('my-catalog-token', token)
                                  .replaceAll('bucket/analytics', `bucket/${warehouse}`));
    const version = execFileSync(node.bin, ['--version'], { encoding: 'utf8', env: node.env }).trim();
    if (node.name === 'Debian 12') assert.match(version, /^v18\./, `Debian 12's node is ${version}`);
    const out = execFileSync(node.bin, ['--no-warnings', script], { encoding: 'utf8', env: node.env });
    assert.match(out.trim(), new RegExp(`^file://.*/table-buckets/${warehouse}/sales/orders-[0-9a-f]{8}$`),
                 `on node ${version}`);
    console.log(`the snippet ran on node ${version} (${node.name})`);
  }

  const auth = { Authorization: `Bearer ${token}` };
  const r = await fetch(`${server.endpoint}/iceberg/v1/analytics/namespaces/sales/tables/orders`, { headers: auth });
  assert.equal(r.status, 200);
  const table = await r.json();
  assert.deepEqual(table.metadata['schemas'][0].fields.map((f) => f.name), ['order_id', 'total']);
  const anonymous = await fetch(`${server.endpoint}/iceberg/v1/analytics/namespaces/sales/tables/orders`);
  assert.equal(anonymous.status, 401);
  console.log('the iceberg-js snippet of docs/iceberg.md works');
} finally {
  rmSync(script, { force: true });
  rmSync(config, { force: true });
  await server.stop();
}
