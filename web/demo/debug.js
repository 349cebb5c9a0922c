// The demo's debugging and teaching controls: the backend panel's cross-check and layout
// table, and the training panel's speed slider and step-through button. The worker does the
// work (`rt.crossCheck`, `model.layouts()`, `fit({ maxStepsPerSecond })`, `onBatchEnd`
// returning 'step'); this file only sends requests and draws the answers.

const $ = (id) => document.getElementById(id);

/** Steps per second of the slider, or null at its right end (full speed). */
export function sliderRate(value, max) {
  const v = Number(value);
  return v >= max ? null : v;
}

function crossCheckText(r) {
  const lines = [r.summary];
  const first = r.firstFailure;
  if (first) lines.push(`first failure: ${first.tensor} (step ${first.step}), produced by ${first.op}`);
  lines.push('');
  lines.push('step tensor              max abs     max rel   result');
  for (const row of r.rows) {
    const mark = row.pass ? 'ok' : first && row.step === first.step && row.tensor === first.tensor ? 'FAIL <- first' : 'FAIL';
    const e = (v) => (v === null ? 'inf' : v.toExponential(2));
    lines.push(`${String(row.step).padStart(4)} ${row.tensor.padEnd(18)} ${e(row.maxAbs).padStart(9)} ${e(row.maxRel).padStart(9)}   ${mark}`);
  }
  return lines.join('\n');
}

function layoutText(rows) {
  const lines = ['tensor        shape        memory   size       used/alloc   bytes'];
  let total = 0;
  for (const r of rows) {
    total += r.bytes || 0;
    const size = r.memory === 'texture' ? `${r.width}x${r.height}` : String(r.width ?? '?');
    lines.push(
      `${r.name.padEnd(13)} ${JSON.stringify(r.shape).padEnd(12)} ${(r.memory || '?').padEnd(8)} ${size.padEnd(10)} ${`${r.used}/${r.allocated}`.padEnd(12)} ${r.bytes}`,
    );
  }
  if (rows[0]?.layout) lines.push(`layout: ${rows[0].layout}`);
  lines.push(`${rows.length} tensors, ${total} bytes`);
  return lines.join('\n');
}

/**
 * Wires the controls; `send` posts to the worker; `handlers` are the page's existing ones
 * (their `training` is wrapped). Returns the handlers to add for the worker's answers.
 */
export function setupDebug(send, handlers) {
  const speedMax = Number($('speed').max);
  const pace = () => {
    const rate = sliderRate($('speed').value, speedMax);
    $('speed-label').textContent = rate === null ? 'max' : `${rate}/s`;
    send({ type: 'pace', maxStepsPerSecond: rate, stepThrough: $('stepthrough').checked });
  };
  $('speed').addEventListener('input', pace);
  $('stepthrough').addEventListener('change', pace);
  $('step-once').addEventListener('click', () => {
    $('step-once').disabled = true;
    send({ type: 'step' });
  });
  $('cross-check').addEventListener('click', () => {
    $('debug-out').textContent = 'cross-checking…';
    $('debug-out').dataset.passed = '';
    send({ type: 'crosscheck' });
  });
  $('layouts').addEventListener('click', () => send({ type: 'layouts' }));
  pace();
  const training = handlers.training;
  return {
    training(m) {
      training(m);
      if (!m.on) $('step-once').disabled = true; // nothing waits for a step any more
    },
    crosscheck(m) {
      $('debug-out').textContent = crossCheckText(m.report);
      $('debug-out').dataset.passed = String(m.report.passed);
    },
    layouts(m) {
      $('debug-out').textContent = layoutText(m.rows);
      $('debug-out').dataset.rows = String(m.rows.length);
    },
    stepwait(m) {
      // fit waits in onBatchEnd for the Step button
      $('step-once').disabled = false;
      $('step-once').dataset.step = String(m.step);
    },
  };
}
