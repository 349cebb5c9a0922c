//! `pixelgrad generate MODEL.onnx --prompt-ids 1,2,3 --max-tokens 16`: token ids from a decoder
//! in Hugging Face's ONNX layout ([`pixelgrad::onnx::generate`]), the key/value cache kept on
//! the device; prints each token as it comes, then the timings (prefill ms, tokens/s).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use pixelgrad::onnx::{GenerateOptions, Model, Session, StopReason};

use crate::{backend, CliResult, Context};

#[derive(Args)]
pub struct GenerateArgs {
    /// The decoder's .onnx file (external data is read from its folder)
    pub model: PathBuf,
    /// The prompt's token ids, comma-separated
    #[arg(long, value_name = "ID,ID,...")]
    pub prompt_ids: String,
    #[arg(long, default_value_t = 16)]
    pub max_tokens: usize,
    /// 0: greedy; above 0: sample from softmax(logits / temperature)
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Sample among the k most likely tokens (0: all)
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    /// Sample among the most likely tokens whose probabilities add up to p
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Token ids that end the generation, comma-separated
    #[arg(long, value_name = "ID,ID,...")]
    pub stop: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Recompute the whole sequence every step instead of keeping the cache
    #[arg(long)]
    pub no_cache: bool,
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Print one JSON object as the last line of stdout
    #[arg(long)]
    pub json: bool,
}

fn ids(flag: &str, s: &str) -> CliResult<Vec<u32>> {
    s.split(',')
        .filter(|t| !t.trim().is_empty())
        .map(|t| t.trim().parse::<u32>().map_err(|_| format!("--{flag}: '{t}' is not a token id (a whole number ≥ 0)")))
        .collect()
}

pub fn run(a: GenerateArgs) -> CliResult<()> {
    let prompt = ids("prompt-ids", &a.prompt_ids)?;
    let stop = a.stop.as_deref().map(|s| ids("stop", s)).transpose()?.unwrap_or_default();
    let model = Model::load(&a.model).ctx()?;
    let sel = backend::select(&a.backend)?;
    eprintln!("backend: {}", sel.explain());
    let session = Session::new(model, &sel.device).ctx()?;
    let options = GenerateOptions {
        max_tokens: a.max_tokens,
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
        stop,
        seed: a.seed,
        use_cache: !a.no_cache,
        ..GenerateOptions::default()
    };
    let mut out = std::io::stdout();
    let g = session
        .generate(&prompt, &options, &mut |t| {
            if !a.json {
                let _ = write!(out, "{t} ");
                let _ = out.flush();
            }
            true
        })
        .ctx()?;
    let stopped = match g.stopped {
        StopReason::MaxTokens => "maxTokens".to_string(),
        StopReason::StopToken(t) => format!("stop token {t}"),
        StopReason::Callback => "callback".to_string(),
    };
    if a.json {
        let j = serde_json::json!({
            "tokens": g.tokens, "stopped": stopped, "cached": g.cached, "steps": g.steps, "backend": sel.device.name(),
            "prefillMs": g.prefill_ms, "decodeMs": g.decode_ms, "tokensPerSecond": g.tokens_per_second,
            "decodeTokensPerSecond": g.decode_tokens_per_second,
        });
        println!("{j}");
    } else {
        println!();
        eprintln!(
            "{} tokens ({stopped}), cache {}: prefill {:.1} ms, {:.1} tokens/s ({:.1} tokens/s after the prefill)",
            g.tokens.len(),
            if g.cached { "on the device" } else { "off (full recomputation)" },
            g.prefill_ms,
            g.tokens_per_second,
            g.decode_tokens_per_second
        );
    }
    Ok(())
}
