//! Which axes carry partner data (specular and periodic faces on both sides), and what the
//! second-order sweep needs there: the partner data's relaxation and a warning
//! (docs/model.md, "Specular and periodic faces with the second-order sweep").

use super::{Config, FaceConfig, Scheme};

/// The relaxation of partner data that `auto` gives the layouts that need it (half the
/// sweep's change): it takes a mode alternating from sweep to sweep out in one step, and
/// measured (docs/model.md) 0.3 took 9-47% more sweeps, 0.4 and 0.6 between 15% fewer and
/// 18% more depending on the layout; 0.5 was never far from the best.
pub const AUTO_PARTNER_RELAXATION: f64 = 0.5;

impl Config {
    /// The axes with specular or periodic faces on both sides that keep partner data, by
    /// index, each with its cell count. A periodic axis one cell thick keeps none
    /// (`crate::boundary`, `collapsed`); a specular one does.
    pub fn partner_axes(&self) -> Vec<(usize, usize)> {
        let faces = self.boundaries.faces();
        let partner = |f: &FaceConfig| matches!(f, FaceConfig::Specular {} | FaceConfig::Periodic {});
        let cells = self.grid.cell_counts();
        (0..3)
            .filter(|&a| {
                let periodic = matches!(faces[2 * a].1, FaceConfig::Periodic {});
                partner(faces[2 * a].1) && partner(faces[2 * a + 1].1) && !(periodic && cells[a] == 1)
            })
            .map(|a| (a, cells[a]))
            .collect()
    }

    /// The share theta of each sweep's change that the partner data takes,
    /// `x <- (1 - theta) x + theta x_sweep` (plus a synthetic correction's move in full):
    /// `solver.partner_relaxation`, or by default [`AUTO_PARTNER_RELAXATION`] where the
    /// second-order sweep has partner data on two axes or a one-cell specular axis, and 1
    /// (none) elsewhere. There the diamond difference passes a grazing velocity's face
    /// value through the cell nearly unchanged, so an error in it returns through the
    /// partner faces with a factor near -1 each sweep and is hardly damped; the first-order
    /// sweep, and one partner axis many cells thick, damp it on the way (docs/model.md).
    pub fn partner_relaxation(&self) -> f64 {
        self.solver.partner_relaxation.unwrap_or_else(|| {
            let axes = self.partner_axes();
            let needs =
                self.solver.scheme == Scheme::SecondOrder && (axes.len() >= 2 || axes.iter().any(|&(_, n)| n == 1));
            if needs {
                AUTO_PARTNER_RELAXATION
            } else {
                1.0
            }
        })
    }

    /// The second-order sweep with partner data on two axes, or on one axis a few cells
    /// thick, converges more slowly than the first-order one even with the relaxation
    /// (docs/model.md).
    pub(super) fn partner_orbit_warning(&self) -> Option<String> {
        if self.solver.scheme != Scheme::SecondOrder {
            return None;
        }
        let axes = self.partner_axes();
        let name = |a: usize| ["x", "y", "z"][a];
        let see = "(docs/model.md, \"Specular and periodic faces with the second-order sweep\")";
        if axes.len() >= 2 {
            let names: Vec<&str> = axes.iter().map(|&(a, _)| name(a)).collect();
            return Some(format!(
                "second_order with specular or periodic faces on both sides of {}: molecules circulating between them make it converge in several times the sweeps of first_order {see}",
                names.join(" and ")
            ));
        }
        // One axis: an error in the partner data of velocities nearly parallel to the faces
        // crosses the axis almost undamped, a cell at a time, and returns a sweep later.
        axes.iter().find(|&&(_, n)| (2..THIN_PARTNER_AXIS).contains(&n)).map(|&(a, n)| {
            format!(
                "second_order with specular or periodic faces on both sides of {}, only {n} cells across: errors returning through them decay slowly, so it converges in several times the sweeps of first_order, up to twenty times on a thin periodic axis, and the residual stop understates the error left; collapse the axis to one cell where the flow does not vary along it {see}",
                name(a)
            )
        })
    }
}

/// Cells across a single partner axis below which the second-order sweep's slow return of
/// errors through its faces is warned of: on a periodic x between diffuse walls (Kn 0.3,
/// 16^3 velocities, GSIS, to 1e-8) it took 423, 161, 290, 72, 146, 80 and 58 sweeps at 2, 3,
/// 4, 5, 8, 16 and 32 cells against 22 with the first-order sweep, and stopped at residual
/// 1e-8 with the heat flux off by up to 2e-4 (docs/model.md).
pub const THIN_PARTNER_AXIS: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(scheme: Scheme, x: FaceConfig, z: FaceConfig, nz: usize) -> Config {
        let mut c = super::super::walled_box([4, 4, nz], 10);
        c.solver.scheme = scheme;
        (c.boundaries.x_min, c.boundaries.x_max) = (x.clone(), x);
        (c.boundaries.z_min, c.boundaries.z_max) = (z.clone(), z);
        c
    }

    #[test]
    fn second_order_warns_of_partner_faces_on_both_sides_of_two_axes_only() {
        let orbit = |scheme, x, z, nz| {
            layout(scheme, x, z, nz).warnings().iter().any(|w| w.contains("molecules circulating between them"))
        };
        let (spec, per) = (FaceConfig::Specular {}, FaceConfig::Periodic {});
        let wall = FaceConfig::DiffuseWall { temperature: 1.0, velocity: [0.0; 3] };
        assert!(orbit(Scheme::SecondOrder, spec.clone(), spec.clone(), 4));
        assert!(orbit(Scheme::SecondOrder, per.clone(), spec.clone(), 4));
        assert!(!orbit(Scheme::FirstOrder, spec.clone(), spec.clone(), 4), "first order converges there");
        assert!(
            !orbit(Scheme::SecondOrder, spec.clone(), wall, 4),
            "one axis closes no orbit (a thin one is warned of otherwise)"
        );
        assert!(!orbit(Scheme::SecondOrder, spec.clone(), per, 1), "a collapsed periodic axis keeps no partner data");
        assert!(orbit(Scheme::SecondOrder, spec.clone(), spec, 1), "a one-cell specular axis keeps partner data");
    }

    #[test]
    fn second_order_warns_of_one_thin_partner_axis() {
        let thin = |scheme, x: FaceConfig, nx: usize| {
            let wall = FaceConfig::DiffuseWall { temperature: 1.0, velocity: [0.0; 3] };
            let mut c = layout(scheme, x, wall, 4);
            c.grid.x.cells = Some(nx);
            c.warnings().iter().any(|w| w.contains(&format!("only {nx} cells across")))
        };
        let (spec, per) = (FaceConfig::Specular {}, FaceConfig::Periodic {});
        assert!(thin(Scheme::SecondOrder, per.clone(), 4));
        assert!(thin(Scheme::SecondOrder, spec.clone(), THIN_PARTNER_AXIS - 1));
        assert!(!thin(Scheme::SecondOrder, per.clone(), THIN_PARTNER_AXIS), "thick enough");
        assert!(!thin(Scheme::SecondOrder, per.clone(), 1), "collapsed: no partner data");
        assert!(!thin(Scheme::FirstOrder, per, 4), "first order converges there");
    }

    #[test]
    fn partner_data_is_relaxed_by_default_only_where_the_second_order_sweep_needs_it() {
        let theta = |scheme, x, z, nz| layout(scheme, x, z, nz).partner_relaxation();
        let (spec, per) = (FaceConfig::Specular {}, FaceConfig::Periodic {});
        let wall = FaceConfig::DiffuseWall { temperature: 1.0, velocity: [0.0; 3] };
        let half = AUTO_PARTNER_RELAXATION;
        assert_eq!(theta(Scheme::SecondOrder, per.clone(), spec.clone(), 4), half, "two axes");
        assert_eq!(theta(Scheme::SecondOrder, wall.clone(), spec.clone(), 1), half, "a one-cell specular axis");
        assert_eq!(theta(Scheme::SecondOrder, per.clone(), spec.clone(), 1), half, "collapsed periodic x, one-cell z");
        assert_eq!(theta(Scheme::SecondOrder, wall.clone(), spec.clone(), 4), 1.0, "one thick axis");
        assert_eq!(theta(Scheme::SecondOrder, per.clone(), per.clone(), 1), 1.0, "x thick, z collapsed");
        assert_eq!(theta(Scheme::FirstOrder, spec.clone(), spec.clone(), 1), 1.0, "first order damps it");
        let mut c = layout(Scheme::FirstOrder, wall, spec, 4);
        c.solver.partner_relaxation = Some(0.7);
        assert_eq!(c.partner_relaxation(), 0.7, "the key overrides the default");
    }
}
