// A live loss/accuracy chart drawn with the 2D canvas API: loss on the left axis (0..max seen),
// accuracy on the right (0..1), training step along the bottom. Per epoch it draws the training
// and validation loss and accuracy (lines with a dot per epoch, validation dashed), as Keras and
// TF.js users expect; the per-batch reads are drawn faintly behind them. The point counts and
// the latest values are mirrored into data-* attributes so tests (and curious users) can read
// them.

const LOSS = '#2563eb';
const ACC = '#ea580c';

export class LiveChart {
  constructor(canvas) {
    this.canvas = canvas;
    this.points = []; // { step, loss, accuracy }
    this.epochs = []; // { step, loss, accuracy, valLoss, valAccuracy } per epoch (null: absent)
    this.pending = false;
    this.resize();
    new ResizeObserver(() => this.resize()).observe(canvas);
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const r = this.canvas.getBoundingClientRect();
    const w = Math.max(100, Math.round(r.width * dpr));
    const h = Math.max(80, Math.round(r.height * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
    this.draw();
  }

  clear() {
    this.points = [];
    this.epochs = [];
    this.schedule();
  }

  add(step, loss, accuracy) {
    this.points.push({ step, loss, accuracy: Number.isFinite(accuracy) ? accuracy : null });
    this.schedule();
  }

  /** One epoch's logs from `fit`'s onEpochEnd: `loss`, `accuracy`, `valLoss`, `valAccuracy`. */
  addEpoch(step, logs) {
    const num = (v) => (Number.isFinite(v) ? v : null);
    this.epochs.push({
      step,
      loss: num(logs.loss),
      accuracy: num(logs.accuracy),
      valLoss: num(logs.valLoss),
      valAccuracy: num(logs.valAccuracy),
    });
    this.schedule();
  }

  /** Batches redraws to one per animation frame however fast messages arrive. */
  schedule() {
    const c = this.canvas;
    c.dataset.points = String(this.points.length);
    const last = this.points[this.points.length - 1];
    c.dataset.lastLoss = last ? String(last.loss) : '';
    c.dataset.lastAccuracy = last && last.accuracy !== null ? String(last.accuracy) : '';
    // Per-epoch series, as drawn: how many epochs carry each value, and the latest of each.
    for (const key of ['loss', 'accuracy', 'valLoss', 'valAccuracy']) {
      const name = `epoch${key[0].toUpperCase()}${key.slice(1)}`;
      const have = this.epochs.filter((e) => e[key] !== null);
      c.dataset[`${name}Points`] = String(have.length);
      c.dataset[name] = have.length ? String(have[have.length - 1][key]) : '';
    }
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.draw();
    });
  }

  draw() {
    const c = this.canvas;
    const ctx = c.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    const W = c.width, H = c.height;
    const pad = { l: 44 * dpr, r: 40 * dpr, t: 26 * dpr, b: 22 * dpr };
    ctx.clearRect(0, 0, W, H);
    ctx.font = `${11 * dpr}px system-ui, sans-serif`;
    ctx.lineWidth = 1;
    ctx.strokeStyle = '#d4d4d8';
    ctx.strokeRect(pad.l, pad.t, W - pad.l - pad.r, H - pad.t - pad.b);
    const pts = this.points;
    const maxStep = Math.max(1, pts.length ? pts[pts.length - 1].step : 1, ...this.epochs.map((e) => e.step));
    let maxLoss = 0;
    for (const p of pts) if (Number.isFinite(p.loss)) maxLoss = Math.max(maxLoss, p.loss);
    for (const e of this.epochs) for (const v of [e.loss, e.valLoss]) if (v !== null) maxLoss = Math.max(maxLoss, v);
    maxLoss = maxLoss > 0 ? maxLoss * 1.05 : 1;
    const X = (s) => pad.l + (s / maxStep) * (W - pad.l - pad.r);
    const Y = (v, max) => H - pad.b - (v / max) * (H - pad.t - pad.b);

    ctx.fillStyle = '#52525b';
    ctx.textAlign = 'right';
    ctx.fillText(maxLoss.toFixed(2), pad.l - 4 * dpr, pad.t + 10 * dpr);
    ctx.fillText('0', pad.l - 4 * dpr, H - pad.b);
    ctx.textAlign = 'left';
    ctx.fillText('1.0', W - pad.r + 4 * dpr, pad.t + 10 * dpr);
    ctx.fillText('0', W - pad.r + 4 * dpr, H - pad.b);
    ctx.textAlign = 'center';
    ctx.fillText(`step ${maxStep}`, W - pad.r - 30 * dpr, H - 6 * dpr);

    // A line through the points that have `key`, optionally dashed and with a dot at each.
    const series = (points, key, max, color, { alpha = 1, dash = [], dots = false } = {}) => {
      ctx.save();
      ctx.globalAlpha = alpha;
      ctx.strokeStyle = color;
      ctx.fillStyle = color;
      ctx.lineWidth = 1.5 * dpr;
      ctx.setLineDash(dash.map((d) => d * dpr));
      ctx.beginPath();
      let started = false;
      const at = [];
      for (const p of points) {
        const v = p[key];
        if (v === null || !Number.isFinite(v)) continue;
        const x = X(p.step), y = Y(Math.min(v, max), max);
        if (started) ctx.lineTo(x, y);
        else ctx.moveTo(x, y);
        started = true;
        at.push([x, y]);
      }
      ctx.stroke();
      if (dots) {
        for (const [x, y] of at) {
          ctx.beginPath();
          ctx.arc(x, y, 3 * dpr, 0, Math.PI * 2);
          ctx.fill();
        }
      }
      ctx.restore();
    };
    // Per-batch reads, faint; per-epoch training (solid) and validation (dashed) on top.
    series(pts, 'loss', maxLoss, LOSS, { alpha: 0.3 });
    series(pts, 'accuracy', 1, ACC, { alpha: 0.3 });
    series(this.epochs, 'loss', maxLoss, LOSS, { dots: true });
    series(this.epochs, 'accuracy', 1, ACC, { dots: true });
    series(this.epochs, 'valLoss', maxLoss, LOSS, { dash: [5, 3], dots: true });
    series(this.epochs, 'valAccuracy', 1, ACC, { dash: [5, 3], dots: true });
    // Legend.
    ctx.textAlign = 'left';
    const legend = [
      ['training loss', LOSS, []],
      ['validation loss', LOSS, [5, 3]],
      ['training accuracy', ACC, []],
      ['validation accuracy', ACC, [5, 3]],
    ];
    let lx = pad.l + 8 * dpr;
    for (const [name, color, dash] of legend) {
      ctx.save();
      ctx.strokeStyle = color;
      ctx.lineWidth = 2 * dpr;
      ctx.setLineDash(dash.map((d) => d * dpr));
      ctx.beginPath();
      ctx.moveTo(lx, 9 * dpr);
      ctx.lineTo(lx + 16 * dpr, 9 * dpr);
      ctx.stroke();
      ctx.restore();
      ctx.fillStyle = '#3f3f46';
      ctx.fillText(name, lx + 20 * dpr, 12 * dpr);
      lx += ctx.measureText(name).width + 32 * dpr;
    }
    if (!pts.length) {
      ctx.fillStyle = '#a1a1aa';
      ctx.textAlign = 'center';
      ctx.fillText('press Train', W / 2, H / 2);
    }
  }
}
