//! gather, scatter_add, permute, expand, slice, pad, concat.

use pixelgrad_core::{Device, Op, Tensor};

use crate::harness::{check_all_with, Case, Gen, Read};
use crate::tolerance::{accumulate, ELEMENTWISE, EXACT};

type Outcome = std::result::Result<(), String>;

fn sym() -> Gen {
    Gen::Uniform(-1.0, 1.0)
}

pub async fn gather(dev: &Device, read: Read) -> Outcome {
    // (x shape, idx shape, axis); indices drawn in range of x's axis, with repeats.
    let geoms: &[(&[usize], &[usize], usize)] =
        &[(&[5, 7], &[5, 4], 1), (&[5, 7], &[9, 7], 0), (&[2, 6, 3], &[2, 4, 3], 1), (&[8], &[20], 0), (&[3, 4, 5], &[3, 4, 2], 2)];
    let cases: Vec<Case> = geoms
        .iter()
        .map(|&(dx, di, axis)| {
            Case::new("gather", format!("{dx:?}_by_{di:?}_axis{axis}"), move |_, x| x[0].gather(axis, &x[1]))
                .input(dx.to_vec(), sym())
                .constant(di.to_vec(), Gen::Indices(dx[axis]))
                .tol(EXACT)
                .grad_tol(accumulate(di[axis]))
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

pub async fn scatter_add(dev: &Device, read: Read) -> Outcome {
    // (src/idx shape, axis, size)
    let geoms: &[(&[usize], usize, usize)] = &[(&[5, 4], 1, 7), (&[9, 7], 0, 5), (&[2, 4, 3], 1, 6), (&[20], 0, 8), (&[3, 4, 2], 2, 5)];
    let cases: Vec<Case> = geoms
        .iter()
        .map(|&(ds, axis, size)| {
            Case::new("scatter_add", format!("{ds:?}_axis{axis}_size{size}"), move |_, x| x[0].scatter_add(axis, size, &x[1]))
                .input(ds.to_vec(), sym())
                .constant(ds.to_vec(), Gen::Indices(size))
                .tol(accumulate(ds[axis]))
                .grad_tol(EXACT)
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

pub async fn permute(dev: &Device, read: Read) -> Outcome {
    let geoms: &[(&[usize], &[usize])] = &[
        (&[2, 3, 4], &[2, 0, 1]),
        (&[2, 3, 4], &[1, 0, 2]),
        (&[2, 3, 4], &[0, 1, 2]),
        (&[2, 3, 4, 5], &[3, 1, 0, 2]),
        (&[7], &[0]),
        (&[64, 520], &[1, 0]),
        // Only size-1 axes move (NHWC to NCHW with one channel): a reshape, no copy.
        (&[2, 5, 4, 1], &[0, 3, 1, 2]),
        (&[3, 1, 4], &[1, 0, 2]),
        // Size-1 axes move and the others swap: still a permutation.
        (&[2, 1, 3], &[2, 1, 0]),
    ];
    let cases: Vec<Case> = geoms
        .iter()
        .map(|&(d, p)| {
            Case::new("permute", format!("{d:?}_{p:?}"), move |_, x| x[0].permute(p)).input(d.to_vec(), sym()).tol(EXACT).grad_tol(EXACT)
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

pub async fn expand(dev: &Device, read: Read) -> Outcome {
    let geoms: &[(&[usize], &[usize])] =
        &[(&[3, 1], &[2, 3, 4]), (&[], &[5]), (&[1, 4], &[3, 4]), (&[2, 1, 3], &[2, 5, 3]), (&[1], &[260, 130])];
    let cases: Vec<Case> = geoms
        .iter()
        .map(|&(d, to)| {
            let n: usize = to.iter().product::<usize>() / d.iter().product::<usize>().max(1);
            Case::new("expand", format!("{d:?}_to_{to:?}"), move |_, x| x[0].broadcast_to(to.to_vec()))
                .input(d.to_vec(), sym())
                .tol(EXACT)
                .grad_tol(accumulate(n))
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

pub async fn slice(dev: &Device, read: Read) -> Outcome {
    let geoms: &[(&[usize], &[usize], &[usize])] = &[
        (&[6, 7], &[1, 0], &[4, 7]),
        (&[6, 7], &[0, 2], &[6, 7]),
        (&[4, 5, 6], &[1, 2, 3], &[3, 5, 4]),
        (&[9], &[8], &[9]),
        // The last axis of a contiguous tensor (rows on WebGL), rows of 1 and 3.
        (&[2, 3, 5, 6], &[0, 0, 0, 0], &[2, 3, 5, 5]),
        (&[5, 2], &[0, 1], &[5, 2]),
        (&[3, 2, 7], &[0, 0, 2], &[3, 2, 5]),
    ];
    let cases: Vec<Case> = geoms
        .iter()
        .map(|&(d, s, e)| {
            let (starts, ends) = (s.to_vec(), e.to_vec());
            Case::new("slice", format!("{d:?}_{s:?}..{e:?}"), move |dv, x| {
                Tensor::apply(dv, Op::Slice { starts: starts.clone(), ends: ends.clone() }, &[&x[0]])
            })
            .input(d.to_vec(), sym())
            .tol(EXACT)
            .grad_tol(EXACT)
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

pub async fn pad(dev: &Device, read: Read) -> Outcome {
    let geoms: &[(&[usize], &[usize], &[usize])] = &[
        (&[3, 4], &[1, 0], &[2, 3]),
        (&[2, 3, 4], &[0, 1, 2], &[1, 0, 1]),
        (&[5], &[0], &[0]),
        (&[2, 2, 3, 3], &[0, 0, 1, 1], &[0, 0, 1, 1]),
        // The last axis only (rows on WebGL), and a size-1 axis that grows.
        (&[2, 3, 5, 3], &[0, 0, 0, 0], &[0, 0, 0, 1]),
        (&[4, 1, 3], &[0, 0, 0], &[0, 1, 2]),
        (&[3, 2], &[0, 2], &[0, 0]),
    ];
    let cases: Vec<Case> = geoms
        .iter()
        .map(|&(d, b, a)| {
            Case::new("pad", format!("{d:?}_{b:?}_{a:?}"), move |_, x| x[0].pad(b, a)).input(d.to_vec(), sym()).tol(EXACT).grad_tol(EXACT)
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

pub async fn concat(dev: &Device, read: Read) -> Outcome {
    let geoms: &[(&[&[usize]], usize)] = &[
        (&[&[2, 3], &[2, 1], &[2, 4]], 1),
        (&[&[1, 3], &[4, 3]], 0),
        (&[&[5, 2]], 1),
        (&[&[2, 3, 4], &[2, 1, 4]], 1),
        (&[&[3], &[4], &[1], &[2]], 0),
    ];
    let cases: Vec<Case> = geoms
        .iter()
        .map(|&(shapes, axis)| {
            let mut c = Case::new("concat", format!("{shapes:?}_axis{axis}"), move |_, x| {
                let refs: Vec<&Tensor> = x.iter().collect();
                Tensor::concat(&refs, axis)
            });
            for s in shapes {
                c = c.input(s.to_vec(), sym());
            }
            c.tol(EXACT).grad_tol(EXACT)
        })
        .collect();
    check_all_with(dev, &cases, read).await
}

/// Reshape is free in core, but its gradient rule must still route gradients back.
pub async fn reshape(dev: &Device, read: Read) -> Outcome {
    let cases = vec![Case::new("reshape", "3x4_to_2x6_then_mul", |_, x| x[0].reshape([2, 6])?.mul(&x[1]))
        .input([3, 4], sym())
        .input([2, 6], sym())
        .tol(ELEMENTWISE)];
    check_all_with(dev, &cases, read).await
}
