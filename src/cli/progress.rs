//! What `run` shows while it iterates: a progress bar with the residual and an ETA, and
//! one log line per iteration.

use super::LOG;
use knudsen::solver::{IterationRecord, RESIDUAL_NAMES};

pub struct Progress {
    bar: indicatif::ProgressBar,
    tolerance: f64,
    last: f64,
}

impl Progress {
    pub fn new(max_iterations: usize, tolerance: f64) -> Self {
        let bar = indicatif::ProgressBar::new(max_iterations as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} iter {pos}/{len} {msg}").expect("valid template"),
        );
        Self { bar, tolerance, last: f64::NAN }
    }

    pub fn observe(&mut self, rec: &IterationRecord) {
        let (r, tol) = (rec.residual(), self.tolerance);
        // ETA from the observed contraction rate of the residual.
        let rate = r / self.last;
        let eta = if rate.is_finite() && rate < 1.0 && r > tol {
            format!("{:.0} s", (tol / r).ln() / rate.ln() * rec.seconds)
        } else {
            "-".into()
        };
        self.last = r;
        self.bar.set_position(rec.iteration as u64);
        self.bar.set_message(format!("residual {r:.3e} ({:.2} s/iter, ETA {eta})", rec.seconds));
        self.bar.suspend(|| {
            let parts: Vec<String> =
                RESIDUAL_NAMES.iter().zip(rec.residuals).map(|(n, x)| format!("{n} {x:.3e}")).collect();
            let drag = rec.drag.map_or(String::new(), |d| format!(" C_D {d:.5}"));
            log::info!(target: LOG, "iteration {} residual {r:.3e} [{}]{drag} {:.3} s", rec.iteration, parts.join(", "), rec.seconds);
        });
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
