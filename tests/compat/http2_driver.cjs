// HTTP/2 and TLS checks driven from Node (test_http2.py, test_tls.py): the AWS SDK for
// JavaScript v3 SubscribeToShard across a shard split, and Node's own http2/tls clients
// for what the SDK does not expose (many streams on one session, flow control, GOAWAY,
// ALPN). Raw requests are signed with @smithy/signature-v4, the SDK's signer. Usage:
//   NODE_PATH=.cache/npm/node_modules node http2_driver.cjs COMMAND ENDPOINT [ARG]
//     subscribe ENDPOINT [default|http1]  enhanced fan-out through a split
//     concurrent ENDPOINT                 100 PutRecord streams open at once on one session
//     flow ENDPOINT                       a 4 MiB PutRecords and its GetRecords, small windows
//     goaway ENDPOINT busy|upload         prints READY under load; expects a GOAWAY (the
//                                         caller stops the server) and the covered
//                                         requests answered (see goaway())
//     alpn ENDPOINT                       the protocol TLS ALPN selects for each offer
// Credentials: TEST_AK / TEST_SK (default test/test). Exit 0 when every check passed.
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http2 = require('node:http2');
const tls = require('node:tls');
const { once } = require('node:events');
const { SignatureV4 } = require('@smithy/signature-v4');
const { Hash } = require('@smithy/core/serde');
const {
  KinesisClient, CreateStreamCommand, DescribeStreamSummaryCommand, RegisterStreamConsumerCommand,
  DescribeStreamConsumerCommand, SubscribeToShardCommand, PutRecordsCommand, SplitShardCommand,
  ListShardsCommand,
} = require('@aws-sdk/client-kinesis');
const { NodeHttpHandler } = require('@smithy/node-http-handler');

const REGION = 'us-east-1';
const credentials = { accessKeyId: process.env.TEST_AK || 'test', secretAccessKey: process.env.TEST_SK || 'test' };
const [command, endpoint, arg] = process.argv.slice(2);
const url = new URL(endpoint);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every HTTP/2 session this process opens (tests/lib/http2_sessions.cjs).
const { sessions } = require('../lib/http2_sessions.cjs');

function sdkClient(handler) {
  return new KinesisClient({
    endpoint, region: REGION, credentials, maxAttempts: 1,
    ...(handler === 'http1' ? { requestHandler: new NodeHttpHandler() } : {}),
  });
}

const signer = new SignatureV4({ service: 'kinesis', region: REGION, credentials, sha256: Hash.bind(null, 'sha256') });

// The HTTP/2 headers of a signed Kinesis JSON 1.1 request. Host is signed and sent as
// :authority only, as curl and browsers do.
async function signedHeaders(op, body) {
  const req = await signer.sign({
    method: 'POST', protocol: url.protocol, hostname: url.hostname, port: Number(url.port), path: '/',
    query: {},
    headers: {
      host: url.host, 'content-type': 'application/x-amz-json-1.1',
      'x-amz-target': `Kinesis_20131202.${op}`, 'content-length': String(Buffer.byteLength(body)),
    },
    body,
  });
  const h = { ':method': 'POST', ':path': '/' };
  for (const [k, v] of Object.entries(req.headers)) if (k.toLowerCase() !== 'host') h[k.toLowerCase()] = v;
  return h;
}

// Status and body of a finished stream; rejects when it closes without an answer.
function response(stream) {
  return new Promise((resolve, reject) => {
    let headers = null;
    let settled = false;
    const chunks = [];
    stream.on('response', (h) => { headers = h; });
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => {
      if (settled) return;
      settled = true;
      const raw = Buffer.concat(chunks);
      if (!headers) return reject(new Error('stream ended without response headers'));
      let json = null;
      try { json = raw.length ? JSON.parse(raw) : null; } catch (e) { json = null; }
      resolve({ status: headers[':status'], headers, raw, json });
    });
    stream.on('error', (e) => { if (!settled) { settled = true; reject(e); } });
    stream.on('close', () => {
      if (!settled) { settled = true; reject(new Error(`stream closed without an answer (rst code ${stream.rstCode})`)); }
    });
  });
}

async function call(session, op, payload) {
  const body = JSON.stringify(payload);
  const s = session.request(await signedHeaders(op, body));
  s.end(body);
  const r = await response(s);
  assert.equal(r.status, 200, `${op}: ${r.raw}`);
  return r.json;
}

async function connect(options = {}) {
  const session = http2.connect(endpoint, options);
  session.on('error', () => {});
  await once(session, 'remoteSettings');
  return session;
}

async function waitActive(client, consumerARN) {
  for (let i = 0; i < 100; i++) {
    const d = await client.send(new DescribeStreamConsumerCommand({ ConsumerARN: consumerARN }));
    if (d.ConsumerDescription.ConsumerStatus === 'ACTIVE') return;
    await sleep(100);
  }
  assert.fail('consumer never ACTIVE');
}

// SubscribeToShard from TRIM_HORIZON on a 1-shard stream while a producer writes; the shard
// is split half-way; the reader follows ChildShards to both children. Every acknowledged
// record must arrive exactly once, in sequence order per shard.
async function subscribe(handler) {
  const client = sdkClient(handler);
  const name = 'h2-efo-' + Date.now();
  await client.send(new CreateStreamCommand({ StreamName: name, ShardCount: 1 }));
  const arn = (await client.send(new DescribeStreamSummaryCommand({ StreamName: name })))
    .StreamDescriptionSummary.StreamARN;
  const consumer = (await client.send(new RegisterStreamConsumerCommand({ StreamARN: arn, ConsumerName: 'c' })))
    .Consumer.ConsumerARN;
  await waitActive(client, consumer);

  const acked = new Map(); // shard id -> [{seq, data}]
  const received = new Map(); // shard id -> [{seq, data}]
  const subscribed = new Set();
  const aborts = [];
  let producing = true;
  let heartbeats = 0;
  const deadline = Date.now() + 60000;

  async function read(shardId) {
    subscribed.add(shardId);
    const got = [];
    received.set(shardId, got);
    const abort = new AbortController();
    aborts.push(abort);
    const out = await client.send(new SubscribeToShardCommand({
      ConsumerARN: consumer, ShardId: shardId, StartingPosition: { Type: 'TRIM_HORIZON' },
    }), { abortSignal: abort.signal });
    const children = [];
    try {
      for await (const ev of out.EventStream) {
        const e = ev.SubscribeToShardEvent;
        assert.ok(e, `unexpected event ${JSON.stringify(Object.keys(ev))}`);
        if (e.Records.length === 0) heartbeats++;
        for (const r of e.Records) got.push({ seq: r.SequenceNumber, data: Buffer.from(r.Data).toString() });
        if (e.ChildShards && e.ChildShards.length) {
          for (const c of e.ChildShards) {
            assert.deepEqual(c.ParentShards, [shardId]);
            children.push(c.ShardId);
          }
          break;
        }
        if (done()) {
          for (const a of aborts) a.abort();
          break;
        }
        if (Date.now() > deadline) assert.fail(`${shardId}: timed out with ${got.length} records`);
      }
    } catch (e) {
      if (!done()) throw e;
    }
    await Promise.all(children.filter((c) => !subscribed.has(c)).map(read));
  }

  function done() {
    if (producing) return false;
    for (const [shard, list] of acked) if ((received.get(shard) || []).length < list.length) return false;
    return true;
  }

  async function produce() {
    let n = 0;
    for (let batch = 0; batch < 10; batch++) {
      if (batch === 5) {
        await client.send(new SplitShardCommand({
          StreamName: name, ShardToSplit: 'shardId-000000000000', NewStartingHashKey: (2n ** 127n).toString(),
        }));
      }
      const records = Array.from({ length: 40 }, () => ({ PartitionKey: `k${n}`, Data: Buffer.from(`r${n++}`) }));
      const r = await client.send(new PutRecordsCommand({ StreamName: name, Records: records }));
      assert.equal(r.FailedRecordCount, 0);
      r.Records.forEach((x, i) => {
        if (!acked.has(x.ShardId)) acked.set(x.ShardId, []);
        acked.get(x.ShardId).push({ seq: x.SequenceNumber, data: records[i].Data.toString() });
      });
      await sleep(50);
    }
    producing = false;
  }

  await Promise.all([read('shardId-000000000000'), produce()]);
  for (const a of aborts) a.abort();

  const shards = (await client.send(new ListShardsCommand({ StreamName: name }))).Shards.map((s) => s.ShardId);
  assert.deepEqual(shards.sort(), ['shardId-000000000000', 'shardId-000000000001', 'shardId-000000000002']);
  assert.deepEqual([...subscribed].sort(), shards, 'the reader followed ChildShards to both children');
  let total = 0;
  for (const [shard, list] of acked) {
    list.sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
    assert.deepEqual(received.get(shard), list, `${shard}: every record once, in order`);
    total += list.length;
  }
  assert.equal(total, 400);
  for (const shard of shards) assert.ok(acked.has(shard), `${shard} got records`);
  if (handler !== 'http1') {
    assert.equal(client.config.requestHandler.constructor.name, 'NodeHttp2Handler');
    assert.ok(sessions.length >= 3, `${sessions.length} HTTP/2 sessions`);
  }
  client.destroy();
  const per = shards.map((s) => `${s}: ${(received.get(s) || []).length}`).join(', ');
  console.log(`subscribe (${handler}): 400 records once and in order across the split (${per}); ` +
              `${heartbeats} empty events; ${sessions.length} HTTP/2 sessions ${alpns()}`);
}

function alpns() {
  return JSON.stringify([...new Set(sessions.map((s) => s.alpnProtocol))]);
}

// 100 PutRecord streams on one session, all opened (headers and half of each body sent)
// before any body is finished: the server holds 100 open streams of one connection.
async function concurrent() {
  const session = await connect();
  const max = session.remoteSettings.maxConcurrentStreams;
  assert.ok(max >= 100, `server allows ${max} concurrent streams`);
  const name = 'h2-many-' + Date.now();
  await call(session, 'CreateStream', { StreamName: name, ShardCount: 2 });
  const bodies = Array.from({ length: 100 }, (_, i) => JSON.stringify({
    StreamName: name, PartitionKey: `p${i}`, Data: Buffer.from(`c${i}-` + 'x'.repeat(i * 10)).toString('base64'),
  }));
  const streams = [];
  for (const body of bodies) {
    const s = session.request(await signedHeaders('PutRecord', body));
    s.write(body.slice(0, 20));
    streams.push(s);
  }
  await Promise.all(streams.map((s) => (s.id === undefined ? once(s, 'ready') : null)));
  await sleep(200);
  assert.ok(streams.every((s) => !s.destroyed), 'no stream refused');
  const answers = Promise.all(streams.map(response));
  streams.forEach((s, i) => s.end(bodies[i].slice(20)));
  const got = await answers;
  const ids = new Set(streams.map((s) => s.id));
  assert.equal(ids.size, 100);
  for (const r of got) {
    assert.equal(r.status, 200, String(r.raw));
    assert.match(r.json.SequenceNumber, /^[0-9]+$/);
  }
  // All 100 records are in the stream.
  const data = [];
  for (const shard of ['shardId-000000000000', 'shardId-000000000001']) {
    const it = await call(session, 'GetShardIterator', { StreamName: name, ShardId: shard, ShardIteratorType: 'TRIM_HORIZON' });
    const r = await call(session, 'GetRecords', { ShardIterator: it.ShardIterator });
    data.push(...r.Records.map((x) => Buffer.from(x.Data, 'base64').toString().split('-')[0]));
  }
  assert.deepEqual(data.sort(), Array.from({ length: 100 }, (_, i) => `c${i}`).sort());
  assert.equal(sessions.length, 1);
  session.close();
  console.log(`concurrent: 100 streams on one session answered (server max ${max})`);
}

// A PutRecords body of 4 MiB of data (5.6 MB of JSON) against the server's receive
// windows, then its GetRecords answer against a client window of 16 KiB that this client
// stops reading for a while: flow control in both directions.
async function flow() {
  const session = await connect({ settings: { initialWindowSize: 16384 } });
  const name = 'h2-flow-' + Date.now();
  await call(session, 'CreateStream', { StreamName: name, ShardCount: 1 });
  const records = Array.from({ length: 500 }, (_, i) => ({
    PartitionKey: 'k', Data: crypto.createHash('sha256').update(String(i)).digest().toString('hex').repeat(128).slice(0, 8192),
  }));
  const request = { StreamName: name, Records: records.map((r) => ({ PartitionKey: r.PartitionKey, Data: Buffer.from(r.Data).toString('base64') })) };
  const put = await call(session, 'PutRecords', request);
  assert.equal(put.FailedRecordCount, 0);
  const it = await call(session, 'GetShardIterator', { StreamName: name, ShardId: 'shardId-000000000000', ShardIteratorType: 'TRIM_HORIZON' });
  const payload = JSON.stringify({ ShardIterator: it.ShardIterator, Limit: 10000 });
  const s = session.request(await signedHeaders('GetRecords', payload));
  s.end(payload);
  const [headers] = await once(s, 'response');
  assert.equal(headers[':status'], 200);
  s.pause();
  await sleep(1000); // the server meets a full window and must wait for WINDOW_UPDATE
  const chunks = [];
  for await (const c of s) chunks.push(c);
  const got = JSON.parse(Buffer.concat(chunks));
  assert.equal(got.Records.length, 500);
  got.Records.forEach((r, i) => assert.equal(Buffer.from(r.Data, 'base64').toString(), records[i].Data));
  const bytes = Buffer.concat(chunks).length;
  session.close();
  console.log(`flow: ${JSON.stringify(request).length} byte request and ${bytes} byte response through 16 KiB windows`);
}

// GOAWAY when the caller stops the server (SIGTERM), on a session that is busy:
//   busy:   16 PutRecord calls kept in flight; every stream the GOAWAY covers (id up to
//           its last stream id) must be answered 200, none above it may be served (the
//           client may retry those elsewhere).
//   upload: one PutRecord whose body is half sent when the server stops; it is covered
//           by the GOAWAY, so finishing the body must still get it answered.
// Prints READY once the load runs, then one JSON line: {last, answered: [Data...], ...}.
async function goaway(mode) {
  const session = await connect();
  const name = process.env.GOAWAY_STREAM;
  let goneAt = null;
  let pendingAtGoaway = null;
  const results = [];
  session.once('goaway', () => {
    pendingAtGoaway = results.filter((r) => r.status === undefined && r.error === undefined);
  });
  const gone = once(session, 'goaway').then((a) => { goneAt = Date.now(); return a; });
  const lanes = [];
  let upload = null;
  if (mode === 'upload') {
    const body = JSON.stringify({ StreamName: name, PartitionKey: 'k', Data: Buffer.from('upload').toString('base64') });
    const st = session.request(await signedHeaders('PutRecord', body));
    st.write(body.slice(0, 10));
    if (st.id === undefined) await once(st, 'ready');
    upload = { stream: st, rest: body.slice(10), answer: response(st).then((r) => r, (e) => ({ error: e.message })) };
  } else {
    let n = 0;
    const lane = async () => {
      while (goneAt === null) {
        const data = `g${n++}`;
        const body = JSON.stringify({ StreamName: name, PartitionKey: data, Data: Buffer.from(data).toString('base64') });
        const headers = await signedHeaders('PutRecord', body);
        if (goneAt !== null) break;
        let st;
        try {
          st = session.request(headers);
        } catch (e) {
          break; // the session took the GOAWAY: no new stream
        }
        st.end(body);
        const rec = { data };
        results.push(rec);
        try {
          const r = await response(st);
          rec.status = r.status;
        } catch (e) {
          rec.error = e.message;
        }
        rec.id = st.id;
      }
    };
    for (let i = 0; i < 16; i++) lanes.push(lane());
  }
  await sleep(300);
  console.log('READY');
  const timer = setTimeout(() => { console.error('no GOAWAY within 20 s'); process.exit(1); }, 20000);
  const [code, last] = await gone;
  clearTimeout(timer);
  assert.equal(code, http2.constants.NGHTTP2_NO_ERROR);
  const out = { code, last };
  if (upload) {
    out.upload_stream = upload.stream.id;
    upload.stream.end(upload.rest);
    const r = await upload.answer;
    out.upload = r.error ?? r.status;
    console.log(JSON.stringify(out));
    assert.ok(last >= upload.stream.id, `GOAWAY last stream ${last} covers stream ${upload.stream.id}`);
    assert.equal(r.status, 200, `the upload covered by GOAWAY was not answered: ${r.error ?? r.raw}`);
  } else {
    await Promise.all(lanes);
    const covered = results.filter((r) => r.id !== undefined && r.id <= last);
    out.answered = covered.filter((r) => r.status === 200).map((r) => r.data);
    // Informative only: whether the answers of requests in flight at the SIGTERM reach
    // this client before or after the GOAWAY frame depends on timing.
    out.covered_and_unanswered_when_goaway_came = pendingAtGoaway.filter((r) => r.id <= last).length;
    out.above_and_unanswered_when_goaway_came = pendingAtGoaway.filter((r) => r.id > last).length;
    out.unanswered = covered.filter((r) => r.status !== 200).map((r) => `${r.id}: ${r.error ?? r.status}`);
    out.above = results.filter((r) => r.id !== undefined && r.id > last).map((r) => `${r.id}: ${r.error ?? r.status}`);
    console.log(JSON.stringify(out));
    assert.deepEqual(out.unanswered, [], 'every stream the GOAWAY covers is answered');
    assert.ok(out.above.every((x) => !x.endsWith(': 200')), 'no stream above the last stream id is served');
  }
  session.close();
}

// The ALPN protocol the server selects for each offer, and an HTTP/1.1 request over the
// http/1.1 one.
async function alpn() {
  const offers = [['h2', 'http/1.1'], ['http/1.1'], ['h2']];
  const out = {};
  for (const offer of offers) {
    const sock = tls.connect({ host: url.hostname, port: Number(url.port), ALPNProtocols: offer, rejectUnauthorized: false });
    await once(sock, 'secureConnect');
    out[offer.join(',')] = sock.alpnProtocol;
    if (sock.alpnProtocol === 'http/1.1') {
      sock.write(`GET /health HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`);
      const chunks = [];
      for await (const c of sock) chunks.push(c);
      out[offer.join(',') + ' answer'] = Buffer.concat(chunks).toString().split('\r\n')[0];
    }
    sock.destroy();
  }
  console.log(JSON.stringify(out));
}

// Nothing left to wait for before a command finished (a stream that never ends, a session
// closed under it) is a failure, not Node's silent exit 0.
process.on('beforeExit', () => {
  console.error(`${command}: the event loop emptied before the command finished`);
  process.exit(1);
});

const commands = { subscribe: () => subscribe(arg || 'default'), concurrent, flow, goaway: () => goaway(arg || 'busy'), alpn };
commands[command]().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
