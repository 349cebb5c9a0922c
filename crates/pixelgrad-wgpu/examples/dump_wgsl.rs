//! Prints, as one JSON object `{ "matmul_cpu_RxCxL": { "TTVVV": wgsl } }`, the
//! register-blocked matmul sources (`src/ops/matmul_cpu_src.rs`) for the block shapes given
//! as `ROWSxCOLSxLANES`, each in its 32 operand layouts (`TTVVV`: trans_a, trans_b, vec_a,
//! vec_b, vec_c as 0/1 digits) and the run-time-strided one (`strided0`, `strided1`: vec_c), so
//! measurement tools outside Rust (`web/bench/probe/run.mjs`) time exactly what the backend
//! compiles. The sources lack the common prelude (`src/kernels/common.wgsl`), which every
//! kernel gets in front.
//!
//! `cargo run -p pixelgrad-wgpu --example dump_wgsl -- 16x16x8 8x8x8 > /tmp/wgsl.json`
//!
//! Only `std` is used, so `rustc --edition 2021 examples/dump_wgsl.rs` builds it in seconds.

// The split-K source is not dumped (its layout is the plain one).
#[allow(dead_code)]
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
        let mut layouts = Vec::new();
        for bits in 0..32u32 {
            let bit = |i: u32| bits >> (4 - i) & 1 == 1;
            let v = matmul_cpu_src::Variant {
                rows,
                cols,
                lanes,
                trans_a: bit(0),
                trans_b: bit(1),
                vec_a: bit(2),
                vec_b: bit(3),
                vec_c: bit(4),
                strided: false,
                share_a: false,
            };
            let key = (0..5).map(|i| if bit(i) { '1' } else { '0' }).collect::<String>();
            layouts.push(format!("{}: {}", json_string(&key), json_string(&matmul_cpu_src::source(&v))));
        }
        for vec_c in [false, true] {
            let v = matmul_cpu_src::Variant {
                rows,
                cols,
                lanes,
                trans_a: false,
                trans_b: false,
                vec_a: false,
                vec_b: false,
                vec_c,
                strided: true,
                share_a: false,
            };
            layouts.push(format!("{}: {}", json_string(&format!("strided{}", u8::from(vec_c))), json_string(&matmul_cpu_src::source(&v))));
        }
        entries.push(format!("{}: {{{}}}", json_string(&format!("matmul_cpu_{arg}")), layouts.join(",\n")));
    }
    println!("{{{}}}", entries.join(",\n"));
}
