// Probe, not a test: on Chromium's WebGL2 (SwiftShader), is a matmul faster when one operand
// is read from uniform buffers instead of a float texture? C[M,N] = A[M,K] B[K,N] at the
// dense layer's shape of mnist-mlp (64 x 784 x 128), 4x4 output blocks per fragment:
//   tex4   A and B from RGBA32F textures, 4 targets (pixelgrad's block kernel, "nn");
//   tex8   the same with 8x4 blocks on 8 targets;
//   ubo4   A from a texture, B from uniform blocks (64 KiB each), 4 targets;
//   ubo8   ubo4 with 8x4 blocks on 8 targets;
//   tex4u, tex8u  tex4 / tex8 with the loop bound a uniform instead of a constant;
//   prod4, prod4n, prod8n  pixelgrad's in-place "nn" kernel (flat texel streams) with
//          texelFetch, with texture() at texel centres, and with 8x4 blocks.
// Prints ms per draw (readPixels-synchronised) and the max error against the host product.
//
//   node web/bench/probe/ubo_matmul.mjs [M K N] [--reps R]
import { runMatmulProbe } from './matmul_kit.mjs';

await runMatmulProbe(
  async ([M, K, N, REPS]) => {
    const gl = document.createElement('canvas').getContext('webgl2');
    gl.getExtension('EXT_color_buffer_float');
    const caps = {
      maxUniformBlockSize: gl.getParameter(gl.MAX_UNIFORM_BLOCK_SIZE),
      maxFragmentUniformBlocks: gl.getParameter(gl.MAX_FRAGMENT_UNIFORM_BLOCKS),
      maxDrawBuffers: gl.getParameter(gl.MAX_DRAW_BUFFERS),
      offsetAlign: gl.getParameter(gl.UNIFORM_BUFFER_OFFSET_ALIGNMENT),
    };
    const { A, B, ref, tex, program, outs, acc, store } = window.pgMatmulKit(gl, M, K, N);
    // Textures: A texel (m, k/4) holds A[m, 4q..4q+3]; B texel (k, n/4) holds B[k, 4j..4j+3].
    const KQ = K / 4, NB = N / 4;
    const ta = tex(KQ, M, A), tb = tex(NB, K, B);
    // Uniform blocks of B: block j holds k rows j*RPB .. (j+1)*RPB-1, vec4 index k'*NB + nb.
    const VEC4S = caps.maxUniformBlockSize / 16;
    const RPB = Math.floor(VEC4S / NB);
    const NBLK = Math.ceil(K / RPB);
    const ubos = [];
    for (let j = 0; j < NBLK; j++) {
      const buf = gl.createBuffer();
      gl.bindBuffer(gl.UNIFORM_BUFFER, buf);
      const rows = Math.min(RPB, K - j * RPB);
      const d = new Float32Array(VEC4S * 4);
      d.set(B.subarray(j * RPB * N, (j * RPB + rows) * N));
      gl.bufferData(gl.UNIFORM_BUFFER, d, gl.STATIC_DRAW);
      ubos.push(buf);
    }
    // Fragment (x = nb, y = mb): rows R*mb .. R*mb+R-1, columns 4nb .. 4nb+3.
    const texKernel = (R, uni) => `#version 300 es
    precision highp float; precision highp int;
    uniform highp sampler2D u_a; uniform highp sampler2D u_b; uniform int u_kq;
    ${outs(R)}
    void main() {
      int nb = int(gl_FragCoord.x); int mb = int(gl_FragCoord.y);
      ${acc(R)}
      for (int q = 0; q < ${uni ? 'u_kq' : KQ}; ++q) {
        mat4 bm = mat4(texelFetch(u_b, ivec2(nb, 4 * q), 0), texelFetch(u_b, ivec2(nb, 4 * q + 1), 0),
                       texelFetch(u_b, ivec2(nb, 4 * q + 2), 0), texelFetch(u_b, ivec2(nb, 4 * q + 3), 0));
        ${Array.from({ length: R }, (_, i) => `c${i} += bm * texelFetch(u_a, ivec2(q, ${R} * mb + ${i}), 0);`).join('\n')}
      }
      ${store(R)}
    }`;
    const uboKernel = (R) => `#version 300 es
    precision highp float; precision highp int;
    uniform highp sampler2D u_a;
    ${Array.from({ length: NBLK }, (_, j) => `uniform B${j} { vec4 b${j}[${VEC4S}]; };`).join('\n')}
    ${outs(R)}
    void main() {
      int nb = int(gl_FragCoord.x); int mb = int(gl_FragCoord.y);
      ${acc(R)}
      ${Array.from({ length: NBLK }, (_, j) => {
        const rows = Math.min(RPB, K - j * RPB);
        return `for (int r = 0; r < ${rows / 4}; ++r) {
          int i = 4 * r * ${NB} + nb; int q = ${(j * RPB) / 4} + r;
          mat4 bm = mat4(b${j}[i], b${j}[i + ${NB}], b${j}[i + ${2 * NB}], b${j}[i + ${3 * NB}]);
          ${Array.from({ length: R }, (_, i) => `c${i} += bm * texelFetch(u_a, ivec2(q, ${R} * mb + ${i}), 0);`).join('\n')}
        }`;
      }).join('\n')}
      ${store(R)}
    }`;
    const WA = 76, WB = 76;
    const flat = (data, w) => {
      const texels = data.length / 4, h = Math.ceil(texels / w);
      const d = new Float32Array(w * h * 4);
      d.set(data);
      return tex(w, h, d);
    };
    const fa = flat(A, WA), fb2 = flat(B, WB);
    const prodKernel = (R, norm) => `#version 300 es
    precision highp float; precision highp int;
    uniform highp sampler2D u_a; uniform highp sampler2D u_b; uniform int u_kq;
    ${outs(R)}
    ivec2 texel_at(int t, int w) { int y = t / w; return ivec2(t - y * w, y); }
    ivec2 advance(ivec2 p, ivec2 d, int w) { p += d; return p.x >= w ? ivec2(p.x - w, p.y + 1) : p; }
    void main() {
      int nb = int(gl_FragCoord.x); int mb = int(gl_FragCoord.y);
      int wa = textureSize(u_a, 0).x; int wb = textureSize(u_b, 0).x;
      vec2 ia = 1.0 / vec2(textureSize(u_a, 0)); vec2 ib = 1.0 / vec2(textureSize(u_b, 0));
      
${norm ? '#define SA(p) texture(u_a, (vec2(p) + 0.5) * ia)\n#define SB(p) texture(u_b, (vec2(p) + 0.5) * ib)' : '#define SA(p) texelFetch(u_a, p, 0)\n#define SB(p) texelFetch(u_b, p, 0)'}
      ${acc(R)}
      ivec2 one = ivec2(1, 0);
      ${Array.from({ length: R }, (_, i) => `ivec2 pa${i} = texel_at(((${R} * mb + ${i}) * ${K}) >> 2, wa);`).join(' ')}
      ivec2 pb = texel_at(nb, wb);
      ivec2 db = ivec2(${NB % WB}, ${Math.floor(NB / WB)});
      for (int q = 0; q < u_kq; ++q) {
        vec4 vb0 = SB(pb); pb = advance(pb, db, wb);
        vec4 vb1 = SB(pb); pb = advance(pb, db, wb);
        vec4 vb2 = SB(pb); pb = advance(pb, db, wb);
        vec4 vb3 = SB(pb); pb = advance(pb, db, wb);
        mat4 bm = mat4(vb0, vb1, vb2, vb3);
        ${Array.from({ length: R }, (_, i) => `c${i} += bm * SA(pa${i}); pa${i} = advance(pa${i}, one, wa);`).join('\n')}
      }
      ${store(R)}
    }`;
    const out = { caps, shape: [M, K, N], blocks: NBLK };
    for (const [name, R, ubo, uni, prod] of [['tex4', 4, false], ['tex4u', 4, false, true], ['ubo4', 4, true], ['tex8', 8, false], ['tex8u', 8, false, true], ['ubo8', 8, true], ['prod4', 4, false, true, 'f'], ['prod4n', 4, false, true, 'n'], ['prod8n', 8, false, true, 'n']]) {
      const MBK = M / R;
      gl.activeTexture(gl.TEXTURE2);
      const targets = Array.from({ length: R }, () => tex(NB, MBK, null));
      const p = program(prod ? prodKernel(R, prod === 'n') : ubo ? uboKernel(R) : texKernel(R, uni));
      gl.useProgram(p);
      gl.uniform1i(gl.getUniformLocation(p, 'u_kq'), KQ);
      gl.activeTexture(gl.TEXTURE0);
      gl.bindTexture(gl.TEXTURE_2D, prod ? fa : ta);
      gl.uniform1i(gl.getUniformLocation(p, 'u_a'), 0);
      if (ubo) {
        for (let j = 0; j < NBLK; j++) {
          gl.uniformBlockBinding(p, gl.getUniformBlockIndex(p, `B${j}`), j);
          gl.bindBufferBase(gl.UNIFORM_BUFFER, j, ubos[j]);
        }
      } else {
        gl.activeTexture(gl.TEXTURE1);
        gl.bindTexture(gl.TEXTURE_2D, prod ? fb2 : tb);
        gl.uniform1i(gl.getUniformLocation(p, 'u_b'), 1);
      }
      const fb = gl.createFramebuffer();
      gl.bindFramebuffer(gl.FRAMEBUFFER, fb);
      targets.forEach((t, i) => gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0 + i, gl.TEXTURE_2D, t, 0));
      gl.drawBuffers(targets.map((_, i) => gl.COLOR_ATTACHMENT0 + i));
      gl.viewport(0, 0, NB, MBK);
      const px = new Float32Array(4);
      const sync = () => { gl.readBuffer(gl.COLOR_ATTACHMENT0); gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.FLOAT, px); };
      gl.drawArrays(gl.TRIANGLES, 0, 3);
      sync();
      let err = 0;
      const row = new Float32Array(NB * MBK * 4);
      for (let i = 0; i < R; i++) {
        gl.readBuffer(gl.COLOR_ATTACHMENT0 + i);
        gl.readPixels(0, 0, NB, MBK, gl.RGBA, gl.FLOAT, row);
        for (let mb = 0; mb < MBK; mb++) for (let n = 0; n < N; n++) {
          err = Math.max(err, Math.abs(row[mb * N + n] - ref[(R * mb + i) * N + n]));
        }
      }
      const times = [];
      for (let round = 0; round < 3; round++) {
        const t0 = performance.now();
        for (let k = 0; k < REPS; k++) gl.drawArrays(gl.TRIANGLES, 0, 3);
        sync();
        times.push((performance.now() - t0) / REPS);
      }
      out[name] = { ms: times.map((t) => +t.toFixed(3)), err };
    }
    return out;
  },
);
