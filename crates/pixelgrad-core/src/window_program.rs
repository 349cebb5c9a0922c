//! [`WindowProgram`]: which window program an [`Op::Window`](crate::Op::Window) runs, its name,
//! its [`Form`] (inputs and output shape) and its gradient. The programs themselves, in the
//! kernel IR, are in [`crate::kernel::windows`] (`WindowProgram::program`), which re-exports
//! both types.

/// A window program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowProgram {
    /// [`crate::Op::MaxPool`]: input `x`, one window scan per output element.
    MaxPool,
    /// [`crate::Op::MaxPoolGrad`]: inputs `x` and `b` (`dy`), a gather over the windows
    /// covering each pixel.
    MaxPoolGrad,
    /// Average pooling: the mean of the window's `kh * kw` taps, those in the padding counting
    /// as 0 (as `composite::avg_pool2d`, im2col then the mean), in one pass.
    AvgPool,
    /// The gradient of [`WindowProgram::AvgPool`]: every window covering a pixel passes it
    /// `dy / (kh * kw)` (`x` gives only the shape).
    AvgPoolGrad,
}

impl WindowProgram {
    pub const ALL: [WindowProgram; 4] =
        [WindowProgram::MaxPool, WindowProgram::MaxPoolGrad, WindowProgram::AvgPool, WindowProgram::AvgPoolGrad];

    /// The program's (and its GPU programs') name.
    pub fn name(self) -> &'static str {
        match self {
            WindowProgram::MaxPool => "max_pool",
            WindowProgram::MaxPoolGrad => "max_pool_grad",
            WindowProgram::AvgPool => "avg_pool",
            WindowProgram::AvgPoolGrad => "avg_pool_grad",
        }
    }

    /// The program named `name` ([`WindowProgram::name`]).
    pub fn by_name(name: &str) -> Option<WindowProgram> {
        WindowProgram::ALL.into_iter().find(|w| w.name() == name)
    }

    /// What the program's output and inputs look like (see [`Form`]).
    pub fn form(self) -> Form {
        match self {
            WindowProgram::MaxPool | WindowProgram::AvgPool => Form::Pool,
            WindowProgram::MaxPoolGrad | WindowProgram::AvgPoolGrad => Form::PoolGrad,
        }
    }

    /// The program computing this one's gradient (as a [`Form::PoolGrad`] of `x` and `dy`),
    /// or `None` for one that is not differentiable (the gradients).
    pub fn grad(self) -> Option<WindowProgram> {
        match self {
            WindowProgram::MaxPool => Some(WindowProgram::MaxPoolGrad),
            WindowProgram::AvgPool => Some(WindowProgram::AvgPoolGrad),
            WindowProgram::MaxPoolGrad | WindowProgram::AvgPoolGrad => None,
        }
    }
}

/// The two shapes of window programs, which fix their inputs, output shape and work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// One input `x [N, C, H, W]` → `[N, C, OH, OW]`, one window scan per output.
    Pool,
    /// Two inputs `x [N, C, H, W]` and `dy [N, C, OH, OW]` → `x`'s shape, a gather over the
    /// windows covering each pixel (which may rescan each window's taps).
    PoolGrad,
}

impl Form {
    /// Number of inputs.
    pub fn arity(self) -> usize {
        match self {
            Form::Pool => 1,
            Form::PoolGrad => 2,
        }
    }
}
