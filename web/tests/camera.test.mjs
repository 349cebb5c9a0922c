
test('camera demo classifies live frames with an imported ONNX model (top-3, per-stage times)', async () => {
  await page.goto(`${server.url}/demo/camera.html?backend=webgpu&software=1`);
  await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 60000 });
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    // An ONNX classifier made in the page (no download): a small conv net exported by pixelgrad.
    const m = pg.sequential([
      pg.layers.conv2d({ filters: 4, kernelSize: 3, inputShape: [32, 32, 3], activation: 'relu' }),
      pg.layers.flatten(),
      pg.layers.dense({ units: 5 }),
    ], { seed: 2 });
    const bytes = await m.toOnnx();
    await window.cameraDemo.loadOnnx(bytes);
    const inputs = window.cameraDemo.state.onnx;
    const wait = (ms) => new Promise((res) => setTimeout(res, ms));
    for (let i = 0; i < 100 && window.cameraDemo.state.stats.frames < 10; i++) await wait(50);
    const frames0 = window.cameraDemo.state.stats.frames;
    await wait(500);
    return {
      size: inputs.size,
      top: Array.from(document.querySelectorAll('#top li'), (li) => li.textContent),
      frames: window.cameraDemo.state.stats.frames - frames0,
      stats: document.getElementById('stats').textContent,
      requests: document.getElementById('net').dataset.count,
    };
  });
  console.log(`onnx: ${JSON.stringify(r)}`);
  assert.deepEqual(r.size, [32, 32]);
  assert.equal(r.top.length, 3, r.top.join('; '));
  assert.ok(r.top.every((t) => /^class [0-4]: \d+\.\d%$/.test(t)), r.top.join('; '));
  assert.ok(r.frames > 0, 'frames keep being classified');
  assert.match(r.stats, /frames\/s · preprocess [\d.]+ ms · inference [\d.]+ ms/);
  assert.equal(r.requests, '0');
});
