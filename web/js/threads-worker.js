// A CPU worker of the threaded build (threads.js starts it): instantiates the compiled module
// on the page's shared memory, says so, then serves the CPU kernels' pool until terminated.
self.onmessage = async ({ data }) => {
  let glue;
  try {
    glue = await import(data.glue);
    await glue.default({ module_or_path: data.module, memory: data.memory });
  } catch (e) {
    self.postMessage({ ok: false, error: e && e.message ? e.message : String(e) });
    return;
  }
  self.postMessage({ ok: true });
  // Never returns (it sleeps between jobs); a trap here ends only this worker.
  glue.cpuWorkerLoop();
};
