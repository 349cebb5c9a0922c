// Small pure helpers shared by the page and the worker (no DOM, no pixelgrad).

/**
 * Returns `v` unchanged when it already is a probability vector (non-negative, sums to ~1),
 * else its softmax: classification models here output logits, and the demo shows probabilities.
 */
export function softmaxIfLogits(v) {
  let sum = 0;
  let min = Infinity;
  for (const a of v) {
    sum += a;
    min = Math.min(min, a);
  }
  if (min >= 0 && Math.abs(sum - 1) < 1e-3) return Float32Array.from(v);
  let max = -Infinity;
  for (const a of v) max = Math.max(max, a);
  const out = new Float32Array(v.length);
  let z = 0;
  for (let i = 0; i < v.length; i++) {
    out[i] = Math.exp(v[i] - max);
    z += out[i];
  }
  for (let i = 0; i < v.length; i++) out[i] /= z;
  return out;
}

/** Index of the largest element (first one on ties); -1 for an empty array. */
export function argmax(v) {
  let best = -1;
  let bestV = -Infinity;
  for (let i = 0; i < v.length; i++) {
    if (v[i] > bestV) {
      bestV = v[i];
      best = i;
    }
  }
  return best;
}

/** A small seeded PRNG (mulberry32), so replayed samples are reproducible. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `k` distinct indices in `0..n` (all of them when `k >= n`), drawn with `seed`. */
export function replayIndices(n, k, seed) {
  const r = rng(seed);
  const picked = new Set();
  const want = Math.min(k, n);
  while (picked.size < want) picked.add(Math.floor(r() * n));
  return [...picked];
}
