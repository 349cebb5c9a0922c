// The seed corpora of the fuzz targets: small valid inputs made with the project's own
// encoders, so the fuzzer starts from files that parse. Written to `fuzz/corpus/<target>/` by
// `cargo run --manifest-path fuzz/Cargo.toml --bin make_corpus` (or the stable test with
// PIXELGRAD_WRITE_FUZZ_CORPUS=1); the stable test also runs them directly.
//
// The ONNX seeds include the per-operator fixtures (`target/onnx-fixtures/ops`, made by
// `scripts/onnx-fixtures.sh`) of at most 4 KiB when they exist under `repo`.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use pixelgrad_core::Device;
use pixelgrad_nn::checkpoint::Checkpoint;
use pixelgrad_nn::presets::{ModelSpec, Preset, SPEC_KEY};
use pixelgrad_nn::{io, OptimizerKind};

/// One seed: target, file name, bytes.
pub type Seed = (&'static str, String, Vec<u8>);

fn put(out: &mut Vec<Seed>, target: &'static str, name: &str, bytes: &[u8]) {
    out.push((target, name.to_string(), bytes.to_vec()));
}

fn gz(data: &[u8]) -> Vec<u8> {
    // a stored (uncompressed) deflate block inside a gzip member: no compressor needed
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    out.push(1);
    let n = data.len() as u16;
    out.extend(n.to_le_bytes());
    out.extend((!n).to_le_bytes());
    out.extend(data);
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

/// Every seed of every target (with the ONNX fixtures of `repo/target` when they exist).
pub fn seeds(repo: &Path) -> Vec<Seed> {
    let mut out = Vec::new();
    // IDX: first byte picks images (even) or labels (odd)
    let d = "idx";
    let pixels: Vec<u8> = (0..2 * 4 * 3).map(|i| (i * 11) as u8).collect();
    let images = pixelgrad_data::encode_idx_images(&pixels, 2, 4, 3).unwrap();
    let labels = pixelgrad_data::encode_idx_labels(&[3, 7]).unwrap();
    put(&mut out, d, "images", &[[0u8].as_slice(), &images].concat());
    put(&mut out, d, "labels", &[[1u8].as_slice(), &labels].concat());
    put(&mut out, d, "images.gz", &[[0u8].as_slice(), &gz(&images)].concat());
    put(&mut out, d, "labels.gz", &[[1u8].as_slice(), &gz(&labels)].concat());
    // CSV: first byte holds option flags
    let d = "csv";
    put(&mut out, d, "plain", b"\x00label,p0,p1,p2,p3\n0,0,128,255,3\n1,4,5,6,200\n2,9,8,7,6\n");
    put(&mut out, d, "divide", b"\x011,2,3,4,0\n5,6,7,8,1\n");
    put(&mut out, d, "shape", b"\x0c0.5,0.25,0,1,2\n");
    put(&mut out, d, "semicolon", b"\x101;2;3;4;0\n");
    // PNG: grey, grey+alpha, RGB, palette, 16-bit
    let d = "png";
    for (name, ct, depth, w, h) in [
        ("grey8", png::ColorType::Grayscale, png::BitDepth::Eight, 5, 3),
        ("grey_alpha", png::ColorType::GrayscaleAlpha, png::BitDepth::Eight, 2, 2),
        ("rgb", png::ColorType::Rgb, png::BitDepth::Eight, 3, 2),
        ("rgba16", png::ColorType::Rgba, png::BitDepth::Sixteen, 2, 1),
        ("grey1", png::ColorType::Grayscale, png::BitDepth::One, 8, 2),
    ] {
        let mut buf = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut buf, w, h);
            enc.set_color(ct);
            enc.set_depth(depth);
            let mut wr = enc.write_header().unwrap();
            let bits = ct.samples() * depth as usize;
            let row = (w as usize * bits).div_ceil(8);
            let data: Vec<u8> = (0..row * h as usize).map(|i| (i * 37) as u8).collect();
            wr.write_image_data(&data).unwrap();
        }
        put(&mut out, d, name, &buf);
        put(&mut out, "png_rgba", name, &buf);
    }
    // PNG as `pixelgrad run` decodes it: the same files plus a palette with transparency
    let mut buf = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut buf, 3, 2);
        enc.set_color(png::ColorType::Indexed);
        enc.set_depth(png::BitDepth::Two);
        enc.set_palette(vec![0, 0, 0, 255, 0, 0, 0, 255, 0, 9, 9, 200]);
        enc.set_trns(vec![255, 128, 0]);
        enc.write_header().unwrap().write_image_data(&[0b0001_1000, 0b1110_0100]).unwrap();
    }
    put(&mut out, "png_rgba", "palette_trns", &buf);
    // safetensors: a CLI model file, a bare weights file, a checkpoint
    let d = "safetensors";
    let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
    let spec = ModelSpec { preset: Preset::Mlp, input: [1, 2, 2], classes: 3 };
    let model = spec.build(&dev, 1).unwrap();
    let meta = HashMap::from([(SPEC_KEY.to_string(), spec.to_meta())]);
    put(&mut out, d, "model", &io::to_bytes(&model, &meta).unwrap());
    put(&mut out, d, "bare", &io::to_bytes(&model, &HashMap::new()).unwrap());
    let opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let ck = Checkpoint::take(&model, opt.as_ref(), 7).unwrap();
    put(&mut out, d, "checkpoint", &ck.to_bytes(&HashMap::new()).unwrap());
    let seed = ModelSpec { preset: Preset::SeedMlp, input: [1, 6, 8], classes: 2 };
    put(
        &mut out,
        d,
        "seed_mlp",
        &io::to_bytes(&seed.build(&dev, 1).unwrap(), &HashMap::from([(SPEC_KEY.to_string(), seed.to_meta())])).unwrap(),
    );
    // JSON model specs
    let d = "spec";
    let specs = [
        r#"{"layers":[{"type":"dense","units":32,"inputShape":[64],"activation":"relu"},{"type":"dense","units":10}],"seed":1}"#,
        r#"{"layers":[{"type":"conv2d","filters":4,"kernelSize":3,"padding":"same","activation":"relu","inputShape":[8,8,1]},{"type":"maxPooling2d","poolSize":2},{"type":"flatten"},{"type":"dense","units":10}]}"#,
        r#"{"layers":[{"type":"dense","units":64,"inputShape":[48],"activation":"sigmoid"},{"type":"dense","units":2,"activation":"sigmoid"}]}"#,
        r#"{"layers":[{"type":"batchNormalization","inputShape":[6,6,2]},{"type":"dropout","rate":0.5},{"type":"conv2d","filters":3,"kernelSize":[3,3],"strides":2},{"type":"activation","activation":"tanh"},{"type":"flatten","trainable":false},{"type":"dense","units":4,"activation":"softmax"}],"seed":7}"#,
        r#"{"layers":[{"type":"onnx","model":0,"inputShape":[3]},{"type":"dense","units":2}]}"#,
    ];
    for (i, s) in specs.iter().enumerate() {
        put(&mut out, d, &format!("spec{i}.json"), s.as_bytes());
    }
    // ONNX: an exported pixelgrad model, plus the per-operator fixtures when present
    let d = "onnx";
    let net = ModelSpec { preset: Preset::Cnn, input: [1, 4, 4], classes: 2 }.build(&dev, 1).unwrap();
    put(&mut out, d, "exported_cnn.onnx", &pixelgrad_onnx::export::to_onnx(&net, &[1, 4, 4]).unwrap());
    let fixtures = repo.join("target/onnx-fixtures/ops");
    if let Ok(entries) = fs::read_dir(&fixtures) {
        let mut n = 0;
        for e in entries.flatten() {
            let model = e.path().join("model.onnx");
            if let Ok(b) = fs::read(&model) {
                if b.len() <= 4096 {
                    put(&mut out, d, &format!("{}.onnx", e.file_name().to_string_lossy()), &b);
                    n += 1;
                }
            }
        }
        let _ = n;
    }
    flower_seeds(&mut out);
    out
}

/// Flower seeds: `np.save` buffers, and messages in the structured form of
/// `harness/flower_message.rs` made by the client's own deflater (the wire-form seeds recorded
/// from a real SuperLink are committed files, see scripts/flower-record-fuzz-seeds.sh).
fn flower_seeds(out: &mut Vec<Seed>) {
    use pixelgrad_flower::npy::{encode_f32, NdArray};
    use pixelgrad_flower::objects::{deflate_message, parse_object};
    use pixelgrad_flower::proto;
    use pixelgrad_flower::records::{ArrayRecord, ConfigRecord, ConfigValue, MetricRecord, MetricValue, Record, RecordDict};
    let d = "flower_npy";
    for (name, shape) in [("scalar", vec![]), ("vector", vec![3]), ("matrix", vec![2, 3]), ("rank4", vec![1, 2, 3, 2])] {
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|i| i as f32 - 1.5).collect();
        put(out, d, name, &encode_f32(&shape, &data));
    }
    // float64, format 2.0 (u32 header length), as NumPy writes them
    for (name, major) in [("f64_v1", 1u8), ("f64_v2", 2u8)] {
        let mut header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }".to_string();
        let fixed = if major == 1 { 10 } else { 12 };
        while !(fixed + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut b = b"\x93NUMPY".to_vec();
        b.extend([major, 0]);
        if major == 1 {
            b.extend((header.len() as u16).to_le_bytes());
        } else {
            b.extend((header.len() as u32).to_le_bytes());
        }
        b.extend(header.as_bytes());
        for v in [0.25f64, -2.0] {
            b.extend(v.to_le_bytes());
        }
        put(out, d, name, &b);
    }
    // messages for the 4 -> 8 -> 3 model of harness/flower_message.rs
    let d = "flower_message";
    let arr = |shape: &[usize]| {
        let n: usize = shape.iter().product();
        NdArray::new(shape.to_vec(), (0..n).map(|i| i as f32 * 0.1).collect()).unwrap()
    };
    let arrays = ArrayRecord(vec![
        ("0.weight".into(), arr(&[4, 8])),
        ("0.bias".into(), NdArray::new(vec![8], vec![0.0; 8]).unwrap()),
        ("2.weight".into(), arr(&[8, 3])),
        ("2.bias".into(), NdArray::new(vec![3], vec![0.0; 3]).unwrap()),
    ]);
    let config = ConfigRecord(vec![
        ("server-round".into(), ConfigValue::Int(2)),
        ("local-epochs".into(), ConfigValue::Int(3)),
        ("lr".into(), ConfigValue::Float(0.01)),
        ("batch-size".into(), ConfigValue::Int(32)),
        ("clipping_norm".into(), ConfigValue::Float(5.0)),
    ]);
    let metrics =
        MetricRecord(vec![("num-examples".into(), MetricValue::Int(20)), ("loss".into(), MetricValue::FloatList(vec![0.5, 0.25]))]);
    let md = proto::Metadata {
        run_id: 3,
        src_node_id: 1,
        dst_node_id: 7,
        group_id: "2".into(),
        ttl: 600.0,
        message_type: "train".into(),
        created_at: 1.8e9,
        ..Default::default()
    };
    let train = RecordDict(vec![("arrays".into(), Record::Arrays(arrays.clone())), ("config".into(), Record::Config(config))]);
    let evaluate = RecordDict(vec![("arrays".into(), Record::Arrays(arrays)), ("metrics".into(), Record::Metrics(metrics))]);
    let error = proto::Error { code: 2, reason: "the ClientApp raised".into() };
    let messages = [
        ("structured_train", deflate_message(&md, Some(&train), None)),
        ("structured_evaluate", deflate_message(&proto::Metadata { message_type: "evaluate".into(), ..md.clone() }, Some(&evaluate), None)),
        ("structured_error", deflate_message(&md, None, Some(&error))),
    ];
    for (name, m) in messages {
        // objects in post-order as records `kind \0 children \0 body`, IDs as `#N#`
        let ids: Vec<&String> = m.objects.iter().map(|(id, _)| id).collect();
        let mut recs = Vec::new();
        for (id, content) in &m.objects {
            let (kind, children, body) = parse_object(id, content).unwrap();
            let idx: Vec<String> = children.iter().map(|c| ids.iter().position(|i| *i == c).unwrap().to_string()).collect();
            let body = if kind == "RecordDict" || kind == "ArrayRecord" {
                // reference JSON: IDs become `#N#`
                let mut text = String::from_utf8(body.to_vec()).unwrap();
                for (k, i) in ids.iter().enumerate() {
                    text = text.replace(i.as_str(), &format!("#{k}#"));
                }
                text.into_bytes()
            } else {
                body.to_vec()
            };
            let mut r = kind.as_bytes().to_vec();
            r.push(0);
            r.extend(idx.join(",").as_bytes());
            r.push(0);
            r.extend(body);
            recs.push(r);
        }
        let mut bytes = vec![1u8];
        for r in &recs {
            bytes.extend((r.len() as u32).to_le_bytes());
            bytes.extend(r);
        }
        put(out, d, name, &bytes);
    }
}

/// Writes the seeds into `dir/<target>/<name>`; without `with_fixtures` the ONNX seeds copied
/// from `target/onnx-fixtures` are left out (the repository keeps only the small seeds).
pub fn write_seeds(repo: &Path, dir: &Path, with_fixtures: bool) -> std::io::Result<usize> {
    let all: Vec<Seed> = seeds(repo).into_iter().filter(|s| with_fixtures || !is_fixture(s)).collect();
    for (t, name, bytes) in &all {
        fs::create_dir_all(dir.join(t))?;
        fs::write(dir.join(t).join(name), bytes)?;
    }
    Ok(all.len())
}

/// Whether a seed is a copy of an ONNX fixture (made by `scripts/onnx-fixtures.sh`).
pub fn is_fixture(seed: &Seed) -> bool {
    seed.0 == "onnx" && seed.1 != "exported_cnn.onnx"
}
