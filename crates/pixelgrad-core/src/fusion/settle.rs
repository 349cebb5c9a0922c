//! Settling: computing every pending value some tensor still holds, at a flush or a step
//! boundary, in the order they were made. Elementwise results are grouped into launches with
//! several outputs where the backend groups ([`FusionDevice::group_key`]): a group stays open
//! until it is full, until a result reads one of its members, or to the end, so results of
//! one key made between results of other keys still meet. Values that can take an epilogue
//! (matmuls, some reductions) run last: a pending result of one computed first takes it as
//! its epilogue.

use super::device::FusionDevice;
use super::epilogue::epilogue_of;
use super::realise::realise;
use super::state::FusionState;
use super::storage::Storage;
use crate::kernel::fuse::Pending;
use crate::Result;

/// Results waiting to run together: `(storage, computation)`, all of one key.
struct Group {
    key: (u32, u32),
    members: Vec<(Storage, Pending<Storage>)>,
}

/// Computes every pending value still held, oldest first, and starts a new generation.
pub fn settle<D: FusionDevice>(d: &D, state: &FusionState) -> Result<()> {
    state.new_generation();
    let grouping = d.limits().group;
    let mut open: Vec<Group> = Vec::new();
    let mut last = Vec::new();
    for w in state.take_owed() {
        let Some(s) = w.upgrade() else { continue };
        let Some(v) = s.as_pending() else { continue };
        if v.matmul().is_some() || v.reduce().is_some_and(|r| d.reduce_takes_epilogue(r)) {
            last.push(s);
            continue;
        }
        if v.reduce().is_some() {
            realise(d, "settle", &s)?;
            continue;
        }
        let Some(p) = v.map_pending().map(|p| p.clone()) else { continue };
        if !grouping {
            realise(d, "settle", &s)?;
            continue;
        }
        // Groups holding an input of this result run first.
        while let Some(g) = open.iter().position(|g| p.leaves.iter().any(|(l, _)| g.members.iter().any(|(m, _)| m.ptr_eq(l)))) {
            launch(d, open.remove(g))?;
        }
        if epilogue_of(d, &p).is_some() {
            realise(d, "settle", &s)?;
            continue;
        }
        let Some(key) = d.group_key(&p)? else {
            realise(d, "settle", &s)?;
            continue;
        };
        // One that would not fit runs the open group of its key and starts the next.
        if let Some(g) = open.iter().position(|g| g.key == key && !d.group_fits(&g.members.iter().map(|(_, m)| m).collect::<Vec<_>>(), &p))
        {
            launch(d, open.remove(g))?;
        }
        match open.iter_mut().find(|g| g.key == key) {
            Some(g) => g.members.push((s, p)),
            None => open.push(Group { key, members: vec![(s, p)] }),
        }
    }
    for g in open {
        launch(d, g)?;
    }
    for s in last {
        realise(d, "settle", &s)?;
    }
    Ok(())
}

/// Runs a group: a lone member as its usual launch.
fn launch<D: FusionDevice>(d: &D, group: Group) -> Result<()> {
    if group.members.len() <= 1 {
        for (s, _) in &group.members {
            realise(d, "settle", s)?;
        }
        return Ok(());
    }
    let members: Vec<&Pending<Storage>> = group.members.iter().map(|(_, p)| p).collect();
    let outs = d.run_group(&members)?;
    for ((s, _), t) in group.members.iter().zip(outs) {
        if let Some(v) = s.as_pending() {
            v.finish(Storage::new(t));
        }
    }
    Ok(())
}
