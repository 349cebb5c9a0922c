//! Step plans (see [`crate::Backend::begin_step`]): the recordings of training steps, in the
//! vocabulary of [`crate::recording`], with a *checked* replay policy. A [`Plan`] is:
//! - **written memory** ([`Owned`]): the memory the step's launches write, in the order the
//!   step allocates it: the step's [`Source::Written`](crate::recording::Source::Written)
//!   slots. It is the plan's own and reused by every replay, except while a caller still holds
//!   the previous step's value in it (then the allocation takes fresh memory, which becomes
//!   the entry): the rule `recording` states for written memory;
//! - **launches** (`L`, the backend's: a bind group, a framebuffer and program): each recorded
//!   with the memory it bound. Everything else a step binds is its input (parameters,
//!   optimizer state, the batch): the other parity's written memory, or memory from before
//!   the plan.
//!
//! Unlike a trace, the step's code runs again: each allocation and launch asks its plan entry
//! ([`StepPlans::alloc`], [`StepPlans::launch`]) and the backend reuses it only when it fits
//! the call (the size class, the same bound memory); otherwise it does what it does outside a
//! step and the result becomes the entry. So a replay can never change a result.
//!
//! Plans are kept per `(key, parity)`; a key's parity toggles at every [`StepPlans::begin`],
//! so even and odd steps alternate between two plans (the ping-pong of parameters and
//! optimizer state). At most [`MAX_PLAN_KEYS`] keys are kept; the least recently used key's
//! pair goes first.

use std::collections::HashMap;
use std::rc::Rc;

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

/// Memory written by a step, owned by its plan (`M`: a buffer, a texture, with its size).
pub struct Owned<M> {
    pub mem: M,
    /// Held by the plan and by the tensor the memory was last handed to.
    pub token: Rc<()>,
}

impl<M> Owned<M> {
    /// True when no live tensor holds the memory.
    pub fn is_free(&self) -> bool {
        Rc::strong_count(&self.token) == 1
    }
}

/// The memory of retired entries that nothing holds (it goes back to the pool). Memory a
/// tensor still holds passes to it: dropping the plan's token leaves the tensor's the last,
/// and the tensor gives the memory back when dropped.
pub fn free_memory<M>(written: Vec<Owned<M>>) -> impl Iterator<Item = M> {
    written.into_iter().filter(Owned::is_free).map(|e| e.mem)
}

/// One step's recording: its written memory and its launches, in call order.
pub struct Plan<M, L> {
    pub written: Vec<Owned<M>>,
    pub launches: Vec<L>,
}

impl<M, L> Default for Plan<M, L> {
    fn default() -> Self {
        Plan { written: Vec::new(), launches: Vec::new() }
    }
}

/// What the open step's next allocation gets ([`StepPlans::alloc`]).
pub enum Alloc<M> {
    /// No plan records it (outside a step, plans dropped, past [`MAX_PLAN_ENTRIES`]):
    /// allocate as outside a step.
    Eager,
    /// The plan's memory, free and fitting; the tensor handed it keeps the token.
    Planned(M, Rc<()>),
    /// The `k`-th allocation has no free fitting entry: allocate, then [`StepPlans::place`].
    Place(usize),
}

/// The open step's next launch in its plan ([`StepPlans::launch`]).
pub struct NextLaunch<'a, L> {
    list: &'a mut Vec<L>,
    at: usize,
}

impl<'a, L> NextLaunch<'a, L> {
    /// The launch recorded at this point of the step, if any.
    pub fn recorded(&mut self) -> Option<&mut L> {
        self.list.get_mut(self.at)
    }

    /// Records `e` at this point of the step (replacing what was there).
    pub fn record(self, e: L) -> &'a mut L {
        if self.at < self.list.len() {
            self.list[self.at] = e;
        } else {
            self.list.push(e);
        }
        &mut self.list[self.at]
    }
}

struct Active {
    key: u64,
    parity: u8,
    cursor: Cursor,
    /// False once the plans were dropped during the step: the rest of it runs eagerly.
    recording: bool,
}

/// Every plan of a backend: `M` its written memory, `L` its launch entries.
pub struct StepPlans<M, L> {
    plans: HashMap<(u64, u8), Plan<M, L>>,
    /// Per key: parity of its next step, and when it was last used.
    keys: HashMap<u64, (u8, u64)>,
    clock: u64,
    active: Option<Active>,
}

impl<M, L> Default for StepPlans<M, L> {
    fn default() -> Self {
        StepPlans { plans: HashMap::new(), keys: HashMap::new(), clock: 0, active: None }
    }
}

impl<M: Clone, L> StepPlans<M, L> {
    /// True while a step is open.
    pub fn is_open(&self) -> bool {
        self.active.is_some()
    }

    /// Opens a step of `key` (the caller checks [`StepPlans::is_open`] first) and returns the
    /// plans evicted to make room, for the backend to release.
    pub fn begin(&mut self, key: u64) -> Vec<Plan<M, L>> {
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
    pub fn current(&mut self) -> Option<(&mut Plan<M, L>, &mut Cursor)> {
        let a = self.active.as_mut().filter(|a| a.recording)?;
        let plan = self.plans.entry((a.key, a.parity)).or_default();
        Some((plan, &mut a.cursor))
    }

    /// The open step's next allocation, checked against its plan: the entry's memory when it
    /// is free and `fits`, else where to [`StepPlans::place`] fresh memory.
    pub fn alloc(&mut self, fits: impl FnOnce(&M) -> bool) -> Alloc<M> {
        let Some((plan, at)) = self.current() else { return Alloc::Eager };
        let k = at.alloc;
        if k >= MAX_PLAN_ENTRIES || k > plan.written.len() {
            return Alloc::Eager;
        }
        at.alloc += 1;
        match plan.written.get(k) {
            Some(e) if e.is_free() && fits(&e.mem) => Alloc::Planned(e.mem.clone(), e.token.clone()),
            _ => Alloc::Place(k),
        }
    }

    /// Makes `mem` the open step's `k`-th written memory ([`Alloc::Place`]): the token for the
    /// tensor handed it (`None` if the plans were dropped meanwhile: the memory is not the
    /// plan's), and the memory it replaces when nothing holds that (for the pool).
    pub fn place(&mut self, k: usize, mem: M) -> (Option<Rc<()>>, Option<M>) {
        let Some((plan, _)) = self.current().filter(|(p, _)| k <= p.written.len()) else { return (None, None) };
        let token = Rc::new(());
        let entry = Owned { mem, token: token.clone() };
        let old = if k < plan.written.len() {
            Some(std::mem::replace(&mut plan.written[k], entry))
        } else {
            plan.written.push(entry);
            None
        };
        (Some(token), old.into_iter().flat_map(|o| free_memory(vec![o])).next())
    }

    /// The open step's next launch in its plan; `None` when no plan records it (outside a
    /// step, plans dropped, past [`MAX_PLAN_ENTRIES`]): the backend launches as outside a step.
    pub fn launch(&mut self) -> Option<NextLaunch<'_, L>> {
        let (plan, at) = self.current()?;
        let j = at.launch;
        if j >= MAX_PLAN_ENTRIES || j > plan.launches.len() {
            return None;
        }
        at.launch += 1;
        Some(NextLaunch { list: &mut plan.launches, at: j })
    }

    /// Every kept plan, for updates that concern all of them.
    pub fn plans_mut(&mut self) -> impl Iterator<Item = &mut Plan<M, L>> + '_ {
        self.plans.values_mut()
    }

    /// Removes every plan; a step in progress continues eagerly.
    pub fn take_all(&mut self) -> Vec<Plan<M, L>> {
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

    type Plans = StepPlans<u32, u32>;

    #[test]
    fn parities_alternate_per_key_and_the_oldest_key_goes_first() {
        let mut p = Plans::default();
        let mark = |p: &mut Plans, key: u64, v: u32| {
            assert!(!p.is_open());
            assert!(p.begin(key).is_empty());
            let (plan, cur) = p.current().unwrap();
            plan.launches.push(v);
            cur.launch += 1;
            assert!(p.end());
        };
        let launches = |plans: Vec<Plan<u32, u32>>| {
            let mut l: Vec<Vec<u32>> = plans.into_iter().map(|p| p.launches).collect();
            l.sort();
            l
        };
        for v in 0..4 {
            mark(&mut p, 1, v);
        }
        // Key 1 steps 0 and 2 went to one plan, 1 and 3 to the other.
        assert_eq!(launches(p.take_all()), vec![vec![0, 2], vec![1, 3]]);
        // Four keys fit; a fifth evicts the least recently used (key 2, both parities).
        for k in 2..6 {
            mark(&mut p, k, k as u32);
            mark(&mut p, k, k as u32 + 100);
        }
        mark(&mut p, 3, 0);
        assert_eq!(launches(p.begin(10)), vec![vec![2], vec![102]]);
        // Cursors restart at every step; dropping plans mid-step stops recording.
        assert_eq!(p.current().map(|(_, c)| *c), Some(Cursor::default()));
        p.take_all();
        assert!(p.current().is_none() && p.is_open());
        assert!(matches!(p.alloc(|_| true), Alloc::Eager) && p.launch().is_none());
        assert!(p.end() && !p.end());
    }

    #[test]
    fn written_memory_is_reused_when_free_and_fitting_and_launches_in_order() {
        let mut p = Plans::default();
        assert!(matches!(p.alloc(|_| true), Alloc::Eager), "outside a step");
        // Step 0 records two allocations and a launch.
        p.begin(1);
        let Alloc::Place(0) = p.alloc(|_| true) else { panic!("an empty plan places") };
        let (held, old) = p.place(0, 10);
        assert!(old.is_none());
        let Alloc::Place(1) = p.alloc(|_| true) else { panic!() };
        let (free, _) = p.place(1, 11);
        drop(free);
        let mut next = p.launch().unwrap();
        assert!(next.recorded().is_none());
        *next.record(5) += 1;
        p.end();
        // Step 1 (the other parity) then step 2 (step 0's plan again).
        p.begin(1);
        p.end();
        p.begin(1);
        // Entry 0 is still held by a tensor: fresh memory replaces it, the old passes to the
        // tensor (not given back).
        let Alloc::Place(0) = p.alloc(|_| true) else { panic!("a held entry is not reused") };
        assert_eq!(p.place(0, 20).1, None);
        // Entry 1 is free and fits.
        let Alloc::Planned(11, token) = p.alloc(|&m| m == 11) else { panic!("a free entry is reused") };
        drop(token);
        // A third allocation that does not fit the (absent) entry; a launch recorded before.
        let Alloc::Place(2) = p.alloc(|_| false) else { panic!() };
        assert_eq!(p.launch().unwrap().recorded().copied(), Some(6));
        p.end();
        // Step 3 leaves step 1's empty plan; step 4 finds entry 1 no longer fitting: the free
        // memory it replaces goes back to the caller.
        p.begin(1);
        p.end();
        p.begin(1);
        let Alloc::Planned(20, t) = p.alloc(|_| true) else { panic!() };
        drop((t, held));
        let Alloc::Place(1) = p.alloc(|&m| m != 11) else { panic!() };
        assert_eq!(p.place(1, 21).1, Some(11));
        // Nothing placed at 2 yet, so a fourth allocation is eager.
        assert!(matches!(p.alloc(|_| true), Alloc::Place(2)));
        assert!(matches!(p.alloc(|_| true), Alloc::Eager));
        p.end();
        let plans = p.take_all();
        let mems: Vec<u32> = plans.into_iter().flat_map(|pl| free_memory(pl.written)).collect();
        assert_eq!(mems, [20, 21]);
    }
}
