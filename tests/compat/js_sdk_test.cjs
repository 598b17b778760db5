// The AWS SDK for JavaScript v3 (@aws-sdk/client-kinesis) against a real server, with the
// Node HTTP/1.1 handler (`http1`, the default here), with no handler given (`default`: the
// SDK's NodeHttp2Handler, h2c with prior knowledge to http://, ALPN h2 to https://; the
// Kinesis client configures it with disableConcurrentStreams, one session per request) or
// with `new NodeHttp2Handler()` (`shared`: concurrent streams on one pooled session).
// Usage:
//   NODE_PATH=.cache/npm/node_modules node js_sdk_test.cjs http://127.0.0.1:PORT [http1|default|shared]
// Credentials: TEST_AK / TEST_SK (default test/test).
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const {
  KinesisClient, CreateStreamCommand, DescribeStreamCommand, PutRecordCommand,
  PutRecordsCommand, GetShardIteratorCommand, GetRecordsCommand, ListShardsCommand,
  DeleteStreamCommand, DescribeStreamSummaryCommand, ListStreamsCommand,
  AddTagsToStreamCommand, ListTagsForStreamCommand,
} = require('@aws-sdk/client-kinesis');
const { NodeHttpHandler, NodeHttp2Handler } = require('@smithy/node-http-handler');

const endpoint = process.argv[2];
const handler = process.argv[3] || 'http1';
const handlers = { http1: () => new NodeHttpHandler(), shared: () => new NodeHttp2Handler(), default: null };
assert.ok(handler in handlers, `unknown handler ${handler}`);

// Every HTTP/2 session this process opens (tests/lib/http2_sessions.cjs).
const { sessions } = require('../lib/http2_sessions.cjs');

const client = new KinesisClient({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: process.env.TEST_AK || 'test', secretAccessKey: process.env.TEST_SK || 'test' },
  ...(handlers[handler] ? { requestHandler: handlers[handler]() } : {}), // `default`: no key at all
  maxAttempts: 1,
});

function md5Hash(key) {
  return BigInt('0x' + crypto.createHash('md5').update(key, 'utf8').digest('hex'));
}

async function expectError(name, promise) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.name, name, `expected ${name}, got ${e.name}: ${e.message}`);
    return e;
  }
  assert.fail(`expected ${name}`);
}

async function main() {
  const name = 'js-' + Date.now();
  await client.send(new CreateStreamCommand({ StreamName: name, ShardCount: 3 }));
  const d = await client.send(new DescribeStreamCommand({ StreamName: name }));
  assert.equal(d.StreamDescription.StreamStatus, 'ACTIVE');
  assert.equal(d.StreamDescription.Shards.length, 3);
  assert.ok(d.StreamDescription.StreamCreationTimestamp instanceof Date);
  const shards = d.StreamDescription.Shards;

  const sent = [];
  for (let i = 0; i < 20; i++) {
    const key = `key-${i}`;
    const data = crypto.randomBytes(50 + i);
    const r = await client.send(new PutRecordCommand({ StreamName: name, PartitionKey: key, Data: data }));
    const h = md5Hash(key);
    const want = shards.find((s) => BigInt(s.HashKeyRange.StartingHashKey) <= h && h <= BigInt(s.HashKeyRange.EndingHashKey));
    assert.equal(r.ShardId, want.ShardId, key);
    sent.push({ shard: r.ShardId, seq: r.SequenceNumber, data });
  }
  const batch = await client.send(new PutRecordsCommand({
    StreamName: name,
    Records: Array.from({ length: 100 }, (_, i) => ({ PartitionKey: `b${i}`, Data: Buffer.from(`batch-${i}`) })),
  }));
  assert.equal(batch.FailedRecordCount, 0);
  assert.equal(batch.Records.length, 100);

  let total = 0;
  for (const s of shards) {
    const it = await client.send(new GetShardIteratorCommand({ StreamName: name, ShardId: s.ShardId, ShardIteratorType: 'TRIM_HORIZON' }));
    const got = await client.send(new GetRecordsCommand({ ShardIterator: it.ShardIterator }));
    total += got.Records.length;
    assert.equal(got.MillisBehindLatest, 0);
    const mine = sent.filter((x) => x.shard === s.ShardId);
    const singles = got.Records.filter((r) => r.PartitionKey.startsWith('key-'));
    assert.deepEqual(singles.map((r) => r.SequenceNumber), mine.map((x) => x.seq));
    singles.forEach((r, i) => assert.deepEqual(Buffer.from(r.Data), mine[i].data));
    for (const r of got.Records) assert.ok(r.ApproximateArrivalTimestamp instanceof Date);
  }
  assert.equal(total, 120);

  // AT_TIMESTAMP sends a fractional epoch-seconds timestamp from this SDK.
  const at = await client.send(new GetShardIteratorCommand({ StreamName: name, ShardId: shards[0].ShardId, ShardIteratorType: 'AT_TIMESTAMP', Timestamp: new Date(Date.now() - 60000) }));
  assert.ok(at.ShardIterator);

  const ls = await client.send(new ListShardsCommand({ StreamName: name, MaxResults: 2 }));
  assert.equal(ls.Shards.length, 2);
  const ls2 = await client.send(new ListShardsCommand({ NextToken: ls.NextToken }));
  assert.equal(ls2.Shards.length, 1);

  await client.send(new AddTagsToStreamCommand({ StreamName: name, Tags: { owner: 'js' } }));
  const tags = await client.send(new ListTagsForStreamCommand({ StreamName: name }));
  assert.deepEqual(tags.Tags, [{ Key: 'owner', Value: 'js' }]);
  const sum = await client.send(new DescribeStreamSummaryCommand({ StreamName: name }));
  assert.equal(sum.StreamDescriptionSummary.OpenShardCount, 3);
  const list = await client.send(new ListStreamsCommand({}));
  assert.ok(list.StreamNames.includes(name));

  const e = await expectError('ResourceNotFoundException', client.send(new DescribeStreamCommand({ StreamName: 'missing-js' })));
  assert.equal(e.$metadata.httpStatusCode, 400);
  assert.ok(e.$metadata.requestId);
  await expectError('ResourceInUseException', client.send(new CreateStreamCommand({ StreamName: name, ShardCount: 1 })));
  await expectError('InvalidArgumentException', client.send(new GetRecordsCommand({ ShardIterator: 'bogus' })));
  await expectError('ValidationException', client.send(new PutRecordCommand({ StreamName: name, PartitionKey: 'x'.repeat(257), Data: Buffer.from('x') })));

  await client.send(new DeleteStreamCommand({ StreamName: name }));
  await expectError('ResourceNotFoundException', client.send(new DescribeStreamCommand({ StreamName: name })));
  if (handler !== 'http1') {
    assert.equal(client.config.requestHandler.constructor.name, 'NodeHttp2Handler');
    assert.ok(sessions.length >= 1, 'the SDK opened an HTTP/2 session');
  } else {
    assert.equal(sessions.length, 0);
  }
  const protocols = [...new Set(sessions.map((s) => s.alpnProtocol))];
  client.destroy();
  console.log(`js sdk (${handler} handler): all checks passed; ${sessions.length} HTTP/2 sessions ` +
              `${JSON.stringify(protocols)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
