// Headless Chromium tabs as nodes of a Flower federation (used by `cargo xtask federated`).
//
//   node web/federated/run.mjs --superlink http://127.0.0.1:9093 --browsers 2 --count 3
//        [--first-index 0] [--backends webgpu,webgl,cpu] [--data digits|idx:DIR] [--alpha 0.5]
//        [--seed 42] [--drop-after-round R] [--local-dp EPS,DELTA,C] [--timeout S]
//        [--ca-file CA.pem] [--node-auth --flwr BIN --keys DIR] [--secagg] [--max-epsilon E] [--distributed-dp Z,C,DELTA]
//
// With --ca-file the page server verifies an https:// SuperLink against that CA. With
// --node-auth each tab joins with its own persistent WebCrypto key (`?nodeKey=tab-I`), whose
// public key is written to DIR/tab-I.pub and registered with `BIN supernode register` (the
// `local` connection of the FLWR_HOME this process gets) before the tab joins.
//
// Starts the page server (static files + `/v1/fleet/*` forwarded to the SuperLink), opens one
// tab per node on `demo/federated.html` (partitions first-index .. first-index+browsers-1 of
// count), records every request each page makes, and prints JSON lines: `{"event": ...}` as
// nodes progress, then `{"report": ...}` with, per page, its summary or error, the requests it
// made after joining that were not Fleet API calls, and the bytes it sent per round (bodies
// and headers). With --drop-after-round R the last tab is closed as soon as it receives round
// R's train instruction (a node that disappears mid-round).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { launchBrowser } from '../tests/harness.mjs';
import { startPageServer } from './server.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const superlink = opt('--superlink');
const browsers = Number(opt('--browsers', 1));
const count = Number(opt('--count', browsers));
const first = Number(opt('--first-index', 0));
const backends = opt('--backends', 'webgpu,webgl,cpu').split(',');
const data = opt('--data', 'digits');
const alpha = opt('--alpha', '0');
const seed = opt('--seed', '42');
const dropAfter = opt('--drop-after-round') ? Number(opt('--drop-after-round')) : null;
const localDp = opt('--local-dp');
const timeoutS = Number(opt('--timeout', 4 * 3600));
const caFile = opt('--ca-file');
const nodeAuth = args.includes('--node-auth');
const secagg = args.includes('--secagg');
const maxEpsilon = opt('--max-epsilon');
const distributedDp = opt('--distributed-dp');
const flwrBin = opt('--flwr');
const keysDir = opt('--keys');
if (nodeAuth && !(flwrBin && keysDir)) {
  console.error('run.mjs: --node-auth needs --flwr BIN and --keys DIR');
  process.exit(2);
}
if (!superlink) {
  console.error('run.mjs: --superlink URL is required');
  process.exit(2);
}

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

function mnistFiles(dir) {
  const names = fs.readdirSync(dir);
  const find = (stem) => {
    const n = names.find((f) => f === stem || f === `${stem}.gz`);
    if (!n) throw new Error(`${dir}: missing ${stem}[.gz]`);
    return path.join(dir, n);
  };
  return ['train-images-idx3-ubyte', 'train-labels-idx1-ubyte', 't10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte'].map(find);
}

const server = await startPageServer({ superlink, caFile });

/** Registers a tab's public key with the SuperLink (`flwr supernode register`); its node ID. */
function register(index, openssh) {
  const file = path.join(keysDir, `tab-${index}.pub`);
  fs.writeFileSync(file, `${openssh}\n`);
  const out = execFileSync(flwrBin, ['supernode', 'register', file, 'local', '--format', 'json'], { encoding: 'utf8' });
  const j = JSON.parse(out.slice(out.indexOf('{')));
  if (!j.success) throw new Error(`registering tab ${index}'s key failed: ${j['error-message'] || out}`);
  // node IDs are 64-bit: read the digits, not the JSON number (a double)
  return /"node-id":\s*(\d+)/.exec(out)[1];
}
// Tabs share one browser; background tabs must not have their timers throttled, or their
// heartbeats would stall and the SuperLink would count them as gone.
const browser = await launchBrowser(['--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows']);
const pages = [];
let finished = false;

try {
  for (let k = 0; k < browsers; k++) {
    const index = first + k;
    const backend = backends[k % backends.length];
    const page = await browser.newPage();
    const rec = { index, backend, joinedAt: null, round: 0, rounds: {}, other: [], fleet: 0, summary: null, error: null, closed: false, events: [], registeredNode: null, nodeId: null };
    pages.push({ page, rec });
    page.on('pageerror', (e) => process.stderr.write(`[tab ${index} error] ${e.message}\n`));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') process.stderr.write(`[tab ${index} ${m.type()}] ${m.text()}\n`);
    });
    page.on('request', (r) => {
      const p = new URL(r.url()).pathname;
      if (p.startsWith('/v1/fleet/')) {
        if (rec.joinedAt === null) rec.joinedAt = Date.now();
        rec.fleet += 1;
      } else if (rec.joinedAt !== null) {
        rec.other.push(r.url());
      }
    });
    page.on('requestfinished', async (r) => {
      if (!new URL(r.url()).pathname.startsWith('/v1/fleet/')) return;
      const round = rec.round;
      try {
        const s = await r.sizes();
        const b = (rec.rounds[round] ||= { body: 0, headers: 0, requests: 0 });
        b.body += s.requestBodySize;
        b.headers += s.requestHeadersSize;
        b.requests += 1;
      } catch {
        /* the tab was closed */
      }
    });
    await page.exposeFunction('__pgFederatedEvent', async (e) => {
      rec.events.push(e.type);
      if (e.type === 'received' && e.kind === 'train') rec.round = e.round;
      if (e.type === 'connected') rec.nodeId = e.nodeId;
      if (e.type === 'trained') Object.assign(rec, { secagg: e.secagg, epsilon: e.epsilon, delta: e.delta });
      say({ event: e.type, tab: index, backend, ...e });
      if (dropAfter !== null && k === browsers - 1 && e.type === 'received' && e.kind === 'train' && e.round === dropAfter && !rec.closed) {
        rec.closed = true;
        say({ event: 'tab-closed', tab: index, round: e.round });
        await page.close().catch(() => {});
      }
    });
    const q = new URLSearchParams({ backend, index, count, alpha, seed, data: data === 'digits' ? 'digits' : 'mnist', auto: nodeAuth ? '0' : '1' });
    if (localDp) q.set('localDp', localDp);
    if (nodeAuth) q.set('nodeKey', `tab-${index}`);
    if (secagg) q.set('secagg', '1');
    if (maxEpsilon) q.set('maxEpsilon', maxEpsilon);
    if (distributedDp) q.set('distributedDp', distributedDp);
    await page.goto(`${server.url}/demo/federated.html?${q}`);
    if (data.startsWith('idx:')) await page.setInputFiles('#mnist-files', mnistFiles(data.slice(4)));
    say({ event: 'tab-opened', tab: index, backend });
    if (nodeAuth) {
      // the key is registered before the tab joins, as an operator would
      await page.waitForFunction(() => !document.getElementById('join').disabled, null, { timeout: 120000 });
      const openssh = await page.evaluate(() => window.pgFederated.publicKey());
      rec.registeredNode = register(index, openssh);
      say({ event: 'tab-registered', tab: index, nodeId: rec.registeredNode });
      await page.evaluate(() => {
        window.pgFederated.join();
      });
    }
  }

  const t0 = Date.now();
  while (!finished) {
    await new Promise((r) => setTimeout(r, 1000));
    let open = 0;
    for (const { page, rec } of pages) {
      if (rec.closed || rec.summary || rec.error) continue;
      const st = await page.evaluate(() => ({ summary: window.pgFederated.summary, error: window.pgFederated.error })).catch((e) => ({ error: `page gone: ${e.message}` }));
      if (st.summary) rec.summary = st.summary;
      else if (st.error) rec.error = st.error;
      else open += 1;
    }
    if (open === 0) finished = true;
    if (Date.now() - t0 > timeoutS * 1000) {
      for (const { rec } of pages) if (!rec.closed && !rec.summary && !rec.error) rec.error = `no result within ${timeoutS} s`;
      finished = true;
    }
  }
} catch (e) {
  say({ event: 'driver-error', message: e.message });
  process.exitCode = 1;
} finally {
  say({ report: { pages: pages.map(({ rec }) => ({ ...rec, events: undefined })) } });
  await browser.close().catch(() => {});
  await server.close().catch(() => {});
}
