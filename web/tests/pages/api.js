// The package as `window.pg` for the tests, which drive it with page.evaluate. An external
// module (not an inline script): pages are served with a CSP that forbids inline scripts.
import * as pg from '/pkg/index.js';

window.pg = pg;
window.pgReady = true;
