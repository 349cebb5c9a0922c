//! Fusion on WebGPU: the backend's side of `pixelgrad_core::fusion` ([`FusionDevice`]). An
//! elementwise op (unary, binary, `where`, `expand`, `fill`), a matmul and a reduction of a
//! pending value are handed to the core layer, which returns pending storage and decides when
//! it runs; this file says how one thing runs here (a fused map, a matmul with an epilogue, a
//! reduction with a prologue, a grouped launch) and the limits those decisions follow.
//!
//! A composition that would not fit one launch — more inputs than the bind group layouts
//! have, a parameter slot overflowing, a very long chain — computes its largest pending input
//! first and reads it as a plain input instead.

use std::borrow::Cow;
use std::rc::Rc;

use pixelgrad_core::fusion::{self, Epilogue, FusionDevice, Limits, MatmulWork, ReduceAt, ReduceInput, ReduceWork};
use pixelgrad_core::kernel::fuse::Pending;
use pixelgrad_core::{Error, Op, ReduceOp, Result, Shape, Storage};

use crate::context::{Gpu, GpuTensor};
use crate::ops::elementwise::map;
use crate::pipelines::Kernel;
use crate::wgsl::MapLayout;
use crate::BACKEND;

/// Most IR nodes and inputs of an elementwise computation a matmul applies as it stores:
/// room for a bias add and any activation, HardSwish included (whose bias + `x * min(max(x +
/// 3, 0), 6) / 6` needed more than the 12 this was: the PP-OCR classifier then ran 90 launches
/// instead of 100, 10-25 % faster on SwiftShader, its first run ~1 s slower to compile).
const MAX_EPILOGUE_NODES: usize = 16;
const MAX_EPILOGUE_INPUTS: usize = 3;
/// Longest kernel (in IR nodes, before lowering) a chain may grow to before it is computed.
const MAX_NODES: usize = 192;
/// Most IR nodes (before lowering) of all members of one grouped launch together.
const MAX_GROUP_NODES: usize = 256;

pub(crate) use pixelgrad_core::kernel::fuse::elementwise;

/// The device as the fusion layer sees it.
pub(crate) struct Device<'a>(pub &'a Rc<Gpu>);

/// The buffer behind `s`, computing it first when it is pending: how every op that is not
/// fused reads its inputs.
pub(crate) fn tensor<'a>(gpu: &Rc<Gpu>, op: &'static str, s: &'a Storage) -> Result<&'a GpuTensor> {
    fusion::realise(&Device(gpu), op, s)
}

/// `launch` over `inputs`, returned pending.
#[allow(clippy::too_many_arguments)]
pub(crate) fn defer(
    gpu: &Rc<Gpu>,
    op: &Op,
    launch: &pixelgrad_core::kernel::Launch,
    name: &'static str,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Storage> {
    fusion::defer_map(&Device(gpu), &gpu.fusion, op, launch, name, inputs, shapes, out)
}

/// A reduction of a pending value, fused with it (`None`: it runs as usual).
pub(crate) fn reduce(gpu: &Rc<Gpu>, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    fusion::reduce(&Device(gpu), &gpu.fusion, op, inputs, shapes, out)
}

/// A matmul returned pending (fusion on): `None` for another op.
pub(crate) fn defer_matmul(gpu: &Rc<Gpu>, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Option<Storage>> {
    fusion::defer_matmul(&Device(gpu), &gpu.fusion, op, inputs, shapes, out)
}

/// Computes every pending result some tensor still holds, oldest first: grouped into
/// multi-output launches unless the device was opened with `group: false`.
pub(crate) fn settle(gpu: &Rc<Gpu>) -> Result<()> {
    fusion::settle(&Device(gpu), &gpu.fusion)
}

impl FusionDevice for Device<'_> {
    type Memory = GpuTensor;

    fn backend_name(&self) -> String {
        self.0.backend_name()
    }

    fn memory<'a>(&self, op: &'static str, s: &'a Storage) -> Result<&'a GpuTensor> {
        s.downcast::<GpuTensor>().ok_or_else(|| Error::BackendMismatch { op, a: self.0.backend_name(), b: "another backend".into() })
    }

    fn len(&self, m: &GpuTensor) -> usize {
        m.len
    }

    fn check_size(&self, op: &'static str, out: &Shape) -> Result<()> {
        self.0.check_size(op, out.numel() as u64 * 4)
    }

    fn limits(&self) -> Limits {
        Limits {
            epilogue_nodes: MAX_EPILOGUE_NODES,
            epilogue_inputs: MAX_EPILOGUE_INPUTS,
            epilogue_params: usize::MAX,
            group: self.0.group.get(),
            defer_summed_matmul: false,
            prologue_yields_to_epilogue: false,
            leaves_in_memory: false,
        }
    }

    fn defers_matmul(&self, _out: &Shape) -> bool {
        true
    }

    /// A sum with a prologue waits (the sum over the other end of its input merges with it);
    /// other reductions with a prologue run now, without one as usual.
    fn defers_reduce(&self, op: ReduceOp, prologue: bool) -> bool {
        prologue && op == ReduceOp::Sum
    }

    fn reduce_takes_epilogue(&self, _r: &ReduceWork) -> bool {
        false
    }

    /// One key for every member: a leaf needing index arithmetic (neither the result's
    /// shape nor one element) keeps `p` out.
    fn group_key(&self, p: &Pending<Storage>) -> Result<Option<(u32, u32)>> {
        Ok(scalar_bits(p).map(|_| (0, 0)))
    }

    /// Its inputs fit the bind group layouts and its parameters, shape and strides fit the
    /// 256-byte parameter slot (counted over the unmerged rank, an upper bound of the merged
    /// one).
    fn fits_map(&self, p: &Pending<Storage>) -> bool {
        let words = MapLayout::map(p.launch.params.len()).words(p.inputs(), p.shape.rank());
        p.inputs() <= self.0.max_inputs() && words <= crate::pipelines::PARAM_WORDS && p.nodes() <= MAX_NODES
    }

    /// Words a reduction with a fused input needs in the parameter slot.
    fn fits_prologue(&self, p: &Pending<Storage>) -> bool {
        let words = MapLayout::after(crate::ops::reduce::OWN_WORDS, p.launch.params.len()).words(p.inputs(), p.shape.rank());
        p.inputs() <= self.0.max_inputs() && words <= crate::pipelines::PARAM_WORDS
    }

    fn takes_epilogue(&self, mm: &MatmulWork, out: &Shape, p: &Pending<Storage>, _given: usize) -> bool {
        let shapes = [&mm.shapes[0], &mm.shapes[1]];
        !mm.sum_batch
            && crate::ops::matmul::takes_epilogue(self.0, mm.trans_a, mm.trans_b, &shapes, out, p.launch.params.len(), p.leaves.len() - 1)
    }

    /// The launch's buffers, parameter words and code stay in bounds.
    fn group_fits(&self, members: &[&Pending<Storage>], p: &Pending<Storage>) -> bool {
        let leaves = distinct_leaves(members.iter().copied().chain([p])).len();
        let words: usize = members.iter().map(|m| 1 + m.launch.params.len()).sum::<usize>() + 1 + p.launch.params.len();
        let nodes: usize = members.iter().map(|m| m.nodes()).sum::<usize>() + p.nodes();
        // The members' outputs and the joining one's.
        leaves + members.len() < self.0.max_buffers()
            && crate::wgsl::GROUP_BASE + words <= crate::pipelines::PARAM_WORDS
            && nodes <= MAX_GROUP_NODES
    }

    fn run_map(&self, p: &Pending<Storage>, leaves: &[&GpuTensor]) -> Result<Storage> {
        let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
        let res = GpuTensor::new(self.0, "fused", p.shape.numel())?;
        if p.shape.numel() > 0 {
            map(self.0, "fused", &p.launch, leaves, &shapes, &p.shape, &res, || p.label())?;
        }
        Ok(Storage::new(res))
    }

    fn run_matmul(
        &self,
        mm: &MatmulWork,
        a: &GpuTensor,
        b: &GpuTensor,
        out: &Shape,
        epi: Option<&Epilogue<'_, GpuTensor>>,
    ) -> Result<(GpuTensor, Option<GpuTensor>)> {
        let gpu = self.0;
        let shapes = [&mm.shapes[0], &mm.shapes[1]];
        let res = GpuTensor::new(gpu, "matmul", out.numel())?;
        if let Some(e) = epi {
            let epi_res = GpuTensor::new(gpu, "fused", e.p.shape.numel())?;
            let args = crate::ops::matmul::EpilogueArgs {
                launch: &e.p.launch,
                given: e.given,
                leaves: e.leaves.clone(),
                shapes: e.shapes.clone(),
            };
            crate::ops::matmul::matmul_epilogue(gpu, mm.trans_a, mm.trans_b, a, b, &shapes, &mm.product, &res, &args, &epi_res)?;
            return Ok((res, Some(epi_res)));
        }
        if mm.sum_batch {
            crate::ops::matmul::matmul_summing(gpu, mm.trans_a, mm.trans_b, a, b, &shapes, &mm.product, &res, true)?;
        } else if out.numel() > 0 {
            crate::ops::matmul::matmul(gpu, mm.trans_a, mm.trans_b, a, b, &shapes, &mm.product, &res)?;
        }
        Ok((res, None))
    }

    /// Reductions take no epilogue here.
    fn run_reduce(
        &self,
        r: ReduceOp,
        input: ReduceInput<'_, GpuTensor>,
        at: ReduceAt<'_>,
        out: &Shape,
        _epi: Option<&Epilogue<'_, GpuTensor>>,
    ) -> Result<(GpuTensor, Option<GpuTensor>)> {
        let gpu = self.0;
        let input = match input {
            ReduceInput::Memory(t) => crate::ops::reduce::ReduceInput::Buffer(t),
            ReduceInput::Fused { p, leaves } => {
                let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
                crate::ops::reduce::ReduceInput::Fused { launch: &p.launch, ins: leaves, shapes, of: &p.shape, label: p.label() }
            }
        };
        let res = GpuTensor::new(gpu, "reduce", out.numel())?;
        match at {
            ReduceAt::Axis(axis, shape) => crate::ops::reduce::reduce(gpu, r, axis, input, shape, &res)?,
            ReduceAt::OuterAndInner { reps, outputs, len } => {
                crate::ops::reduce::sum_outer_and_inner(gpu, reps, outputs, len, input, &res)?
            }
        }
        Ok((res, None))
    }

    fn run_group(&self, members: &[&Pending<Storage>]) -> Result<Vec<GpuTensor>> {
        let gpu = self.0;
        let leaves = distinct_leaves(members.iter().copied());
        let spec: Vec<crate::wgsl::GroupMember> = members
            .iter()
            .map(|p| crate::wgsl::GroupMember {
                kernel: p.launch.kernel.clone(),
                reads: p.leaves.iter().map(|(l, _)| leaves.iter().position(|o| o.ptr_eq(l)).unwrap_or(0)).collect(),
                scalars: scalar_bits(p).unwrap_or(0),
            })
            .collect();
        let k = group_kernel(gpu, &spec, leaves.len(), || format!("{}x_{}", members.len(), members[0].label()))?;
        let ins = leaves.iter().map(|l| tensor(gpu, "settle", l)).collect::<Result<Vec<&GpuTensor>>>()?;
        let outs = members.iter().map(|p| GpuTensor::new(gpu, "fused", p.shape.numel())).collect::<Result<Vec<_>>>()?;
        let most = outs.iter().map(|t| t.len).max().unwrap_or(0);
        let mut words = vec![crate::ops::u("fused", most)?];
        for (p, t) in members.iter().zip(&outs) {
            words.push(crate::ops::u("fused", t.len)?);
            words.extend(p.launch.params.iter().map(|&v| crate::ops::f(v)));
        }
        let grid = gpu.grid_elems("fused", most)?;
        let in_bufs: Vec<&wgpu::Buffer> = ins.iter().map(|t| t.buffer()).collect();
        let out_bufs: Vec<&wgpu::Buffer> = outs.iter().map(|t| t.buffer()).collect();
        gpu.launch_multi("fused", &k, &[], &in_bufs, &out_bufs, &words, grid)?;
        Ok(outs)
    }
}

/// Distinct leaves of `members`, in order of first reading.
fn distinct_leaves<'a>(members: impl Iterator<Item = &'a Pending<Storage>>) -> Vec<&'a Storage> {
    let mut out: Vec<&Storage> = Vec::new();
    for p in members {
        for (l, _) in &p.leaves {
            if !out.iter().any(|o| o.ptr_eq(l)) {
                out.push(l);
            }
        }
    }
    out
}

/// The scalar bits of `p` as a member of a grouped launch (bit `i`: leaf `i` is one
/// element), or `None` when it cannot be one: a leaf needs index arithmetic (neither the
/// result's shape nor one element).
fn scalar_bits(p: &Pending<Storage>) -> Option<u32> {
    let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
    let (fast, scalars) = pixelgrad_core::kernel::fuse::read_mode(&shapes, &p.shape);
    (fast && p.shape.numel() > 0 && p.leaves.len() < 32).then_some(if p.shape.numel() == 1 {
        (1u32 << p.leaves.len()) - 1
    } else {
        scalars
    })
}

/// The compiled grouped launch of `members` over `inputs` shared inputs, rendered on first
/// use (named after `label()`) and cached per device by its structure.
fn group_kernel(gpu: &Rc<Gpu>, members: &[crate::wgsl::GroupMember], inputs: usize, label: impl FnOnce() -> String) -> Result<Rc<Kernel>> {
    let key = (members.to_vec(), inputs);
    if let Some(k) = gpu.group_kernels.borrow().get(&key) {
        return Ok(k.clone());
    }
    let source = crate::wgsl::group_source(members, inputs).map_err(|e| Error::backend("fused", BACKEND, e.to_string()))?;
    let id = gpu.group_kernels.borrow().len();
    let made = Rc::new(Kernel {
        name: Cow::Owned(format!("group{id}_{}", label())),
        source: Cow::Owned(source),
        inputs,
        outputs: members.len(),
        overrides: &[],
        status: false,
    });
    gpu.group_kernels.borrow_mut().insert(key, made.clone());
    Ok(made)
}
