//! `pixelgrad inspect MODEL.onnx`: what an ONNX file holds and whether pixelgrad reads it,
//! without running it ([`pixelgrad::onnx::inspect`]): inputs, outputs, opsets, operators with
//! their counts and the backends that run them, weight bytes by stored type, external data,
//! and what loading would refuse and why. Exit status 0 whether or not the model loads; 1 for
//! a file that is not an ONNX model.

use std::path::PathBuf;

use clap::Args;
use pixelgrad::onnx::inspect::{inspect_file, Report, BACKENDS};

use crate::{CliResult, Context};

#[derive(Args)]
pub struct InspectArgs {
    /// The .onnx model file (external data is read from its folder)
    pub model: PathBuf,
    /// Print the report as one JSON object
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: InspectArgs) -> CliResult<()> {
    let r = inspect_file(&a.model).ctx()?;
    if a.json {
        println!("{}", r.to_json());
    } else {
        print!("{}", text(&a.model.display().to_string(), &r));
    }
    Ok(())
}

fn text(name: &str, r: &Report) -> String {
    let mut s = String::new();
    let opsets: Vec<String> = r.opsets.iter().map(|(d, v)| format!("{} {v}", if d.is_empty() { "ai.onnx" } else { d.as_str() })).collect();
    s += &format!("{name}: IR version {}, producer '{}', opsets: {}\n", r.ir_version, r.producer, opsets.join(", "));
    for (title, list) in [("inputs", &r.inputs), ("outputs", &r.outputs)] {
        s += &format!("{title}:\n");
        for i in list.iter() {
            s += &format!("  {:<24} {:<8} {}\n", i.name, i.dtype.name(), i.shape_text());
        }
    }
    s += &format!("operators: {} types, {} nodes (subgraphs included)\n", r.operators.len(), r.nodes);
    for o in &r.operators {
        let dom = if o.domain.is_empty() { String::new() } else { format!("{}:", o.domain) };
        let mut support = if o.supported { BACKENDS.join(" ") } else { "refused (pixelgrad does not read it)".to_string() };
        if let Some(note) = o.note {
            support += &format!(" ({note})");
        }
        s += &format!("  {:<32} {:>6}  {support}\n", format!("{dom}{}", o.op_type), o.count);
    }
    s += "weights by stored type:\n";
    for (dtype, w) in &r.weights {
        s += &format!("  {dtype:<10} {:>6} tensors {:>14} bytes\n", w.tensors, w.bytes);
    }
    let pw = &r.packed_weights;
    if pw.nodes > 0 {
        s += &format!(
            "MatMulNBits weights: {} node(s), {} bytes packed on the device (cpu, webgpu, webgl2), {} bytes as f32 (webgl1)\n",
            pw.nodes, pw.packed_bytes, pw.f32_bytes
        );
    }
    for (file, bytes) in &r.external {
        s += &format!("external data: '{file}', {bytes} bytes\n");
    }
    if r.loads() {
        s += "loads: yes\n";
    } else {
        s += "loads: no\n";
        for why in &r.refused {
            s += &format!("  refused: {why}\n");
        }
    }
    s
}
