// Timing shared by both libraries. A "session" is what each library side builds for one
// workload:
//   prepare()    optional, untimed: work that only the benchmark needs (e.g. storing weights)
//   setup()      build the model / upload inputs (no GPU sync needed)
//   steps(n)     run about n steps, wait until the device is done, return how many ran
//   memory()     device memory the library reports, or null
//   dispose()
//   info()       optional: extra fields for the result row
// After steps(), `session.lastLoss` may hold the last loss read back (training workloads).
// Runs in the page; performance.now() is the clock.

const now = () => performance.now();

/** Median of a non-empty list. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Measures one session. `opts`: warmupMs (time spent warming up after the first step),
 * repeatMs (target length of one timed repeat), repeats (how many), maxSteps (cap per repeat).
 * Returns { firstStepMs, setupMs, firstLoss, samples (steps/s per repeat), median, steps,
 * lastLoss, memory, ...session.info() }.
 *
 * First-step latency is setup + one step + sync, i.e. what a user waits before the first
 * loss: shader compiles, weight and data upload, the step itself. Warm-up then doubles the
 * chunk size until warmupMs is spent, which also estimates the rate; each repeat runs as many
 * steps as that rate says fit in repeatMs (at least one), so slow backends stay time-boxed.
 */
export async function measure(session, opts) {
  const { warmupMs = 1000, repeatMs = 2500, repeats = 3, maxSteps = 1e6 } = opts;
  if (session.prepare) await session.prepare();
  const t0 = now();
  await session.setup();
  const setupMs = now() - t0;
  await session.steps(1);
  const firstStepMs = now() - t0;
  const firstLoss = session.lastLoss ?? null;

  let rate = 0;
  let spent = 0;
  for (let n = 1; spent < warmupMs; n *= 2) {
    const t = now();
    const ran = await session.steps(n);
    const dt = now() - t;
    spent += dt;
    rate = ran / Math.max(dt, 1e-3) * 1000;
  }

  const samples = [];
  let steps = 0;
  for (let r = 0; r < repeats; r++) {
    const n = Math.max(1, Math.min(maxSteps, Math.round((rate * repeatMs) / 1000)));
    const t = now();
    const ran = await session.steps(n);
    const dt = now() - t;
    rate = (ran / Math.max(dt, 1e-3)) * 1000;
    samples.push(rate);
    steps += ran;
  }
  const memory = await session.memory();
  const extra = session.info ? session.info() : {};
  return { setupMs, firstStepMs, firstLoss, samples, median: median(samples), steps, lastLoss: session.lastLoss ?? null, memory, ...extra };
}
