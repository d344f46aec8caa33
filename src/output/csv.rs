use crate::solver::{IterationRecord, RESIDUAL_NAMES};

/// One row per iteration: the residual of each variable, their maximum, the iteration's
/// wall time and the elapsed time.
pub fn residuals_csv(history: &[IterationRecord]) -> String {
    let mut s = format!("iteration,{},residual,seconds,elapsed_s\n", RESIDUAL_NAMES.join(","));
    for r in history {
        s.push_str(&r.iteration.to_string());
        for x in r.residuals {
            s.push_str(&format!(",{x:.6e}"));
        }
        s.push_str(&format!(",{:.6e},{:.6},{:.4}\n", r.residual(), r.seconds, r.elapsed));
    }
    s
}
