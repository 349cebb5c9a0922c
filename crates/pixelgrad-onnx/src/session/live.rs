//! [`LiveBytes`]: what [`super::Session::activation_bytes`] reports.

use rustc_hash::FxHashMap as HashMap;

use super::V;

/// The device bytes of the values a run passes between nodes, while it walks the graph: each
/// storage counted once however many values share it (reshapes), 8-bit storage at one byte
/// per element.
#[derive(Default)]
pub(super) struct LiveBytes {
    /// Per storage address: the values holding it and its bytes.
    by_addr: HashMap<usize, (usize, usize)>,
    live: usize,
    pub(super) peak: usize,
}

impl LiveBytes {
    pub(super) fn add(&mut self, v: &V) {
        if let V::Dev { t, .. } = v {
            let e = self.by_addr.entry(t.storage().addr()).or_insert((0, t.numel() * t.storage_dtype().size_bytes()));
            e.0 += 1;
            if e.0 == 1 {
                self.live += e.1;
                self.peak = self.peak.max(self.live);
            }
        }
    }
    pub(super) fn remove(&mut self, v: &V) {
        if let V::Dev { t, .. } = v {
            let addr = t.storage().addr();
            if let Some(e) = self.by_addr.get_mut(&addr) {
                e.0 -= 1;
                if e.0 == 0 {
                    self.live -= e.1;
                    self.by_addr.remove(&addr);
                }
            }
        }
    }
}
