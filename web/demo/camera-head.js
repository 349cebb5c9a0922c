// The taught head, defined once for the page (live predictions) and the worker (training): a
// dense layer on the frozen ONNX backbone when one is loaded, else on the frame itself.
/** Layers for input `shape` ([h, w, 3]) and `classes` outputs; `onnx`: a loaded OnnxModel or null. */
export function headLayers(pg, onnx, shape, classes) {
  return onnx
    ? [pg.layers.onnx({ model: onnx, inputShape: shape, trainable: false }), pg.layers.flatten(), pg.layers.dense({ units: classes })]
    : [pg.layers.flatten({ inputShape: shape }), pg.layers.dense({ units: classes })];
}
