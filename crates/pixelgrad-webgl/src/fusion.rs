//! Fusion on WebGL: the backend's side of `pixelgrad_core::fusion` ([`FusionDevice`]). An
//! elementwise op (unary, binary, `where`, `expand`, `fill`) is handed to the core layer,
//! which returns a pending result and composes the next elementwise op with it; the chain is
//! drawn as one pass when a value is needed — a non-elementwise op or a read ([`tensor_of`]),
//! the end of a step or a flush ([`settle`]).
//!
//! Where the context has multiple render targets, matmuls and tree reductions of values are
//! deferred too: the first pending result of one that reads it is drawn in its own (last)
//! pass as an epilogue, written to a second render target (`dialect::MATMUL_EPI`,
//! `dialect::REDUCE_EPI`), and a sum over the batch of a batched product is one matmul summing
//! its batch. A reduction of a pending result reads the computation in its first pass (a
//! prologue), unless that result can be a matmul's epilogue.
//!
//! Grouped draws: at a settle, pending elementwise results whose output textures have the
//! same size are drawn together, one draw with several render targets instead of one draw
//! each. An optimizer's update of one parameter is the typical group: Adam's new `m`, `v` and
//! parameter are three pending results over the same gradient and old state, so one draw
//! writes all three. A group's members share the size of their output textures (each is
//! written up to its own length and is 0 past it, as after a single draw); the fast read
//! (every input has the member's shape or is one element); at most [`MAP_MAX_INPUTS`]
//! distinct inputs, [`GROUP_MAX_PARAMS`] parameters in all and [`Fusion::group_targets`]
//! outputs. Each member is rendered with the same code as its single draw
//! (`dialect::map_group_source`), so results are bit-identical to drawing them one by one.
//!
//! A composition that would not fit one program (more samplers or scalar uniforms than the
//! program declares, a very long chain) draws its largest pending input first instead.

use std::rc::Rc;

use pixelgrad_core::fusion::{
    self, Epilogue, FusionDevice, FusionState, Limits, MatmulWork, ReduceAt, ReduceInput, ReduceSource, ReduceWork,
};
use pixelgrad_core::kernel::fuse::{read_mode, Pending};
use pixelgrad_core::kernel::Launch;
use pixelgrad_core::{Op, ReduceOp, Result, Shape, Storage};

use crate::context::Shared;
use crate::dialect::{
    map_config, ProgramSpec, GROUP_LENS, GROUP_MAX_PARAMS, GROUP_PARAMS, MAP_GROUP, MAP_INPUTS, MAP_MAX_INPUTS, MAP_MAX_PARAMS,
};
use crate::launch::Pass;
use crate::ops::elementwise::FusedRead;
use crate::program::GroupDef;
use crate::texture::{texture_of, GlTensor};

/// Longest kernel (in IR nodes, before lowering) a chain may grow to before it is drawn.
const MAX_NODES: usize = 96;
/// Most inputs of an epilogue besides the product: with the product pass's own samplers (4
/// for the block path's assembling pass) a draw binds at most 8 textures.
const MAX_EPILOGUE_OTHERS: usize = 4;

pub(crate) use pixelgrad_core::kernel::fuse::elementwise;

/// The fusion layer's state and this context's choices: owned by the backend next to (not
/// inside) the device state, and handed to the calls that make or settle pending results.
pub(crate) struct Fusion {
    /// Fuse elementwise chains ([`crate::WebGlOptions::fuse`]).
    pub fuse: bool,
    /// Matmuls and tree reductions are deferred and take a pending result of theirs as an
    /// epilogue drawn to a second render target: fusion on, WebGL2 with multiple render
    /// targets.
    pub epilogues: bool,
    /// The most outputs one grouped draw may have (below 2: never grouped).
    pub group_targets: usize,
    /// Generations and the pending results owed (`pixelgrad_core::fusion`).
    pub state: FusionState,
}

/// The context as the fusion layer sees it; `fu` is `None` where a value is only realised
/// (nothing is deferred or grouped then).
pub(crate) struct Device<'a> {
    sh: &'a Rc<Shared>,
    fu: Option<&'a Fusion>,
}

/// The texture behind a storage, drawing it first if it is a pending result. Everything
/// below fusion takes textures settled here.
pub(crate) fn tensor_of<'a>(s: &'a Storage, sh: &Rc<Shared>, op: &'static str) -> Result<&'a GlTensor> {
    fusion::realise(&Device { sh, fu: None }, op, s)
}

/// `launch` over `inputs`, returned pending.
#[allow(clippy::too_many_arguments)]
pub(crate) fn defer(
    sh: &Rc<Shared>,
    fu: &Fusion,
    op: &Op,
    launch: &Launch,
    name: &'static str,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Storage> {
    fusion::defer_map(&Device { sh, fu: Some(fu) }, &fu.state, op, launch, name, inputs, shapes, out)
}

/// A matmul returned pending where the context draws epilogues: `None` draws it as usual.
pub(crate) fn defer_matmul(
    sh: &Rc<Shared>,
    fu: &Fusion,
    op: &Op,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Option<Storage>> {
    fusion::defer_matmul(&Device { sh, fu: Some(fu) }, &fu.state, op, inputs, shapes, out)
}

/// A reduction of a pending result, fused with it (`None`: it runs as usual).
pub(crate) fn reduce(
    sh: &Rc<Shared>,
    fu: &Fusion,
    op: &Op,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Option<Storage>> {
    fusion::reduce(&Device { sh, fu: Some(fu) }, &fu.state, op, inputs, shapes, out)
}

/// Draws every pending result some tensor still holds, oldest first; results of the same
/// size together where the context has multiple render targets.
pub(crate) fn settle(sh: &Rc<Shared>, fu: &Fusion) -> Result<()> {
    fusion::settle(&Device { sh, fu: Some(fu) }, &fu.state)
}

/// Runs `op` now: realises its pending inputs ([`tensor_of`]) and hands their textures to the
/// op's passes.
pub(crate) fn execute_now(sh: &Rc<Shared>, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
    sh.current()?;
    let ts: Vec<&GlTensor> = inputs.iter().map(|s| tensor_of(s, sh, op.name())).collect::<Result<_>>()?;
    let result = crate::ops::execute(sh, op, inputs, &ts, shapes, out)?;
    // An op that queued a run-time check (gather, scatter_add) may have made the queue long.
    crate::submit::fold_if_long(sh)?;
    Ok(result)
}

fn fits(p: &Pending<Storage>) -> bool {
    p.inputs() <= MAP_MAX_INPUTS && p.launch.params.len() <= MAP_MAX_PARAMS && p.nodes() <= MAX_NODES
}

fn same_leaf(a: &(Storage, Shape), b: &(Storage, Shape)) -> bool {
    Storage::ptr_eq(&a.0, &b.0) && a.1 == b.1
}

impl FusionDevice for Device<'_> {
    type Memory = GlTensor;

    fn backend_name(&self) -> String {
        self.sh.name.clone()
    }

    fn memory<'a>(&self, op: &'static str, s: &'a Storage) -> Result<&'a GlTensor> {
        texture_of(s, self.sh, op)
    }

    fn len(&self, m: &GlTensor) -> usize {
        m.len
    }

    fn check_size(&self, op: &'static str, out: &Shape) -> Result<()> {
        self.sh.layout(out.numel(), op).map(|_| ())
    }

    fn limits(&self) -> Limits {
        Limits {
            epilogue_nodes: usize::MAX,
            epilogue_inputs: MAX_EPILOGUE_OTHERS + 1,
            epilogue_params: MAP_MAX_PARAMS,
            group: self.fu.is_some_and(|f| f.group_targets >= 2),
            defer_summed_matmul: true,
            prologue_yields_to_epilogue: true,
            leaves_in_memory: false,
        }
    }

    fn fits_map(&self, p: &Pending<Storage>) -> bool {
        fits(p)
    }

    fn fits_prologue(&self, p: &Pending<Storage>) -> bool {
        fits(p)
    }

    fn takes_epilogue(&self, _mm: &MatmulWork, _out: &Shape, _p: &Pending<Storage>, _given: usize) -> bool {
        true
    }

    fn defers_matmul(&self, out: &Shape) -> bool {
        self.fu.is_some_and(|f| f.epilogues) && out.numel() > 0
    }

    /// Tree reductions of values wait for an epilogue; a reduction with a prologue is drawn
    /// now (a one-pass one could not take both, they would declare the same uniforms).
    fn defers_reduce(&self, op: ReduceOp, prologue: bool) -> bool {
        !prologue && self.fu.is_some_and(|f| f.epilogues) && crate::ops::reduce::takes_epilogue(op)
    }

    fn reduce_takes_epilogue(&self, r: &ReduceWork) -> bool {
        crate::ops::reduce::takes_epilogue(r.op) && matches!(r.source, ReduceSource::Plain(_))
    }

    /// The output's texture size, for results read without index arithmetic.
    fn group_key(&self, p: &Pending<Storage>) -> Result<Option<(u32, u32)>> {
        let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
        let groupable = p.inputs() <= MAP_MAX_INPUTS && p.launch.params.len() <= GROUP_MAX_PARAMS && read_mode(&shapes, &p.shape).0;
        if !groupable {
            return Ok(None);
        }
        self.sh.layout(p.shape.numel(), "settle").map(Some)
    }

    fn group_fits(&self, members: &[&Pending<Storage>], p: &Pending<Storage>) -> bool {
        if members.len() >= self.fu.map_or(0, |f| f.group_targets) {
            return false;
        }
        let params: usize = members.iter().map(|m| m.launch.params.len()).sum::<usize>() + p.launch.params.len();
        let mut leaves: Vec<&(Storage, Shape)> = Vec::new();
        for l in members.iter().flat_map(|m| &m.leaves).chain(&p.leaves) {
            if !leaves.iter().any(|m| same_leaf(m, l)) {
                leaves.push(l);
            }
        }
        params <= GROUP_MAX_PARAMS && leaves.len() <= MAP_MAX_INPUTS
    }

    fn run_map(&self, p: &Pending<Storage>, leaves: &[&GlTensor]) -> Result<Storage> {
        let shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
        let label = || format!("fused {}", p.label());
        crate::ops::elementwise::map_labelled(self.sh, "fused", &p.launch, leaves, &shapes, &p.shape, label).map(Storage::new)
    }

    fn run_matmul(
        &self,
        mm: &MatmulWork,
        a: &GlTensor,
        b: &GlTensor,
        out: &Shape,
        epi: Option<&Epilogue<'_, GlTensor>>,
    ) -> Result<(GlTensor, Option<GlTensor>)> {
        let (m, s) = (&mm.shapes, mm.sum_batch);
        let Some(e) = epi else {
            return crate::ops::matmul::matmul_epilogue(self.sh, a, b, &m[0], &m[1], mm.trans_a, mm.trans_b, s, out, None);
        };
        let p = e.p;
        let read = FusedRead::new(self.sh, "fused", &p.launch, &e.leaves, &e.shapes, &p.shape, || format!("fused {}", p.label()))?;
        let epi = crate::ops::matmul::Epilogue { read, given: e.given };
        crate::ops::matmul::matmul_epilogue(self.sh, a, b, &m[0], &m[1], mm.trans_a, mm.trans_b, s, out, Some(&epi))
    }

    fn run_reduce(
        &self,
        op: ReduceOp,
        input: ReduceInput<'_, GlTensor>,
        at: ReduceAt<'_>,
        _out: &Shape,
        epi: Option<&Epilogue<'_, GlTensor>>,
    ) -> Result<(GlTensor, Option<GlTensor>)> {
        use crate::ops::reduce::{reduce_epilogue, Input};
        let ReduceAt::Axis(axis, shape) = at else {
            return Err(self.sh.err("reduce", "internal: a reduction over two axes is not drawn in one pass here"));
        };
        let epi_read;
        let epi = match epi {
            Some(e) => {
                let p = e.p;
                let read = FusedRead::new(self.sh, "fused", &p.launch, &e.leaves, &e.shapes, &p.shape, || format!("fused {}", p.label()))?;
                epi_read = crate::ops::matmul::Epilogue { read, given: e.given };
                Some(&epi_read)
            }
            None => None,
        };
        match input {
            ReduceInput::Memory(x) => reduce_epilogue(self.sh, op, Input::Texture(x), shape, axis, epi),
            ReduceInput::Fused { p, leaves } => {
                let leaf_shapes: Vec<&Shape> = p.leaves.iter().map(|(_, s)| s).collect();
                let read =
                    FusedRead::new(self.sh, "reduce", &p.launch, &leaves, &leaf_shapes, &p.shape, || format!("fused {}", p.label()))?;
                reduce_epilogue(self.sh, op, Input::Fused(&read), shape, axis, epi)
            }
        }
    }

    /// One draw with a render target per member.
    fn run_group(&self, group: &[&Pending<Storage>]) -> Result<Vec<GlTensor>> {
        let sh = self.sh;
        let op = "fused";
        let mut leaves: Vec<(Storage, Shape)> = Vec::new();
        let mut members = Vec::with_capacity(group.len());
        let mut params: Vec<f32> = Vec::new();
        for p in group {
            let inputs: Vec<usize> = p
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
            let kernel = sh.map_kernel(op, &p.launch.kernel, || format!("fused {}", p.label()))?;
            members.push((kernel, inputs));
            params.extend_from_slice(&p.launch.params);
        }
        let lens: Vec<usize> = group.iter().map(|p| p.shape.numel()).collect();
        let len = lens.iter().copied().max().unwrap_or(0);
        // Bit `1 + i` when input `i` is one element (read at index 0), as for a single draw; a
        // group of one-element outputs reads index 0 of everything anyway.
        let scalars =
            if len > 1 { leaves.iter().enumerate().filter(|(_, (_, s))| s.numel() == 1).fold(0, |b, (i, _)| b | 1 << i) } else { 0 };
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
        Ok(outs)
    }
}
