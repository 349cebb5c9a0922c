// Minimal safetensors reading and writing (F32 only), enough to hand pixelgrad the same
// initial weights as TF.js: read the names and shapes a model saves, write them back filled.
// Format: u64 little-endian header length, JSON header {name: {dtype, shape, data_offsets}},
// then the raw little-endian data.

/** Names and shapes in a safetensors buffer, in file order: [{ name, shape }]. */
export function readHeader(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const n = Number(new DataView(u8.buffer, u8.byteOffset, 8).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + n)));
  return Object.entries(header)
    .filter(([k]) => k !== '__metadata__')
    .map(([name, v]) => ({ name, shape: v.shape, dtype: v.dtype }));
}

/** The metadata map of a safetensors buffer ({} when absent). */
export function readMetadata(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const n = Number(new DataView(u8.buffer, u8.byteOffset, 8).getBigUint64(0, true));
  return JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + n))).__metadata__ ?? {};
}

/** Serialises [{ name, shape, data: Float32Array }] with optional string metadata. */
export function write(tensors, metadata) {
  const header = {};
  let off = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [off, off + t.data.length * 4] };
    off += t.data.length * 4;
  }
  if (metadata && Object.keys(metadata).length) header.__metadata__ = metadata;
  let json = JSON.stringify(header);
  // Pad so the data starts 8-byte aligned, as the reference writer does.
  json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
  const hb = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + hb.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(hb.length), true);
  out.set(hb, 8);
  let p = 8 + hb.length;
  for (const t of tensors) {
    out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.length * 4), p);
    p += t.data.length * 4;
  }
  return out;
}
