// pg.tensor and the targets of fit/evaluate, on the host only (no browser, no wasm): tensor
// creation as TF.js users write it, and every bad input an Error that names what is wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tensor, targetsOf } from '../js/tensor.js';

test('nested arrays, numbers and typed arrays give their shape and values', async () => {
  const m = tensor([[1, 2], [3, 4]]);
  assert.deepEqual(m.shape, [2, 2]);
  assert.deepEqual(Array.from(await m.data()), [1, 2, 3, 4]);
  assert.deepEqual(await m.array(), [[1, 2], [3, 4]]);
  const cube = tensor([[[1], [2]], [[3], [4]], [[5], [6]]]);
  assert.deepEqual(cube.shape, [3, 2, 1]);
  const s = tensor(7);
  assert.deepEqual(s.shape, []);
  assert.deepEqual(Array.from(await s.data()), [7]);
  assert.deepEqual(tensor(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]).shape, [2, 3]);
  assert.deepEqual(tensor([[1, 2, 3], [4, 5, 6]], [3, 2]).shape, [3, 2], 'a given shape reshapes nested data');
  assert.deepEqual(tensor([new Float32Array([1, 2]), new Float32Array([3, 4])]).shape, [2, 2], 'rows may be typed arrays');
  assert.equal(tensor(new Int32Array([1, 2])).dtype, 'int32');
  assert.equal(tensor([1, 2]).dtype, 'float32');
  // the values are copied: changing the source afterwards changes nothing
  const src = new Float32Array([1, 2, 3]);
  const copy = tensor(src);
  src[0] = 9;
  assert.deepEqual(Array.from(await copy.data()), [1, 2, 3]);
  // other typed arrays convert to float32 values
  assert.deepEqual(Array.from(await tensor(new Float64Array([0.1, -2])).data()), [Math.fround(0.1), -2]);
  assert.deepEqual(Array.from(await tensor(new Uint8Array([0, 255])).data()), [0, 255]);
});

test('ragged arrays, wrong lengths, non-numbers and empty or negative shapes are errors', () => {
  const bad = [
    [() => tensor([[1, 2], [3]]), /element x\[1\] has length 1, expected 2 \(ragged/],
    [() => tensor([[1, 2], 3]), /element x\[1\] is a number.*ragged/],
    [() => tensor([1, [2, 3]]), /element x\[1\] is an array.*ragged/],
    [() => tensor([[1, 'a']]), /element x\[0\]\[1\] is string, not a number/],
    [() => tensor([1, null]), /element x\[1\] is null/],
    [() => tensor([1, 2, 3, 4, 5], [2, 3]), /5 values do not fit shape \[2, 3\]/],
    [() => tensor([1, 2], [2, -1]), /shape must be an array of positive integers/],
    [() => tensor([], [0]), /positive integers/],
    [() => tensor([]), /zero size/],
    [() => tensor('12'), /must be a number, a typed array/],
    [() => tensor(null), /got null/],
    [() => tensor([1, NaN], [2], { check: true }), /value 1 is NaN \(check: true/],
    [() => tensor([[1, Infinity]], { check: true }), /value 1 is Infinity/],
  ];
  for (const [f, re] of bad) assert.throws(f, re);
  // without check, NaN is data like any other; the next valid call works
  assert.ok(Number.isNaN(tensor([1, NaN])._host[1]));
  assert.deepEqual(tensor([[1, 2]]).shape, [1, 2]);
});

test('targets are passed on as given, with their shape', async () => {
  const cls = await targetsOf(tensor(new Int32Array([0, 2, 1])), 3, 'fit');
  assert.deepEqual(cls.shape, [3]);
  assert.deepEqual(Array.from(cls.values), [0, 2, 1]);
  // float targets are not turned into class indices (the old argmax)
  const reg = await targetsOf(tensor([[0.2, 0.7], [0.9, 0.1]]), 2, 'fit');
  assert.deepEqual(reg.shape, [2, 2]);
  assert.deepEqual(Array.from(reg.values), [0.2, 0.7, 0.9, 0.1].map(Math.fround));
  await assert.rejects(targetsOf(tensor([1, 2]), 3, 'fit'), /targets of shape \[2\] do not match 3 samples/);
  await assert.rejects(targetsOf([1, 2], 2, 'evaluate'), /evaluate: targets must be a pg.tensor/);
});
