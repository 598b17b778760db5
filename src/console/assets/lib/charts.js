// Hand-drawn SVG charts: per-minute bars (a shard's incoming rate), the shard lineage
// (parents to children, placed by hash-key range), and a table's snapshot timeline.
import { s, fmtNum, fmtTime } from './dom.js';

// Bars of `values` (oldest first), one per minute from `firstMs`; `fmt` labels a value.
export function minuteBars(values, firstMs, { width = 300, height = 64, fmt = fmtNum, unit = '' } = {}) {
  const max = Math.max(1, ...values);
  const n = values.length;
  const w = width / n;
  const svg = s('svg', { viewBox: `0 0 ${width} ${height + 14}`, width, height: height + 14, role: 'img',
                         'aria-label': `per-minute ${unit}, max ${fmt(max)}` });
  svg.append(s('line', { class: 'grid-line', x1: 0, x2: width, y1: height, y2: height }));
  values.forEach((v, i) => {
    const bh = v === 0 ? 0 : Math.max(1, (v / max) * (height - 4));
    const r = s('rect', { class: 'bar-rect', x: i * w + 0.5, y: height - bh, width: Math.max(1, w - 1), height: bh,
                          'data-value': v });
    r.append(s('title', {}, `${fmtTime(firstMs + i * 60000)}: ${fmt(v)}${unit ? ' ' + unit : ''}`));
    svg.append(r);
  });
  svg.append(s('text', { x: 0, y: height + 12 }, '-60 min'));
  svg.append(s('text', { x: width, y: height + 12, 'text-anchor': 'end' }, 'now'));
  svg.append(s('text', { x: 2, y: 10 }, `max ${fmt(max)}/min`));
  return svg;
}

const TWO_128 = 2n ** 128n;
function fraction(dec) {
  try { return Number((BigInt(dec) * 1000000n) / TWO_128) / 1000000; } catch { return 0; }
}

// Shards as a graph: one column per generation (a split or merge makes the next), each
// box as tall as its share of the hash-key space, edges from parents to children.
export function lineage(shards, { width = 760, rowHeight = Math.min(240, Math.max(90, 36 * shards.length)), onPick } = {}) {
  const byId = new Map(shards.map((x) => [x.ShardId, x]));
  const depth = new Map();
  const depthOf = (id, seen = new Set()) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const sh = byId.get(id);
    const parents = [sh?.ParentShardId, sh?.AdjacentParentShardId].filter((p) => p && byId.has(p));
    const d = parents.length ? 1 + Math.max(...parents.map((p) => depthOf(p, seen))) : 0;
    depth.set(id, d);
    return d;
  };
  for (const x of shards) depthOf(x.ShardId);
  const cols = Math.max(1, ...[...depth.values()].map((d) => d + 1));
  const colW = Math.min(200, (width - 20) / cols);
  const boxW = Math.min(150, colW - 40);
  const height = rowHeight;
  const svg = s('svg', { viewBox: `0 0 ${width} ${height + 20}`, width, height: height + 20, role: 'img',
                         'aria-label': `shard lineage, ${shards.length} shards in ${cols} generations` });
  const pos = new Map();
  for (const x of shards) {
    const d = depth.get(x.ShardId);
    const a = fraction(x.HashKeyRange.StartingHashKey), b = fraction(x.HashKeyRange.EndingHashKey);
    const y = 4 + a * height, hgt = Math.max(14, (b - a) * height - 3);
    pos.set(x.ShardId, { x: 10 + d * colW, y, w: boxW, h: hgt });
  }
  for (const x of shards) {
    for (const p of [x.ParentShardId, x.AdjacentParentShardId]) {
      if (!p || !pos.has(p)) continue;
      const from = pos.get(p), to = pos.get(x.ShardId);
      const x1 = from.x + from.w, y1 = from.y + from.h / 2, x2 = to.x, y2 = to.y + to.h / 2;
      svg.append(s('path', { class: 'edge', d: `M${x1},${y1} C${(x1 + x2) / 2},${y1} ${(x1 + x2) / 2},${y2} ${x2},${y2}` }));
    }
  }
  for (const x of shards) {
    const p = pos.get(x.ShardId);
    const closed = Boolean(x.SequenceNumberRange?.EndingSequenceNumber);
    const g = s('g', { class: `node${closed ? ' closed' : ''}`, 'data-shard': x.ShardId,
                       onclick: onPick ? () => onPick(x.ShardId) : null });
    g.append(s('rect', { x: p.x, y: p.y, width: p.w, height: p.h, rx: 4 }));
    g.append(s('text', { x: p.x + 6, y: p.y + Math.min(p.h / 2 + 4, 14) }, x.ShardId.replace('shardId-', '') + (closed ? ' (closed)' : '')));
    g.append(s('title', {}, `${x.ShardId}${closed ? ' closed' : ' open'}\nhash keys ${x.HashKeyRange.StartingHashKey}…${x.HashKeyRange.EndingHashKey}`));
    svg.append(g);
  }
  svg.append(s('text', { x: 10, y: height + 16 }, 'hash key 0 at the top, 2^128-1 at the bottom; generations left to right'));
  return svg;
}

// Snapshots over time: a dot per snapshot coloured by operation (append, replace =
// compaction, overwrite/delete), on a line of the table's total records.
export function snapshotTimeline(snapshots, { width = 760, height = 120, current } = {}) {
  const svg = s('svg', { viewBox: `0 0 ${width} ${height + 24}`, width, height: height + 24, role: 'img',
                         'aria-label': `${snapshots.length} snapshots` });
  if (snapshots.length === 0) return svg;
  const t0 = Math.min(...snapshots.map((x) => Number(x['timestamp-ms'])));
  const t1 = Math.max(...snapshots.map((x) => Number(x['timestamp-ms'])));
  const span = Math.max(1, t1 - t0);
  const totals = snapshots.map((x) => Number(x.summary?.['total-records'] ?? 0));
  const maxTotal = Math.max(1, ...totals);
  const X = (t) => 12 + ((Number(t) - t0) / span) * (width - 24);
  const Y = (v) => 8 + (1 - v / maxTotal) * (height - 16);
  svg.append(s('line', { class: 'grid-line', x1: 0, x2: width, y1: height, y2: height }));
  const sorted = snapshots.map((x, i) => [x, totals[i]]).sort((a, b) => Number(a[0]['timestamp-ms']) - Number(b[0]['timestamp-ms']));
  svg.append(s('path', { class: 'line', d: sorted.map(([x, v], i) => `${i ? 'L' : 'M'}${X(x['timestamp-ms'])},${Y(v)}`).join(' ') }));
  for (const [x, v] of sorted) {
    const op = x.summary?.operation || 'append';
    const isCurrent = String(x['snapshot-id']) === String(current);
    const c = s('circle', { class: `dot ${op}`, cx: X(x['timestamp-ms']), cy: Y(v), r: isCurrent ? 6 : 4,
                            'data-snapshot': String(x['snapshot-id']), 'data-operation': op });
    c.append(s('title', {}, `${op} ${x['snapshot-id']} at ${fmtTime(x['timestamp-ms'])}\n${fmtNum(v)} records`));
    svg.append(c);
  }
  svg.append(s('text', { x: 2, y: height + 16 }, fmtTime(t0)));
  svg.append(s('text', { x: width - 2, y: height + 16, 'text-anchor': 'end' }, fmtTime(t1)));
  svg.append(s('text', { x: 2, y: 10 }, `${fmtNum(maxTotal)} records`));
  return svg;
}
