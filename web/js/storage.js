// Saved models in IndexedDB (database `pixelgrad`, store `models`, keyed by name): the
// safetensors bytes plus the layer config and compile options. Works in pages and workers.

const DB = 'pixelgrad';
const STORE = 'models';
// fit's autosaved checkpoints (weights, optimizer state, loop state), keyed by name (fit.js)
const CHECKPOINTS = 'checkpoints';

function req(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(new Error(`IndexedDB: ${r.error && r.error.message ? r.error.message : r.error}`));
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

async function withStore(mode, f, store = STORE) {
  const db = await open();
  try {
    const tx = db.transaction(store, mode);
    const done = new Promise((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onabort = tx.onerror = () => reject(new Error(`IndexedDB: ${tx.error && tx.error.message ? tx.error.message : 'transaction failed'}`));
    });
    const result = await f(tx.objectStore(store));
    await done;
    return result;
  } finally {
    db.close();
  }
}

export const putModel = (record) => withStore('readwrite', (s) => req(s.put(record)));
export const getModel = (name) => withStore('readonly', (s) => req(s.get(name)));
export const deleteModel = (name) => withStore('readwrite', (s) => req(s.delete(name)));
export const allModels = () => withStore('readonly', (s) => req(s.getAll()));
export const putCheckpoint = (record) => withStore('readwrite', (s) => req(s.put(record)), CHECKPOINTS);
export const getCheckpoint = (name) => withStore('readonly', (s) => req(s.get(name)), CHECKPOINTS);
export const deleteCheckpoint = (name) => withStore('readwrite', (s) => req(s.delete(name)), CHECKPOINTS);

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
