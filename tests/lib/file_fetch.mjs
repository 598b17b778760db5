// Teaches the global fetch() to answer file:// URLs, so that readers that only know
// fetch (icebird, hyparquet's async buffers) can open tables in a local folder. Import it
// before the reader. GET (with an optional single "bytes=a-b" range) and HEAD only.
import { open, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const networkFetch = globalThis.fetch;

async function fileResponse(url, init) {
  const path = fileURLToPath(url);
  let size;
  try {
    size = (await stat(path)).size;
  } catch {
    return new Response(`no such file: ${url}`, { status: 404, statusText: 'Not Found' });
  }
  const method = (init.method ?? 'GET').toUpperCase();
  if (method === 'HEAD') return new Response(null, { status: 200, headers: { 'content-length': String(size) } });
  let start = 0, end = size;  // [start, end)
  const range = new Headers(init.headers ?? {}).get('range');
  const m = range && /^bytes=(\d*)-(\d*)$/.exec(range.trim());
  if (m) {
    if (m[1] === '') {  // suffix range: the last N bytes
      start = Math.max(0, size - Number(m[2]));
    } else {
      start = Number(m[1]);
      if (m[2] !== '') end = Math.min(size, Number(m[2]) + 1);
    }
  }
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(Math.max(0, end - start));
    await fh.read(buf, 0, buf.length, start);
    return new Response(buf, { status: m ? 206 : 200, headers: { 'content-length': String(buf.length) } });
  } finally {
    await fh.close();
  }
}

globalThis.fetch = (input, init = {}) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  return url.startsWith('file:') ? fileResponse(url, init) : networkFetch(input, init);
};
