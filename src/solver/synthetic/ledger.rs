//! When a synthetic solve pays (`solver.acceleration: "auto"`).
//!
//! Source iteration's residual falls by `d_s` decades per sweep, GSIS's by `d_g`, at a cost
//! of `t_s` (the sweep) and `t_s + t_g` (the sweep and the synthetic solve) seconds. The
//! cheaper way to the tolerance is the one with fewer seconds per decade:
//!
//! ```text
//! c_s = t_s / d_s,        c_g = (t_s + t_g) / d_g,
//! ```
//!
//! so a solve pays when `t_g / t_s < d_g / d_s - 1`. Both sides move with the case: `d_s`
//! is ~0.3 from Kn 1 up and ~0.05 at Kn 0.01 (the 16^3 cavity, `docs/model.md`), `d_g`
//! ~0.3-0.6 throughout; `t_g / t_s` is 0.1-0.5 on the paper cube and the 64^3 cavity on a
//! GPU, 5-15 on the 16^3 and cube-quick grids (a host solve of 4096-11000 cells against a
//! GPU sweep of 1-8 ms). So every term is measured here, after each sweep, and not guessed:
//! `t_s` and `t_g` from the clock, `d_s` and `d_g` from the residuals that follow each kind
//! of update. Either kind of update leaves the fixed point where it is (`super`), so the
//! choice changes the path and the wall time, never the answer; being made from timings,
//! it can differ from run to run.
//!
//! Source iteration's early ratios flatter it: the fast modes go first, and the slow one
//! that sets its rate shows only after 10-20 sweeps at Kn 0.01 (ratios 0.78, 0.80, ...,
//! 0.90 at the 20th on the 32^3 cavity, 0.986 in the end). So its rate is bounded below by
//! the chance that a molecule collides before it leaves the domain, `delta_D / (1 +
//! delta_D)` with delta_D the rarefaction parameter on the domain's largest extent: 0.40,
//! 0.87, 0.986 on the unit cavity at Kn 1, 0.1, 0.01 against 0.49, ~0.9, 0.986 measured
//! (at Kn 10 the walls, not the collisions, set it: 0.06 against 0.49, so the bound only
//! ever says that source iteration is slow, never that it is fast).
//!
//! A ratio is booked only after two updates of the same kind: the first sweep after a
//! switch shows the other kind's leftovers (a solve after twenty source updates moves the
//! fields by the whole slow mode at once, and the next residual is 30 times the last).
//!
//! The policy, in order:
//! 1. a solve that costs no more than [`CHEAP`] sweeps is always made (the worst it can do
//!    is cost that fraction where it gains nothing, as at Kn 10);
//! 2. without a measured `t_g`, the caller measures one: in line, or beside the sweeps
//!    (on a GPU backend the host is idle during the sweep), there only where
//!    [`Ledger::worth_measuring`] (else source updates throughout: source iteration);
//! 3. solves, if source iteration at its bound is already [`HYSTERESIS`] times dearer per
//!    decade (measuring could only make it dearer);
//! 4. without [`MIN_RATES`] source-iteration rates, source updates measure them;
//! 5. then the cheaper per decade, switching only past [`HYSTERESIS`] (the rates are noisy:
//!    the residual is the largest of five, and its ratio swings 0.36-1.64 from sweep to sweep
//!    at Kn 0.1, so source iteration's rate is the mean over [`SOURCE_WINDOW`] sweeps).

/// The two updates between sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// The synthetic solve's correction (GSIS).
    Solve,
    /// The sweep's own moments (source iteration).
    Source,
}

/// A solve costing at most this many sweeps is made whatever the rates.
pub const CHEAP: f64 = 1.0;
/// The cost per decade of the other update must be this much lower to switch.
pub const HYSTERESIS: f64 = 1.25;
/// Solve timings and GSIS's residual ratios kept (the mean of the ratios' logarithms is
/// the rate).
pub const WINDOW: usize = 3;
/// Source iteration's residual ratios kept. Its residual, the largest of five, beats with
/// a period of ~15 sweeps (the 16^3 cavity at Kn 0.1: ratios 0.36 to 1.64, growing for 3-5
/// sweeps in a row): over 16 sweeps the mean stays at 0.07-0.1 decades per sweep, over 3 it
/// swung from 0.32 to nothing, and a source iteration seen to make no progress would be
/// swapped for solves that cost 15 sweeps each.
pub const SOURCE_WINDOW: usize = 16;
/// Source-iteration rates needed before comparing (the first one after a solve is the
/// solve's leftover as much as the sweep's).
pub const MIN_RATES: usize = 2;
/// Decades per sweep assumed for GSIS before one is measured: 10^-0.45 = 0.35, the
/// geometric mean of the measured ratios on the 16^3 cavity at Kn 0.01-10 (0.28-0.45).
pub const PRIOR_SOLVE_DECADES: f64 = 0.45;
/// A rate at or below zero (a residual that grew) counts as this many decades per sweep.
const FLOOR_DECADES: f64 = 1e-3;

/// What the choice is made from, updated after every sweep.
#[derive(Debug, Default, Clone)]
pub struct Ledger {
    /// Seconds of the latest sweep.
    sweep: Option<f64>,
    /// Seconds a solve update took beyond a source update, last [`WINDOW`].
    extra: Vec<f64>,
    /// Seconds of the latest source update (subtracted from a solve update's).
    source: Option<f64>,
    /// Decades per sweep after each kind of update, last [`WINDOW`] (solves) and
    /// [`SOURCE_WINDOW`] (source updates).
    decades: [Vec<f64>; 2],
    /// The kind of the previous update and the residual it followed.
    last: Option<(Update, f64)>,
    /// The kind of the update before it.
    before: Option<Update>,
    /// Source iteration's ratio per sweep is at least this (the collision bound).
    source_bound: f64,
}

fn slot(u: Update) -> usize {
    match u {
        Update::Solve => 0,
        Update::Source => 1,
    }
}

fn push(v: &mut Vec<f64>, x: f64, window: usize) {
    if v.len() == window {
        v.remove(0);
    }
    v.push(x);
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

impl Ledger {
    /// `source_bound`: the least ratio per sweep source iteration can have here, in [0, 1).
    pub fn new(source_bound: f64) -> Self {
        Self { source_bound: source_bound.clamp(0.0, 1.0 - 1e-12), ..Self::default() }
    }

    /// A sweep of `seconds` has left `residual`: the rate of the update before it.
    pub fn sweep(&mut self, seconds: f64, residual: f64) {
        self.sweep = Some(seconds);
        if let Some((kind, before)) = self.last {
            if self.before == Some(kind) && before > 0.0 && residual > 0.0 && residual.is_finite() {
                let window = if kind == Update::Source { SOURCE_WINDOW } else { WINDOW };
                push(&mut self.decades[slot(kind)], -(residual / before).log10(), window);
            }
        }
    }

    /// An update of `kind` took `seconds`, after a sweep that left `residual`.
    pub fn update(&mut self, kind: Update, seconds: f64, residual: f64) {
        match kind {
            Update::Solve => push(&mut self.extra, (seconds - self.source.unwrap_or(0.0)).max(0.0), WINDOW),
            Update::Source => self.source = Some(seconds),
        }
        self.before = self.last.map(|(k, _)| k);
        self.last = Some((kind, residual));
    }

    /// A solve's cost measured beside the sweeps (it replaces nothing on the path).
    pub fn measured_solve(&mut self, seconds: f64) {
        push(&mut self.extra, seconds, WINDOW);
    }

    /// The kind of the last update.
    pub fn current(&self) -> Option<Update> {
        self.last.map(|(k, _)| k)
    }

    /// Seconds a solve adds to an iteration, if measured.
    pub fn solve_seconds(&self) -> Option<f64> {
        mean(&self.extra)
    }

    fn rate(&self, kind: Update) -> Option<f64> {
        mean(&self.decades[slot(kind)]).map(|d| d.max(FLOOR_DECADES))
    }

    /// Source iteration's decades per sweep: measured, or the bound's, whichever is fewer.
    fn source_decades(&self, measured: bool) -> f64 {
        let bound = -self.source_bound.log10();
        match self.rate(Update::Source) {
            Some(d) if measured => d.min(bound),
            _ => bound,
        }
        .max(FLOOR_DECADES)
    }

    /// Sweeps source iteration needs from `residual` to `tolerance`, at its measured rate
    /// (or its bound's, whichever is slower). The tests of the bound use it; the strategy
    /// asks [`Ledger::measured_sweeps_left`].
    #[cfg(test)]
    pub fn sweeps_left(&self, residual: f64, tolerance: f64) -> f64 {
        let measured = self.decades[slot(Update::Source)].len() >= MIN_RATES;
        (residual / tolerance).log10().max(0.0) / self.source_decades(measured)
    }

    /// Sweeps source iteration needs from `residual` to `tolerance` at its measured rate
    /// alone, once [`MIN_RATES`] are booked. The bound can overstate its slowness where the
    /// domain's extent is not what molecules cross (a free stream sweeps them out of an
    /// 8-unit domain in fewer collisions than its extent says), so a decision that costs
    /// time when it is wrong, starting a solve beside the sweeps, waits for this.
    pub fn measured_sweeps_left(&self, residual: f64, tolerance: f64) -> Option<f64> {
        let d = self.rate(Update::Source).filter(|_| self.decades[slot(Update::Source)].len() >= MIN_RATES)?;
        Some((residual / tolerance).log10().max(0.0) / d)
    }

    /// Whether a solve measured beside the sweeps could pay: source iteration at its
    /// measured rate is [`HYSTERESIS`] times dearer per decade than GSIS at its prior rate
    /// with a solve of `floor` seconds, the least a solve of this size can take. Measured
    /// rate, not the bound: the bound can overstate source iteration's slowness (cube-quick),
    /// and there a measurement that slows the sweeps while it runs would be made for a case
    /// that needs no solve. Where this is false, a solve could pay only if source iteration
    /// turns slower than measured; the gate is asked again after every sweep.
    pub fn worth_measuring(&self, floor: f64) -> bool {
        let (Some(ts), Some(ds)) = (self.sweep, self.rate(Update::Source)) else { return false };
        let booked = self.decades[slot(Update::Source)].len() >= MIN_RATES;
        booked && ts / ds > HYSTERESIS * (ts + floor) / PRIOR_SOLVE_DECADES
    }

    /// Seconds per decade with solves and without; `measured`: with source iteration's
    /// measured rate (else its bound's).
    fn costs_with(&self, measured: bool) -> Option<[f64; 2]> {
        let (ts, tg) = (self.sweep?, self.solve_seconds()?);
        let dg = self.rate(Update::Solve).unwrap_or(PRIOR_SOLVE_DECADES);
        Some([(ts + tg) / dg, ts / self.source_decades(measured)])
    }

    /// Seconds per decade of each kind, once source iteration's rate is measured.
    pub fn costs(&self) -> Option<[f64; 2]> {
        (self.decades[slot(Update::Source)].len() >= MIN_RATES).then(|| self.costs_with(true)).flatten()
    }

    /// The next update. `inline_trial`: without a measured solve, make one now (else one
    /// is being measured beside the sweeps, and source updates go on meanwhile).
    pub fn choose(&self, inline_trial: bool) -> Update {
        let Some(ts) = self.sweep else { return Update::Solve };
        let Some(tg) = self.solve_seconds() else {
            return if inline_trial { Update::Solve } else { Update::Source };
        };
        if tg <= CHEAP * ts {
            return Update::Solve;
        }
        match self.costs_with(false) {
            Some([solve, source]) if source > HYSTERESIS * solve => return Update::Solve,
            _ => {}
        }
        let Some([solve, source]) = self.costs() else { return Update::Source };
        match self.current() {
            Some(Update::Solve) if solve > HYSTERESIS * source => Update::Source,
            Some(Update::Solve) => Update::Solve,
            _ if source > HYSTERESIS * solve => Update::Solve,
            _ => Update::Source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `n` iterations of a model iteration: sweeps of `ts` seconds, solves of `tg`,
    /// residual ratios `rs` (source) and `rg` (solve); returns the kinds chosen.
    fn model(ts: f64, tg: f64, rs: f64, rg: f64, inline: bool, n: usize) -> Vec<Update> {
        bounded(0.0, ts, tg, rs, rg, inline, n)
    }

    /// [`model`] with source iteration's bound.
    fn bounded(bound: f64, ts: f64, tg: f64, rs: f64, rg: f64, inline: bool, n: usize) -> Vec<Update> {
        let (mut l, mut r, mut kinds) = (Ledger::new(bound), 1.0, Vec::new());
        let mut prev: Option<Update> = None;
        for i in 0..n {
            r *= match prev {
                Some(Update::Solve) => rg,
                Some(Update::Source) => rs,
                None => 1.0,
            };
            l.sweep(ts, r);
            if !inline && i == 2 {
                l.measured_solve(tg);
            }
            let k = l.choose(inline);
            l.update(k, if k == Update::Solve { tg } else { 0.0 }, r);
            kinds.push(k);
            prev = Some(k);
        }
        kinds
    }

    fn solves(k: &[Update]) -> usize {
        k.iter().filter(|&&u| u == Update::Solve).count()
    }

    #[test]
    fn a_solve_cheaper_than_a_sweep_is_always_made() {
        // The paper cube on a GPU: t_g / t_s ~ 0.3, and even where it gains nothing.
        assert_eq!(solves(&model(1.0, 0.3, 0.5, 0.3, true, 20)), 20);
        assert_eq!(solves(&model(1.0, 0.9, 0.45, 0.45, true, 20)), 20);
    }

    #[test]
    fn costly_solves_that_gain_little_stop_after_the_trial() {
        // cavity-quick on a GPU: a host solve of ~7 sweeps, source ratio 0.49, GSIS 0.28:
        // c_s = 1 / 0.31 = 3.2 sweeps per decade, c_g = 8 / 0.55 = 14.5.
        let k = model(1.0, 7.0, 0.49, 0.28, true, 30);
        assert_eq!(k[0], Update::Solve, "the in-line trial");
        assert_eq!(solves(&k), 1, "{k:?}");
        // Measured beside the sweeps instead: no solve at all.
        assert_eq!(solves(&model(1.0, 7.0, 0.49, 0.28, false, 30)), 0);
    }

    #[test]
    fn costly_solves_are_made_where_source_iteration_crawls() {
        // Kn 0.01 on a GPU: a solve of 3 sweeps, source ratio 0.9 (0.046 decades, 22
        // sweeps per decade) against (1 + 3) / 0.55 = 7.3 for GSIS.
        // Without the bound: the trial, three source updates for two rates (the first
        // after a switch is not booked), then solves.
        let k = model(1.0, 3.0, 0.9, 0.28, true, 30);
        assert_eq!(&k[..4], &[Update::Solve, Update::Source, Update::Source, Update::Source]);
        assert!(k[4..].iter().all(|&u| u == Update::Solve), "{k:?}");
        // Beside the sweeps: source updates until the solve is measured (before the third
        // update) and two rates are booked, then solves.
        let k = model(1.0, 3.0, 0.9, 0.28, false, 30);
        assert!(k[..3].iter().all(|&u| u == Update::Source) && k[3..].iter().all(|&u| u == Update::Solve), "{k:?}");
        // With the bound (Kn 0.01 on the unit cavity: 0.986, 0.0061 decades per sweep),
        // source iteration's flattering early ratios (0.8) are never asked for.
        let k = bounded(0.986, 1.0, 3.0, 0.8, 0.28, true, 30);
        assert!(k.iter().all(|&u| u == Update::Solve), "{k:?}");
        let mut l = Ledger::new(0.986);
        assert!((l.sweeps_left(1e-1, 1e-5) - 4.0 / -(0.986f64).log10()).abs() < 1e-9);
        // Measured rates slower than the bound count; faster ones do not.
        for r in [1.0, 0.5, 0.25] {
            l.sweep(1.0, r);
            l.update(Update::Source, 0.0, r);
        }
        assert!((l.sweeps_left(1e-1, 1e-5) - 4.0 / -(0.986f64).log10()).abs() < 1e-9);
    }

    #[test]
    fn the_measured_count_of_sweeps_left_ignores_the_bound() {
        // cube-quick: the bound (0.846) says ~60 sweeps from 1e-1 to 1e-5; the measured
        // ratio 0.5 says 13.
        let mut l = Ledger::new(0.846);
        let mut r = 1.0;
        for i in 0..4 {
            l.sweep(1.0, r);
            // A ratio is booked from the third sweep on (two updates of one kind before it).
            assert_eq!(l.measured_sweeps_left(r, 1e-5).is_some(), i > MIN_RATES, "sweep {i}");
            l.update(Update::Source, 0.0, r);
            r *= 0.5;
        }
        let n = l.measured_sweeps_left(1e-1, 1e-5).unwrap();
        assert!((n - 4.0 / 0.5f64.log10().abs()).abs() < 1e-9, "{n}");
        assert!(l.sweeps_left(1e-1, 1e-5) > 4.0 * n);
        // c_s = 1 / 0.30 = 3.3 sweeps per decade; GSIS with a free solve, 1.25 / 0.45 = 2.8:
        // worth measuring only while the least a solve can cost is below 0.2 sweeps.
        assert!(l.worth_measuring(0.1) && !l.worth_measuring(0.3));
        // Ratio 0.9: c_s = 21.9 sweeps per decade, worth measuring up to solves of 6.9.
        let mut l = Ledger::new(0.986);
        for i in 0..4 {
            l.sweep(1.0, 0.9f64.powi(i));
            l.update(Update::Source, 0.0, 0.9f64.powi(i));
        }
        assert!(l.worth_measuring(6.8) && !l.worth_measuring(7.0));
    }

    #[test]
    fn costly_solves_that_gain_nothing_stop_after_the_trial() {
        // Kn 10: GSIS's ratio is source iteration's (0.7 here); a solve of 1.2 sweeps. The
        // prior (below) tries solves after the probe, until their own rate is booked.
        let k = model(1.0, 1.2, 0.7, 0.7, true, 20);
        assert!(solves(&k) <= 3 && k[6..].iter().all(|&u| u == Update::Source), "{k:?}");
        // With the prior instead of the measured rate the solves would go on:
        // c_s = 1 / 0.155 = 6.5 > 1.25 (1 + 1.2) / 0.45 = 6.1.
        let mut l = Ledger::default();
        let mut r = 1.0;
        for _ in 0..4 {
            l.sweep(1.0, r);
            l.update(Update::Source, 0.0, r);
            r *= 0.7;
        }
        l.measured_solve(1.2);
        l.sweep(1.0, r);
        assert_eq!(l.choose(true), Update::Solve);
    }

    #[test]
    fn a_beating_residual_does_not_make_source_iteration_look_stalled() {
        // The residual ratios of source iteration on the 16^3 cavity at Kn 0.1 (CPU, to
        // 1e-5; 50 sweeps), and a host solve of 15 GPU sweeps measured beside them (H100):
        // source iteration's 0.08 decades per sweep beat GSIS's (1 + 15) / 0.45 = 36
        // sweeps per decade by far, through the stretches where the residual grows.
        let ratios = [
            0.34, 0.44, 0.42, 0.97, 0.93, 0.95, 1.14, 1.03, 0.95, 0.9, 0.86, 0.82, 0.79, 0.75, 0.71, 0.66, 0.59, 0.49,
            0.56, 1.46, 1.36, 1.15, 1.04, 0.97, 0.92, 0.87, 0.84, 0.8, 0.77, 0.73, 0.68, 0.61, 0.5, 0.36, 1.37, 1.64,
            1.24, 1.08, 0.99, 0.93, 0.89, 0.85, 0.82, 0.78, 0.74, 0.7, 0.63, 0.54, 0.39,
        ];
        let (mut l, mut r) = (Ledger::new(0.0), 1.0);
        for (i, q) in ratios.iter().enumerate() {
            l.sweep(1.0, r);
            if i == 2 {
                l.measured_solve(15.0);
            }
            assert_eq!(l.choose(false), Update::Source, "sweep {i}");
            l.update(Update::Source, 0.0, r);
            r *= q;
        }
    }

    #[test]
    fn a_residual_that_grows_counts_as_no_progress_and_a_switch_is_not_booked() {
        let mut l = Ledger::default();
        for r in [1.0, 1.0, 2.0] {
            l.sweep(1.0, r);
            l.update(Update::Source, 0.0, r);
        }
        assert_eq!(l.rate(Update::Source), Some(FLOOR_DECADES));
        // A solve after source updates: the next residual (30 times the last) is the
        // source updates' leftover, not the solve's rate.
        l.update(Update::Solve, 1.0, 2.0);
        l.sweep(1.0, 60.0);
        assert_eq!(l.rate(Update::Solve), None);
    }
}
