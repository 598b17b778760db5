// A global fetch for test readers (icebird, the table reader) that also serves
//   file:///path                      from the local filesystem (Range and HEAD too);
//   s3://bucket/key, s3a://bucket/key  and icebird's rewrite of them,
//   https://bucket.s3.amazonaws.com/key
//                                     as SigV4-signed path-style GETs against a local S3
//                                     endpoint (radosgw, moto).
// Object keys are taken verbatim from the location (no percent-decoding), as S3 stores
// them; they are URI-encoded for the request line and the signature (SigV4 rules).
// Everything else goes to Node's own fetch.
import { createHash, createHmac } from 'node:crypto';
import { promises as fs } from 'node:fs';

const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const hmac = (key, data) => createHmac('sha256', key).update(data).digest();
// RFC 3986 unreserved characters stay; everything else is %XX (upper-case hex), as SigV4 wants.
const encodeSegment = (s) => Array.from(Buffer.from(s, 'utf8'))
  .map((b) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b)
    : '%' + b.toString(16).toUpperCase().padStart(2, '0'))).join('');

// Signs a request (method, path-style URL without query) with SigV4 for service s3.
export function signS3({ method, url, region = 'us-east-1', accessKey, secretKey, headers = {}, body = '' }) {
  const u = new URL(url);
  const now = new Date();
  const amzDate = now.toISOString().replace(/[:-]/g, '').replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const payloadHash = sha256(body);
  const all = { ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v).trim()])),
    host: u.host, 'x-amz-date': amzDate, 'x-amz-content-sha256': payloadHash };
  const names = Object.keys(all).sort();
  const canonicalHeaders = names.map((n) => `${n}:${all[n]}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [method, u.pathname, '', canonicalHeaders, signedHeaders, payloadHash].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const kDate = hmac('AWS4' + secretKey, day);
  const key = hmac(hmac(hmac(kDate, region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  delete all.host;
  return { ...all, authorization: `AWS4-HMAC-SHA256 Credential=${accessKey}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}` };
}

// Splits an s3 location (or icebird's https rewrite of it) into [bucket, key], or null.
export function s3Parts(url) {
  const m = /^s3a?:\/\/([^/]+)\/(.*)$/.exec(url) ?? /^https:\/\/([^./]+)\.s3\.amazonaws\.com\/(.*)$/.exec(url);
  return m ? [m[1], m[2]] : null;
}

let installed = null;

// Installs the shim (once). s3: {endpoint, accessKey, secretKey, region} or null.
export function installFetchShim({ s3 = null } = {}) {
  if (installed) {
    installed.s3 = s3 ?? installed.s3;
    return installed;
  }
  const realFetch = globalThis.fetch;
  installed = { s3, requests: 0, realFetch };
  globalThis.fetch = async (input, init = {}) => {
    const url = String(input instanceof Request ? input.url : input);
    const method = (init.method ?? 'GET').toUpperCase();
    const range = new Headers(init.headers).get('Range');
    if (url.startsWith('file://')) {
      installed.requests++;
      const path = decodeURIComponent(url.slice('file://'.length).replace(/^localhost/, ''));
      let buf;
      try {
        buf = await fs.readFile(url.slice('file://'.length)).catch(() => fs.readFile(path));
      } catch {
        return new Response('not found', { status: 404, statusText: 'Not Found' });
      }
      if (method === 'HEAD') return new Response(null, { status: 200, headers: { 'Content-Length': String(buf.length) } });
      if (range) {
        const m = /bytes=(\d+)-(\d*)/.exec(range);
        const start = Number(m[1]);
        const end = m[2] === '' ? buf.length : Number(m[2]) + 1;
        return new Response(buf.subarray(start, end), { status: 206 });
      }
      return new Response(buf, { status: 200 });
    }
    const parts = s3Parts(url);
    if (parts) {
      if (!installed.s3) throw new Error(`fetch shim: ${url} needs an S3 endpoint`);
      installed.requests++;
      const [bucket, key] = parts;
      const { endpoint, accessKey, secretKey, region } = installed.s3;
      const target = `${endpoint.replace(/\/$/, '')}/${encodeSegment(bucket)}/${key.split('/').map(encodeSegment).join('/')}`;
      const extra = range ? { range } : {};
      const headers = signS3({ method, url: target, region, accessKey, secretKey, headers: extra });
      return realFetch(target, { method, headers });
    }
    return realFetch(input, init);
  };
  return installed;
}

// Writes bytes to a file:// or s3:// location (tests' external writers).
export async function putObject(url, bytes) {
  if (url.startsWith('file://')) {
    const path = url.slice('file://'.length);
    await fs.mkdir(path.slice(0, path.lastIndexOf('/')), { recursive: true });
    await fs.writeFile(path, bytes);
    return;
  }
  const parts = s3Parts(url);
  if (!parts || !installed?.s3) throw new Error(`putObject: cannot write ${url}`);
  const [bucket, key] = parts;
  const { endpoint, accessKey, secretKey, region } = installed.s3;
  const target = `${endpoint.replace(/\/$/, '')}/${encodeSegment(bucket)}/${key.split('/').map(encodeSegment).join('/')}`;
  const headers = signS3({ method: 'PUT', url: target, region, accessKey, secretKey, body: bytes });
  const r = await (installed.realFetch)(target, { method: 'PUT', headers, body: bytes });
  if (!r.ok) throw new Error(`PUT ${url}: ${r.status} ${await r.text()}`);
}
