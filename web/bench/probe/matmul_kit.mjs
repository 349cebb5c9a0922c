import { startServer, launchBrowser, newPage, webRoot } from '../../tests/harness.mjs';

// What the matmul probes (ubo_matmul.mjs, bcast_matmul.mjs) share, installed in the page as
// `window.pgMatmulKit` by `page.evaluate(installMatmulKit)`: random operands with their f64
// product, RGBA32F textures, programs over a full-screen triangle, and the shader snippets for
// R accumulators on R render targets.
export function installMatmulKit() {
  window.pgMatmulKit = (gl, M, K, N) => {
    const rnd = (n) => Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
    const A = rnd(M * K), B = rnd(K * N);
    const ref = new Float64Array(M * N);
    for (let m = 0; m < M; m++) for (let k = 0; k < K; k++) {
      const a = A[m * K + k];
      for (let n = 0; n < N; n++) ref[m * N + n] += a * B[k * N + n];
    }
    const tex = (w, h, data) => {
      const t = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D, t);
      gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA32F, w, h);
      if (data) gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, w, h, gl.RGBA, gl.FLOAT, data);
      for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) gl.texParameteri(gl.TEXTURE_2D, p, gl.NEAREST);
      return t;
    };
    const vs = `#version 300 es
    void main() { vec2 p = vec2(gl_VertexID == 1 ? 3.0 : -1.0, gl_VertexID == 2 ? 3.0 : -1.0); gl_Position = vec4(p, 0.0, 1.0); }`;
    const program = (fs) => {
      const p = gl.createProgram();
      for (const [type, src] of [[gl.VERTEX_SHADER, vs], [gl.FRAGMENT_SHADER, fs]]) {
        const s = gl.createShader(type);
        gl.shaderSource(s, src);
        gl.compileShader(s);
        if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s) + '\n' + src);
        gl.attachShader(p, s);
      }
      gl.linkProgram(p);
      if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(p));
      return p;
    };
    const outs = (n) => Array.from({ length: n }, (_, i) => `layout(location = ${i}) out vec4 o${i};`).join('\n');
    const acc = (n) => Array.from({ length: n }, (_, i) => `vec4 c${i} = vec4(0.0);`).join(' ');
    const store = (n) => Array.from({ length: n }, (_, i) => `o${i} = c${i};`).join(' ');
    return { A, B, ref, tex, program, outs, acc, store };
  };
}

// Runs `probe([M, K, N, REPS])` in a blank page with the kit installed and prints its result
// as JSON. Shape from the command line (`M K N`, default mnist-mlp's 64 784 128), `--reps R`.
export async function runMatmulProbe(probe) {
  const nums = process.argv.slice(2).filter((a) => /^\d+$/.test(a)).map(Number);
  const shape = nums.length >= 3 ? nums.slice(0, 3) : [64, 784, 128];
  const ri = process.argv.indexOf('--reps');
  const reps = ri >= 0 ? Number(process.argv[ri + 1]) : 20;
  const server = await startServer(webRoot);
  try {
    const browser = await launchBrowser([]);
    const page = await newPage(browser);
    await page.goto(`${server.url}/tests/pages/blank.html`);
    await page.evaluate(installMatmulKit);
    console.log(JSON.stringify(await page.evaluate(probe, [...shape, reps])));
    await browser.close();
  } finally {
    server.close();
  }
}
