// Overview: health, streams, channels with state and lag, tables, recent errors.
// Refreshes itself every 5 seconds (tables every 15).
import * as api from '../lib/api.js';
import { h, add, clear, card, table, badge, stateKind, fmtNum, fmtSeconds, fmtTime, errorBox } from '../lib/dom.js';

export function channelHref(arn) { return `#/channels/${encodeURIComponent(arn)}`; }
export function tableHref(w, ns, t) {
  return `#/tables/${encodeURIComponent(w)}/${encodeURIComponent(ns)}/${encodeURIComponent(t)}`;
}

// Sum of LagRecords and largest LagSeconds over a channel's shards.
export function channelLag(status) {
  const shards = status?.Shards || [];
  return {
    records: shards.reduce((a, x) => a + Number(x.LagRecords || 0), 0),
    seconds: shards.reduce((a, x) => Math.max(a, Number(x.LagSeconds || 0)), 0),
  };
}

function sumBy(family, label, value) {
  return (family || []).filter((m) => m.labels[label] === value).reduce((a, m) => a + m.value, 0);
}

export async function listTables(warehouses) {
  const out = [];
  for (const w of warehouses) {
    let namespaces = [];
    try {
      namespaces = (await api.iceberg(w, 'namespaces')).namespaces || [];
    } catch (e) {
      if (e.status !== 404) throw e;
    }
    // One level of nesting below the top (channels create single-level namespaces).
    const all = [...namespaces];
    for (const ns of namespaces) {
      try {
        const sub = await api.iceberg(w, `namespaces?parent=${api.nsPath(ns.join('.'))}`);
        for (const x of sub.namespaces || []) if (x.length > ns.length) all.push(x);
      } catch { /* a catalog without nesting */ }
    }
    for (const ns of all) {
      const ids = (await api.iceberg(w, `namespaces/${api.nsPath(ns.join('.'))}/tables`)).identifiers || [];
      for (const id of ids) out.push({ warehouse: w, namespace: id.namespace.join('.'), name: id.name });
    }
  }
  return out;
}

export default async function overview(root, _params, ctx) {
  root.append(h('h1', 'Overview'));
  const healthEl = h('div', { id: 'health' }), errorsEl = h('div', { id: 'errors' });
  const streamsEl = h('div', { id: 'streams' }), channelsEl = h('div', { id: 'channels' }), tablesEl = h('div', { id: 'tables' });
  root.append(h('div', { class: 'grid' }, card('Health', healthEl), card('Recent errors', errorsEl)),
    card('Streams', streamsEl), card('Channels', channelsEl), card('Tables', tablesEl));
  const channelProblems = [];

  const guard = (el, fn) => async () => {
    try { await fn(); } catch (e) { clear(el).append(errorBox(e)); }
  };

  const health = guard(healthEl, async () => {
    const hs = await api.get('/console/api/health');
    clear(healthEl).append(h('div', { class: 'stats' },
      h('div', { class: 'stat' }, h('div', { class: 'k' }, 'server'), h('div', { class: 'v' }, badge(hs.status, stateKind(hs.status)))),
      h('div', { class: 'stat' }, h('div', { class: 'k' }, 'checked'), h('div', { class: 'v small' }, fmtTime(Date.now())))));
    if (hs.shards?.length) {
      healthEl.append(table(['Stream', 'Shard', 'Why'], hs.shards.map((x) => [x.stream, x.shard, x.reason])));
    }
  });

  const streams = guard(streamsEl, async () => {
    const names = await api.all(api.kinesis, 'ListStreams', { Limit: 100 }, 'StreamNames', 'NextToken');
    const m = await api.metrics();
    const rows = [];
    for (const name of names) {
      let d;
      try {
        d = (await api.kinesis('DescribeStreamSummary', { StreamName: name })).StreamDescriptionSummary;
      } catch (e) {
        if (e.type === 'ResourceNotFoundException') continue;  // deleted meanwhile
        throw e;
      }
      rows.push(h('tr', { 'data-stream': name },
        h('td', h('a', { href: `#/streams/${encodeURIComponent(name)}` }, name)),
        h('td', badge(d.StreamStatus, stateKind(d.StreamStatus))),
        h('td', d.StreamModeDetails?.StreamMode || ''),
        h('td', { class: 'num' }, fmtNum(d.OpenShardCount)),
        h('td', { class: 'num' }, fmtNum(d.RetentionPeriodHours)),
        h('td', { class: 'num' }, fmtNum(d.ConsumerCount)),
        h('td', { class: 'num', 'data-metric': 'IncomingRecords' }, fmtNum(sumBy(m.IncomingRecords, 'stream_name', name))),
        h('td', { class: 'num' }, fmtNum(sumBy(m.IncomingBytes, 'stream_name', name)))));
    }
    clear(streamsEl).append(table(['Stream', 'Status', 'Mode', { label: 'Open shards', num: true },
      { label: 'Retention (h)', num: true }, { label: 'Consumers', num: true },
      { label: 'Records in', num: true }, { label: 'Bytes in', num: true }], rows,
      { empty: 'No streams yet: aws kinesis create-stream --stream-name NAME' }),
      h('p', { class: 'muted small' }, 'Records and bytes in: since the server started (IncomingRecords, IncomingBytes at /metrics).'));
  });

  const channels = guard(channelsEl, async () => {
    const list = await api.all(api.kinesis, 'ListChannels', {}, 'ChannelSummaries', 'NextToken');
    const rows = [];
    channelProblems.length = 0;
    for (const c of list) {
      let d;
      try {
        d = (await api.kinesis('DescribeChannel', { ChannelARN: c.ChannelARN })).ChannelDescription;
      } catch (e) {
        if (e.type === 'ResourceNotFoundException') continue;
        throw e;
      }
      const st = d.IcestreamStatus || {};
      const lag = channelLag(st);
      const lastError = st.LastError ? (typeof st.LastError === 'string' ? st.LastError : st.LastError.Message || JSON.stringify(st.LastError)) : '';
      if (d.ChannelStatus === 'FAILED') channelProblems.push({ what: `channel ${d.ChannelName} FAILED`, why: d.ChannelStatusReason || '' });
      else if (lastError) channelProblems.push({ what: `channel ${d.ChannelName}`, why: lastError });
      const stream = (d.StreamConfigurationList?.[0]?.StreamARN || '').split('/').pop();
      rows.push(h('tr', { 'data-channel': d.ChannelName },
        h('td', h('a', { href: channelHref(d.ChannelARN) }, d.ChannelName)),
        h('td', c.ChannelDestinationType === 'S3_TABLES' ? 'table' : 'S3'),
        h('td', h('a', { href: `#/streams/${encodeURIComponent(stream)}` }, stream)),
        h('td', badge(d.ChannelStatus, stateKind(d.ChannelStatus))),
        h('td', { class: 'num', 'data-lag-records': lag.records }, fmtNum(lag.records)),
        h('td', { class: 'num' }, fmtSeconds(lag.seconds)),
        h('td', { class: 'num' }, fmtNum(st.DeliveredRecordCount)),
        h('td', { class: 'num' }, fmtNum(st.DLQRecordCount)),
        h('td', { class: 'small' }, d.ChannelStatusReason || lastError || '')));
    }
    clear(channelsEl).append(table(['Channel', 'To', 'Stream', 'State', { label: 'Lag (records)', num: true },
      { label: 'Lag (age)', num: true }, { label: 'Delivered', num: true }, { label: 'To DLQ', num: true }, 'Last error'], rows,
      { empty: 'No channels yet: icestream channels create channel.json (docs/channels.md)' }));
  });

  const tables = guard(tablesEl, async () => {
    const list = await listTables(ctx.info.warehouses || []);
    const rows = [];
    for (const t of list.slice(0, 50)) {
      let md = null;
      try {
        md = (await api.iceberg(t.warehouse, `namespaces/${api.nsPath(t.namespace)}/tables/${encodeURIComponent(t.name)}`)).metadata;
      } catch (e) {
        if (e.status !== 404) throw e;
        continue;
      }
      const cur = (md.snapshots || []).find((x) => String(x['snapshot-id']) === String(md['current-snapshot-id']));
      rows.push(h('tr', { 'data-table': `${t.namespace}.${t.name}` },
        h('td', t.warehouse),
        h('td', h('a', { href: tableHref(t.warehouse, t.namespace, t.name) }, `${t.namespace}.${t.name}`)),
        h('td', { class: 'num' }, fmtNum(cur?.summary?.['total-records'] ?? 0)),
        h('td', { class: 'num' }, fmtNum(cur?.summary?.['total-data-files'] ?? 0)),
        h('td', { class: 'num' }, fmtNum((md.snapshots || []).length)),
        h('td', fmtTime(md['last-updated-ms']))));
    }
    add(clear(tablesEl), table(['Warehouse', 'Table', { label: 'Rows', num: true }, { label: 'Data files', num: true },
      { label: 'Snapshots', num: true }, 'Last update'], rows, { empty: 'No tables in the known warehouses.' }),
      list.length > 50 ? h('p', { class: 'muted' }, `${list.length - 50} more not shown.`) : null);
  });

  const errors = guard(errorsEl, async () => {
    const { errors: list } = await api.get('/console/api/errors');
    const rows = channelProblems.map((p) => [h('span', { class: 'badge bad' }, 'delivery'), p.what, p.why, '']);
    for (const e of list.slice(0, 15)) {
      rows.push(h('tr', { 'data-api-error': e.error_code, 'data-operation': `${e.service} ${e.operation}` },
        h('td', h('span', { class: ['badge', e.http_status >= 500 ? 'bad' : 'warn'] }, String(e.http_status))),
        h('td', `${e.service} ${e.operation}`), h('td', `${e.error_code}${e.message ? ': ' + e.message : ''}`),
        h('td', fmtTime(e.time))));
    }
    clear(errorsEl).append(table(['', 'What', 'Error', 'When'], rows, { empty: 'No errors since the server started.' }));
  });

  let ticks = 0;
  await ctx.every(5000, async () => {
    const withTables = ticks++ % 3 === 0;
    await Promise.all([health(), streams(), channels().then(errors), withTables ? tables() : null]);
  });
}
