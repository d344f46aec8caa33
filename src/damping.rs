//! Damping of the alternating mode of the lagged wall densities.
//!
//! A diffuse wall's density rho_w is set from the incident flux of the previous sweep
//! (`docs/model.md`, "Boundaries"). Two walls that face each other across a nearly
//! collisionless gap feed each other: wall A's new density follows wall B's old one and the
//! other way round, so in log space the update has an eigenvalue near -1 that collisions damp
//! only at rate ~delta. Parallel plates at different temperatures then alternate for
//! thousands of iterations near the free-molecular limit.
//!
//! Per wall face, with x_n = ln rho_n and the undamped step s_n = ln rho~_{n+1} - x_n (rho~
//! being the density the incident flux gives), an alternation is recognised when a step
//! reverses the previous one *and* that one reversed the one before it (s_n s_{n-1} < 0 and
//! s_{n-1} s_{n-2} < 0). The step is then read as a geometric series with ratio
//! lambda = max(s_n / s_{n-1}, -1) < 0 and summed:
//!
//! ```text
//! x_{n+1} = x_n + s_n / (1 - lambda)   on a second reversal in a row,   x_n + s_n otherwise.
//! ```
//!
//! A pure two-cycle (lambda = -1) lands on its fixed point one step after it shows itself,
//! and monotone updates are taken as they are. A single reversal is not summed: after a
//! synthetic correction (GSIS) or a start from rest a wall's density often overshoots once and
//! then settles monotonically, and summing that one reversal as a series shortened the
//! settling step (the Kn = 1 cavity took one sweep more; `docs/model.md`). The step taken is
//! zero exactly when s_n is, so the damped and plain updates share their fixed points: where
//! the solution is unique (an open domain, or a closed one with the default mass rescaling)
//! both converge to it.

/// One group of densities' damping state: a box face's cells, or the bodies' wall faces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Steps {
    /// The undamped log-step of the last update, per density.
    pub step: Vec<f64>,
    /// Whether that step reversed the one before it.
    pub reversed: Vec<bool>,
}

impl Steps {
    /// As stored in a result file (`restart/*_density_step`, `*_reversed`), for `len`
    /// densities: zero steps and no reversal where none was taken yet.
    pub fn stored(&self, len: usize) -> (Vec<f64>, Vec<u8>) {
        let step = (0..len).map(|i| self.step.get(i).copied().unwrap_or(0.0)).collect();
        let reversed = (0..len).map(|i| self.reversed.get(i).copied().unwrap_or(false).into()).collect();
        (step, reversed)
    }

    /// From the stored form ([`Steps::stored`]).
    pub fn from_stored(step: &[f64], reversed: &[u8]) -> Self {
        Self { step: step.to_vec(), reversed: reversed.iter().map(|&r| r != 0).collect() }
    }
}

/// The state the damping carries from one iteration to the next (and across a restart):
/// per box face, and for the body wall faces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DensitySteps {
    pub face: [Steps; 6],
    pub wall: Steps,
}

/// Move `current` to `fresh`, summing a step that reverses the last one when that one
/// reversed its predecessor too; `last` becomes this update's. Non-positive densities (faces
/// that are not walls) are copied.
pub fn damped_update(current: &mut Vec<f64>, fresh: Vec<f64>, last: &mut Steps) {
    if current.len() != fresh.len() {
        *current = fresh;
        *last = Steps::default();
        return;
    }
    last.step.resize(current.len(), 0.0);
    last.reversed.resize(current.len(), false);
    for (((x, rho), prev), reversed) in current.iter_mut().zip(fresh).zip(&mut last.step).zip(&mut last.reversed) {
        if !(*x > 0.0 && rho > 0.0) {
            *x = rho;
            (*prev, *reversed) = (0.0, false);
            continue;
        }
        let s = (rho / *x).ln();
        let reverses = s * *prev < 0.0;
        if reverses && *reversed {
            *x *= (s / (1.0 - (s / *prev).max(-1.0))).exp();
        } else {
            // Bit for bit the plain update.
            *x = rho;
        }
        (*prev, *reversed) = (s, reverses);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two free-molecular walls at temperatures 1 and 4: each one's new density is the other's
    /// old one times sqrt(T_other / T_self) (equal fluxes, flux ~ rho sqrt(T)).
    fn exchange(rho: &[f64]) -> Vec<f64> {
        vec![rho[1] * 2.0, rho[0] / 2.0]
    }

    #[test]
    fn a_two_cycle_lands_on_its_fixed_point() {
        let (mut rho, mut steps) = (vec![1.0, 1.0], Steps::default());
        let mut plain = rho.clone();
        for n in 0..3 {
            let fresh = exchange(&rho);
            damped_update(&mut rho, fresh, &mut steps);
            plain = exchange(&plain);
            if n < 2 {
                // The first reversal is taken as it is: back to the start.
                assert_eq!(rho, plain, "update {n}");
            }
        }
        // Fixed point of the exchange: rho_0 = 2 rho_1; the damped iterates keep the
        // geometric mean of the start (1). The plain ones still alternate.
        let want = [2f64.sqrt(), 1.0 / 2f64.sqrt()];
        for (a, b) in rho.iter().zip(want) {
            assert!((a - b).abs() < 1e-14 * b, "{rho:?}");
        }
        assert!((plain[0] / plain[1] - 2.0).abs() > 1.0, "{plain:?}");
    }

    #[test]
    fn monotone_updates_are_untouched_and_non_walls_copied() {
        let (mut rho, mut steps) = (vec![1.0, 0.0], Steps::default());
        for fresh in [vec![1.5, 0.0], vec![1.7, 0.0], vec![1.75, 0.0]] {
            damped_update(&mut rho, fresh.clone(), &mut steps);
            assert_eq!(rho[1], 0.0);
            assert_eq!(rho[0], fresh[0]);
        }
        // One reversal (an overshoot that then settles) is taken as it is.
        let (x, s1) = (rho[0], -0.5 * steps.step[0]);
        let fresh = x * s1.exp();
        damped_update(&mut rho, vec![fresh, 0.0], &mut steps);
        assert_eq!(rho[0], fresh);
        // A second reversal in a row, by half again, is summed as a series with ratio -1/2.
        let (x, s2) = (rho[0], -0.5 * s1);
        damped_update(&mut rho, vec![x * s2.exp(), 0.0], &mut steps);
        assert!((rho[0].ln() - (x.ln() + s2 / 1.5)).abs() < 1e-14, "{rho:?}");
        assert_eq!(steps.reversed, [true, false]);
    }

    #[test]
    fn the_reversal_flag_is_the_last_steps_only() {
        // Up, down (a first reversal), down again (no reversal), up: a first reversal again,
        // taken as it is, not summed on the strength of the older one.
        let (mut rho, mut steps) = (vec![1.0], Steps::default());
        for s in [0.2, -0.1, -0.05, 0.1] {
            let fresh = rho[0] * f64::exp(s);
            damped_update(&mut rho, vec![fresh], &mut steps);
            assert_eq!(rho[0], fresh, "step {s}");
        }
        assert_eq!(steps.reversed, [true]);
        // A density that stops being a wall's (non-positive) clears its state.
        damped_update(&mut rho, vec![0.0], &mut steps);
        assert_eq!((steps.step[0], steps.reversed[0]), (0.0, false));
    }
}
