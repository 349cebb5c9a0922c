// The "network requests since load" indicator. The page's own fetches are seen by a
// PerformanceObserver on 'resource' entries; the worker's fetches live in the worker's own
// timeline, so the worker counts those and reports them (see worker.js). Before `markReady()`
// (the demo still loading its scripts and wasm) nothing counts.

/** Starts watching; `el` shows the total and carries it in `data-count`. */
export function watchNetwork(el) {
  let readyAt = Infinity;
  let page = 0;
  let worker = 0;
  const urls = [];

  function render() {
    const total = page + worker;
    el.dataset.count = String(total);
    el.dataset.page = String(page);
    el.dataset.worker = String(worker);
    el.querySelector('b').textContent = String(total);
    el.classList.toggle('bad', total > 0);
    el.title = total > 0 ? `requests since load:\n${urls.slice(-10).join('\n')}` : 'no network requests since the demo finished loading (page + worker)';
  }

  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if (e.startTime < readyAt) continue;
        page += 1;
        urls.push(e.name);
      }
      render();
    }).observe({ type: 'resource', buffered: true });
  } catch (e) {
    el.textContent = `network indicator unavailable: ${e.message}`;
  }

  return {
    markReady() {
      readyAt = performance.now();
      page = 0;
      render();
    },
    setWorker(count, workerUrls) {
      worker = count;
      for (const u of workerUrls || []) if (!urls.includes(u)) urls.push(u);
      render();
    },
  };
}
