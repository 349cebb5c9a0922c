// worker.html's script (external: the CSP forbids inline scripts). runInWorker(msg) starts a
// fresh module worker running worker.js and resolves with its reply.
window.runInWorker = (msg) =>
  new Promise((resolve, reject) => {
    const w = new Worker('/tests/pages/worker.js', { type: 'module' });
    w.onmessage = (e) => {
      w.terminate();
      resolve(e.data);
    };
    w.onerror = (e) => {
      w.terminate();
      reject(new Error(`worker error: ${e.message}`));
    };
    w.postMessage(msg);
  });
window.pgReady = true;
