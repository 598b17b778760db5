// The schema registry (Glue API): registries and their schemas with format,
// compatibility and versions; a schema's versions with their definitions and a diff
// between any two.
import * as api from '../lib/api.js';
import { h, clear, card, table, badge, kv, fmtNum, fmtTime, errorBox } from '../lib/dom.js';

const schemaHref = (reg, name) => `#/registry/${encodeURIComponent(reg)}/${encodeURIComponent(name)}`;

export async function registryPage(root) {
  root.append(h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' / schema registry'), h('h1', 'Schema registry'));
  const registries = await api.all(api.glue, 'ListRegistries', {}, 'Registries', 'NextToken');
  if (!registries.length) {
    root.append(card(null, h('p', { class: 'empty' }, 'No registries yet: aws glue create-registry --registry-name NAME')));
    return;
  }
  for (const r of registries) {
    const schemas = await api.all(api.glue, 'ListSchemas', { RegistryId: { RegistryName: r.RegistryName } }, 'Schemas', 'NextToken');
    const rows = [];
    for (const s of schemas) {
      const g = await api.glue('GetSchema', { SchemaId: { RegistryName: r.RegistryName, SchemaName: s.SchemaName } });
      rows.push(h('tr', { 'data-schema': s.SchemaName },
        h('td', h('a', { href: schemaHref(r.RegistryName, s.SchemaName) }, s.SchemaName)),
        h('td', g.DataFormat), h('td', g.Compatibility),
        h('td', { class: 'num' }, fmtNum(g.LatestSchemaVersion)), h('td', badge(g.SchemaStatus, g.SchemaStatus === 'AVAILABLE' ? 'ok' : 'warn')),
        h('td', { class: 'small' }, fmtTime(g.UpdatedTime || g.CreatedTime))));
    }
    root.append(card(`Registry ${r.RegistryName}`, r.Description ? h('p', { class: 'muted' }, r.Description) : null,
      table(['Schema', 'Format', 'Compatibility', { label: 'Latest version', num: true }, 'Status', 'Updated'], rows,
        { empty: 'No schemas in this registry.' })));
  }
}

function pretty(def) {
  try { return JSON.stringify(JSON.parse(def), null, 2); } catch { return def; }
}

// Lines of `a` and `b` as a longest-common-subsequence diff: [op, line], op ' ', '-', '+'.
export function lineDiff(a, b) {
  const x = a.split('\n'), y = b.split('\n');
  const n = x.length, m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([' ', x[i]]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(['-', x[i++]]);
    else out.push(['+', y[j++]]);
  }
  while (i < n) out.push(['-', x[i++]]);
  while (j < m) out.push(['+', y[j++]]);
  return out;
}

export async function schemaPage(root, [registry, name]) {
  const id = { RegistryName: registry, SchemaName: name };
  const g = await api.glue('GetSchema', { SchemaId: id });
  root.append(h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' / ', h('a', { href: '#/registry' }, 'schema registry'), ` / ${registry}`),
    h('h1', name));
  const versions = (await api.all(api.glue, 'ListSchemaVersions', { SchemaId: id }, 'Schemas', 'NextToken'))
    .sort((a, b) => a.VersionNumber - b.VersionNumber);
  const defs = new Map();
  for (const v of versions) {
    const r = await api.glue('GetSchemaVersion', { SchemaVersionId: v.SchemaVersionId });
    defs.set(v.VersionNumber, pretty(r.SchemaDefinition));
  }
  root.append(h('div', { class: 'grid' },
    card('Schema', kv([['ARN', h('code', g.SchemaArn)], ['Format', g.DataFormat], ['Compatibility', g.Compatibility],
      ['Status', g.SchemaStatus], ['Latest version', fmtNum(g.LatestSchemaVersion)], ['Versions', fmtNum(versions.length)],
      ['Created', fmtTime(g.CreatedTime)]])),
    card('Versions', table([{ label: 'Version', num: true }, 'Id', 'Status', 'Registered'], versions.map((v) => h('tr', { 'data-version': v.VersionNumber },
      h('td', { class: 'num' }, String(v.VersionNumber)), h('td', h('code', { class: 'small' }, v.SchemaVersionId)),
      h('td', v.Status), h('td', { class: 'small' }, fmtTime(v.CreatedTime))))))));

  const nums = versions.map((v) => v.VersionNumber);
  const fromSel = h('select', { id: 'diff-from' }, nums.map((n) => h('option', { value: n }, `v${n}`)));
  const toSel = h('select', { id: 'diff-to' }, nums.map((n) => h('option', { value: n }, `v${n}`)));
  if (nums.length) {
    toSel.value = String(nums[nums.length - 1]);
    fromSel.value = String(nums[Math.max(0, nums.length - 2)]);
  }
  const diffEl = h('div', { class: 'diff', id: 'diff' });
  const defEl = h('pre', { id: 'definition' });
  const draw = () => {
    const a = defs.get(Number(fromSel.value)) ?? '', b = defs.get(Number(toSel.value)) ?? '';
    clear(diffEl);
    const d = lineDiff(a, b);
    let changed = 0;
    for (const [op, line] of d) {
      if (op !== ' ') changed++;
      diffEl.append(h('div', { class: op === '+' ? 'add' : op === '-' ? 'del' : null, 'data-op': op }, `${op} ${line}`));
    }
    if (!changed) diffEl.append(h('div', { class: 'muted' }, '  (the same definition)'));
    defEl.textContent = b;
  };
  fromSel.addEventListener('change', draw);
  toSel.addEventListener('change', draw);
  root.append(card('Diff between versions', h('div', { class: 'toolbar' }, h('label', 'From', fromSel), h('label', 'To', toSel)), diffEl),
    card('Definition', defEl));
  if (nums.length) draw();
  else diffEl.append(h('p', { class: 'empty' }, 'No versions.'));
}
