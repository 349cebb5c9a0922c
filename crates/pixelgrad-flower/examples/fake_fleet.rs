//! A fake Fleet API server with one hostile behaviour, for the browser tests
//! (`web/tests/flower.test.mjs`): prints its URL, then serves until stdin closes.
//!
//! ```text
//! cargo run -p pixelgrad-flower --features fake-server --example fake_fleet -- SCENARIO
//! ```
//!
//! SCENARIO: `non-ascii-id`, `repeated-chunks`, `repeated-array-refs`, `too-many-objects`,
//! `endless-body`, `stall`.

use std::io::{Read, Write};

use pixelgrad_flower::testing::{self, FakeFleet, Scenario};

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    let scenario = match arg.as_str() {
        "non-ascii-id" => testing::non_ascii_id(),
        "repeated-chunks" => testing::repeated_chunks(25_000_000),
        "repeated-array-refs" => testing::repeated_array_refs(&[1000], 10_000),
        "too-many-objects" => testing::too_many_objects(20_000),
        "endless-body" => Scenario::EndlessBody,
        "stall" => Scenario::Stall,
        other => {
            eprintln!("fake_fleet: unknown scenario '{other}'");
            std::process::exit(2);
        }
    };
    let server = match FakeFleet::start(scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake_fleet: {e}");
            std::process::exit(1);
        }
    };
    println!("{}", server.url);
    let _ = std::io::stdout().flush();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}
