// A table (through the REST catalog): schema with field ids and its evolution history,
// partition specs, snapshots on a timeline (appends vs compaction), live files per
// partition, write amplification, and sample rows read from the snapshot by the server's
// Parquet reader (GET /console/api/tables/rows, the same reader as `icestream table cat`).
import * as api from '../lib/api.js';
import { h, clear, card, table, badge, kv, fmtNum, fmtBytes, fmtTime, errorBox } from '../lib/dom.js';
import { snapshotTimeline } from '../lib/charts.js';

function typeName(t) {
  if (typeof t === 'string') return t;
  if (t.type === 'struct') return 'struct';
  if (t.type === 'list') return `list<${typeName(t.element)}>`;
  if (t.type === 'map') return `map<${typeName(t.key)}, ${typeName(t.value)}>`;
  return JSON.stringify(t);
}

// Every field of a schema with its dotted path (list elements as name.element, maps as
// name.key / name.value).
export function flatten(fields, prefix = '', out = []) {
  const visit = (id, path, type, required) => {
    out.push({ id, path, type: typeName(type), required });
    if (typeof type === 'string') return;
    if (type.type === 'struct') flatten(type.fields, `${path}.`, out);
    else if (type.type === 'list') visit(type['element-id'], `${path}.element`, type.element, type['element-required']);
    else if (type.type === 'map') {
      visit(type['key-id'], `${path}.key`, type.key, true);
      visit(type['value-id'], `${path}.value`, type.value, type['value-required']);
    }
  };
  for (const f of fields) visit(f.id, prefix + f.name, f.type, f.required);
  return out;
}

// What changed from schema `a` to schema `b`, by field id.
export function schemaChanges(a, b) {
  const before = new Map(flatten(a.fields).map((f) => [f.id, f]));
  const after = new Map(flatten(b.fields).map((f) => [f.id, f]));
  const out = [];
  for (const [id, f] of after) {
    const o = before.get(id);
    if (!o) out.push(`added ${f.path} ${f.type}${f.required ? ' (required)' : ''} — id ${id}`);
    else {
      if (o.path !== f.path) out.push(`renamed ${o.path} → ${f.path} — id ${id}`);
      if (o.type !== f.type) out.push(`${f.path}: ${o.type} → ${f.type}`);
      if (o.required !== f.required) out.push(`${f.path}: ${f.required ? 'optional → required' : 'required → optional'}`);
    }
  }
  for (const [id, o] of before) if (!after.has(id)) out.push(`dropped ${o.path} — id ${id}`);
  return out;
}

function cell(v) {
  if (v === null || v === undefined) return h('span', { class: 'muted' }, 'null');
  if (typeof v === 'object') return h('code', { class: 'small' }, JSON.stringify(v));
  return String(v);
}

export default async function tablePage(root, [warehouse, ns, name], ctx) {
  const loaded = await api.iceberg(warehouse, `namespaces/${api.nsPath(ns)}/tables/${encodeURIComponent(name)}`);
  const md = loaded.metadata;
  const snapshots = md.snapshots || [];
  const current = md['current-snapshot-id'] ?? null;
  const schemaById = new Map((md.schemas || []).map((s) => [s['schema-id'], s]));
  const schema = schemaById.get(md['current-schema-id']);
  root.append(h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ` / table in ${warehouse}`),
    h('h1', `${ns}.${name}`));

  // Summary and write amplification.
  let appended = 0, rewritten = 0;
  for (const s of snapshots) {
    const added = Number(s.summary?.['added-files-size'] ?? 0);
    if ((s.summary?.operation || 'append') === 'append') appended += added;
    else rewritten += added;
  }
  const cur = snapshots.find((s) => String(s['snapshot-id']) === String(current));
  const wa = appended > 0 ? (appended + rewritten) / appended : null;
  const owner = md.properties?.['icestream.channel-arn'];
  root.append(h('div', { class: 'grid' },
    card('Table', kv([
      ['Location', h('code', md.location)],
      ['Format', `v${md['format-version']}`],
      ['UUID', h('code', md['table-uuid'])],
      ['Written by', owner ? h('a', { href: `#/channels/${encodeURIComponent(owner)}` }, owner.split('/').pop()) : undefined],
      ['Rows', h('span', { id: 'total-records' }, fmtNum(cur?.summary?.['total-records'] ?? 0))],
      ['Data files', fmtNum(cur?.summary?.['total-data-files'] ?? 0)],
      ['Size', fmtBytes(Number(cur?.summary?.['total-files-size'] ?? 0))],
      ['Snapshots kept', fmtNum(snapshots.length)],
      ['Last update', fmtTime(md['last-updated-ms'])],
    ])),
    card('Write amplification', h('div', { class: 'stats' },
      h('div', { class: 'stat', 'data-stat': 'write-amplification' }, h('div', { class: 'k' }, 'bytes written ÷ bytes appended'),
        h('div', { class: 'v' }, wa === null ? '—' : wa.toFixed(2)))),
    kv([['Appended', fmtBytes(appended)], ['Rewritten by compaction', fmtBytes(rewritten)]]),
    h('p', { class: 'muted small' }, 'Over the snapshots still kept (added-files-size of each snapshot summary): 1.00 means nothing was rewritten. Expired snapshots are not counted.'))));

  // Schema and its history.
  const fieldRows = flatten(schema.fields).map((f) => h('tr', { 'data-field-id': f.id },
    h('td', { class: 'num' }, String(f.id)), h('td', h('code', f.path)), h('td', f.type), h('td', f.required ? 'required' : 'optional')));
  const history = [];
  const ordered = [...(md.schemas || [])].sort((a, b) => a['schema-id'] - b['schema-id']);
  for (let i = 0; i < ordered.length; i++) {
    const changes = i === 0 ? [`created with ${ordered[0].fields.length} columns`] : schemaChanges(ordered[i - 1], ordered[i]);
    history.push(h('tr', { 'data-schema-id': ordered[i]['schema-id'] },
      h('td', { class: 'num' }, String(ordered[i]['schema-id'])),
      h('td', ordered[i]['schema-id'] === md['current-schema-id'] ? badge('current', 'ok') : ''),
      h('td', h('ul', changes.map((c) => h('li', c))))));
  }
  const specs = md['partition-specs'] || [];
  const specRows = [];
  for (const sp of specs) {
    for (const f of sp.fields) {
      const src = flatten(schema.fields).find((x) => x.id === f['source-id']);
      specRows.push([String(sp['spec-id']) + (sp['spec-id'] === md['default-spec-id'] ? ' (default)' : ''),
        src ? src.path : `id ${f['source-id']}`, f.transform, f.name, String(f['field-id'])]);
    }
    if (!sp.fields.length) specRows.push([String(sp['spec-id']), 'unpartitioned', '', '', '']);
  }
  root.append(h('div', { class: 'grid' },
    card(`Schema ${md['current-schema-id']} (field ids)`, table([{ label: 'Id', num: true }, 'Column', 'Type', ''], fieldRows)),
    card('Schema history', table([{ label: 'Schema', num: true }, '', 'Changes'], history),
      h('h3', 'Partition specs'), table(['Spec', 'Source', 'Transform', 'Field', 'Field id'], specRows))));

  // Snapshots.
  const sorted = [...snapshots].sort((a, b) => Number(b['timestamp-ms']) - Number(a['timestamp-ms']));
  let chosen = current === null ? null : String(current);
  const snapRows = sorted.map((s) => {
    const sm = s.summary || {};
    const id = String(s['snapshot-id']);
    return h('tr', { 'data-snapshot': id, 'data-operation': sm.operation || 'append', class: id === chosen ? 'selected' : null,
      onclick: () => choose(id) },
    h('td', h('code', { class: 'small' }, id), id === String(current) ? [' ', badge('current', 'ok')] : null),
    h('td', { class: 'small' }, fmtTime(s['timestamp-ms'])),
    h('td', badge(sm.operation || 'append', sm.operation === 'replace' ? 'warn' : sm.operation === 'append' ? 'info' : 'bad')),
    h('td', { class: 'num' }, fmtNum(sm['added-data-files'])), h('td', { class: 'num' }, fmtNum(sm['deleted-data-files'])),
    h('td', { class: 'num' }, fmtNum(sm['added-records'])), h('td', { class: 'num' }, fmtNum(sm['total-records'])),
    h('td', { class: 'num' }, fmtNum(sm['total-data-files'])), h('td', { class: 'num' }, fmtBytes(Number(sm['total-files-size'] || 0))),
    h('td', { class: 'num' }, String(s['schema-id'] ?? '')));
  });
  root.append(card('Snapshots', snapshotTimeline(snapshots, { current }),
    h('div', { class: 'legend' }, h('span', h('i', { class: 'append' }), 'append'), h('span', h('i', { class: 'replace' }), 'replace (compaction)'),
      h('span', h('i', { class: 'delete' }), 'overwrite / delete'), h('span', 'line: total records')),
    table(['Snapshot', 'When', 'Operation', { label: '+files', num: true }, { label: '−files', num: true }, { label: '+records', num: true },
      { label: 'Records', num: true }, { label: 'Files', num: true }, { label: 'Size', num: true }, { label: 'Schema', num: true }], snapRows,
    { empty: 'No snapshot yet: the table is empty.' }),
    h('p', { class: 'muted small' }, 'Click a snapshot to see its files and rows (time travel).')));

  const filesEl = h('div', { id: 'files' });
  const rowsEl = h('div', { id: 'sample-rows' });
  const filesTitle = h('h2'), rowsTitle = h('h2');
  root.append(h('section', { class: 'card' }, filesTitle, filesEl), h('section', { class: 'card' }, rowsTitle, rowsEl));
  const q = () => `warehouse=${encodeURIComponent(warehouse)}&namespace=${encodeURIComponent(ns)}&table=${encodeURIComponent(name)}` +
    (chosen && chosen !== String(current) ? `&snapshot=${chosen}` : '');

  async function drawFiles() {
    const label = chosen === String(current) ? 'current snapshot' : `snapshot ${chosen}`;
    filesTitle.textContent = `Live files per partition (${label})`;
    rowsTitle.textContent = `Sample rows (${label})`;
    if (chosen === null) {
      clear(filesEl).append(h('p', { class: 'empty' }, 'No snapshot.'));
      clear(rowsEl).append(h('p', { class: 'empty' }, 'No rows.'));
      return;
    }
    try {
      const f = await api.get(`/console/api/tables/files?${q()}`);
      const maxBytes = Math.max(1, ...f.partitions.map((p) => p.bytes));
      const partRows = f.partitions.map((p) => {
        const bar = h('div', { class: 'bar' });
        const fill = h('span');
        fill.style.left = '0';
        fill.style.width = `${(100 * p.bytes) / maxBytes}%`;
        bar.append(fill);
        return h('tr', { 'data-partition': p.partition || '(unpartitioned)', 'data-files': p.files },
          h('td', h('code', p.partition || '(unpartitioned)')), h('td', { class: 'num' }, fmtNum(p.files)),
          h('td', { class: 'num' }, fmtNum(p.delete_files)), h('td', { class: 'num' }, fmtNum(p.records)),
          h('td', { class: 'num' }, fmtBytes(p.bytes)), h('td', bar));
      });
      const fileRows = f.files.map((x) => h('tr', { 'data-path': x.path },
        h('td', h('code', { class: 'small' }, x.path.split('/').slice(-2).join('/'))), h('td', x.content), h('td', h('code', x.partition)),
        h('td', { class: 'num' }, fmtNum(x.record_count)), h('td', { class: 'num' }, fmtBytes(x.file_size_in_bytes)),
        h('td', { class: 'num' }, fmtNum(x.sequence_number))));
      clear(filesEl).append(table(['Partition', { label: 'Data files', num: true }, { label: 'Delete files', num: true },
        { label: 'Rows', num: true }, { label: 'Size', num: true }, ''], partRows),
      h('details', h('summary', `All ${f.files.length} files`),
        table(['File', 'Content', 'Partition', { label: 'Rows', num: true }, { label: 'Size', num: true }, { label: 'Seq', num: true }], fileRows)));
    } catch (e) {
      clear(filesEl).append(errorBox(e));
    }
    try {
      const r = await api.get(`/console/api/tables/rows?${q()}&limit=50`);
      const rs = schemaById.get(r.schema_id) || schema;
      const cols = rs.fields.map((x) => x.name);
      const rows = r.rows.map((row) => h('tr', { 'data-row': JSON.stringify(row) }, cols.map((c) => h('td', cell(row[c])))));
      clear(rowsEl).append(table(cols, rows, { empty: 'No rows.' }),
        h('p', { class: 'muted small' }, `${r.rows.length} rows${r.truncated ? ' (the first ones; icestream table cat prints all)' : ''}, ` +
          `read with schema ${r.schema_id}.`));
    } catch (e) {
      clear(rowsEl).append(errorBox(e));
    }
  }
  function choose(id) {
    chosen = id;
    for (const tr of root.querySelectorAll('tr[data-snapshot]')) tr.classList.toggle('selected', tr.dataset.snapshot === id);
    drawFiles();
  }
  await drawFiles();

  const props = Object.entries(md.properties || {}).sort();
  root.append(card('Properties', props.length ? kv(props.map(([k, v]) => [k, h('code', v)])) : h('p', { class: 'empty' }, 'None.')));
}
