// Record payloads: base64 -> bytes, shown as pretty JSON, text or a hex dump; KPL
// aggregates (magic F3 89 9A C2, a protobuf AggregatedRecord, 16 bytes of MD5) split into
// their user records, as the channels de-aggregate them.

export function fromBase64(b64) {
  const bin = atob(b64 || '');
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
export function asText(bytes) {
  try { return utf8.decode(bytes); } catch { return null; }
}

export function asJson(bytes) {
  const t = asText(bytes);
  if (t === null) return null;
  try { return JSON.stringify(JSON.parse(t), null, 2); } catch { return null; }
}

export function hexDump(bytes, max = 4096) {
  const lines = [];
  const n = Math.min(bytes.length, max);
  for (let off = 0; off < n; off += 16) {
    const row = bytes.slice(off, Math.min(off + 16, n));
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${off.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  if (bytes.length > max) lines.push(`… ${bytes.length - max} more bytes`);
  return lines.join('\n');
}

// The best default view: JSON when it parses, text when it is UTF-8, else hex.
export function defaultView(bytes) {
  if (asJson(bytes) !== null) return 'json';
  if (asText(bytes) !== null) return 'text';
  return 'hex';
}

export function render(bytes, view) {
  if (view === 'json') return asJson(bytes) ?? '(not JSON)';
  if (view === 'text') return asText(bytes) ?? '(not UTF-8 text)';
  return hexDump(bytes);
}

// ---- KPL aggregates (protobuf wire format: varint keys, length-delimited fields).
const KPL_MAGIC = [0xf3, 0x89, 0x9a, 0xc2];

export function isAggregate(bytes) {
  return bytes.length > 20 && KPL_MAGIC.every((b, i) => bytes[i] === b);
}

function fields(buf) {
  const out = [];
  let i = 0;
  const varint = () => {
    let v = 0, mul = 1, b;
    do {
      if (i >= buf.length) throw new Error('truncated varint');
      b = buf[i++];
      v += (b & 0x7f) * mul;
      mul *= 128;
    } while (b & 0x80);
    return v;
  };
  while (i < buf.length) {
    const key = varint();
    const no = Math.floor(key / 8), wire = key & 7;
    if (wire === 0) out.push([no, varint()]);
    else if (wire === 2) {
      const len = varint();
      if (i + len > buf.length) throw new Error('truncated field');
      out.push([no, buf.subarray(i, i + len)]);
      i += len;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`wire type ${wire}`);
  }
  return out;
}

// [{partitionKey, data}] of an aggregate, or null when it does not decode.
export function deaggregate(bytes) {
  if (!isAggregate(bytes)) return null;
  try {
    const body = bytes.subarray(4, bytes.length - 16);
    const keys = [];
    const records = [];
    const dec = new TextDecoder();
    for (const [no, v] of fields(body)) {
      if (no === 1) keys.push(dec.decode(v));
      else if (no === 3) {
        const r = { keyIndex: 0, data: new Uint8Array() };
        for (const [rn, rv] of fields(v)) {
          if (rn === 1) r.keyIndex = rv;
          else if (rn === 3) r.data = rv;
        }
        records.push(r);
      }
    }
    // The key table may come after the records: resolve indexes at the end.
    return records.map((r) => ({ partitionKey: keys[r.keyIndex] ?? `#${r.keyIndex}`, data: r.data }));
  } catch {
    return null;
  }
}
