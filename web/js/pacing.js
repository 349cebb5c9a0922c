// Pacing of `fit` for watching training (`fit({ maxStepsPerSecond })`): step k starts no
// earlier than one interval after step k - 1 started, so n steps take at least (n - 1) / rate
// seconds; a late step moves the schedule on instead of bursting to catch up. Waiting touches
// no tensor, so a paced run computes exactly what an unpaced one does. The rate may be a
// function, read before every step (a live speed slider); it returning undefined, null or
// Infinity means full speed.

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function checkRate(rate, what) {
  if (rate === undefined || rate === null || rate === Infinity) return null;
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0) {
    throw new Error(`${what}: maxStepsPerSecond must be a positive number (or a function returning one), got ${rate}`);
  }
  return rate;
}

/** `{ wait() }` for at most `rate` steps per second. */
export function pacer(rate, what) {
  const rateOf = typeof rate === 'function' ? rate : () => rate;
  checkRate(typeof rate === 'function' ? undefined : rate, what);
  let next = null;
  return {
    async wait() {
      const r = checkRate(rateOf(), what);
      if (r === null) {
        next = null;
        return;
      }
      const now = performance.now();
      // timers may fire a little early: wait until the clock really is past `next`
      while (next !== null && performance.now() < next) await sleep(next - performance.now());
      next = Math.max(next === null ? now : next, now) + 1000 / r;
    },
  };
}
