// The drawing pad: pointer events (mouse, pen and touch alike) draw white strokes on black, and
// `sample()` turns the drawing into the data set's input: 8x8 like the digits set (the digit's
// box scaled to fill the grid, values = covered fraction of each cell, as in the UCI digits'
// 4x4 block counts / 16) or 28x28 like MNIST (fit into 20x20, centred on its centre of mass).

/** Attaches drawing to `canvas`; `onChange(final)` fires while drawing and when a stroke ends. */
export function createPad(canvas, onChange) {
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  let drawing = false;
  let last = null;
  let dirty = false;

  function clear() {
    ctx.fillStyle = '#000';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    dirty = false;
  }

  function pos(e) {
    const r = canvas.getBoundingClientRect();
    return [((e.clientX - r.left) * canvas.width) / r.width, ((e.clientY - r.top) * canvas.height) / r.height];
  }

  function line(a, b) {
    ctx.strokeStyle = '#fff';
    ctx.fillStyle = '#fff';
    ctx.lineWidth = canvas.width * 0.075;
    ctx.lineCap = 'round';
    ctx.lineJoin = 'round';
    ctx.beginPath();
    ctx.moveTo(a[0], a[1]);
    ctx.lineTo(b[0], b[1]);
    ctx.stroke();
    dirty = true;
  }

  canvas.addEventListener('pointerdown', (e) => {
    e.preventDefault();
    canvas.setPointerCapture?.(e.pointerId);
    drawing = true;
    last = pos(e);
    line(last, last);
    onChange(false);
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!drawing) return;
    e.preventDefault();
    const p = pos(e);
    line(last, p);
    last = p;
    onChange(false);
  });
  const end = (e) => {
    if (!drawing) return;
    drawing = false;
    canvas.releasePointerCapture?.(e.pointerId);
    onChange(true);
  };
  canvas.addEventListener('pointerup', end);
  canvas.addEventListener('pointercancel', end);

  clear();
  return {
    clear,
    isEmpty: () => !dirty,
    /** The drawing as data input of `imageShape` ([h, w, 1]), values in [0, 1]. */
    sample: (imageShape) => downsample(ctx.getImageData(0, 0, canvas.width, canvas.height), imageShape[0]),
  };
}

/** Ink bounding box of an RGBA image (red channel > 0), or null when blank. */
function inkBox(img) {
  const { width: w, height: h, data } = img;
  let x0 = w, y0 = h, x1 = -1, y1 = -1;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      if (data[(y * w + x) * 4] > 0) {
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
  }
  return x1 < 0 ? null : { x0, y0, w: x1 - x0 + 1, h: y1 - y0 + 1 };
}

/**
 * Area-averages the ink box of `img` into an `out` x `out` grid. 8x8 (digits): the box's longer
 * side fills the grid. Otherwise (MNIST): it fills 20/28 of it and the result is shifted so its
 * centre of mass is in the middle, as in MNIST's own preprocessing.
 */
export function downsample(img, out) {
  const res = new Float32Array(out * out);
  const box = inkBox(img);
  if (!box) return res;
  const mnist = out > 8;
  const target = mnist ? Math.round((out * 20) / 28) : out;
  const s = target / Math.max(box.w, box.h); // output cells per source pixel (< 1)
  const ox = (out - box.w * s) / 2;
  const oy = (out - box.h * s) / 2;
  const { width: w, data } = img;
  for (let y = box.y0; y < box.y0 + box.h; y++) {
    const fy = Math.min(out - 1, Math.floor(oy + (y - box.y0 + 0.5) * s));
    for (let x = box.x0; x < box.x0 + box.w; x++) {
      const a = data[(y * w + x) * 4];
      if (a === 0) continue;
      const fx = Math.min(out - 1, Math.floor(ox + (x - box.x0 + 0.5) * s));
      res[fy * out + fx] += a;
    }
  }
  // Each cell covers 1/s^2 source pixels; full coverage at 255 maps to 1.
  const norm = (s * s) / 255;
  for (let i = 0; i < res.length; i++) res[i] = Math.min(1, res[i] * norm);
  return mnist ? centreOfMass(res, out) : res;
}

/** Shifts an image by whole pixels so its centre of mass lands on the centre. */
function centreOfMass(img, n) {
  let m = 0, cx = 0, cy = 0;
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      const v = img[y * n + x];
      m += v;
      cx += v * x;
      cy += v * y;
    }
  }
  if (m === 0) return img;
  const dx = Math.round((n - 1) / 2 - cx / m);
  const dy = Math.round((n - 1) / 2 - cy / m);
  const out = new Float32Array(n * n);
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      const sx = x - dx, sy = y - dy;
      if (sx >= 0 && sx < n && sy >= 0 && sy < n) out[y * n + x] = img[sy * n + sx];
    }
  }
  return out;
}

/** Draws `pixels` (h x w, values in [0, 1]) scaled up without smoothing onto `canvas`. */
export function drawPreview(canvas, pixels, h, w) {
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(w, h);
  for (let i = 0; i < h * w; i++) {
    const v = Math.round(Math.max(0, Math.min(1, pixels[i])) * 255);
    img.data.set([v, v, v, 255], i * 4);
  }
  const tmp = new OffscreenCanvas(w, h);
  tmp.getContext('2d').putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(tmp, 0, 0, canvas.width, canvas.height);
}
