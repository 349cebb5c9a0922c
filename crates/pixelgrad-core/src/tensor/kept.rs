//! What the autodiff graph keeps in a mixed-precision scope ([`crate::mixed`], where the
//! scope and its effect are described): the inputs a recorded node saves (f16 copies of
//! intermediate f32 tensors, each made once per scope), the gradients the backward pass rounds
//! through f16, and the bytes a graph keeps ([`Tensor::graph_bytes`]). The scope's state lives
//! here, beside [`Tensor::apply`] which consults it, as `no_grad`'s does.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{Device, Inner, Node, Tensor};
use crate::backend::{Storage, WeakStorage};
use crate::dtype::DType;
use crate::op::Op;
use crate::Result;

thread_local! {
    /// Open mixed-precision scopes (they nest).
    static ACTIVE: Cell<u32> = const { Cell::new(0) };
    /// f32 storage → its f16 copy, for the open scope: a tensor kept by several ops, or
    /// reshaped (a reshape shares its input's storage), is narrowed once.
    static COPIES: RefCell<Vec<(WeakStorage, Storage)>> = const { RefCell::new(Vec::new()) };
}

/// Opens a (possibly nested) scope.
pub(crate) fn open_scope() {
    ACTIVE.with(|a| a.set(a.get() + 1));
}

/// Closes a scope; when the outermost one ends, its copies are forgotten.
pub(crate) fn close_scope() {
    let left = ACTIVE.with(|a| {
        let n = a.get().saturating_sub(1);
        a.set(n);
        n
    });
    if left == 0 {
        COPIES.with(|c| c.borrow_mut().clear());
    }
}

/// True inside a scope.
pub(crate) fn scope_open() -> bool {
    ACTIVE.with(|a| a.get() > 0)
}

/// Whether `device`'s backend narrows f32 to f16 (and stores f16), so a scope has an effect.
pub(crate) fn narrows_to_f16(device: &Device) -> bool {
    device.backend().caps().narrow_f16 && device.backend().caps().f16_storage
}

/// Whether input `i` of `op` may be kept in f16: not the indices of gather and scatter.
fn narrowable_input(op: &Op, i: usize) -> bool {
    // index tensors, and the packed weight, scales and zero points of a quantised product
    !matches!((op, i), (Op::Gather { .. } | Op::ScatterAdd { .. }, 1) | (Op::MatMulNBits { .. }, 1..=3))
}

/// What a node recorded for `op` keeps of its input `t` (position `i`): `t` itself, or in a
/// mixed-precision scope an f16 copy of an intermediate f32 tensor. The copy has `t`'s
/// identity (id, graph node, gradient sink), so the backward pass treats it as `t`.
pub(crate) fn saved(op: &Op, i: usize, t: &Tensor) -> Result<Tensor> {
    let dev = t.device();
    if !scope_open()
        || t.0.dtype != DType::F32
        || t.0.node.is_none()
        || t.0.sink.is_some()
        || t.numel() == 0
        || !narrowable_input(op, i)
        || !narrows_to_f16(dev)
    {
        return Ok(t.clone());
    }
    let storage = match cached(&t.0.storage) {
        Some(s) => s,
        None => {
            let copy = t.narrow_f16()?;
            let s = copy.0.storage.clone();
            COPIES.with(|c| c.borrow_mut().push((t.0.storage.downgrade(), s.clone())));
            s
        }
    };
    Ok(with_identity(t, storage, DType::F16))
}

/// The f16 copy made in this scope of the f32 `storage`, if any; forgets copies whose f32
/// storage is gone (the graph holds those copies itself).
fn cached(storage: &Storage) -> Option<Storage> {
    COPIES.with(|c| {
        let mut c = c.borrow_mut();
        c.retain(|(w, _)| w.upgrade().is_some());
        c.iter().find(|(w, _)| w.upgrade().is_some_and(|s| s.ptr_eq(storage))).map(|(_, s)| s.clone())
    })
}

/// A gradient as the backward pass keeps it: in a mixed-precision scope on a device with f16
/// narrowing, rounded to the nearest f16 (and read back to f32); otherwise `g` itself.
pub(crate) fn round_gradient(g: Tensor) -> Result<Tensor> {
    if !scope_open() || g.0.dtype != DType::F32 || !narrows_to_f16(g.device()) {
        return Ok(g);
    }
    g.narrow_f16()?.widen()
}

/// `t` in f32 storage for a gradient rule: an f16 copy is widened into a tensor with its
/// identity (the rules ask their inputs whether they need gradients); anything else is
/// returned as is.
pub(crate) fn as_f32(t: &Tensor) -> Result<Tensor> {
    if t.0.dtype != DType::F16 {
        return Ok(t.clone());
    }
    let wide = t.widen()?;
    Ok(with_identity(t, wide.0.storage.clone(), DType::F32))
}

/// A tensor with `t`'s id, shape, graph node and gradient sink holding `storage`.
fn with_identity(t: &Tensor, storage: Storage, dtype: DType) -> Tensor {
    Tensor(Rc::new(Inner {
        id: t.0.id,
        shape: t.0.shape.clone(),
        storage,
        dtype,
        device: t.0.device.clone(),
        node: t.0.node.as_ref().map(|n| Node { op: n.op.clone(), inputs: n.inputs.clone() }),
        sink: t.0.sink.clone(),
    }))
}

impl Tensor {
    /// Bytes of device memory the graph ending at this tensor keeps for its backward pass:
    /// the storage of every intermediate tensor it reaches (this one included), each distinct
    /// storage counted once, at its element size (2 for f16 copies, 4 for f32). Leaves
    /// (parameters, inputs, constants) are not counted: they belong to the caller. Zero for a
    /// tensor that records no graph.
    pub fn graph_bytes(&self) -> u64 {
        let mut seen_ids = std::collections::HashSet::new();
        let mut seen: Vec<Storage> = Vec::new();
        let mut bytes = 0u64;
        let mut stack = vec![self.clone()];
        while let Some(t) = stack.pop() {
            if !seen_ids.insert(t.id()) {
                continue;
            }
            let Some(node) = &t.0.node else { continue };
            if !seen.iter().any(|s| s.ptr_eq(&t.0.storage)) {
                seen.push(t.0.storage.clone());
                bytes += t.numel() as u64 * t.0.dtype.size_bytes() as u64;
            }
            stack.extend(node.inputs.iter().cloned());
        }
        bytes
    }
}
