//! The texture pool: textures no tensor or step plan holds, kept for reuse by
//! (width, height, internal format), within a byte budget.
//!
//! A dropped tensor's texture goes back at once (GL orders the draws that still read it).
//! Reuse takes the most recently returned texture of the key. Past the budget
//! ([`crate::options::DEFAULT_POOL_BUDGET`] unless configured) the least recently returned textures are
//! deleted, whatever their key, so a workload that keeps changing shapes holds at most the
//! budget in free textures on top of what its tensors and plans hold. Deleting a texture
//! that queued draws still read is safe in GL: the driver keeps its storage until they ran.
//! Texture sizes are bucketed ([`crate::layout`]), so nearby tensor sizes share keys.
//!
//! The pool only keeps the books; [`crate::device::GlDevice`] creates and deletes the GL
//! objects (and detaches deleted textures from the plans' framebuffers).

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Pool key: texture width, height and internal format.
pub(crate) type PoolKey = (u32, u32, u32);

/// Free textures (`T`: `glow::Texture`; a stand-in in the unit tests) in least-recently-
/// returned order.
pub(crate) struct TexturePool<T> {
    /// By the tick at which they were returned (oldest first): key, texture, bytes.
    free: BTreeMap<u64, (PoolKey, T, u64)>,
    /// Ticks of the free textures of each key; reuse takes the newest.
    keys: HashMap<PoolKey, BTreeSet<u64>>,
    clock: u64,
    /// Bytes of the free textures.
    pub(crate) bytes: u64,
    /// Most free bytes kept: past it the oldest are given up (see [`TexturePool::evict`]).
    pub(crate) budget: u64,
}

impl<T: Copy> TexturePool<T> {
    pub(crate) fn new(budget: u64) -> Self {
        TexturePool { free: BTreeMap::new(), keys: HashMap::new(), clock: 0, bytes: 0, budget }
    }

    /// A free texture of exactly this key, if any (the most recently returned one).
    pub(crate) fn take(&mut self, key: PoolKey) -> Option<T> {
        let ticks = self.keys.get_mut(&key)?;
        let tick = ticks.pop_last()?;
        if ticks.is_empty() {
            self.keys.remove(&key);
        }
        let (_, tex, bytes) = self.free.remove(&tick)?;
        self.bytes -= bytes;
        Some(tex)
    }

    /// Returns a texture of `bytes` to the pool.
    pub(crate) fn put(&mut self, key: PoolKey, tex: T, bytes: u64) {
        self.clock += 1;
        self.keys.entry(key).or_default().insert(self.clock);
        self.free.insert(self.clock, (key, tex, bytes));
        self.bytes += bytes;
    }

    /// True when the free textures exceed the budget.
    pub(crate) fn over_budget(&self) -> bool {
        self.bytes > self.budget
    }

    /// Takes out the least recently returned textures until the rest fit the budget; the
    /// caller deletes them.
    pub(crate) fn evict(&mut self) -> Vec<(PoolKey, T, u64)> {
        let mut out = Vec::new();
        while self.bytes > self.budget {
            let Some((tick, (key, tex, bytes))) = self.free.pop_first() else { break };
            self.forget(key, tick);
            self.bytes -= bytes;
            out.push((key, tex, bytes));
        }
        out
    }

    /// Takes out every free texture; the caller deletes them.
    pub(crate) fn drain(&mut self) -> Vec<(PoolKey, T, u64)> {
        self.keys.clear();
        self.bytes = 0;
        std::mem::take(&mut self.free).into_values().collect()
    }

    /// Number of free textures.
    pub(crate) fn len(&self) -> usize {
        self.free.len()
    }

    fn forget(&mut self, key: PoolKey, tick: u64) {
        if let Some(set) = self.keys.get_mut(&key) {
            set.remove(&tick);
            if set.is_empty() {
                self.keys.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_takes_the_newest_and_eviction_the_oldest() {
        let mut p: TexturePool<u32> = TexturePool::new(250);
        let (a, b) = ((5, 5, 1), (7, 6, 1));
        p.put(a, 1, 100);
        p.put(b, 2, 100);
        p.put(a, 3, 100);
        assert!(p.over_budget());
        // The oldest (1) goes, whatever its key, until the rest fit.
        assert_eq!(p.evict(), vec![(a, 1, 100)]);
        assert_eq!((p.bytes, p.len()), (200, 2));
        assert_eq!(p.take(a), Some(3));
        assert_eq!(p.take(a), None);
        p.put(a, 4, 100);
        p.put(a, 5, 100);
        assert_eq!(p.take(a), Some(5));
        p.budget = 0;
        assert_eq!(p.evict(), vec![(b, 2, 100), (a, 4, 100)]);
        assert_eq!((p.bytes, p.len()), (0, 0));
        p.put(b, 6, 10);
        assert_eq!(p.drain(), vec![(b, 6, 10)]);
        assert_eq!((p.bytes, p.len(), p.take(b)), (0, 0, None));
    }
}
