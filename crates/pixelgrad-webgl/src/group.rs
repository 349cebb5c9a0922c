//! Settling and grouped draws. [`settle`] draws every pending result (`fusion.rs`) some tensor
//! still holds, at the end of a step or a flush; the backend calls it, fusion never does.
//!
//! Grouped draws: at a settle, pending elementwise results whose
//! output textures have the same size are drawn together, one draw with several render
//! targets instead of one draw each. An optimizer's update of one parameter is the typical group: Adam's new `m`, `v` and
//! parameter are three pending results over the same gradient and old state, so one draw
//! writes all three.
//!
//! A group's members share:
//! - the size of their output textures (so one viewport covers all of them; each is written
//!   up to its own length and is 0 past it, as after a single draw);
//! - the fast read (every input has the member's shape or is one element: no index
//!   arithmetic), members needing broadcast strides are drawn alone;
//! - at most [`MAP_MAX_INPUTS`] distinct inputs, [`GROUP_MAX_PARAMS`] parameters in all and
//!   [`Fusion::group_targets`] outputs (MAX_DRAW_BUFFERS,
//!   MAX_COLOR_ATTACHMENTS, [`GROUP_MAX_TARGETS`]).
//!
//! Groups stay open while the pending results are walked in the order they were made, one
//! per texture size. A result that reads a member of an open group as an input (not inlined:
//! a chain that did not fit one program) has that group drawn first.
//!
//! Each member is rendered with the same code as its single draw (`dialect::map_group_source`),
//! so results are bit-identical to drawing them one by one. The program is cached by
//! structure: each member's kernel, which inputs it reads and which inputs are one element,
//! never by shapes. Inside a step the grouped draw is planned like any other (its framebuffer
//! keeps every target attached, `plan.rs`).

use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::kernel::fuse::{read_mode, Lazy, Pending};
use pixelgrad_core::{Result, Shape, Storage};

use crate::context::Shared;
use crate::dialect::{
    map_config, ProgramSpec, GROUP_LENS, GROUP_MAX_PARAMS, GROUP_MAX_TARGETS, GROUP_PARAMS, MAP_GROUP, MAP_INPUTS, MAP_MAX_INPUTS,
};
use crate::fusion::{tensor_of, Fusion};
use crate::launch::Pass;
use crate::options::WebGlReport;
use crate::program::GroupDef;
use crate::texture::GlTensor;

/// Most outputs of one grouped draw on this context (below 2: no grouping).
pub(crate) fn max_targets(gl: &glow::Context, report: &WebGlReport) -> usize {
    // SAFETY: plain state query on the current context.
    let attachments = unsafe { gl.get_parameter_i32(glow::MAX_COLOR_ATTACHMENTS) }.max(0) as usize;
    (report.max_draw_buffers as usize).min(attachments).min(GROUP_MAX_TARGETS)
}

/// A pending result waiting in an open group.
struct Member {
    storage: Storage,
    pending: Pending<Storage>,
}

/// Results waiting to be drawn together, into textures of `dims` texels.
struct Group {
    dims: (u32, u32),
    members: Vec<Member>,
}

/// Whether `p` may join a group at all: read without index arithmetic.
fn groupable(p: &Pending<Storage>) -> bool {
    let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    p.inputs() <= MAP_MAX_INPUTS && p.launch.params.len() <= GROUP_MAX_PARAMS && read_mode(&shapes, &p.shape).0
}

fn same_leaf(a: &(Storage, Shape), b: &(Storage, Shape)) -> bool {
    Storage::ptr_eq(&a.0, &b.0) && a.1 == b.1
}

/// Whether `p` can join `group` within the limits of one draw.
fn fits(fu: &Fusion, group: &Group, p: &Pending<Storage>) -> bool {
    if group.members.len() >= fu.group_targets {
        return false;
    }
    let params: usize = group.members.iter().map(|m| m.pending.launch.params.len()).sum::<usize>() + p.launch.params.len();
    let mut leaves: Vec<&(Storage, Shape)> = Vec::new();
    for l in group.members.iter().flat_map(|m| &m.pending.leaves).chain(&p.leaves) {
        if !leaves.iter().any(|m| same_leaf(m, l)) {
            leaves.push(l);
        }
    }
    params <= GROUP_MAX_PARAMS && leaves.len() <= MAP_MAX_INPUTS
}

/// Draws every pending result some tensor still holds, oldest first; results of the same
/// size together where the context has multiple render targets (`group.rs`).
pub(crate) fn settle(sh: &Rc<Shared>, fu: &Fusion) -> Result<()> {
    crate::fusion::new_generation(&fu.generation);
    let list = std::mem::take(&mut *fu.lazies.borrow_mut());
    if fu.group_targets >= 2 {
        let live: Vec<Storage> = list.iter().filter_map(|w| w.upgrade()).collect();
        return settle_grouped(sh, fu, &live);
    }
    // Matmuls last (or when something reads them): a pending result of one drawn first takes
    // it as its epilogue.
    let mut matmuls = Vec::new();
    for w in list {
        if let Some(s) = w.upgrade() {
            if crate::fusion::deferred(&s) {
                matmuls.push(s);
            } else if crate::fusion::undone(&s) {
                tensor_of(&s, sh, "settle")?;
            }
        }
    }
    for m in matmuls {
        tensor_of(&m, sh, "settle")?;
    }
    Ok(())
}

/// Draws the still-pending results of `live` (oldest first), grouping those that can be
/// drawn together (see the module docs). Groups stay open until they are full, until a
/// result reads one of their members, or to the end, so results of one size made between
/// results of other sizes still meet.
fn settle_grouped(sh: &Rc<Shared>, fu: &Fusion, live: &[Storage]) -> Result<()> {
    let mut open: Vec<Group> = Vec::new();
    let mut matmuls = Vec::new();
    for s in live {
        if crate::fusion::deferred(s) {
            // Matmuls and reductions are drawn last (or when something reads them): a pending
            // result of one drawn below takes it as its epilogue.
            matmuls.push(s);
            continue;
        }
        let Some(lazy) = s.downcast::<Lazy>() else { continue };
        let Some(p) = lazy.pending().map(|p| p.clone()) else { continue };
        // Groups holding an input of this result are drawn first.
        while let Some(g) = open.iter().position(|g| p.leaves.iter().any(|(l, _)| g.members.iter().any(|m| Storage::ptr_eq(&m.storage, l))))
        {
            draw(sh, open.remove(g))?;
        }
        if !groupable(&p) || crate::fusion::epilogue_of(&p).is_some() {
            tensor_of(s, sh, "settle")?;
            continue;
        }
        let dims = sh.layout(p.shape.numel(), "settle")?;
        if let Some(g) = open.iter().position(|g| g.dims == dims && !fits(fu, g, &p)) {
            draw(sh, open.remove(g))?;
        }
        let member = Member { storage: s.clone(), pending: p };
        match open.iter_mut().find(|g| g.dims == dims) {
            Some(g) => g.members.push(member),
            None => open.push(Group { dims, members: vec![member] }),
        }
    }
    for g in open {
        draw(sh, g)?;
    }
    for m in matmuls {
        tensor_of(m, sh, "settle")?;
    }
    Ok(())
}

/// Draws a group: a lone member as a single draw, as without grouping.
fn draw(sh: &Rc<Shared>, group: Group) -> Result<()> {
    match group.members.as_slice() {
        [] => Ok(()),
        [m] => tensor_of(&m.storage, sh, "settle").map(|_| ()),
        members => draw_group(sh, members),
    }
}

fn draw_group(sh: &Rc<Shared>, group: &[Member]) -> Result<()> {
    let op = "fused";
    let mut leaves: Vec<(Storage, Shape)> = Vec::new();
    let mut members = Vec::with_capacity(group.len());
    let mut params: Vec<f32> = Vec::new();
    for m in group {
        let inputs: Vec<usize> = m
            .pending
            .leaves
            .iter()
            .map(|l| match leaves.iter().position(|k| same_leaf(k, l)) {
                Some(i) => i,
                None => {
                    leaves.push(l.clone());
                    leaves.len() - 1
                }
            })
            .collect();
        let kernel = sh.map_kernel(op, &m.pending.launch.kernel, || format!("fused {}", m.pending.label()))?;
        members.push((kernel, inputs));
        params.extend_from_slice(&m.pending.launch.params);
    }
    let lens: Vec<usize> = group.iter().map(|m| m.pending.shape.numel()).collect();
    let len = lens.iter().copied().max().unwrap_or(0);
    // Bit `1 + i` when input `i` is one element (read at index 0), as for a single draw; a
    // group of one-element outputs reads index 0 of everything anyway.
    let scalars = if len > 1 { leaves.iter().enumerate().filter(|(_, (_, s))| s.numel() == 1).fold(0, |b, (i, _)| b | 1 << i) } else { 0 };
    let id = sh.map_group(op, GroupDef { members, inputs: leaves.len() })?;
    let ts = leaves.iter().map(|(s, _)| tensor_of(s, sh, op)).collect::<Result<Vec<&GlTensor>>>()?;
    let outs = lens.iter().map(|&n| sh.alloc(n, op)).collect::<Result<Vec<GlTensor>>>()?;
    let mut pass = Pass::with_spec(op, ProgramSpec { name: MAP_GROUP, config: map_config(true, scalars), kernel: id });
    for (i, t) in ts.iter().enumerate() {
        pass = pass.input(MAP_INPUTS[i], t);
    }
    for (i, &p) in params.iter().enumerate() {
        pass = pass.float(GROUP_PARAMS[i], p);
    }
    for (k, &n) in lens.iter().enumerate() {
        pass = pass.int(GROUP_LENS[k], n);
    }
    sh.draw_many(&pass, &outs.iter().collect::<Vec<_>>(), len)?;
    drop(pass);
    for (m, t) in group.iter().zip(outs) {
        if let Some(lazy) = m.storage.downcast::<Lazy>() {
            lazy.force(|_| Ok(Storage::new(t)))?;
        }
    }
    Ok(())
}
