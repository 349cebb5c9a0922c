/// Learning rate as a function of the step number (0-based).
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    Constant,
    /// Multiply by `gamma` every `every` steps.
    Step { every: usize, gamma: f32 },
    /// Cosine decay from the base rate to `min_lr` over `total` steps, then `min_lr`.
    Cosine { total: usize, min_lr: f32 },
    /// Linear ramp from 0 to the base rate over `steps`, then `then`.
    Warmup { steps: usize, then: Box<Schedule> },
}

impl Schedule {
    /// The learning rate at `step` for base rate `base`.
    pub fn lr(&self, base: f32, step: usize) -> f32 {
        match self {
            Schedule::Constant => base,
            Schedule::Step { every, gamma } => base * gamma.powi((step / (*every).max(1)) as i32),
            Schedule::Cosine { total, min_lr } => {
                if step >= *total {
                    return *min_lr;
                }
                let t = step as f32 / (*total).max(1) as f32;
                min_lr + 0.5 * (base - min_lr) * (1.0 + (std::f32::consts::PI * t).cos())
            }
            Schedule::Warmup { steps, then } => {
                if step < *steps {
                    base * (step + 1) as f32 / *steps as f32
                } else {
                    then.lr(base, step - steps)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        assert_eq!(Schedule::Constant.lr(0.1, 100), 0.1);
        assert!((Schedule::Step { every: 10, gamma: 0.5 }.lr(1.0, 25) - 0.25).abs() < 1e-7);
        let c = Schedule::Cosine { total: 100, min_lr: 0.0 };
        assert!((c.lr(1.0, 0) - 1.0).abs() < 1e-6);
        assert!((c.lr(1.0, 50) - 0.5).abs() < 1e-6);
        assert_eq!(c.lr(1.0, 200), 0.0);
        let w = Schedule::Warmup { steps: 4, then: Box::new(Schedule::Constant) };
        assert_eq!(w.lr(1.0, 0), 0.25);
        assert_eq!(w.lr(1.0, 3), 1.0);
        assert_eq!(w.lr(1.0, 10), 1.0);
    }
}
