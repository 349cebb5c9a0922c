// The Flower tests drive the library through `window.pg` with page.evaluate (see flower.html).
import * as pg from '/pkg/index.js';

window.pg = pg;
window.pgReady = true;
