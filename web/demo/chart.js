// A live loss/accuracy chart drawn with the 2D canvas API: loss on the left axis (0..max seen),
// accuracy on the right (0..1), training step along the bottom. The point count and the latest
// values are mirrored into data-* attributes so tests (and curious users) can read them.

const LOSS = '#2563eb';
const ACC = '#ea580c';
const VAL = '#16a34a';

export class LiveChart {
  constructor(canvas) {
    this.canvas = canvas;
    this.points = []; // { step, loss, accuracy }
    this.val = []; // { step, accuracy } per epoch
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
    this.val = [];
    this.schedule();
  }

  add(step, loss, accuracy) {
    this.points.push({ step, loss, accuracy: Number.isFinite(accuracy) ? accuracy : null });
    this.schedule();
  }

  addValidation(step, accuracy) {
    if (Number.isFinite(accuracy)) this.val.push({ step, accuracy });
    this.schedule();
  }

  /** Batches redraws to one per animation frame however fast messages arrive. */
  schedule() {
    const c = this.canvas;
    c.dataset.points = String(this.points.length);
    const last = this.points[this.points.length - 1];
    c.dataset.lastLoss = last ? String(last.loss) : '';
    c.dataset.lastAccuracy = last && last.accuracy !== null ? String(last.accuracy) : '';
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
    const pad = { l: 44 * dpr, r: 40 * dpr, t: 12 * dpr, b: 22 * dpr };
    ctx.clearRect(0, 0, W, H);
    ctx.font = `${11 * dpr}px system-ui, sans-serif`;
    ctx.lineWidth = 1;
    ctx.strokeStyle = '#d4d4d8';
    ctx.strokeRect(pad.l, pad.t, W - pad.l - pad.r, H - pad.t - pad.b);
    const pts = this.points;
    const maxStep = Math.max(1, pts.length ? pts[pts.length - 1].step : 1, ...this.val.map((v) => v.step));
    let maxLoss = 0;
    for (const p of pts) if (Number.isFinite(p.loss)) maxLoss = Math.max(maxLoss, p.loss);
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

    const series = (key, max, color) => {
      ctx.strokeStyle = color;
      ctx.lineWidth = 1.5 * dpr;
      ctx.beginPath();
      let started = false;
      for (const p of pts) {
        const v = p[key];
        if (v === null || !Number.isFinite(v)) continue;
        const x = X(p.step), y = Y(Math.min(v, max), max);
        if (started) ctx.lineTo(x, y);
        else ctx.moveTo(x, y);
        started = true;
      }
      ctx.stroke();
    };
    series('loss', maxLoss, LOSS);
    series('accuracy', 1, ACC);
    ctx.fillStyle = VAL;
    for (const v of this.val) {
      ctx.beginPath();
      ctx.arc(X(v.step), Y(v.accuracy, 1), 3 * dpr, 0, Math.PI * 2);
      ctx.fill();
    }
    // Legend.
    ctx.textAlign = 'left';
    const legend = [['loss', LOSS], ['batch accuracy', ACC], ['validation accuracy', VAL]];
    let lx = pad.l + 8 * dpr;
    for (const [name, color] of legend) {
      ctx.fillStyle = color;
      ctx.fillRect(lx, pad.t + 6 * dpr, 10 * dpr, 3 * dpr);
      ctx.fillStyle = '#3f3f46';
      ctx.fillText(name, lx + 14 * dpr, pad.t + 11 * dpr);
      lx += ctx.measureText(name).width + 30 * dpr;
    }
    if (!pts.length) {
      ctx.fillStyle = '#a1a1aa';
      ctx.textAlign = 'center';
      ctx.fillText('press Train', W / 2, H / 2);
    }
  }
}
