// The setup most browser test files share: one headless Chromium page on tests/pages/api.html
// (the package loaded as `window.pg`), opened before the file's tests and closed after them.
//
//   import { apiPage } from './api-page.mjs';
//   const { inPage, ctx } = apiPage();            // registers node:test before/after hooks
//   test('...', async () => { const r = await inPage(async (pg, arg) => ..., arg); });
//   ctx.page, ctx.server, ctx.browser             // live once the before hook ran
import { before, after } from 'node:test';
import { startServer, launchBrowser, newPage } from './harness.mjs';

/**
 * Registers this test file's before/after hooks and returns `{ inPage, ctx }`. `inPage(fn, arg)`
 * runs `fn(pg, arg)` in the page (`fn` travels as source text, so it may use only its
 * arguments). `opts.initScript`: a function run in the page before any of its own scripts (to
 * stub browser APIs).
 */
export function apiPage(opts = {}) {
  const ctx = { server: null, browser: null, page: null };
  before(async () => {
    ctx.server = await startServer();
    ctx.browser = await launchBrowser();
    ctx.page = await newPage(ctx.browser);
    if (opts.initScript) await ctx.page.addInitScript(opts.initScript);
    await ctx.page.goto(`${ctx.server.url}/tests/pages/api.html`);
    await ctx.page.waitForFunction(() => window.pgReady === true, null, { timeout: 30000 });
  });
  after(async () => {
    await ctx.browser?.close();
    await ctx.server?.close();
  });
  const inPage = (fn, arg) =>
    ctx.page.evaluate(([src, a]) => {
      // eslint-disable-next-line no-new-func
      const f = new Function('pg', 'arg', `return (${src})(pg, arg);`);
      return f(window.pg, a);
    }, [fn.toString(), arg]);
  return { inPage, ctx };
}
