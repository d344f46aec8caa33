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
//! being the density the incident flux gives), a step that reverses the previous one is read
//! as a geometric series with ratio lambda = max(s_n / s_{n-1}, -1) < 0 and summed:
//!
//! ```text
//! x_{n+1} = x_n + s_n / (1 - lambda)   if s_n s_{n-1} < 0,   x_n + s_n otherwise.
//! ```
//!
//! A pure two-cycle (lambda = -1) lands on its fixed point in one step, and monotone updates
//! are taken as they are. The step taken is zero exactly when s_n is, so the damped and plain
//! updates share their fixed points: where the solution is unique (an open domain, or a closed
//! one with the default mass rescaling) both converge to it.

use crate::boundary::FaceData;

/// The undamped log-steps of the last update, per box-face cell and per body wall face:
/// the state the damping carries from one iteration to the next (and across a restart).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DensitySteps {
    pub face: FaceData,
    pub wall: Vec<f64>,
}

/// Move `current` to `fresh`, damping steps that reverse `last_step`; `last_step` becomes
/// this update's undamped steps. Non-positive densities (faces that are not walls) are copied.
pub fn damped_update(current: &mut Vec<f64>, fresh: Vec<f64>, last_step: &mut Vec<f64>) {
    if current.len() != fresh.len() {
        *current = fresh;
        last_step.clear();
        return;
    }
    last_step.resize(current.len(), 0.0);
    for ((x, rho), last) in current.iter_mut().zip(fresh).zip(last_step.iter_mut()) {
        if !(*x > 0.0 && rho > 0.0) {
            *x = rho;
            *last = 0.0;
            continue;
        }
        let s = (rho / *x).ln();
        if s * *last < 0.0 {
            *x *= (s / (1.0 - (s / *last).max(-1.0))).exp();
        } else {
            // Bit for bit the plain update.
            *x = rho;
        }
        *last = s;
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
        let (mut rho, mut steps) = (vec![1.0, 1.0], Vec::new());
        let mut plain = rho.clone();
        for _ in 0..3 {
            let fresh = exchange(&rho);
            damped_update(&mut rho, fresh, &mut steps);
            plain = exchange(&plain);
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
        let (mut rho, mut steps) = (vec![1.0, 0.0], Vec::new());
        for fresh in [vec![1.5, 0.0], vec![1.7, 0.0], vec![1.75, 0.0]] {
            damped_update(&mut rho, fresh.clone(), &mut steps);
            assert_eq!(rho[1], 0.0);
            assert_eq!(rho[0], fresh[0]);
        }
        // A reversal by half the last step is summed as a series with ratio -1/2.
        let last = steps[0];
        let x = rho[0];
        damped_update(&mut rho, vec![x * (-0.5 * last).exp(), 0.0], &mut steps);
        assert!((rho[0].ln() - (x.ln() - 0.5 * last / 1.5)).abs() < 1e-14);
    }
}
