// Probe, not a test: are uniform-buffer reads cheap on SwiftShader when every fragment of a draw
// reads the same element (the index depends only on the loop counter)? C[M,N] = A[M,K] B[K,N]
// at mnist-mlp's dense shape. Variant bcW: one draw per W-column chunk of C, fragment m computes
// C[m, chunk] (W/4 targets), A from a texture (one fetch per 4 k), B's chunk from uniform blocks
// read at lane-uniform indices. tex4: the 4x4 block kernel reading both from textures.
//   node web/bench/probe/bcast_matmul.mjs [M K N] [--reps R]
import { runMatmulProbe } from './matmul_kit.mjs';

await runMatmulProbe(
  async ([M, K, N, REPS]) => {
    const gl = document.createElement('canvas').getContext('webgl2');
    gl.getExtension('EXT_color_buffer_float');
    const VEC4S = gl.getParameter(gl.MAX_UNIFORM_BLOCK_SIZE) / 16;
    const { A, B, ref, tex, program, outs, acc, store } = window.pgMatmulKit(gl, M, K, N);
    const KQ = K / 4, NB = N / 4;
    const ta = tex(KQ, M, A), tb = tex(NB, K, B);
    const px = new Float32Array(4);
    const time = (draw, sync) => {
      draw(); sync();
      const times = [];
      for (let round = 0; round < 3; round++) {
        const t0 = performance.now();
        for (let k = 0; k < REPS; k++) draw();
        sync();
        times.push(+((performance.now() - t0) / REPS).toFixed(3));
      }
      return times;
    };
    const out = { shape: [M, K, N], vec4s: VEC4S };
    // Reference: 4x4 blocks from textures.
    {
      const R = 4, MBK = M / R;
      const fs = `#version 300 es
      precision highp float; precision highp int;
      uniform highp sampler2D u_a; uniform highp sampler2D u_b;
      ${outs(R)}
      void main() {
        int nb = int(gl_FragCoord.x); int mb = int(gl_FragCoord.y);
        ${acc(R)}
        for (int q = 0; q < ${KQ}; ++q) {
          mat4 bm = mat4(texelFetch(u_b, ivec2(nb, 4 * q), 0), texelFetch(u_b, ivec2(nb, 4 * q + 1), 0),
                         texelFetch(u_b, ivec2(nb, 4 * q + 2), 0), texelFetch(u_b, ivec2(nb, 4 * q + 3), 0));
          ${Array.from({ length: R }, (_, i) => `c${i} += bm * texelFetch(u_a, ivec2(q, ${R} * mb + ${i}), 0);`).join('\n')}
        }
        ${store(R)}
      }`;
      const p = program(fs);
      gl.useProgram(p);
      gl.activeTexture(gl.TEXTURE0); gl.bindTexture(gl.TEXTURE_2D, ta);
      gl.uniform1i(gl.getUniformLocation(p, 'u_a'), 0);
      gl.activeTexture(gl.TEXTURE1); gl.bindTexture(gl.TEXTURE_2D, tb);
      gl.uniform1i(gl.getUniformLocation(p, 'u_b'), 1);
      gl.activeTexture(gl.TEXTURE2);
      const targets = Array.from({ length: R }, () => tex(NB, MBK, null));
      const fb = gl.createFramebuffer();
      gl.bindFramebuffer(gl.FRAMEBUFFER, fb);
      targets.forEach((t, i) => gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0 + i, gl.TEXTURE_2D, t, 0));
      gl.drawBuffers(targets.map((_, i) => gl.COLOR_ATTACHMENT0 + i));
      gl.viewport(0, 0, NB, MBK);
      const sync = () => { gl.readBuffer(gl.COLOR_ATTACHMENT0); gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.FLOAT, px); };
      out.tex4 = { ms: time(() => gl.drawArrays(gl.TRIANGLES, 0, 3), sync) };
    }
    // Broadcast variants: W columns per draw (W/4 targets), rows of C on a VW x VH viewport.
    for (const W of [16, 32]) for (const mode of ['dyn', 'unroll']) {
      const T = W / 4; // targets
      const rowsPerBlock = Math.floor(VEC4S / T);
      const nblk = Math.ceil(K / rowsPerBlock);
      const VW = 8, VH = Math.ceil(M / VW);
      // B chunk c: vec4 index k*T + j holds B[k, c*W + 4j .. +3].
      const chunks = [];
      for (let c = 0; c < N / W; c++) {
        const bufs = [];
        for (let j = 0; j < nblk; j++) {
          const rows = Math.min(rowsPerBlock, K - j * rowsPerBlock);
          const d = new Float32Array(VEC4S * 4);
          for (let k = 0; k < rows; k++) for (let n = 0; n < W; n++) d[k * W + n] = B[(j * rowsPerBlock + k) * N + c * W + n];
          const buf = gl.createBuffer();
          gl.bindBuffer(gl.UNIFORM_BUFFER, buf);
          gl.bufferData(gl.UNIFORM_BUFFER, d, gl.STATIC_DRAW);
          bufs.push(buf);
        }
        chunks.push(bufs);
      }
      const body = (j) => {
        const rows = Math.min(rowsPerBlock, K - j * rowsPerBlock);
        const q0 = (j * rowsPerBlock) / 4;
        const step = (s) => Array.from({ length: T }, (_, t) => `c${t} += a.${'xyzw'[s]} * b${j}[i + ${s * T + t}];`).join(' ');
        if (mode === 'dyn') {
          return `for (int q = 0; q < ${rows / 4}; ++q) {
            vec4 a = texelFetch(u_a, ivec2(${q0} + q, m), 0);
            int i = ${4 * T} * q;
            ${[0, 1, 2, 3].map(step).join('\n')}
          }`;
        }
        // Unrolled by 8 q, constant offsets from a dynamic group base.
        return `for (int g = 0; g < ${Math.floor(rows / 32)}; ++g) {
            int i0 = ${32 * T} * g;
            ${Array.from({ length: 8 }, (_, u) => `{ vec4 a = texelFetch(u_a, ivec2(${q0} + 8 * g + ${u}, m), 0); int i = i0 + ${4 * T * u};
            ${[0, 1, 2, 3].map(step).join('\n')} }`).join('\n')}
          }
          ${(rows / 4) % 8 ? `for (int q = ${Math.floor(rows / 32) * 8}; q < ${rows / 4}; ++q) {
            vec4 a = texelFetch(u_a, ivec2(${q0} + q, m), 0);
            int i = ${4 * T} * q;
            ${[0, 1, 2, 3].map(step).join('\n')}
          }` : ''}`;
      };
      const fs = `#version 300 es
      precision highp float; precision highp int;
      uniform highp sampler2D u_a;
      ${Array.from({ length: nblk }, (_, j) => `uniform B${j} { vec4 b${j}[${VEC4S}]; };`).join('\n')}
      ${outs(T)}
      void main() {
        int m = int(gl_FragCoord.y) * ${VW} + int(gl_FragCoord.x);
        ${acc(T)}
        if (m < ${M}) {
        ${Array.from({ length: nblk }, (_, j) => body(j)).join('\n')}
        }
        ${store(T)}
      }`;
      let p;
      try { p = program(fs); } catch (e) { out[`bc${W}${mode}`] = { error: String(e).slice(0, 400) }; continue; }
      gl.useProgram(p);
      gl.activeTexture(gl.TEXTURE0); gl.bindTexture(gl.TEXTURE_2D, ta);
      gl.uniform1i(gl.getUniformLocation(p, 'u_a'), 0);
      for (let j = 0; j < nblk; j++) gl.uniformBlockBinding(p, gl.getUniformBlockIndex(p, `B${j}`), j);
      gl.activeTexture(gl.TEXTURE2);
      const fbs = chunks.map(() => {
        const targets = Array.from({ length: T }, () => tex(VW, VH, null));
        const fb = gl.createFramebuffer();
        gl.bindFramebuffer(gl.FRAMEBUFFER, fb);
        targets.forEach((t, i) => gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0 + i, gl.TEXTURE_2D, t, 0));
        gl.drawBuffers(targets.map((_, i) => gl.COLOR_ATTACHMENT0 + i));
        return fb;
      });
      gl.viewport(0, 0, VW, VH);
      const drawAll = () => {
        chunks.forEach((bufs, c) => {
          bufs.forEach((b, j) => gl.bindBufferBase(gl.UNIFORM_BUFFER, j, b));
          gl.bindFramebuffer(gl.FRAMEBUFFER, fbs[c]);
          gl.drawArrays(gl.TRIANGLES, 0, 3);
        });
      };
      const sync = () => { gl.readBuffer(gl.COLOR_ATTACHMENT0); gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.FLOAT, px); };
      drawAll(); sync();
      let err = 0;
      const buf = new Float32Array(VW * VH * 4);
      chunks.forEach((_, c) => {
        gl.bindFramebuffer(gl.FRAMEBUFFER, fbs[c]);
        for (let t = 0; t < T; t++) {
          gl.readBuffer(gl.COLOR_ATTACHMENT0 + t);
          gl.readPixels(0, 0, VW, VH, gl.RGBA, gl.FLOAT, buf);
          for (let m = 0; m < M; m++) for (let e = 0; e < 4; e++) {
            err = Math.max(err, Math.abs(buf[m * 4 + e] - ref[m * N + c * W + 4 * t + e]));
          }
        }
      });
      out[`bc${W}${mode}`] = { ms: time(drawAll, sync), err, blocks: nblk };
    }
    return out;
  },
);
