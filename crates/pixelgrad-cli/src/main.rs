//! `pixelgrad`: train, evaluate and run models from the command line.

mod backend;
mod backends;
mod bench;
mod check;
mod dataset;
mod eval;
mod export;
mod federated;
mod generate;
mod inspect;
mod measure;
mod model;
mod outdir;
mod plot;
mod predict;
mod privacy;
mod run;
mod train;
mod weights;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Errors reaching `main` print as one line and exit with status 1 (no backtrace).
pub type CliResult<T> = Result<T, String>;

/// Turns any displayable error into the CLI's one-line message.
pub trait Context<T> {
    fn ctx(self) -> CliResult<T>;
}

impl<T, E: std::fmt::Display> Context<T> for Result<T, E> {
    fn ctx(self) -> CliResult<T> {
        self.map_err(|e| e.to_string())
    }
}

#[derive(Parser)]
#[command(name = "pixelgrad", version, about = "Train and run neural networks on WebGPU, WebGL2 or the CPU")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Train a model (defaults: the embedded 8x8 digits set, the mlp preset, backend auto).
    Train(train::TrainArgs),
    /// Evaluate a saved model on a data set's test split.
    Eval(eval::EvalArgs),
    /// Classify a PNG image with a saved model.
    Predict(predict::PredictArgs),
    /// List the backends this machine offers and why auto-selection picks one.
    Backends(backends::BackendsArgs),
    /// Cross-check a backend against the f64 CPU reference, every intermediate of a few
    /// training steps of a tiny network.
    Check(check::CheckArgs),
    /// Benchmark matmul and training steps per backend, side by side (not a test).
    Bench(bench::BenchArgs),
    /// Run an ONNX model on .npy inputs and write its outputs as .npy files.
    Run(run::RunArgs),
    /// Describe an ONNX model without running it: inputs, outputs, opsets, operators and the
    /// backends that run them, weight bytes, and what pixelgrad would refuse and why.
    Inspect(inspect::InspectArgs),
    /// Generate token ids with an ONNX decoder (Hugging Face's layout), its key/value cache
    /// kept on the device.
    Generate(generate::GenerateArgs),
    /// Write a model saved by `train` as an ONNX file.
    Export(export::ExportArgs),
    /// Join a Flower federation as a node (train on a local partition, send only parameters).
    Federated(federated::FederatedArgs),
    /// The (epsilon, delta) a number of Gaussian releases cost (the accountant a federated
    /// node keeps its budget with), to plan rounds and noise before a federation runs.
    Privacy(privacy::PrivacyArgs),
}

/// Headless machines often lack `XDG_RUNTIME_DIR`; the Vulkan/EGL loaders then print an
/// "error:" line to stderr while probing display platforms, although nothing is wrong for
/// compute. Pointing it at the temp folder keeps the output to pixelgrad's own lines.
fn quiet_display_probing() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        // Single-threaded at this point: nothing else reads the environment concurrently.
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // which `train` flags were typed (`--resume` checks them against the saved run)
    let given = |id: &str| matches.subcommand_matches("train").is_some_and(|m| m.value_source(id) == Some(ValueSource::CommandLine));
    quiet_display_probing();
    let result = match cli.cmd {
        Cmd::Train(a) => train::run(a, &given),
        Cmd::Eval(a) => eval::run(a),
        Cmd::Predict(a) => predict::run(a),
        Cmd::Backends(a) => backends::list(a),
        Cmd::Check(a) => check::run(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Inspect(a) => inspect::run(a),
        Cmd::Generate(a) => generate::run(a),
        Cmd::Export(a) => export::run(a),
        Cmd::Federated(a) => federated::run(a),
        Cmd::Privacy(a) => privacy::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}
