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
  try {
    glue.cpuWorkerLoop(); // never returns: it sleeps between jobs
  } catch (e) {
    // A trap inside a kernel (a bug): the page's thread waits for this worker's chunk and
    // would spin forever; tell it, so that it discards the instance instead.
    console.error(`pixelgrad CPU worker crashed: ${e && e.message ? e.message : e}`);
    glue.cpuWorkerFailed();
  }
};
