//! Bookkeeping shared by the GPU backends' step plans (see [`crate::Backend::begin_step`]):
//! which plan a step uses, and how far into it the step is. The plans' contents (buffers and
//! bind groups, textures and framebuffers) belong to each backend.
//!
//! Plans are kept per `(key, parity)`; a key's parity toggles at every [`StepPlans::begin`],
//! so even and odd steps alternate between two plans (the ping-pong of parameters and
//! optimizer state). At most [`MAX_PLAN_KEYS`] keys are kept; the least recently used key's
//! pair goes first.

use std::collections::HashMap;

/// Keys whose plans are kept.
pub const MAX_PLAN_KEYS: usize = 4;
/// Entries per plan list past which a step stops recording and runs eagerly: a "step" that
/// never repeats must not grow a plan without bound.
pub const MAX_PLAN_ENTRIES: usize = 1 << 16;

/// How far into its plan the open step is: its next allocation and next launch / draw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    pub alloc: usize,
    pub launch: usize,
}

struct Active {
    key: u64,
    parity: u8,
    cursor: Cursor,
    /// False once the plans were dropped during the step: the rest of it runs eagerly.
    recording: bool,
}

/// Every plan of a backend, `P` being the backend's plan type.
pub struct StepPlans<P> {
    plans: HashMap<(u64, u8), P>,
    /// Per key: parity of its next step, and when it was last used.
    keys: HashMap<u64, (u8, u64)>,
    clock: u64,
    active: Option<Active>,
}

impl<P> Default for StepPlans<P> {
    fn default() -> Self {
        StepPlans { plans: HashMap::new(), keys: HashMap::new(), clock: 0, active: None }
    }
}

impl<P: Default> StepPlans<P> {
    /// True while a step is open.
    pub fn is_open(&self) -> bool {
        self.active.is_some()
    }

    /// Opens a step of `key` (the caller checks [`StepPlans::is_open`] first) and returns the
    /// plans evicted to make room, for the backend to release.
    pub fn begin(&mut self, key: u64) -> Vec<P> {
        self.clock += 1;
        let mut evicted = Vec::new();
        if !self.keys.contains_key(&key) && self.keys.len() >= MAX_PLAN_KEYS {
            if let Some((&old, _)) = self.keys.iter().min_by_key(|(_, v)| v.1) {
                self.keys.remove(&old);
                evicted.extend(self.plans.remove(&(old, 0)));
                evicted.extend(self.plans.remove(&(old, 1)));
            }
        }
        let e = self.keys.entry(key).or_insert((0, 0));
        let parity = e.0;
        e.0 ^= 1;
        e.1 = self.clock;
        self.active = Some(Active { key, parity, cursor: Cursor::default(), recording: true });
        evicted
    }

    /// Closes the open step; false if none was open.
    pub fn end(&mut self) -> bool {
        self.active.take().is_some()
    }

    /// The open step's plan and cursor; `None` outside a step or after [`StepPlans::take_all`].
    pub fn current(&mut self) -> Option<(&mut P, &mut Cursor)> {
        let a = self.active.as_mut().filter(|a| a.recording)?;
        let plan = self.plans.entry((a.key, a.parity)).or_default();
        Some((plan, &mut a.cursor))
    }

    /// Every kept plan, for updates that concern all of them.
    pub fn plans_mut(&mut self) -> impl Iterator<Item = &mut P> + '_ {
        self.plans.values_mut()
    }

    /// Removes every plan; a step in progress continues eagerly.
    pub fn take_all(&mut self) -> Vec<P> {
        if let Some(a) = self.active.as_mut() {
            a.recording = false;
        }
        self.keys.clear();
        self.plans.drain().map(|(_, p)| p).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parities_alternate_per_key_and_the_oldest_key_goes_first() {
        let mut p: StepPlans<Vec<u32>> = StepPlans::default();
        let mark = |p: &mut StepPlans<Vec<u32>>, key: u64, v: u32| {
            assert!(!p.is_open());
            assert!(p.begin(key).is_empty());
            let (plan, cur) = p.current().unwrap();
            plan.push(v);
            cur.alloc += 1;
            assert!(p.end());
        };
        for v in 0..4 {
            mark(&mut p, 1, v);
        }
        // Key 1 steps 0 and 2 went to one plan, 1 and 3 to the other.
        let mut plans = p.take_all();
        plans.sort();
        assert_eq!(plans, vec![vec![0, 2], vec![1, 3]]);
        // Four keys fit; a fifth evicts the least recently used (key 2, both parities).
        for k in 2..6 {
            mark(&mut p, k, k as u32);
            mark(&mut p, k, k as u32 + 100);
        }
        mark(&mut p, 3, 0);
        let evicted = p.begin(10);
        assert_eq!(evicted.len(), 2);
        assert!(evicted.iter().all(|e| e == &vec![2] || e == &vec![102]), "{evicted:?}");
        // Cursors restart at every step; dropping plans mid-step stops recording.
        assert_eq!(p.current().map(|(_, c)| *c), Some(Cursor::default()));
        p.take_all();
        assert!(p.current().is_none() && p.is_open());
        assert!(p.end() && !p.end());
    }
}
