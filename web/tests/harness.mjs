// Shared test harness: a static file server on 127.0.0.1 and Debian's headless Chromium with
// WebGPU and WebGL2 (both through SwiftShader). Used by every browser test and by the benchmarks.
//
//   import { startServer, launchBrowser, newPage } from './harness.mjs';
//   const server = await startServer(webRoot);        // serves web/ (pkg/, demo/, tests/pages/)
//   const browser = await launchBrowser();
//   const page = await newPage(browser);              // console + page errors echoed to stderr
//   await page.goto(`${server.url}/tests/pages/blank.html`);
//   ...
//   await browser.close(); await server.close();

import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startStaticServer } from '../server/static.mjs';

/** The `web/` directory (parent of this file's directory). */
export const webRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Chromium flags that give WebGPU and WebGL2 (with EXT_color_buffer_float) headless, on the CPU. */
export const chromiumFlags = [
  '--headless=new',
  '--no-sandbox',
  '--enable-unsafe-webgpu',
  '--enable-unsafe-swiftshader',
  '--use-angle=swiftshader',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

/**
 * Serves `root` on 127.0.0.1 (port 0 = any free port unless given) with the project's security
 * headers (web/server/static.mjs: CSP, COOP/COEP, nosniff; paths outside `root`, malformed
 * and NUL-bearing URLs refused). `opts.crossOrigin`, `opts.imageOrigins`: the two exceptions
 * of static.mjs, for a test that loads an image from another origin. Resolves to
 * `{ url, port, close() }`.
 */
export async function startServer(root = webRoot, port = 0, opts = {}) {
  const s = await startStaticServer(root, { ...opts, port });
  return { url: s.url, port: s.port, close: s.close };
}

/** Path of the Chromium binary: $CHROMIUM, else Debian's /usr/bin/chromium. */
export function chromiumPath() {
  return process.env.CHROMIUM || '/usr/bin/chromium';
}

/** Launches headless Chromium with WebGPU + WebGL2 through SwiftShader and a fresh profile. */
export async function launchBrowser(extraArgs = []) {
  const exe = chromiumPath();
  if (!fs.existsSync(exe)) throw new Error(`Chromium not found at ${exe} (apt-get install chromium)`);
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-chromium-'));
  // `headless: false` because the flags above already ask for the new headless mode, which is
  // the one with WebGPU; Playwright's own headless switch would pick the old one.
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: exe,
    headless: false,
    args: [...chromiumFlags, ...extraArgs],
  });
  const close = context.close.bind(context);
  context.close = async () => {
    await close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  };
  return context;
}

/**
 * A new page whose console messages and uncaught errors are echoed to stderr (prefix `[page]`)
 * and whose Content-Security-Policy violations are recorded (`cspViolations(page)`).
 */
export async function newPage(browser) {
  const page = await browser.newPage();
  page.on('console', (m) => process.stderr.write(`[page ${m.type()}] ${m.text()}\n`));
  page.on('pageerror', (e) => process.stderr.write(`[page error] ${e.message}\n`));
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  return page;
}

/**
 * Starts a server and a browser and opens `pagePath` (relative to web/) in a new page; with
 * `ready`, waits until the page says it is (`window.pgReady === true`). `close()` ends both.
 * `server` and `browser` options pass `startServer`'s options and extra Chromium flags.
 *
 *   let page, close;
 *   before(async () => ({ page, close } = await openPage('tests/pages/blank.html')));
 *   after(() => close?.());
 */
export async function openPage(pagePath, { ready = false, server: serverOpts, browser: flags = [] } = {}) {
  const server = await startServer(undefined, 0, serverOpts);
  const browser = await launchBrowser(flags);
  const close = async () => {
    await browser.close();
    await server.close();
  };
  try {
    const page = await newPage(browser);
    await page.goto(`${server.url}/${pagePath}`);
    if (ready) await page.waitForFunction(() => window.pgReady === true, null, { timeout: 30000 });
    return { server, browser, page, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The CSP violations `page` reported since it loaded (`'directive blockedURI'` strings). */
export function cspViolations(page) {
  return page.evaluate(() => window.__cspViolations || []);
}

/** Chromium's version string, e.g. "Chromium 156.0.8078.108". */
export async function browserVersion(browser) {
  const v = browser.browser ? browser.browser()?.version() : undefined;
  return v ? `Chromium ${v}` : 'Chromium (unknown version)';
}
