//! Caps checked before anything is allocated or launched ([`pixelgrad_core::budget`]), on
//! every backend: a result too large to hold, an op or a run with too much work, and a
//! cancelled run each give a typed error, and the device stays usable.

use pixelgrad_core::budget::RunLimits;
use pixelgrad_core::{CancelToken, Device, Error, Limits, Result, Tensor};

use crate::harness::{read_f64, Read};

type Outcome = std::result::Result<(), String>;

async fn run_and_read(read: Read, f: impl FnOnce() -> Result<Tensor>) -> Result<Vec<f64>> {
    read_f64(&f()?, read).await
}

fn expect_budget(name: &str, what: &str, r: Result<Vec<f64>>) -> Outcome {
    match r {
        Err(Error::Budget { what: w, raise, .. }) if w.contains(what) && !raise.is_empty() => Ok(()),
        other => Err(format!("budget/{name}: expected Error::Budget about {what}, got {:?}", other.map(|v| v.len()))),
    }
}

pub async fn budget(dev: &Device, read: Read) -> Outcome {
    let t = |data: &[f32], s: &[usize]| Tensor::from_vec(dev, data, s.to_vec()).map_err(|e| e.to_string());
    let mut errs: Vec<String> = Vec::new();
    let mut check = |r: Outcome| {
        if let Err(e) = r {
            errs.push(e);
        }
    };
    // A 16 GiB broadcast from two 256 KiB operands, with the default caps: refused before the
    // backend sees it, so nothing is allocated.
    let col = t(&vec![1.0; 65536], &[65536, 1])?;
    let row = t(&vec![1.0; 65536], &[1, 65536])?;
    let held = dev.counters().bytes_in_use;
    check(expect_budget("broadcast_bomb", "elements", run_and_read(read, || col.add(&row)).await));
    check(expect_budget("where_bomb", "elements", run_and_read(read, || Tensor::select(&col, &row, &col)).await));
    check(expect_budget("matmul_bomb", "elements", run_and_read(read, || col.matmul(&row)).await));
    if dev.counters().bytes_in_use > held {
        check(Err(format!("budget/no_allocation: {} bytes in use before the refused ops, {} after", held, dev.counters().bytes_in_use)));
    }
    // A product whose result is small but whose work is not (65536-long rows) under a lowered cap.
    let defaults = dev.limits();
    dev.set_limits(Limits { max_op_work: 1 << 15, ..defaults });
    check(expect_budget("matmul_work", "one op", run_and_read(read, || row.matmul(&col)).await));
    dev.set_limits(Limits { max_elements: 1000, ..defaults });
    check(expect_budget("fill_elements", "elements", run_and_read(read, || Tensor::zeros(dev, [1001])).await));
    dev.set_limits(defaults);
    // A run scope adds up every primitive's work, and a cancelled token stops the next one.
    let a = t(&[1.0; 16], &[4, 4])?;
    {
        let scope = dev.run_scope(RunLimits { max_work: Some(40), cancel: None });
        check(run_and_read(read, || a.add(&a)).await.map(|_| ()).map_err(|e| format!("budget/run_first_op: {e}")));
        check(run_and_read(read, || a.mul(&a)).await.map(|_| ()).map_err(|e| format!("budget/run_second_op: {e}")));
        if scope.work() != 32 {
            check(Err(format!("budget/run_work: two 16-element ops counted as {}", scope.work())));
        }
        check(expect_budget("run_total", "run", run_and_read(read, || a.sub(&a)).await));
    }
    let cancel = CancelToken::new();
    {
        let _scope = dev.run_scope(RunLimits { max_work: None, cancel: Some(cancel.clone()) });
        check(run_and_read(read, || a.add(&a)).await.map(|_| ()).map_err(|e| format!("budget/before_cancel: {e}")));
        cancel.cancel();
        match run_and_read(read, || a.add(&a)).await {
            Err(Error::Cancelled { .. }) => {}
            other => check(Err(format!("budget/cancelled: expected Error::Cancelled, got {:?}", other.map(|v| v.len())))),
        }
    }
    // Scopes are closed: the device runs as before, with its default caps.
    match run_and_read(read, || a.add(&a)).await {
        Ok(v) if v == vec![2.0; 16] => {}
        other => check(Err(format!("budget/still_usable: 1+1 gave {other:?}"))),
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n  "))
    }
}
