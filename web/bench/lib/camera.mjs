// The fake camera of the browser benchmarks: a .y4m Chromium plays with
// --use-file-for-fake-video-capture, and the flags that make it the page's camera.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Writes a 4-frame `w` x `h` Y'CbCr 4:2:0 clip (diagonal luma stripes, flat chroma) into a
 * fresh temporary folder: `{ file, flags, cleanup }`, flags being Chromium's fake-camera flags.
 */
export function fakeCamera(w = 640, h = 480) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-camera-'));
  const file = path.join(dir, 'frame.y4m');
  const y = Buffer.alloc(w * h);
  const u = Buffer.alloc((w / 2) * (h / 2), 110);
  const v = Buffer.alloc((w / 2) * (h / 2), 150);
  for (let r = 0; r < h; r++) for (let c = 0; c < w; c++) y[r * w + c] = 16 + ((c + 2 * r) % 220);
  const parts = [Buffer.from(`YUV4MPEG2 W${w} H${h} F30:1 Ip A1:1 C420jpeg\n`)];
  for (let i = 0; i < 4; i++) parts.push(Buffer.from('FRAME\n'), y, u, v);
  fs.writeFileSync(file, Buffer.concat(parts));
  return {
    file,
    flags: ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${file}`],
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
