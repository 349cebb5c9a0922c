//! Which pending elementwise computations an op may inline, and composing an op with them
//! ([`defer`]): the elementwise half of fusion, shared by every fusing backend.

use std::cell::Ref;

use super::storage::Storage;
use crate::kernel::fuse::{compose, Arg, Pending};
use crate::kernel::Launch;
use crate::shape::Shape;
use crate::Result;

/// The pending computation behind `s` as an input read with `shape`, if it may be inlined:
/// `s` is an elementwise computation not yet run, made in generation `generation` (fusing
/// backends start a new generation at every read, flush and step boundary, so chains never
/// grow across them), and readable as `shape` ([`Pending::viewed_as`]).
pub fn inlinable(s: &Storage, shape: &Shape, generation: u64) -> Option<Pending<Storage>> {
    current(s, generation)?.viewed_as(shape)
}

/// The pending elementwise computation behind `s` with its own shape, if it is not computed
/// yet and was made in generation `generation`. A consumer that walks its input in flat
/// (row-major) order, as a reduction does, can read it whatever shape it is viewed with:
/// a reshape does not change the flat order.
pub fn current(s: &Storage, generation: u64) -> Option<Ref<'_, Pending<Storage>>> {
    let v = s.as_pending()?;
    v.map_pending().filter(|_| v.generation() == generation)
}

/// An elementwise op on `inputs` as one pending computation, inlining every input
/// [`inlinable`] allows, as long as the result `fits` one launch: otherwise the largest
/// inlined input is read as a plain input instead, until it fits (or nothing is inlined).
pub fn defer(
    launch: &Launch,
    op: &'static str,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
    generation: u64,
    fits: impl Fn(&Pending<Storage>) -> bool,
) -> Result<Pending<Storage>> {
    // A pending input read with its own shape (the usual case) is borrowed, not copied.
    let mut views: Vec<Option<View<'_>>> = inputs
        .iter()
        .zip(shapes)
        .map(|(s, sh)| {
            let p = current(s, generation)?;
            if p.shape == **sh {
                Some(View::Same(p))
            } else {
                p.viewed_as(sh).map(View::Reshaped)
            }
        })
        .collect();
    loop {
        let args: Vec<Arg<'_, Storage>> = inputs
            .iter()
            .zip(shapes)
            .zip(&views)
            .map(|((s, sh), v)| match v {
                Some(p) => Arg::Pending(p.get()),
                None => Arg::Leaf((*s).clone(), (*sh).clone()),
            })
            .collect();
        let p = compose(launch, op, &args, out, Storage::ptr_eq)?;
        let biggest = (0..views.len())
            .filter(|&i| views[i].is_some())
            .max_by_key(|&i| views[i].as_ref().map_or(0, |v| v.get().nodes() + v.get().inputs()));
        match biggest {
            Some(i) if !fits(&p) => views[i] = None,
            _ => return Ok(p),
        }
    }
}

/// A pending input of [`defer`]: the computation itself when read with its own shape, else a
/// copy with its leaves reshaped ([`Pending::viewed_as`]).
enum View<'a> {
    Same(Ref<'a, Pending<Storage>>),
    Reshaped(Pending<Storage>),
}

impl View<'_> {
    fn get(&self) -> &Pending<Storage> {
        match self {
            View::Same(p) => p,
            View::Reshaped(p) => p,
        }
    }
}
