// The Node clients of bench/fanout (bench.py drives them): the AWS SDK for JavaScript v3
// KinesisClient as producer and consumers, so that the figures measure the servers more
// than the clients (one Python process of boto3 threads is bound by its interpreter lock
// long before the server is). Prints one JSON line; asserts nothing.
//
//   node clients.cjs put CONFIG_JSON
//     PutRecords as fast as `inflight` calls in flight go for `seconds`:
//     {endpoint, handler, stream, seconds, inflight, batch, size}
//     -> {calls, records, bytes, seconds, mbs, cpu_s}
//   node clients.cjs fanout CONFIG_JSON
//     `consumers` readers (enhanced fan-out: one SubscribeToShard each, from LATEST; poll:
//     GetRecords every `interval` ms) in `workers` worker threads, then one producer at
//     `rate` records/s (0: as fast as `inflight` PutRecords calls in flight go) for
//     `seconds`: {endpoint, stream, mode, consumers: [ARN...] | count, seconds, rate,
//     size, batch, inflight, interval, readers, efo_protocol, efo_handler, handler,
//     workers} -> {sent, acked, min_got, per_mbs, agg_mbs, p50, p99, elapsed, cpu_s}
//
// Readers: `sdk` = the KinesisClient (SubscribeToShardCommand, GetRecordsCommand), which
// checks every event's CRCs, parses all JSON and decodes every record; `raw` = signed
// requests by hand (SubscribeToShard over HTTP/2 (`efo_protocol` h2) or HTTP/1.1 (h1),
// GetRecords over HTTP/1.1 keep-alive) that only frame the event stream and pick each
// record's index and size out of its "Data" field: the lightest reader that still
// counts every record, so that the figure is the server's, not the reader's. Both kinds
// treat icestream and kinesalite alike.
//
// Handlers: http1 = NodeHttpHandler (keep-alive), default = none given (the Kinesis
// client's NodeHttp2Handler, one session per request; event streams always get their own),
// shared = new NodeHttp2Handler() (pooled sessions, concurrent streams).
// Each record carries its index in its first 8 bytes; times are performance.timeOrigin +
// performance.now() in every thread (one clock for the process).
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const {
  KinesisClient, PutRecordsCommand, SubscribeToShardCommand, GetShardIteratorCommand, GetRecordsCommand,
} = require('@aws-sdk/client-kinesis');
const { NodeHttpHandler, NodeHttp2Handler } = require('@smithy/node-http-handler');
const { SignatureV4 } = require('@smithy/signature-v4');
const { Hash } = require('@smithy/core/serde');
const http = require('node:http');
const http2 = require('node:http2');

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function client(endpoint, handler) {
  const handlers = {
    http1: () => new NodeHttpHandler({ httpAgent: { keepAlive: true, maxSockets: 64 } }),
    shared: () => new NodeHttp2Handler(),
    default: null,
  };
  if (!(handler in handlers)) throw new Error(`unknown handler ${handler}`);
  return new KinesisClient({
    endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, maxAttempts: 1,
    ...(handlers[handler] ? { requestHandler: handlers[handler]() } : {}),
  });
}

function record(idx, size) {
  const b = Buffer.alloc(size, 120);
  b.writeBigUInt64BE(BigInt(idx));
  return b;
}

// Calls `send(first index)` with `inflight` calls in flight until `until` (ms) or, when
// `rate` > 0, paces them to `rate` records/s. Returns the number of records sent.
async function pump({ batch, inflight, rate, until }, send) {
  let next = 0;
  const t0 = now();
  async function lane() {
    while (now() < until) {
      const first = next;
      next += batch;
      if (rate) {
        const at = t0 + (first / rate) * 1000;
        if (at > now()) await sleep(at - now());
        if (now() >= until) break;
      }
      await send(first);
    }
  }
  await Promise.all(Array.from({ length: rate ? 1 : inflight }, lane));
  return next;
}

async function put(cfg) {
  const c = client(cfg.endpoint, cfg.handler);
  const records = Array.from({ length: cfg.batch }, (_, i) => ({ PartitionKey: `k${i}`, Data: record(i, cfg.size) }));
  // One warm-up call (connections, credentials), not counted.
  await c.send(new PutRecordsCommand({ StreamName: cfg.stream, Records: records }));
  let calls = 0;
  let failed = 0;
  const cpu0 = process.cpuUsage();
  const t0 = now();
  await pump({ batch: cfg.batch, inflight: cfg.inflight, rate: 0, until: t0 + cfg.seconds * 1000 }, async () => {
    const r = await c.send(new PutRecordsCommand({ StreamName: cfg.stream, Records: records }));
    calls++;
    failed += r.FailedRecordCount;
  });
  const seconds = (now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  c.destroy();
  const bytes = calls * cfg.batch * cfg.size;
  return { calls, records: calls * cfg.batch, failed, bytes, seconds, mbs: bytes / seconds / 1e6,
           cpu_s: (cpu.user + cpu.system) / 1e6 };
}

// --- fan-out: readers in workers -------------------------------------------------------

function sdkGot(got, records) {
  const indices = [];
  let bytes = 0;
  for (const r of records) {
    const d = r.Data;
    indices.push(Number(Buffer.from(d.buffer, d.byteOffset, 8).readBigUInt64BE()));
    bytes += d.length;
  }
  got(indices, bytes);
}

const DATA = Buffer.from('"Data":"');

// Indices and total size of the records whose base64 "Data" fields are in `buf`.
function scanData(buf, indices) {
  let bytes = 0;
  for (let i = buf.indexOf(DATA); i !== -1; i = buf.indexOf(DATA, i)) {
    const start = i + DATA.length;
    const end = buf.indexOf(34, start); // the closing quote
    indices.push(Number(Buffer.from(buf.toString('latin1', start, start + 12), 'base64').readBigUInt64BE()));
    bytes += ((end - start) / 4) * 3 - (buf[end - 1] === 61) - (buf[end - 2] === 61);
    i = end;
  }
  return bytes;
}

const signer = new SignatureV4({
  service: 'kinesis', region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  sha256: Hash.bind(null, 'sha256'),
});

async function signed(endpoint, op, body) {
  const url = new URL(endpoint);
  const req = await signer.sign({
    method: 'POST', protocol: url.protocol, hostname: url.hostname, port: Number(url.port), path: '/', query: {},
    headers: { host: url.host, 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `Kinesis_20131202.${op}`,
               'content-length': String(Buffer.byteLength(body)) },
    body,
  });
  return req.headers;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

// A signed JSON call over HTTP/1.1 keep-alive; resolves with the whole body as a Buffer.
async function rawCall(endpoint, op, payload, signal) {
  const body = JSON.stringify(payload);
  const url = new URL(endpoint);
  const headers = await signed(endpoint, op, body);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method: 'POST', path: '/', headers, agent, signal }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        if (res.statusCode !== 200) reject(new Error(`${op}: ${res.statusCode} ${buf}`));
        else resolve(buf);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

// Frames an application/vnd.amazon.eventstream byte stream (total length, headers length,
// prelude CRC, headers, payload, message CRC; CRCs not checked) and hands each payload on.
// Splits a byte stream into event-stream messages and hands each payload on. The length
// of the message at the head is read once; chunks are joined only when it is complete
// (joining on every chunk made a multi-MiB event cost quadratic copying).
function eventFramer(onPayload) {
  let chunks = [];
  let have = 0;
  let need = 0; // total length of the message at the head, 0 until known
  return (chunk) => {
    chunks.push(chunk);
    have += chunk.length;
    if (!need) {
      if (have < 12) return;
      need = (chunks[0].length >= 4 ? chunks[0] : Buffer.concat(chunks, have)).readUInt32BE(0);
    }
    if (have < need) return;
    const buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, have);
    let pos = 0;
    while (buf.length - pos >= 12) {
      const total = buf.readUInt32BE(pos);
      if (buf.length - pos < total) break;
      const headers = buf.readUInt32BE(pos + 4);
      onPayload(buf.subarray(pos + 12 + headers, pos + total - 4));
      pos += total;
    }
    chunks = pos < buf.length ? [buf.subarray(pos)] : [];
    have = buf.length - pos;
    need = have >= 4 ? buf.readUInt32BE(pos) : 0;
  };
}

// SubscribeToShard by hand over HTTP/2 or HTTP/1.1: resolves when stopped.
async function rawSubscribe(cfg, consumerARN, got, ready, stopped) {
  const body = JSON.stringify({ ConsumerARN: consumerARN, ShardId: 'shardId-000000000000', StartingPosition: { Type: 'LATEST' } });
  const headers = await signed(cfg.endpoint, 'SubscribeToShard', body);
  const onPayload = (p) => {
    const indices = [];
    const bytes = scanData(p, indices);
    if (indices.length) got(indices, bytes);
  };
  const url = new URL(cfg.endpoint);
  if (cfg.efo_protocol === 'h2') {
    // Windows as large as the server's own receive windows: a reader that keeps up should
    // not be paced by WINDOW_UPDATE round trips (Node's default is 64 KiB).
    const window = cfg.h2_window ?? 32 << 20;
    const session = http2.connect(cfg.endpoint, { settings: { initialWindowSize: Math.min(window, 2 ** 31 - 1) } });
    session.on('connect', () => session.setLocalWindowSize(window));
    session.on('error', () => {});
    const h = { ':method': 'POST', ':path': '/' };
    for (const [k, v] of Object.entries(headers)) if (k !== 'host') h[k] = v;
    const req = session.request(h);
    req.end(body);
    const [rh] = await new Promise((resolve, reject) => {
      req.once('response', (...a) => resolve(a));
      req.once('error', reject);
    });
    if (rh[':status'] !== 200) throw new Error(`SubscribeToShard: ${rh[':status']}`);
    ready();
    req.on('data', eventFramer(onPayload));
    req.on('error', () => {});
    await stopped;
    req.close();
    session.destroy();
    return;
  }
  const res = await new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method: 'POST', path: '/', headers }, resolve);
    req.on('error', reject);
    req.end(body);
  });
  if (res.statusCode !== 200) throw new Error(`SubscribeToShard: ${res.statusCode}`);
  ready();
  res.on('data', eventFramer(onPayload));
  res.on('error', () => {});
  await stopped;
  res.destroy();
}

async function rawPoll(cfg, got, ready, stopped) {
  const first = JSON.parse(await rawCall(cfg.endpoint, 'GetShardIterator', {
    StreamName: cfg.stream, ShardId: 'shardId-000000000000', ShardIteratorType: 'LATEST',
  }));
  let it = first.ShardIterator;
  ready();
  // A stop aborts the call in flight: a slow server's 10 MB answer does not delay it.
  const abort = new AbortController();
  stopped.then(() => abort.abort());
  const NEXT = Buffer.from('"NextShardIterator":"');
  while (!abort.signal.aborted) {
    let buf;
    try {
      buf = await rawCall(cfg.endpoint, 'GetRecords', { ShardIterator: it, Limit: 10000 }, abort.signal);
    } catch (e) {
      if (abort.signal.aborted) break;
      throw e;
    }
    const indices = [];
    const bytes = scanData(buf, indices);
    got(indices, bytes);
    const at = buf.lastIndexOf(NEXT) + NEXT.length;
    it = buf.toString('latin1', at, buf.indexOf(34, at));
    await sleep(cfg.interval);
  }
}

// One reader; `got(indices, bytes)` for each batch received. Resolves when stopped.
async function reader(cfg, which, got, ready, stopped) {
  if (cfg.readers === 'raw') {
    return cfg.mode === 'efo' ? rawSubscribe(cfg, which, got, ready, stopped) : rawPoll(cfg, got, ready, stopped);
  }
  if (cfg.mode === 'efo') {
    const c = client(cfg.endpoint, cfg.efo_handler);
    const abort = new AbortController();
    stopped.then(() => abort.abort());
    const out = await c.send(new SubscribeToShardCommand({
      ConsumerARN: which, ShardId: 'shardId-000000000000', StartingPosition: { Type: 'LATEST' },
    }), { abortSignal: abort.signal });
    ready();
    try {
      for await (const ev of out.EventStream) {
        if (ev.SubscribeToShardEvent) sdkGot(got, ev.SubscribeToShardEvent.Records);
      }
    } catch (e) {
      if (!abort.signal.aborted) throw e;
    }
    c.destroy();
    return;
  }
  const c = client(cfg.endpoint, cfg.handler);
  let it = (await c.send(new GetShardIteratorCommand({
    StreamName: cfg.stream, ShardId: 'shardId-000000000000', ShardIteratorType: 'LATEST',
  }))).ShardIterator;
  ready();
  const abort = new AbortController();
  stopped.then(() => abort.abort());
  while (!abort.signal.aborted) {
    let r;
    try {
      r = await c.send(new GetRecordsCommand({ ShardIterator: it, Limit: 10000 }), { abortSignal: abort.signal });
    } catch (e) {
      if (abort.signal.aborted) break;
      throw e;
    }
    sdkGot(got, r.Records);
    it = r.NextShardIterator;
    await sleep(cfg.interval);
  }
  c.destroy();
}

function workerMain() {
  const cfg = workerData;
  let stop;
  const stopped = new Promise((r) => { stop = r; });
  parentPort.on('message', (m) => { if (m === 'stop') stop(); });
  // Per reader: first receipt time by record index, and Data bytes.
  const seen = cfg.mine.map(() => new Float64Array(1 << 16));
  const bytes = cfg.mine.map(() => 0);
  const counts = cfg.mine.map(() => 0);
  let readyCount = 0;
  const done = cfg.mine.map((which, i) => reader(cfg, which, (indices, nbytes) => {
    const t = now();
    bytes[i] += nbytes;
    for (const idx of indices) {
      if (idx >= seen[i].length) {
        const grown = new Float64Array(Math.max(idx + 1, seen[i].length * 2));
        grown.set(seen[i]);
        seen[i] = grown;
      }
      if (!seen[i][idx]) {
        seen[i][idx] = t;
        counts[i]++;
      }
    }
    parentPort.postMessage({ progress: i, count: counts[i] });
  }, () => {
    if (++readyCount === cfg.mine.length) parentPort.postMessage('ready');
  }, stopped));
  Promise.all(done).then(() => {
    parentPort.postMessage({ seen, bytes, counts }, seen.map((s) => s.buffer));
  }, (e) => {
    console.error(e);
    process.exit(1);
  });
}

async function fanout(cfg) {
  const readers = Array.isArray(cfg.consumers) ? cfg.consumers : Array.from({ length: cfg.consumers }, (_, i) => i);
  const nw = Math.max(1, Math.min(cfg.workers, readers.length));
  const groups = Array.from({ length: nw }, (_, w) => readers.filter((_, i) => i % nw === w));
  const workers = groups.map((mine) => new Worker(__filename, { workerData: { ...cfg, mine } }));
  const progress = groups.map((g) => g.map(() => 0));
  const results = [];
  const readyAll = Promise.all(workers.map((w, wi) => new Promise((resolve, reject) => {
    w.on('message', (m) => {
      if (m === 'ready') resolve();
      else if (m.progress !== undefined) progress[wi][m.progress] = m.count;
      else results[wi] = m;
    });
    w.on('error', reject);
    w.on('exit', (code) => { if (code) reject(new Error(`worker exited with ${code}`)); });
  })));
  await readyAll;
  await sleep(300);

  const c = client(cfg.endpoint, cfg.handler);
  let acked = new Float64Array(1 << 16);
  let ackedCount = 0;
  const cpu0 = process.cpuUsage();
  const t0 = now();
  const sent = await pump({ batch: cfg.batch, inflight: cfg.inflight, rate: cfg.rate, until: t0 + cfg.seconds * 1000 },
    async (first) => {
      const records = Array.from({ length: cfg.batch }, (_, j) => ({ PartitionKey: 'k', Data: record(first + j, cfg.size) }));
      const r = await c.send(new PutRecordsCommand({ StreamName: cfg.stream, Records: records }));
      const t = now();
      if (first + cfg.batch > acked.length) {
        const grown = new Float64Array(Math.max(first + cfg.batch, acked.length * 2));
        grown.set(acked);
        acked = grown;
      }
      r.Records.forEach((e, j) => {
        if (e.SequenceNumber) {
          acked[first + j] = t;
          ackedCount++;
        }
      });
    });
  const deadline = now() + 10000;
  while (now() < deadline && progress.some((g) => g.some((n) => n < ackedCount))) await sleep(50);
  const elapsed = (now() - t0) / 1000;
  workers.forEach((w) => w.postMessage('stop'));
  const stopBy = now() + 10000; // EFO readers stop at once (abort); pollers after a sleep
  while (now() < stopBy && results.filter(Boolean).length < workers.length) await sleep(20);
  const cpu = process.cpuUsage(cpu0);
  c.destroy();
  const lat = [];
  const per = [];
  const got = [];
  for (const res of results) {
    if (!res) continue;
    res.seen.forEach((s, i) => {
      const arr = new Float64Array(s.buffer ?? s);
      for (let idx = 0; idx < Math.min(arr.length, acked.length); idx++) {
        if (arr[idx] && acked[idx]) lat.push(Math.max(0, arr[idx] - acked[idx]));
      }
      per.push(res.bytes[i] / elapsed / 1e6);
      got.push(res.counts[i]);
    });
  }
  workers.forEach((w) => w.terminate());
  lat.sort((a, b) => a - b);
  return {
    // A worker that did not hand its results back (a reader failed or did not stop): its
    // readers count as having got nothing, and the row says so.
    incomplete: got.length !== readers.length,
    sent, acked: ackedCount, min_got: got.length === readers.length ? Math.min(...got) : 0,
    per_mbs: per.reduce((a, b) => a + b, 0) / Math.max(1, per.length), agg_mbs: per.reduce((a, b) => a + b, 0),
    p50: lat.length ? lat[Math.floor(lat.length / 2)] : null,
    p99: lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))] : null,
    elapsed, cpu_s: (cpu.user + cpu.system) / 1e6,
  };
}

if (!isMainThread) {
  workerMain();
} else {
  const [cmd, json] = process.argv.slice(2);
  const run = { put, fanout }[cmd];
  run(JSON.parse(json)).then((r) => {
    console.log(JSON.stringify(r));
    process.exit(0);
  }, (e) => {
    console.error(e);
    process.exit(1);
  });
}
