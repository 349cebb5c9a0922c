//! The image composites on the f64 reference device against plain host implementations: the
//! fromPixels preprocessing (`image::host::to_tensor_values`, loops over pixels and taps),
//! Y'CbCr conversion (`YuvMatrix::rgb`), top-k (a stable sort) and NMS (greedy loops over
//! boxes). The families then hold every backend to the reference device.

use pixelgrad_conformance::reference_device;
use pixelgrad_core::composite::{non_max_suppression, topk, NmsOptions};
use pixelgrad_core::{rng, Tensor};
use pixelgrad_image::host::{to_tensor_values, Rgba8};
use pixelgrad_image::yuv::YuvMatrix;
use pixelgrad_image::{preprocess, yuv_to_rgb};
use pixelgrad_image::{Antialias, Fit, Layout, PixelSpec};

fn bytes(seed: u64, n: usize) -> Vec<u8> {
    (0..n).map(|i| (rng::uniform(seed, i as u64) * 256.0).min(255.0) as u8).collect()
}

#[test]
fn preprocess_equals_the_host_loops() {
    let dev = reference_device();
    let sources = [(40, 30), (50, 40), (7, 5), (33, 64)];
    let sizes = [(15, 20), (8, 10), (11, 13), (24, 24)];
    let mut checked = 0;
    for (k, &(w, h)) in sources.iter().enumerate() {
        let px = bytes(k as u64 + 1, w * h * 4);
        let img = Rgba8::packed(&px, w, h).unwrap();
        // [1, 4, H, W] in [0, 1]
        let mut chw = vec![0f64; 4 * w * h];
        for y in 0..h {
            for x in 0..w {
                for c in 0..4 {
                    chw[(c * h + y) * w + x] = px[(y * w + x) * 4 + c] as f64 / 255.0;
                }
            }
        }
        let t = Tensor::from_f64(&dev, &chw, [1, 4, h, w]).unwrap();
        for &size in &sizes {
            for fit in [Fit::Fill, Fit::Cover, Fit::Contain] {
                for layout in [Layout::Nchw, Layout::Nhwc] {
                    for (channels, aa) in [(3, Antialias::Auto), (1, Antialias::Always), (4, Antialias::Never)] {
                        let spec = PixelSpec {
                            size: Some(size),
                            fit,
                            layout,
                            channels,
                            mean: [0.4, 0.5, 0.6, 0.1],
                            std: [0.2, 0.3, 0.25, 0.5],
                            pad: [0.1, 0.2, 0.3, 0.4],
                            antialias: aa,
                        };
                        let (want, dims, g) = to_tensor_values(img, &spec, "test").unwrap();
                        let (got, g2) = preprocess(&t, &spec).unwrap();
                        assert_eq!(g, g2);
                        assert_eq!(got.dims(), dims, "{spec:?}");
                        let got = got.to_vec_f64().unwrap();
                        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                            assert!((a - *b as f64).abs() < 2e-6, "{w}x{h} {spec:?}: [{i}] {a} vs {b}");
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 4 * 4 * 3 * 2 * 3);
}

#[test]
fn yuv_composite_equals_the_host_formula() {
    let dev = reference_device();
    let (w, h) = (9, 7);
    let (cw, ch) = (5, 4);
    let y = bytes(11, w * h);
    let u = bytes(12, cw * ch);
    let v = bytes(13, cw * ch);
    let f = |b: &[u8]| b.iter().map(|&x| x as f64).collect::<Vec<_>>();
    for m in [YuvMatrix::bt601(false), YuvMatrix::bt709(true)] {
        let out = yuv_to_rgb(
            &Tensor::from_f64(&dev, &f(&y), [h, w]).unwrap(),
            &Tensor::from_f64(&dev, &f(&u), [ch, cw]).unwrap(),
            &Tensor::from_f64(&dev, &f(&v), [ch, cw]).unwrap(),
            &m,
        )
        .unwrap()
        .to_vec_f64()
        .unwrap();
        for yy in 0..h {
            for xx in 0..w {
                let c = (yy / 2) * cw + xx / 2;
                let want = m.rgb(y[yy * w + xx] as f64, u[c] as f64, v[c] as f64);
                for k in 0..3 {
                    let got = out[(k * h + yy) * w + xx];
                    assert!((got - want[k]).abs() < 1e-6, "({xx}, {yy}) channel {k}: {got} vs {}", want[k]);
                }
            }
        }
    }
}

/// Indices of `x` sorted by value, largest first, ties by index, NaN and -inf last.
fn host_order(x: &[f64]) -> Vec<usize> {
    let key = |v: f64| if v.is_nan() || v == f64::NEG_INFINITY { f64::MIN } else { v };
    let mut i: Vec<usize> = (0..x.len()).collect();
    i.sort_by(|&a, &b| key(x[b]).partial_cmp(&key(x[a])).unwrap().then(a.cmp(&b)));
    i
}

#[test]
fn topk_equals_a_stable_sort_with_ties_nan_and_infinities() {
    let dev = reference_device();
    for seed in 0..20u64 {
        let n = 3 + (seed as usize * 7) % 40;
        // values from a small set so ties are common; a few NaN and infinities
        let x: Vec<f64> = (0..2 * n)
            .map(|i| match (rng::uniform(seed, i as u64) * 12.0) as u32 {
                0 => f64::NAN,
                1 => f64::NEG_INFINITY,
                2 => f64::INFINITY,
                v => (v % 5) as f64 - 2.0,
            })
            .collect();
        let k = 1 + (seed as usize) % n;
        let t = Tensor::from_f64(&dev, &x, [2, n]).unwrap();
        let (vals, idx) = topk(&t, k).unwrap();
        let (vals, idx) = (vals.to_vec_f64().unwrap(), idx.to_vec_f64().unwrap());
        for r in 0..2 {
            let row = &x[r * n..(r + 1) * n];
            let want = host_order(row);
            for j in 0..k {
                assert_eq!(idx[r * k + j] as usize, want[j], "seed {seed} row {r} rank {j}: {row:?}");
                let v = vals[r * k + j];
                assert!(v == row[want[j]] || (v.is_nan() && row[want[j]].is_nan()));
            }
        }
    }
    assert!(topk(&Tensor::zeros(&dev, [2, 3]).unwrap(), 4).unwrap_err().to_string().contains("k = 4"));
}

fn iou(a: &[f64], b: &[f64]) -> f64 {
    let n = |v: &[f64]| (v[0].min(v[2]), v[1].min(v[3]), v[0].max(v[2]), v[1].max(v[3]));
    let (ax1, ay1, ax2, ay2) = n(a);
    let (bx1, by1, bx2, by2) = n(b);
    let iw = (ax2.min(bx2) - ax1.max(bx1)).max(0.0);
    let ih = (ay2.min(by2) - ay1.max(by1)).max(0.0);
    let inter = iw * ih;
    let union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
    if union > 0.0 {
        inter / union
    } else {
        0.0
    }
}

/// Greedy NMS over boxes sorted by score (stable), as the ONNX / TF definition.
fn host_nms(boxes: &[f64], scores: &[f64], o: NmsOptions) -> Vec<i64> {
    let mut order: Vec<usize> =
        (0..scores.len()).filter(|&i| o.score_threshold.map_or(!scores[i].is_nan(), |t| scores[i] > t as f64)).collect();
    order.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap().then(a.cmp(&b)));
    let mut out: Vec<i64> = Vec::new();
    for i in order {
        if out.len() == o.max_outputs {
            break;
        }
        if out.iter().all(|&s| iou(&boxes[4 * i..4 * i + 4], &boxes[4 * s as usize..4 * s as usize + 4]) <= o.iou_threshold as f64) {
            out.push(i as i64);
        }
    }
    out.resize(o.max_outputs, -1);
    out
}

#[test]
fn nms_equals_the_greedy_host_loop_on_random_boxes() {
    let dev = reference_device();
    let mut empty = 0;
    for seed in 0..30u64 {
        let n = (seed as usize * 5) % 37;
        let u = |i: usize| rng::uniform(seed + 100, i as u64) as f64;
        let mut boxes = Vec::with_capacity(4 * n);
        for i in 0..n {
            // boxes in a 100x100 field, sides 5..30, some with swapped corners
            let (x, y, w, h) = (u(4 * i) * 100.0, u(4 * i + 1) * 100.0, 5.0 + u(4 * i + 2) * 25.0, 5.0 + u(4 * i + 3) * 25.0);
            boxes.extend(if i % 3 == 0 { [x + w, y + h, x, y] } else { [x, y, x + w, y + h] }.map(|v: f64| v.round()));
        }
        // scores rounded to tenths: ties
        let scores: Vec<f64> = (0..n).map(|i| (rng::uniform(seed + 200, i as u64) * 10.0).floor() as f64 / 10.0).collect();
        let o = NmsOptions {
            max_outputs: 1 + (seed as usize) % 12,
            iou_threshold: [0.0, 0.3, 0.5, 0.7][seed as usize % 4],
            score_threshold: if seed % 3 == 0 { Some(0.55) } else { None },
        };
        let want = host_nms(&boxes, &scores, o);
        empty += usize::from(want[0] == -1);
        let bt = Tensor::from_f64(&dev, &boxes, [n, 4]).unwrap();
        let st = Tensor::from_f64(&dev, &scores, [n]).unwrap();
        let got: Vec<i64> = non_max_suppression(&bt, &st, o).unwrap().to_vec_f64().unwrap().iter().map(|&v| v as i64).collect();
        assert_eq!(got, want, "seed {seed}: n {n}, {o:?}");
    }
    assert!(empty >= 2, "the cases include empty results");
}
