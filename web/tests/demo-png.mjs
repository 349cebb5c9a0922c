// A minimal PNG decoder for the screenshots Playwright takes (8-bit RGB/RGBA, not interlaced),
// so tests can check that a canvas shows something without a browser-side readback.

import zlib from 'node:zlib';

/** Decodes `buf` to `{ width, height, channels, pixels }` (pixels: Uint8Array, row-major). */
export function decodePng(buf) {
  const sig = [137, 80, 78, 71, 13, 10, 26, 10];
  if (!sig.every((b, i) => buf[i] === b)) throw new Error('not a PNG');
  let off = 8;
  let width = 0, height = 0, channels = 0;
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('ascii', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8], color = data[9], interlace = data[12];
      if (depth !== 8 || interlace !== 0) throw new Error(`PNG depth ${depth} / interlace ${interlace} unsupported`);
      channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[color];
      if (!channels) throw new Error(`PNG colour type ${color} unsupported`);
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      break;
    }
    off += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      let v = line[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        // Paeth predictor: whichever neighbour is closest to a + b - c.
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (filter !== 0) throw new Error(`PNG filter ${filter} unknown`);
      pixels[y * stride + x] = v & 255;
    }
  }
  return { width, height, channels, pixels };
}

/** Variance of the grey level (mean of the colour channels) over all pixels of a PNG. */
export function pngVariance(buf) {
  const { width, height, channels, pixels } = decodePng(buf);
  const colours = channels >= 3 ? 3 : 1;
  let sum = 0, sum2 = 0;
  const n = width * height;
  for (let i = 0; i < n; i++) {
    let g = 0;
    for (let k = 0; k < colours; k++) g += pixels[i * channels + k];
    g /= colours;
    sum += g;
    sum2 += g * g;
  }
  const mean = sum / n;
  return sum2 / n - mean * mean;
}
