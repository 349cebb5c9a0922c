//! Text generation with an imported decoder ([`Session::generate`], [`Generator`]): greedy or
//! sampled tokens, one at a time, from a model in Hugging Face's ONNX layout
//! ([`DecoderLayout`]).
//!
//! **The cache stays on the device.** With `past_key_values.N.*` inputs, the first run
//! (prefill) feeds the whole prompt with an empty past; every later run feeds the one new token
//! and, as its past, the `present.N.*` outputs of the run before, which are device tensors
//! handed back as inputs with no readback. A merged decoder (`use_cache_branch`) takes its
//! no-cache branch for the prefill and its cache branch after. **One small readback per
//! token**: only the last position's logits (one row of `vocabulary` floats) come to the host,
//! where the next token is picked ([`GenerateOptions`]: greedy at temperature 0, else
//! temperature, top-k, top-p from a seeded generator).
//!
//! A decoder without past inputs (or [`GenerateOptions::use_cache`] off) recomputes the whole
//! sequence every step: the same tokens, more work per token.
//!
//! Limits: a `max_tokens` that would make one cache tensor (or the logits) exceed the device's
//! `max_elements` ([`pixelgrad_core::Device::set_limits`]) is refused before anything runs;
//! every step is a session run under the session's work limit and [`GenerateOptions::run`].

mod layout;
mod sample;

pub use layout::{CacheLayer, DecoderLayout};
pub use sample::Sampler;

use pixelgrad_core::Error as CoreError;

use crate::host::{DType, HostTensor};
use crate::session::{Input, Pause, RunOptions, Session, Value};
use crate::{OnnxError, Result};

/// How [`Session::generate`] picks and stops.
#[derive(Clone)]
pub struct GenerateOptions {
    /// The most tokens to generate (default 16).
    pub max_tokens: usize,
    /// 0 (the default): greedy, the most likely token every step. Above 0: sample from the
    /// softmax of `logits / temperature`.
    pub temperature: f32,
    /// Sample among the `top_k` most likely tokens only (0, the default: all; 1: greedy).
    pub top_k: usize,
    /// Sample among the smallest set of most likely tokens whose probabilities add up to
    /// `top_p` (1, the default: all).
    pub top_p: f32,
    /// Token ids that end the generation; the stop token is not part of the result.
    pub stop: Vec<u32>,
    /// The sampler's seed: the same seed, prompt and model give the same tokens.
    pub seed: u64,
    /// Keep the key/value cache on the device (default). Off: feed the whole sequence every
    /// step with an empty past (the full recomputation the cache must agree with).
    pub use_cache: bool,
    /// Each step's run options (cancel token, work limit, pauses).
    pub run: RunOptions,
    /// Awaited after each token by [`Generator::generate_async`] (never by the blocking
    /// [`Session::generate`]): in a browser, a future that resolves on the next task lets the
    /// page draw the streamed token and run its event handlers between steps.
    pub between_tokens: Option<Pause>,
}

impl std::fmt::Debug for GenerateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenerateOptions")
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("top_k", &self.top_k)
            .field("top_p", &self.top_p)
            .field("stop", &self.stop)
            .field("seed", &self.seed)
            .field("use_cache", &self.use_cache)
            .field("run", &self.run)
            .field("between_tokens", &self.between_tokens.as_ref().map(|_| "Fn"))
            .finish()
    }
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: 16,
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            stop: Vec::new(),
            seed: 0,
            use_cache: true,
            run: RunOptions::default(),
            between_tokens: None,
        }
    }
}

/// Why a generation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// `max_tokens` tokens were generated.
    MaxTokens,
    /// This stop token came (it is not in [`Generation::tokens`]).
    StopToken(u32),
    /// The per-token callback returned `false`.
    Callback,
}

/// What [`Session::generate`] returns.
#[derive(Clone, Debug)]
pub struct Generation {
    /// The generated tokens (not the prompt).
    pub tokens: Vec<u32>,
    pub stopped: StopReason,
    /// Whether the key/value cache was used (false: full recomputation every step).
    pub cached: bool,
    /// Runs of the model.
    pub steps: usize,
    /// Milliseconds of the first run (the prompt) with its readback and pick.
    pub prefill_ms: f64,
    /// Milliseconds of the runs after the first.
    pub decode_ms: f64,
    /// Generated tokens per second, prefill included.
    pub tokens_per_second: f64,
    /// Tokens per second of the runs after the first (0 when there were none).
    pub decode_tokens_per_second: f64,
}

/// A session's decoder layout, ready to generate.
pub struct Generator<'s> {
    session: &'s Session,
    layout: DecoderLayout,
}

impl Session {
    /// Generates up to `options.max_tokens` tokens after `prompt` (token ids, batch 1) with this
    /// session's decoder, calling `on_token` with each as it comes (return `false` to stop).
    /// See [`crate::generate`]. Blocking: in a browser use [`Generator::generate_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn generate(&self, prompt: &[u32], options: &GenerateOptions, on_token: &mut dyn FnMut(u32) -> bool) -> Result<Generation> {
        Generator::new(self)?.generate(prompt, options, on_token)
    }
}

impl<'s> Generator<'s> {
    /// Finds the decoder layout of `session`'s model; errors name what is missing.
    pub fn new(session: &'s Session) -> Result<Generator<'s>> {
        Ok(Generator { session, layout: DecoderLayout::discover(session.model())? })
    }

    pub fn layout(&self) -> &DecoderLayout {
        &self.layout
    }

    /// [`Generator::generate_async`] polled to the end, timed with the system clock. Natively
    /// every read completes at once.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn generate(&self, prompt: &[u32], options: &GenerateOptions, on_token: &mut dyn FnMut(u32) -> bool) -> Result<Generation> {
        let start = std::time::Instant::now();
        let now = move || start.elapsed().as_secs_f64() * 1e3;
        let options = GenerateOptions { between_tokens: None, ..options.clone() };
        let fut = std::pin::pin!(self.generate_async(prompt, &options, on_token, &now));
        match std::future::Future::poll(fut, &mut std::task::Context::from_waker(std::task::Waker::noop())) {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => Err(OnnxError::Output {
                name: self.layout.logits.clone(),
                msg: "the device reads back asynchronously: use Generator::generate_async".into(),
            }),
        }
    }

    /// Checks a generation against the device's limits before anything runs: the prompt's
    /// tokens within the vocabulary, one cache tensor (`1 × heads × (prompt + max_tokens - 1)
    /// × head size`) and the largest logits the runs make within `max_elements`.
    pub fn check(&self, prompt: &[u32], options: &GenerateOptions) -> Result<()> {
        let l = &self.layout;
        if prompt.is_empty() {
            return Err(OnnxError::Input {
                name: l.input_ids.0.clone(),
                msg: "the prompt is empty (generation needs at least one token)".into(),
            });
        }
        if let (Some(v), Some(&t)) = (l.vocab, prompt.iter().find(|&&t| l.vocab.is_some_and(|v| t as usize >= v))) {
            return Err(OnnxError::Input { name: l.input_ids.0.clone(), msg: format!("token {t} is outside the vocabulary of {v}") });
        }
        let limit = self.session.device().limits().max_elements as u64;
        let budget = |what: &'static str, requested: u64| {
            OnnxError::Core(CoreError::Budget {
                op: "generate",
                backend: self.session.device().name(),
                what,
                requested,
                limit,
                raise: "max_tokens, or the device's max_elements (Device::set_limits)",
            })
        };
        // positions that go through the model: all but the last token generated
        let fed = (prompt.len() as u64).saturating_add(options.max_tokens as u64).saturating_sub(1);
        let cached = l.has_cache() && options.use_cache;
        if l.has_cache() {
            let per = (l.kv_heads * l.head_size) as u64;
            let n = fed.saturating_mul(per);
            if n > limit {
                return Err(budget("elements of one key/value cache tensor (heads × (prompt + max_tokens - 1) × head size)", n));
            }
        }
        if let Some(v) = l.vocab {
            let longest = if cached { prompt.len() as u64 } else { fed };
            let n = longest.saturating_mul(v as u64);
            if n > limit {
                return Err(budget("elements of the logits of one run (sequence × vocabulary)", n));
            }
        }
        if fed > i64::MAX as u64 / 2 {
            return Err(budget("positions of the sequence", fed));
        }
        Ok(())
    }

    /// The inputs of one run: `ids` at positions `start..`, after a past of `start` positions
    /// (`past`: the previous run's presents, or `None` for an empty past).
    fn feeds(&self, ids: &[u32], start: usize, past: Option<&[Input]>) -> Vec<(&str, Input)> {
        let l = &self.layout;
        let n = ids.len();
        let ints = |dtype: DType, v: Vec<i64>| Input::Host(HostTensor::ints(dtype, vec![1, v.len()], v));
        let mut feeds = vec![(l.input_ids.0.as_str(), ints(l.input_ids.1, ids.iter().map(|&t| t as i64).collect()))];
        if let Some((name, dt)) = &l.attention_mask {
            feeds.push((name.as_str(), ints(*dt, vec![1; start + n])));
        }
        if let Some((name, dt)) = &l.position_ids {
            feeds.push((name.as_str(), ints(*dt, (start..start + n).map(|p| p as i64).collect())));
        }
        if let Some(b) = &l.use_cache_branch {
            feeds.push((b.as_str(), Input::Host(HostTensor::ints(DType::Bool, vec![1], vec![(past.is_some()) as i64]))));
        }
        let empty = || Input::Host(HostTensor::f32(vec![1, l.kv_heads, 0, l.head_size], Vec::new()));
        for (i, layer) in l.layers.iter().enumerate() {
            let (k, v) = match past {
                Some(p) => (p[2 * i].clone(), p[2 * i + 1].clone()),
                None => (empty(), empty()),
            };
            feeds.push((layer.past_key.as_str(), k));
            feeds.push((layer.past_value.as_str(), v));
        }
        feeds
    }

    /// The last position's logits of a run's `logits` output `[1, sequence, vocabulary]`: one
    /// row read back.
    async fn last_logits(&self, v: &Value) -> Result<Vec<f32>> {
        let name = &self.layout.logits;
        let dims = v.dims().to_vec();
        let [1, s, vocab] = dims[..] else {
            return Err(OnnxError::Output {
                name: name.clone(),
                msg: format!("has shape {dims:?}; generation reads [1, sequence, vocabulary]"),
            });
        };
        match v {
            Value::Device { tensor, .. } => {
                let row = if s == 1 { tensor.clone() } else { tensor.slice(1, s - 1, s)? };
                Ok(row.widen()?.to_vec_async().await?)
            }
            Value::Host(h) => Ok(h.to_f32()[(s - 1) * vocab..].to_vec()),
        }
    }

    /// Generates after `prompt`, calling `on_token` with each token as it comes (`false`
    /// stops); `now` is a clock in milliseconds (in a browser, `performance.now()`).
    pub async fn generate_async(
        &self,
        prompt: &[u32],
        options: &GenerateOptions,
        on_token: &mut dyn FnMut(u32) -> bool,
        now: &dyn Fn() -> f64,
    ) -> Result<Generation> {
        self.check(prompt, options)?;
        let mut sampler = Sampler::new(options.temperature, options.top_k, options.top_p, options.seed)?;
        let l = &self.layout;
        let cached = l.has_cache() && options.use_cache;
        let mut seq: Vec<u32> = prompt.to_vec();
        let mut tokens = Vec::new();
        let mut past: Option<Vec<Input>> = None;
        let mut stopped = StopReason::MaxTokens;
        let (t0, mut t1) = (now(), None);
        let mut steps = 0usize;
        while tokens.len() < options.max_tokens {
            let start = if cached && past.is_some() { seq.len() - 1 } else { 0 };
            let inputs = self.feeds(&seq[start..], start, if cached { past.as_deref() } else { None });
            let outs = self.session.run_async_with(&inputs, &options.run).await?;
            drop(inputs);
            steps += 1;
            let value = |name: &str| {
                outs.iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v)
                    .ok_or_else(|| OnnxError::Output { name: name.to_string(), msg: "was not computed".into() })
            };
            let row = self.last_logits(value(&l.logits)?).await?;
            if cached {
                let mut next = Vec::with_capacity(2 * l.layers.len());
                for layer in &l.layers {
                    for name in [&layer.present_key, &layer.present_value] {
                        let v = value(name)?;
                        if v.dims().len() != 4 || v.dims()[2] != seq.len() {
                            return Err(OnnxError::Output {
                                name: name.clone(),
                                msg: format!(
                                    "has shape {:?}; after {} positions it should hold [1, heads, {}, head size]",
                                    v.dims(),
                                    seq.len(),
                                    seq.len()
                                ),
                            });
                        }
                        // the device tensor itself: fed back next step, never read
                        next.push(match v {
                            Value::Device { tensor, .. } => Input::Tensor(tensor.clone()),
                            Value::Host(h) => Input::Host(h.clone()),
                        });
                    }
                }
                past = Some(next);
            }
            drop(outs);
            let token = sampler.pick(&row)?;
            if t1.is_none() {
                t1 = Some(now());
            }
            if options.stop.contains(&token) {
                stopped = StopReason::StopToken(token);
                break;
            }
            seq.push(token);
            tokens.push(token);
            if !on_token(token) {
                stopped = StopReason::Callback;
                break;
            }
            if let Some(pause) = &options.between_tokens {
                pause().await;
            }
        }
        let t2 = now();
        let t1 = t1.unwrap_or(t2);
        let (prefill_ms, decode_ms) = (t1 - t0, t2 - t1);
        let per_s = |n: usize, ms: f64| if ms > 0.0 && n > 0 { n as f64 * 1e3 / ms } else { 0.0 };
        Ok(Generation {
            tokens_per_second: per_s(tokens.len(), prefill_ms + decode_ms),
            decode_tokens_per_second: per_s(steps.saturating_sub(1), decode_ms),
            tokens,
            stopped,
            cached,
            steps,
            prefill_ms,
            decode_ms,
        })
    }
}
