//! Pacing of native training ([`crate::train::FitOptions::max_steps_per_second`]): step `k`
//! starts no earlier than one interval after step `k - 1` started, so `n` steps take at least
//! `(n - 1) / rate` seconds. A late step (slow device) moves the schedule on instead of
//! bursting to catch up. Sleeping between steps touches no tensor, so results are unchanged.

/// Waits between steps (native); does nothing without a rate or on wasm (no blocking sleep).
pub struct Pacer {
    #[cfg(not(target_arch = "wasm32"))]
    interval: Option<std::time::Duration>,
    #[cfg(not(target_arch = "wasm32"))]
    next: Option<std::time::Instant>,
}

impl Pacer {
    /// A pacer for at most `rate` steps per second (`None`: no pacing).
    pub fn new(rate: Option<f64>) -> Pacer {
        #[cfg(not(target_arch = "wasm32"))]
        {
            let interval = rate.filter(|r| r.is_finite() && *r > 0.0).map(|r| std::time::Duration::from_secs_f64(1.0 / r));
            Pacer { interval, next: None }
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = rate;
            Pacer {}
        }
    }

    /// Call before each step: sleeps until the step may start.
    pub fn wait(&mut self) {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(iv) = self.interval {
            let now = std::time::Instant::now();
            if let Some(at) = self.next {
                if at > now {
                    std::thread::sleep(at - now);
                }
            }
            // The next step's start: one interval after this one's scheduled (or late) start.
            let started = self.next.map_or(now, |at| at.max(now));
            self.next = Some(started + iv);
        }
    }
}
