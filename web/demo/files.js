// Reading MNIST IDX files the user picked (File API), gzip-compressed or raw. Gzip is undone
// with the browser's own DecompressionStream, so nothing is fetched.

/** The file's bytes, gunzipped when they start with the gzip magic (1f 8b). */
export async function readMaybeGzip(file) {
  const raw = new Uint8Array(await file.arrayBuffer());
  if (raw.length < 2 || raw[0] !== 0x1f || raw[1] !== 0x8b) return raw.buffer;
  if (typeof DecompressionStream === 'undefined') throw new Error(`${file.name}: this browser cannot gunzip (no DecompressionStream); pick the uncompressed file`);
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream('gzip'));
  return await new Response(stream).arrayBuffer();
}

/** IDX kind from the magic number: 'images' (0x00000803), 'labels' (0x00000801), or null. */
export function idxKind(buf) {
  const b = new Uint8Array(buf, 0, Math.min(4, buf.byteLength));
  if (b.length < 4 || b[0] !== 0 || b[1] !== 0 || b[2] !== 0x08) return null;
  return b[3] === 3 ? 'images' : b[3] === 1 ? 'labels' : null;
}

/**
 * Sorts picked files into `{ trainImages, trainLabels, testImages?, testLabels? }` (ArrayBuffers)
 * by IDX magic and by name (`t10k` or `test` = test set). Throws a readable error when the
 * training pair is incomplete or a file is not IDX.
 */
export async function readMnistFiles(files) {
  const out = {};
  for (const f of files) {
    const buf = await readMaybeGzip(f);
    const kind = idxKind(buf);
    if (!kind) throw new Error(`${f.name} is not an MNIST IDX images or labels file`);
    const set = /t10k|test/i.test(f.name) ? 'test' : 'train';
    const key = set + (kind === 'images' ? 'Images' : 'Labels');
    if (out[key]) throw new Error(`two ${set} ${kind} files picked (${f.name})`);
    out[key] = buf;
  }
  if (!out.trainImages || !out.trainLabels) {
    // Only a test pair picked: train on it (the worker splits off a validation part).
    if (out.testImages && out.testLabels && !out.trainImages && !out.trainLabels) {
      return { trainImages: out.testImages, trainLabels: out.testLabels };
    }
    throw new Error('pick an images file and a labels file (e.g. train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz; the t10k pair is optional)');
  }
  if (!!out.testImages !== !!out.testLabels) throw new Error('the test set needs both t10k images and labels');
  return out;
}
