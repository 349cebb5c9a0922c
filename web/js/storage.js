// Saved models in IndexedDB (database `pixelgrad`, store `models`, keyed by name): the
// safetensors bytes plus the layer config and compile options. Works in pages and workers.
//
// A write the browser refuses for lack of space (`QuotaExceededError`, thrown by `put` or
// reported by the request or the transaction) is a PixelgradError of kind 'quota' naming the
// record and its size. Autosave asks once for persistent storage (`requestPersistence`), so
// the browser does not evict the saves under storage pressure.
import { PixelgradError } from './errors.js';

const DB = 'pixelgrad';
const STORE = 'models';
// fit's autosaved checkpoints (weights, optimizer state, loop state), keyed by name (fit.js)
const CHECKPOINTS = 'checkpoints';

function isQuota(e) {
  return !!e && (e.name === 'QuotaExceededError' || e.code === 22);
}

/** The 'quota' error for a write of `what` refused with `e`. */
function quotaError(e, what) {
  return new PixelgradError(
    `IndexedDB: the browser refused to store ${what || 'the record'}: this site's storage quota is used up (${e.name}${e.message ? `: ${e.message}` : ''}); ` +
      "free space (pg.removeModel('indexeddb://name'), older autosaves) or let the site keep more data",
    { kind: 'quota', op: 'IndexedDB' },
  );
}

function dbError(e, what) {
  if (isQuota(e)) return quotaError(e, what);
  return new Error(`IndexedDB: ${e && e.message ? e.message : e || 'transaction failed'}`);
}

function req(r, what) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(dbError(r.error, what));
  });
}

async function open() {
  if (typeof indexedDB === 'undefined') throw new Error('IndexedDB is not available in this context');
  const r = indexedDB.open(DB, 2);
  r.onupgradeneeded = () => {
    for (const name of [STORE, CHECKPOINTS]) {
      if (!r.result.objectStoreNames.contains(name)) r.result.createObjectStore(name, { keyPath: 'name' });
    }
  };
  return req(r);
}

async function withStore(mode, f, store = STORE, what = '') {
  const db = await open();
  try {
    const tx = db.transaction(store, mode);
    /** @type {Promise<void>} */
    const done = new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onabort = tx.onerror = () => reject(dbError(tx.error, what));
    });
    done.catch(() => {}); // a failed request rejects first; the transaction's error is the same
    let result;
    try {
      result = await f(tx.objectStore(store));
    } catch (e) {
      // `put` throws QuotaExceededError synchronously in some browsers
      throw isQuota(e) ? quotaError(e, what) : e;
    }
    await done;
    return result;
  } finally {
    db.close();
  }
}

function describe(record, kind) {
  const b = record && (record.bytes || record.checkpoint);
  const size = b && typeof b.length === 'number' ? `, ${b.length} bytes` : '';
  return `${kind} '${record && record.name}'${size}`;
}

export const putModel = (record) => withStore('readwrite', (s) => req(s.put(record), describe(record, 'model')), STORE, describe(record, 'model'));
export const getModel = (name) => withStore('readonly', (s) => req(s.get(name)));
export const deleteModel = (name) => withStore('readwrite', (s) => req(s.delete(name)));
export const allModels = () => withStore('readonly', (s) => req(s.getAll()));
export const putCheckpoint = (record) =>
  withStore('readwrite', (s) => req(s.put(record), describe(record, 'autosave')), CHECKPOINTS, describe(record, 'autosave'));
export const getCheckpoint = (name) => withStore('readonly', (s) => req(s.get(name)), CHECKPOINTS);
export const deleteCheckpoint = (name) => withStore('readwrite', (s) => req(s.delete(name)), CHECKPOINTS);

let persistence = null;

/**
 * Asks the browser once per page (or worker) to keep this site's storage under pressure
 * (`navigator.storage.persist()`); resolves to its answer, or null where the API is missing
 * or refuses to answer (workers have no `persist`).
 */
export function requestPersistence() {
  if (!persistence) {
    const storage = typeof navigator !== 'undefined' ? navigator.storage : undefined;
    persistence = storage && typeof storage.persist === 'function'
      ? Promise.resolve()
        .then(() => storage.persist())
        .then((v) => !!v, () => null)
      : Promise.resolve(null);
  }
  return persistence;
}

/** `indexeddb://name` → `{ scheme: 'indexeddb', name }`. */
export function parseUrl(url, what) {
  const m = typeof url === 'string' ? /^([a-z]+):\/\/(.+)$/.exec(url) : null;
  if (!m || !['indexeddb', 'downloads'].includes(m[1])) {
    throw new Error(`${what}: expects 'indexeddb://name' or 'downloads://name', got ${JSON.stringify(url)}`);
  }
  return { scheme: m[1], name: m[2] };
}

/** Offers `bytes` as a file download (pages only). */
export function download(bytes, fileName) {
  if (typeof document === 'undefined') throw new Error("save('downloads://...') needs a page (no document in a worker)");
  const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
