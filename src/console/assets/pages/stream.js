// A stream: summary, shards with hash-key ranges and lineage, per-shard incoming rate
// over the last hour, consumers, and a record browser (TRIM_HORIZON, LATEST, a sequence
// number or a timestamp; payloads as JSON, text or hex).
import * as api from '../lib/api.js';
import { h, clear, card, table, badge, stateKind, kv, fmtNum, fmtBytes, fmtTime, errorBox } from '../lib/dom.js';
import { minuteBars, lineage } from '../lib/charts.js';
import { fromBase64, render, defaultView, deaggregate } from '../lib/payload.js';
import { channelHref } from './overview.js';

const TWO_128 = 2n ** 128n;
function rangeBar(r) {
  const a = Number((BigInt(r.StartingHashKey) * 1000n) / TWO_128) / 10;
  const b = Number(((BigInt(r.EndingHashKey) + 1n) * 1000n) / TWO_128) / 10;
  const bar = h('div', { class: 'bar', title: `${a}% – ${b}% of the hash-key space` });
  const fill = h('span');
  fill.style.left = `${a}%`;
  fill.style.width = `${Math.max(0.5, b - a)}%`;
  bar.append(fill);
  return bar;
}

export default async function streamPage(root, [name], ctx) {
  const summary = (await api.kinesis('DescribeStreamSummary', { StreamName: name })).StreamDescriptionSummary;
  const shards = await api.listShards(name);
  root.append(h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' / stream'),
    h('h1', name, ' ', badge(summary.StreamStatus, stateKind(summary.StreamStatus))));

  const enhanced = (summary.EnhancedMonitoring || []).flatMap((x) => x.ShardLevelMetrics || []);
  root.append(h('div', { class: 'grid' },
    card('Summary', kv([
      ['ARN', h('code', summary.StreamARN)],
      ['Mode', summary.StreamModeDetails?.StreamMode],
      ['Open shards', fmtNum(summary.OpenShardCount)],
      ['Retention', `${summary.RetentionPeriodHours} h`],
      ['Created', fmtTime(summary.StreamCreationTimestamp)],
      ['Encryption', summary.EncryptionType || 'NONE'],
      ['Consumers', fmtNum(summary.ConsumerCount)],
      ['Enhanced monitoring', enhanced.length ? enhanced.join(', ') : 'off'],
    ])),
    await consumersCard(summary.StreamARN, name)));

  // Shards and lineage.
  const open = shards.filter((x) => !x.SequenceNumberRange?.EndingSequenceNumber);
  const shardRows = shards.map((x) => h('tr', { 'data-shard': x.ShardId },
    h('td', h('code', x.ShardId)),
    h('td', x.SequenceNumberRange?.EndingSequenceNumber ? badge('closed', 'info') : badge('open', 'ok')),
    h('td', rangeBar(x.HashKeyRange)),
    h('td', { class: 'mono small' }, `${x.HashKeyRange.StartingHashKey} – ${x.HashKeyRange.EndingHashKey}`),
    h('td', x.ParentShardId || ''),
    h('td', x.AdjacentParentShardId || '')));
  const picker = h('div');
  root.append(card(`Shards (${open.length} open, ${shards.length - open.length} closed)`,
    table(['Shard', 'State', 'Hash-key range', 'Start – end', 'Parent', 'Adjacent parent'], shardRows),
    h('h3', 'Lineage'),
    lineage(shards, { onPick: (id) => { browser.pick(id); picker.scrollIntoView({ behavior: 'smooth' }); } })));

  // Incoming rate per shard.
  const ratesEl = h('div', { id: 'rates' });
  root.append(card('Incoming records per minute, last hour', ratesEl,
    h('p', { class: 'muted small' }, 'From the server\'s ring of the stream metrics (IncomingRecords per shard per minute, kept in memory for an hour; see docs/metrics.md).')));
  const drawRates = async () => {
    const r = await api.get(`/console/api/streams/${encodeURIComponent(name)}/rates`);
    clear(ratesEl);
    if (!r.shards.length) {
      ratesEl.append(h('p', { class: 'empty' }, 'Nothing arrived in the last hour.'));
      return;
    }
    const grid = h('div', { class: 'rates' });
    for (const x of r.shards) {
      const total = x.records.reduce((a, b) => a + b, 0);
      const bytes = x.bytes.reduce((a, b) => a + b, 0);
      grid.append(h('div', { 'data-shard': x.shard_id, 'data-records': total },
        h('div', h('code', x.shard_id), h('span', { class: 'muted small' }, ` ${fmtNum(total)} records, ${fmtBytes(bytes)}`)),
        minuteBars(x.records, r.first_minute_ms, { unit: 'records' })));
    }
    ratesEl.append(grid);
  };

  // Record browser.
  const browser = recordBrowser(name, shards, ctx.query || {});
  picker.append(browser.el);
  root.append(card('Records', picker));
  await ctx.every(10000, drawRates);
  if (ctx.query?.shard) await browser.read();
}

async function consumersCard(arn, stream) {
  let list = [];
  try {
    list = await api.all(api.kinesis, 'ListStreamConsumers', { StreamARN: arn }, 'Consumers', 'NextToken');
  } catch (e) {
    return card('Consumers (enhanced fan-out)', errorBox(e));
  }
  const channels = await api.all(api.kinesis, 'ListChannels', { StreamFilter: [{ StreamARN: arn }] }, 'ChannelSummaries', 'NextToken')
    .catch(() => []);
  return card('Consumers and channels',
    table(['Consumer', 'Status', 'Since'], list.map((c) => [c.ConsumerName, badge(c.ConsumerStatus, stateKind(c.ConsumerStatus)),
      fmtTime(c.ConsumerCreationTimestamp)]), { empty: 'No enhanced fan-out consumers.' }),
    h('h3', 'Channels reading this stream'),
    table(['Channel', 'State'], channels.map((c) => [h('a', { href: channelHref(c.ChannelARN) }, c.ChannelName),
      badge(c.ChannelStatus, stateKind(c.ChannelStatus))]), { empty: `No channel reads ${stream}.` }));
}

function recordBrowser(stream, shards, query) {
  const el = h('div', { id: 'record-browser' });
  const shardSel = h('select', { name: 'shard' }, shards.map((x) => h('option', { value: x.ShardId }, x.ShardId)));
  const typeSel = h('select', { name: 'type' }, ['TRIM_HORIZON', 'LATEST', 'AT_SEQUENCE_NUMBER', 'AFTER_SEQUENCE_NUMBER', 'AT_TIMESTAMP']
    .map((t) => h('option', { value: t }, t)));
  const seqIn = h('input', { name: 'sequence', placeholder: 'sequence number', size: 30 });
  const tsIn = h('input', { name: 'timestamp', placeholder: '2026-11-30T14:00:00Z', size: 22 });
  const limitIn = h('input', { name: 'limit', type: 'number', min: 1, max: 10000, value: 25, size: 5 });
  let view = 'auto';
  const viewSeg = h('div', { class: 'seg' }, ['auto', 'json', 'text', 'hex'].map((v) => h('button', {
    type: 'button', class: v === view ? 'on' : null, 'data-view': v,
    onclick: () => { view = v; for (const b of viewSeg.children) b.classList.toggle('on', b.dataset.view === v); draw(); },
  }, v)));
  const readBtn = h('button', { class: 'primary', type: 'submit', id: 'read-records' }, 'Read');
  const nextBtn = h('button', { type: 'button', id: 'next-records', disabled: true }, 'Next page');
  const out = h('div', { id: 'records' });
  const status = h('p', { class: 'muted small' });
  let next = null;
  let records = [];

  if (query.shard) shardSel.value = query.shard;
  if (query.from) typeSel.value = query.from;
  if (query.sequence) seqIn.value = query.sequence;
  if (query.timestamp) tsIn.value = query.timestamp;
  if (query.limit) limitIn.value = query.limit;
  const form = h('form', { class: 'inline' },
    h('label', 'Shard', shardSel), h('label', 'From', typeSel), h('label', 'Sequence number', seqIn),
    h('label', 'Timestamp (UTC)', tsIn), h('label', 'Records', limitIn), readBtn, nextBtn, h('label', 'Payload as', viewSeg));
  el.append(form, status, out);

  function draw() {
    clear(out);
    const rows = records.map((r, i) => {
      const bytes = fromBase64(r.Data);
      const agg = deaggregate(bytes);
      const mode = view === 'auto' ? defaultView(bytes) : view;
      const text = render(bytes, mode);
      const full = h('pre', { class: 'payload', 'data-view': mode }, text);
      const parts = agg ? h('div', h('div', { class: 'muted small' }, `KPL aggregate of ${agg.length} user records:`),
        agg.map((u, k) => h('div', { 'data-user-record': String(k), 'data-partition-key': u.partitionKey },
          h('span', { class: 'small' }, `#${k} key ${u.partitionKey}`),
          h('pre', render(u.data, view === 'auto' ? defaultView(u.data) : view))))) : null;
      return h('tr', { 'data-sequence': r.SequenceNumber, 'data-partition-key': r.PartitionKey },
        h('td', { class: 'num' }, String(i + 1)),
        h('td', h('code', { class: 'small' }, r.SequenceNumber)),
        h('td', r.PartitionKey),
        h('td', { class: 'small' }, fmtTime(r.ApproximateArrivalTimestamp)),
        h('td', { class: 'num' }, fmtBytes(bytes.length)),
        h('td', full, parts));
    });
    out.append(table(['#', 'Sequence number', 'Partition key', 'Arrived', { label: 'Size', num: true }, 'Payload'], rows,
      { empty: 'No records here (yet).' }));
  }

  async function read(iterator) {
    readBtn.disabled = true;
    try {
      let it = iterator;
      if (!it) {
        const req = { StreamName: stream, ShardId: shardSel.value, ShardIteratorType: typeSel.value };
        if (typeSel.value.endsWith('SEQUENCE_NUMBER')) req.StartingSequenceNumber = seqIn.value.trim();
        if (typeSel.value === 'AT_TIMESTAMP') {
          const t = tsIn.value.trim();
          req.Timestamp = /^\d+(\.\d+)?$/.test(t) ? Number(t) : Date.parse(t) / 1000;
        }
        it = (await api.kinesis('GetShardIterator', req)).ShardIterator;
      }
      const limit = Math.max(1, Math.min(10000, Number(limitIn.value) || 25));
      let r;
      // An empty answer while behind the tip means empty stretches: read on a few times.
      for (let i = 0; i < 10; i++) {
        r = await api.kinesis('GetRecords', { ShardIterator: it, Limit: limit });
        it = r.NextShardIterator;
        if (r.Records.length || !r.MillisBehindLatest || !it) break;
      }
      records = r.Records;
      next = r.NextShardIterator || null;
      nextBtn.disabled = !next;
      status.textContent = `${records.length} records from ${shardSel.value}; ${r.MillisBehindLatest ?? 0} ms behind the tip` +
        (r.ChildShards?.length ? `; the shard is closed, its children: ${r.ChildShards.map((c) => c.ShardId).join(', ')}` : '');
      draw();
    } catch (e) {
      clear(out).append(errorBox(e));
    } finally {
      readBtn.disabled = false;
    }
  }
  form.addEventListener('submit', (ev) => { ev.preventDefault(); read(); });
  nextBtn.addEventListener('click', () => next && read(next));
  return { el, read: () => read(), pick: (id) => { shardSel.value = id; typeSel.value = 'TRIM_HORIZON'; read(); } };
}
