use crate::solver::{IterationRecord, RESIDUAL_NAMES};

/// One row per iteration: the residual of each variable, their maximum, the iteration's
/// wall time and the elapsed time; with a body in a free stream, its drag coefficient.
pub fn residuals_csv(history: &[IterationRecord]) -> String {
    let drag = history.iter().any(|r| r.drag.is_some());
    let mut s = format!(
        "iteration,{},residual,seconds,elapsed_s{}\n",
        RESIDUAL_NAMES.join(","),
        if drag { ",drag_coefficient" } else { "" }
    );
    for r in history {
        s.push_str(&r.iteration.to_string());
        for x in r.residuals {
            s.push_str(&format!(",{x:.6e}"));
        }
        s.push_str(&format!(",{:.6e},{:.6},{:.4}", r.residual(), r.seconds, r.elapsed));
        if drag {
            s.push_str(&format!(",{:.8}", r.drag.unwrap_or(f64::NAN)));
        }
        s.push('\n');
    }
    s
}

/// Read back what [`residuals_csv`] wrote.
pub fn parse_residuals_csv(text: &str) -> anyhow::Result<Vec<IterationRecord>> {
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.trim().parse::<f64>()).collect::<Result<_, _>>()?;
            anyhow::ensure!(v.len() == 9 || v.len() == 10, "expected 9 or 10 columns, got {}", v.len());
            Ok(IterationRecord {
                iteration: v[0] as usize,
                residuals: [v[1], v[2], v[3], v[4], v[5]],
                seconds: v[7],
                elapsed: v[8],
                drag: v.get(9).copied().filter(|d| !d.is_nan()),
            })
        })
        .collect()
}
