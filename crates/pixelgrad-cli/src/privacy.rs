//! `pixelgrad privacy`: the (ε, δ) that a number of Gaussian releases cost, from the same
//! Rényi-DP accountant the federated node keeps its budget with
//! ([`pixelgrad::flower::accountant::RdpAccountant`]). For planning a federation before it
//! runs ("how many rounds at noise multiplier 1.1 stay under ε = 8?") and for stating what a
//! server's own noise would give (Flower's client-side clipping: the server adds
//! `N(0, (Z C / n)^2)` to the mean of `n` clipped updates, noise multiplier `Z` for one node's
//! contribution when every node weighs the same).
//!
//! The noise comes either as a multiplier (`--noise-multiplier Z`, the standard deviation over
//! the L2 sensitivity) or as the per-round setting of local DP (`--local-dp EPS,DELTA,CLIP`,
//! the multiplier `LocalDpMod`'s noise has: its standard deviation over the clip).

use clap::Args;
use pixelgrad::flower::accountant::RdpAccountant;

use crate::federated::parse_local_dp;
use crate::CliResult;

#[derive(Args)]
pub struct PrivacyArgs {
    /// Noise multiplier of each release: the Gaussian's standard deviation over the L2
    /// sensitivity
    #[arg(long, conflicts_with = "local_dp", required_unless_present = "local_dp")]
    pub noise_multiplier: Option<f64>,
    /// The noise of local DP (Flower's LocalDpMod) per release: EPSILON,DELTA,CLIP[,SENSITIVITY]
    #[arg(long)]
    pub local_dp: Option<String>,
    /// Number of releases (rounds a node sends an update in)
    #[arg(long, default_value_t = 1)]
    pub releases: u64,
    /// Poisson sampling rate of each release (1 = every release includes the node)
    #[arg(long, default_value_t = 1.0)]
    pub sampling_rate: f64,
    /// The δ at which ε is reported
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Print one JSON object
    #[arg(long)]
    pub json: bool,
}

/// Most releases one call accounts for: composing is one multiplication per order, but a
/// typo of a few more zeros should be an error, not an answer about an absurd run.
const MAX_RELEASES: u64 = 1_000_000_000;

/// The multiplier, checked.
fn multiplier(a: &PrivacyArgs) -> CliResult<f64> {
    let z = match (&a.local_dp, a.noise_multiplier) {
        (Some(s), _) => {
            let l = parse_local_dp(s)?;
            l.std_dev() / l.clipping_norm
        }
        (None, Some(z)) => z,
        (None, None) => return Err("give --noise-multiplier Z or --local-dp EPSILON,DELTA,CLIP".into()),
    };
    if !(z > 0.0 && z.is_finite()) {
        return Err(format!("the noise multiplier must be a positive number, got {z}"));
    }
    Ok(z)
}

/// Cumulative ε after `releases` releases, checked arguments.
pub fn epsilon(a: &PrivacyArgs) -> CliResult<(f64, f64)> {
    let z = multiplier(a)?;
    if a.releases == 0 || a.releases > MAX_RELEASES {
        return Err(format!("--releases must be between 1 and {MAX_RELEASES}, got {}", a.releases));
    }
    if !(a.sampling_rate > 0.0 && a.sampling_rate <= 1.0) {
        return Err(format!("--sampling-rate must be in (0, 1], got {}", a.sampling_rate));
    }
    if !(a.delta > 0.0 && a.delta < 1.0) {
        return Err(format!("--delta must be in (0, 1), got {}", a.delta));
    }
    let mut acc = RdpAccountant::new();
    acc.compose(a.sampling_rate, z, a.releases);
    Ok((z, acc.epsilon(a.delta)))
}

pub fn run(a: PrivacyArgs) -> CliResult<()> {
    let (z, eps) = epsilon(&a)?;
    if a.json {
        let j = serde_json::json!({
            "noise_multiplier": z,
            "releases": a.releases,
            "sampling_rate": a.sampling_rate,
            "delta": a.delta,
            "epsilon": eps,
        });
        println!("{j}");
    } else {
        println!(
            "{} release(s) of noise multiplier {z:.4}{}: epsilon {eps:.4} at delta {}",
            a.releases,
            if a.sampling_rate < 1.0 { format!(" at sampling rate {}", a.sampling_rate) } else { String::new() },
            a.delta
        );
    }
    Ok(())
}
