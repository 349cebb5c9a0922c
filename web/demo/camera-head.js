// The taught head, defined once for the page (live predictions) and the worker (training): a
// dense layer on the frozen ONNX backbone when one is loaded, else on the frame itself.
/** Layers for input `shape` ([h, w, 3]) and `classes` outputs; `onnx`: a loaded OnnxModel or null. */
export function headLayers(pg, onnx, shape, classes) {
  return onnx
    ? [pg.layers.onnx({ model: onnx, inputShape: shape, trainable: false }), pg.layers.flatten(), pg.layers.dense({ units: classes })]
    : [pg.layers.flatten({ inputShape: shape }), pg.layers.dense({ units: classes })];
}

/**
 * What the worker trains: with a backbone, only the dense layer, on the backbone's features
 * (`[features]`, computed once per sample when it is recorded); without one, the page's head
 * itself on the frames.
 */
export function trainedLayers(pg, onnx, shape, features, classes) {
  return onnx ? [pg.layers.dense({ units: classes, inputShape: [features] })] : headLayers(pg, null, shape, classes);
}

/**
 * The trained weights under the page's names (`headLayers`): the worker's head is the page
 * head's last layer (its dense layer) with a backbone, the whole head without; its weights map
 * in order onto the page head's last ones.
 */
export function pageWeights(trained, pageInfo) {
  const entries = Object.entries(trained);
  const names = pageInfo.slice(pageInfo.length - entries.length).map((w) => w.name);
  return Object.fromEntries(entries.map(([, v], k) => [names[k], v]));
}
