// A channel: state, freshness (configured and measured), lag per shard, last error, last
// rejected record, counts per DLQ error code, the DLQ lines with each record's payload
// looked up from the stream, and — when the server's API has it — the redrive action.
//
// What the channel API does not report is not made up: the last rejected record and the
// counts per error code come from IcestreamStatus when the server puts them there
// (LastRejected, RejectedRecordCounts: docs/channels.md), otherwise from the DLQ objects
// themselves, and say so.
import * as api from '../lib/api.js';
import { h, clear, card, table, badge, stateKind, kv, fmtNum, fmtSeconds, fmtTime, errorBox } from '../lib/dom.js';
import { fromBase64, render, defaultView, deaggregate } from '../lib/payload.js';
import { channelLag, tableHref } from './overview.js';

function text(v) {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return [v.ErrorCode || v.Code, v.ErrorMessage || v.Message, v.Timestamp ? `at ${fmtTime(v.Timestamp)}` : null,
    v.Attempts ? `(${v.Attempts} attempts)` : null].filter(Boolean).join(' ') || JSON.stringify(v);
  return String(v);
}

// The record a DLQ line names, read back from the stream (KPL user records by their
// sub-sequence number): {bytes} or {missing: why}.
async function lookUp(stream, line) {
  const inline = line.data ?? line.payload;
  if (typeof inline === 'string') return { bytes: fromBase64(inline), from: 'the DLQ line' };
  try {
    const it = (await api.kinesis('GetShardIterator', { StreamName: stream, ShardId: line.shardId,
      ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: line.sequenceNumber })).ShardIterator;
    const r = await api.kinesis('GetRecords', { ShardIterator: it, Limit: 1 });
    const rec = r.Records[0];
    if (!rec || rec.SequenceNumber !== line.sequenceNumber) return { missing: 'no longer in the stream (past its retention)' };
    let bytes = fromBase64(rec.Data);
    if (line.subSequenceNumber !== undefined) {
      const users = deaggregate(bytes);
      if (!users || !users[line.subSequenceNumber]) return { missing: 'the aggregate does not hold that sub-sequence number' };
      bytes = users[line.subSequenceNumber].data;
    }
    return { bytes, from: 'the stream' };
  } catch (e) {
    return { missing: `${e.type || 'error'}: ${e.message}` };
  }
}

export default async function channelPage(root, [arn], ctx) {
  const describe = async () => (await api.kinesis('DescribeChannel', { ChannelARN: arn })).ChannelDescription;
  let d = await describe();
  const isTable = Boolean(d.S3TablesDestinationConfiguration);
  const dest = d.S3DestinationConfiguration || d.S3TablesDestinationConfiguration;
  const streamArn = d.StreamConfigurationList?.[0]?.StreamARN || '';
  const stream = streamArn.split('/').pop();
  const title = h('h1');
  root.append(h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' / channel'), title);

  const table0 = isTable ? dest.S3TablesConfigurationList?.[0] : null;
  const warehouse = table0 ? table0.TableBucketARN.split('/').pop() : null;
  const rc = d.StreamConfigurationList?.[0]?.RecordConfiguration || {};
  root.append(h('div', { class: 'grid' },
    card('Configuration', kv([
      ['ARN', h('code', d.ChannelARN)],
      ['Stream', h('a', { href: `#/streams/${encodeURIComponent(stream)}` }, stream)],
      ['Destination', isTable
        ? h('a', { href: tableHref(warehouse, table0.Namespace, table0.TableName) }, `${warehouse} / ${table0.Namespace}.${table0.TableName}`)
        : h('code', `${dest.StorageConfiguration?.BucketARN} (${dest.StorageConfiguration?.CompressionType || 'NONE'})`)],
      ['Record format', rc.RecordFormatType],
      ['Schema', rc.GSRSchemaARN ? h('code', rc.GSRSchemaARN) : undefined],
      ['Starting position', d.StreamConfigurationList?.[0]?.StartingPosition?.Type],
      ['Freshness setting', `${dest.DataFreshnessInSeconds} s`],
      ['Dead-letter queue', h('code', `${dest.DeadLetterQueueS3Configuration?.BucketARN || ''} ${dest.DeadLetterQueueS3Configuration?.ErrorOutputPrefix || ''}`)],
      ['Created', fmtTime(d.ChannelCreationTimestamp)],
    ])),
    card('Delivery', h('div', { id: 'delivery' }))));
  const lagEl = h('div', { id: 'lag' });
  root.append(card('Lag per shard', lagEl));
  const dlqEl = h('div', { id: 'dlq' });
  const redriveEl = h('div', { id: 'redrive' });
  root.append(card('Dead-letter queue', dlqEl));
  if (ctx.info.operations?.StartChannelRedrive) root.append(card('Redrive', redriveEl));

  let dlq = null;
  let showRedrive = null;
  const drawStatus = async () => {
    d = await describe();
    const st = d.IcestreamStatus || {};
    clear(title).append(d.ChannelName, ' ', badge(d.ChannelStatus, stateKind(d.ChannelStatus)));
    const m = await api.metrics();
    const family = isTable ? 'DeliveryToIceberg_DataFreshness' : 'DeliveryToS3_DataFreshness';
    const measured = (m[family] || []).find((x) => x.labels.channel_id === d.ChannelId);
    const lag = channelLag(st);
    const lr = st.LastRejected;
    const lastRejected = lr
      ? h('span', { id: 'last-rejected', 'data-last-rejected': 'status' }, `${lr.ErrorCode}: ${lr.ErrorMessage || ''} `,
        h('span', { class: 'muted small' }, `(${[lr.ShardId, lr.SequenceNumber, lr.SubSequenceNumber !== undefined ? `sub ${lr.SubSequenceNumber}` : null,
          lr.Timestamp ? `rejected ${fmtTime(lr.Timestamp)}` : null].filter((x) => x !== null && x !== undefined).join(', ')})`))
      : dlq?.lines?.[0]
        ? h('span', { id: 'last-rejected', 'data-last-rejected': 'dlq' }, `${dlq.lines[0].errorCode}: ${dlq.lines[0].errorMessage} `,
          h('span', { class: 'muted small' }, `(${dlq.lines[0].shardId}, ${fmtTime(dlq.lines[0].approximateArrivalTimestamp)}; the newest DLQ line)`))
        : h('span', { id: 'last-rejected', 'data-last-rejected': 'none', class: 'muted' }, 'none');
    const el = clear(document.getElementById('delivery') || h('div'));
    el.append(h('div', { class: 'stats' },
      stat('State', badge(d.ChannelStatus, stateKind(d.ChannelStatus))),
      stat('Measured freshness', measured ? fmtSeconds(measured.value) : '—', 'freshness'),
      stat('Lag (records)', fmtNum(lag.records), 'lag-records'),
      stat('Lag (age)', fmtSeconds(lag.seconds), 'lag-seconds'),
      stat('Delivered', fmtNum(st.DeliveredRecordCount), 'delivered'),
      stat('To the DLQ', fmtNum(st.DLQRecordCount), 'dlq-count'),
      isTable ? stat('Commits', fmtNum(st.CommitCount)) : null,
      isTable ? stat('Live data files', fmtNum(st.LiveDataFiles)) : null),
    kv([
      ['Reason', d.ChannelStatusReason ? h('span', { class: 'error-box' }, d.ChannelStatusReason) : undefined],
      ['Last error', st.LastError ? h('span', { id: 'last-error' }, text(st.LastError)) : h('span', { id: 'last-error', class: 'muted' }, 'none')],
      ['Last rejected', lastRejected],
      ['Last commit', isTable ? fmtTime(st.LastCommitTimestamp) : undefined],
      ['Activation attempts', st.ActivationAttempts],
      ['Ignored schema version', st.IgnoredSchemaVersion ? JSON.stringify(st.IgnoredSchemaVersion) : undefined],
    ]));
    clear(lagEl).append(table(['Shard', { label: 'Lag (records)', num: true }, { label: 'Lag (age)', num: true },
      'Last delivered sequence number', 'Delivered to its end'],
    (st.Shards || []).map((x) => h('tr', { 'data-shard': x.ShardId },
      h('td', h('code', x.ShardId)), h('td', { class: 'num' }, fmtNum(x.LagRecords)),
      h('td', { class: 'num' }, fmtSeconds(x.LagSeconds)), h('td', h('code', { class: 'small' }, x.LastCommittedSequenceNumber || '—')),
      h('td', x.Delivered ? 'yes' : '')))));
    if (st.RejectedRecordCounts && dlq) drawDlq();
    if (showRedrive && st.Redrive) showRedrive(st.Redrive);
  };

  const drawDlq = () => {
    const st = d.IcestreamStatus || {};
    clear(dlqEl);
    if (dlq.bucket_error) {
      dlqEl.append(errorBox({ message: `The DLQ bucket ${dlq.bucket} cannot be listed: ${dlq.bucket_error}` }));
      return;
    }
    const counts = st.RejectedRecordCounts || dlq.error_counts;
    dlqEl.append(h('h3', 'Rejected records per error code'),
      table(['Error code', { label: 'Records', num: true }],
        Object.entries(counts).sort((a, b) => b[1] - a[1]).map(([code, n]) => h('tr', { 'data-error-code': code },
          h('td', code), h('td', { class: 'num' }, fmtNum(n)))), { empty: 'Nothing was rejected.' }),
      h('p', { class: 'muted small', 'data-counts-source': st.RejectedRecordCounts ? 'status' : 'dlq' }, st.RejectedRecordCounts
        ? 'Counted by the channel since the server started (IcestreamStatus.RejectedRecordCounts).'
        : `Counted from ${fmtNum(dlq.lines_read)} line${dlq.lines_read === 1 ? '' : 's'} of the newest ` +
          `${fmtNum(dlq.objects_read)} DLQ object${dlq.objects_read === 1 ? '' : 's'} in s3://${dlq.bucket}/${dlq.prefix}` +
          (dlq.truncated ? ' (there are more).' : '.')));
    const rows = dlq.lines.map((line) => {
      const payload = h('td', { class: 'payload-cell' }, h('span', { class: 'muted small' }, '…'));
      const tr = h('tr', { 'data-sequence': line.sequenceNumber, 'data-error-code': line.errorCode },
        h('td', { class: 'small' }, fmtTime(line.approximateArrivalTimestamp)),
        h('td', h('code', { class: 'small' }, line.shardId)),
        h('td', h('code', { class: 'small' }, line.sequenceNumber + (line.subSequenceNumber !== undefined ? ` / ${line.subSequenceNumber}` : ''))),
        h('td', badge(line.errorCode, 'bad')),
        h('td', { class: 'small' }, line.errorMessage),
        payload);
      tr.lookup = async () => {
        const got = await lookUp(stream, line);
        clear(payload).append(got.bytes
          ? h('pre', { class: 'payload' }, render(got.bytes, defaultView(got.bytes)))
          : h('span', { class: 'muted small' }, got.missing));
      };
      return tr;
    });
    dlqEl.append(h('h3', `DLQ lines (newest first, ${rows.length}${dlq.truncated ? ' shown' : ''})`),
      table(['Arrived', 'Shard', 'Sequence number', 'Error', 'Message', 'Payload (from the stream)'], rows,
        { empty: 'The DLQ is empty.' }));
    // The first 25 payloads at once, the rest on demand (one GetRecords each).
    rows.forEach((tr, i) => {
      if (i < 25) tr.lookup();
      else {
        const cell = tr.lastChild;
        clear(cell).append(h('button', { type: 'button', onclick: () => tr.lookup() }, 'Look up'));
      }
    });
  };

  const loadDlq = async () => {
    try {
      dlq = await api.get(`/console/api/channels/dlq?arn=${encodeURIComponent(arn)}&limit=200`);
      drawDlq();
    } catch (e) {
      clear(dlqEl).append(errorBox(e));
    }
  };

  if (ctx.info.operations?.StartChannelRedrive) showRedrive = drawRedrive(redriveEl, arn, () => dlq);
  await loadDlq();
  await ctx.every(5000, drawStatus);
}

function stat(k, v, id) {
  return h('div', { class: 'stat', 'data-stat': id || null }, h('div', { class: 'k' }, k), h('div', { class: 'v' }, v));
}

// StartChannelRedrive / DescribeChannelRedrive (icestream extensions of the channel API,
// docs/channels.md "Redrive"): shown only when the server knows them. Returns a function
// that shows a Redrive document (StartChannelRedrive's answer, IcestreamStatus.Redrive on
// every refresh).
function drawRedrive(el, arn, currentDlq) {
  const codes = h('div', { class: 'toolbar' });
  const result = h('div');
  const latest = h('div', { id: 'redrive-latest' });
  const show = (r) => {
    if (!r) return;
    const done = Number(r.LinesDone || 0);
    const matched = Number(r.LinesMatched || 0);
    const filter = r.Filter || {};
    clear(latest).append(h('h3', 'Latest redrive'), h('div', { class: 'stats' },
      stat('Status', badge(r.Status, r.Status === 'COMPLETED' ? 'ok' : r.Status === 'FAILED' ? 'bad' : 'warn'), 'redrive-status'),
      stat('Done', matched ? `${fmtNum(done)} / ${fmtNum(matched)}` : fmtNum(done), 'redrive-done'),
      stat('Delivered', fmtNum(r.RecordsDelivered), 'redrive-delivered'),
      stat('Failed again', fmtNum(r.RecordsFailedAgain), 'redrive-failed-again'),
      stat('Expired', fmtNum(r.RecordsExpired), 'redrive-expired')),
    kv([
      ['Redrive id', h('code', { 'data-redrive-id': r.RedriveId }, r.RedriveId)],
      ['Reason', r.StatusReason ? h('span', { class: 'error-box' }, r.StatusReason) : undefined],
      ['Error codes', (filter.ErrorCodes || []).join(', ') || 'all'],
      ['Arrived from', filter.StartTimestamp !== undefined ? fmtTime(filter.StartTimestamp) : undefined],
      ['Arrived before', filter.EndTimestamp !== undefined ? fmtTime(filter.EndTimestamp) : undefined],
      ['Started', fmtTime(r.CreationTimestamp)],
      ['Completed', r.CompletionTimestamp ? fmtTime(r.CompletionTimestamp) : undefined],
      ['DLQ read', `${fmtNum(r.DLQObjectsRead)} objects, ${fmtNum(r.LinesRead)} lines (${fmtNum(r.LinesSkipped)} skipped, ${fmtNum(r.LinesUnreadable)} unreadable)`],
      ['Report', r.ReportLocation ? h('code', r.ReportLocation) : undefined],
    ]),
    h('details', h('summary', 'As the API gives it'), h('pre', JSON.stringify(r, null, 2))));
  };
  const drawCodes = () => {
    clear(codes);
    for (const code of Object.keys(currentDlq()?.error_counts || {})) {
      codes.append(h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'code', value: code, checked: true }), code));
    }
  };
  const start = h('button', { class: 'primary', id: 'start-redrive', onclick: async () => {
    const chosen = [...codes.querySelectorAll('input[name=code]:checked')].map((x) => x.value);
    const all = Object.keys(currentDlq()?.error_counts || {});
    const body = { ChannelARN: arn };
    if (chosen.length && chosen.length < all.length) body.ErrorCodes = chosen;
    try {
      const r = await api.kinesis('StartChannelRedrive', body);
      clear(result).append(h('div', { class: 'ok-box' }, 'Redrive started.'));
      show(r.Redrive);
    } catch (e) {
      clear(result).append(errorBox(e));
    }
  } }, 'Redrive the DLQ');
  el.append(h('p', { class: 'muted' }, 'Delivers the records of the DLQ lines again, exactly once, through the same conversion and commit path (docs/channels.md).'),
    h('button', { type: 'button', onclick: drawCodes }, 'Choose error codes'), codes, start, result, latest);
  // IcestreamStatus.Redrive (the latest) replaces this on the next refresh when there is one;
  // asking DescribeChannelRedrive would answer an error for a channel that never had one.
  latest.append(h('p', { class: 'muted' }, 'No redrive yet.'));
  return show;
}
