//! Which pending elementwise computations run as the epilogue of the matmul or reduction they
//! read.

use super::device::FusionDevice;
use super::storage::Storage;
use crate::kernel::fuse::Pending;

/// The leaf of `p` that is a pending matmul (or a reduction that can take an epilogue,
/// [`FusionDevice::reduce_takes_epilogue`]) of `p`'s size, read once, when `p` is short
/// enough to be applied as it stores ([`super::Limits`]): what it can take `p` on as an
/// epilogue. Long computations (an optimizer's update on WebGPU) are left out: a register
/// kernel inlines an epilogue once per stored value.
pub fn epilogue_of<D: FusionDevice>(d: &D, p: &Pending<Storage>) -> Option<usize> {
    let limits = d.limits();
    if p.nodes() > limits.epilogue_nodes || p.inputs() > limits.epilogue_inputs || p.launch.params.len() > limits.epilogue_params {
        return None;
    }
    let n = p.shape.numel();
    let given = p.leaves.iter().position(|(s, sh)| {
        sh.numel() == n
            && s.as_pending()
                .is_some_and(|v| v.shape().numel() == n && (v.matmul().is_some() || v.reduce().is_some_and(|r| d.reduce_takes_epilogue(r))))
    })?;
    (p.leaves.iter().filter(|(s, _)| s.ptr_eq(&p.leaves[given].0)).count() == 1).then_some(given)
}
