//! Prints, as one JSON object `{ name: wgsl }`, the register-blocked matmul sources
//! (`src/ops/matmul_cpu_src.rs`) for the block shapes given as `ROWSxCOLSxLANES`, so
//! measurement tools outside Rust (`web/bench/probe/run.mjs`) time exactly what the backend
//! compiles. The sources lack the common prelude (`src/kernels/common.wgsl`), which every
//! kernel gets in front.
//!
//! `cargo run -p pixelgrad-wgpu --example dump_wgsl -- 16x16x8 8x8x8 > /tmp/wgsl.json`
//!
//! Only `std` is used, so `rustc --edition 2021 examples/dump_wgsl.rs` builds it in seconds.

#[path = "../src/ops/matmul_cpu_src.rs"]
mod matmul_cpu_src;

fn json_string(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn main() {
    let mut entries = Vec::new();
    for arg in std::env::args().skip(1) {
        let dims: Vec<usize> = arg.split('x').filter_map(|s| s.parse().ok()).collect();
        let [rows, cols, lanes] = dims[..] else {
            eprintln!("{arg}: expected ROWSxCOLSxLANES, e.g. 16x16x8");
            std::process::exit(2);
        };
        if rows == 0 || cols == 0 || lanes == 0 || rows % 4 != 0 || cols % 4 != 0 {
            eprintln!("{arg}: rows and cols must be positive multiples of 4, lanes positive");
            std::process::exit(2);
        }
        let src = matmul_cpu_src::source(rows, cols, lanes);
        entries.push(format!("{}: {}", json_string(&format!("matmul_cpu_{arg}")), json_string(&src)));
    }
    println!("{{{}}}", entries.join(",\n"));
}
