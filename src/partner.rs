//! The partner data of specular and periodic faces (`crate::boundary`): what each face reads
//! from the exits of the previous sweep, and the relaxation of those exits under
//! `solver.partner_relaxation` (docs/model.md, "Specular and periodic faces with the
//! second-order sweep").

use crate::boundary::{slots_per_cell, Boundaries, Face, FaceData, FaceKind};

impl Boundaries {
    /// Whether any face reads partner data (a specular face, or a periodic pair more than
    /// one cell apart): where `solver.partner_relaxation` acts.
    pub fn keeps_partner_data(&self) -> bool {
        Face::ALL.iter().any(|&f| self.stores_inflow(f))
    }

    /// Slot -> mirrored slot within one face cell of an `axis` face: the normal component
    /// reversed (slot s of the axis half maps to half - 1 - s). An involution.
    fn mirror(&self, axis: usize) -> Vec<usize> {
        let (m, half) = (self.m, self.m / 2);
        (0..slots_per_cell(m))
            .map(|sl| {
                let mut dims = [m; 3];
                dims[axis] = half;
                let mut idx = [sl % dims[0], sl / dims[0] % dims[1], sl / (dims[0] * dims[1])];
                idx[axis] = half - 1 - idx[axis];
                (idx[2] * dims[1] + idx[1]) * dims[0] + idx[0]
            })
            .collect()
    }

    /// The partner data each face reads, from the exits of the previous sweep: a specular
    /// face reads its own exits with the normal component reversed; a periodic face reads
    /// the opposite face's exits, slot for slot (a velocity entering x_min with xi_x > 0
    /// left x_max with the same velocity).
    pub fn partner_inflow(&self, exits: &FaceData) -> FaceData {
        let s = slots_per_cell(self.m);
        std::array::from_fn(|f| {
            let face = Face::ALL[f];
            if !self.stores_inflow(face) {
                return Vec::new();
            }
            match self.faces[f].kind {
                FaceKind::Periodic => exits[f ^ 1].clone(),
                _ => {
                    let (src, mirror) = (&exits[f], self.mirror(face.axis()));
                    let mut out = vec![0.0; src.len()];
                    for (o, c) in out.chunks_mut(s).zip(src.chunks(s)) {
                        for (sl, &from) in mirror.iter().enumerate() {
                            o[sl] = c[from];
                        }
                    }
                    out
                }
            }
        })
    }

    /// Relax a sweep's `exits` in place towards the exits that gave the current `partner`
    /// data: `e <- (1 - theta) e_partner + theta e`, where `e_partner` is `partner` mapped
    /// back (the inverse of [`Self::partner_inflow`], slot for slot), so that the next
    /// partner data is `(1 - theta) partner + theta partner_inflow(e)`. A convex
    /// combination: non-negative data stays non-negative. Exits no face reads are left.
    pub fn relax_exits(&self, exits: &mut FaceData, partner: &FaceData, theta: f64) {
        let s = slots_per_cell(self.m);
        for (f, x) in partner.iter().enumerate() {
            let face = Face::ALL[f];
            if !self.stores_inflow(face) {
                continue;
            }
            let mix = |e: &mut f64, x: f64| *e = (1.0 - theta) * x + theta * *e;
            match self.faces[f].kind {
                FaceKind::Periodic => exits[f ^ 1].iter_mut().zip(x).for_each(|(e, &x)| mix(e, x)),
                _ => {
                    let mirror = self.mirror(face.axis());
                    for (e, x) in exits[f].chunks_mut(s).zip(x.chunks(s)) {
                        // partner[sl] = exit[mirror[sl]], so exit[j] pairs with partner[mirror[j]].
                        for (j, &from) in mirror.iter().enumerate() {
                            mix(&mut e[j], x[from]);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::boundary::FaceData;

    #[test]
    fn relaxed_exits_give_the_relaxed_partner_data() {
        // Specular x, periodic z, one cell each way thick enough to keep partner data:
        // partner_inflow(relax(e)) = (1 - theta) partner + theta partner_inflow(e), slot for slot.
        let mut c = crate::config::walled_box([3, 2, 4], 10);
        c.boundaries.x_min = crate::config::FaceConfig::Specular {};
        c.boundaries.x_max = crate::config::FaceConfig::Specular {};
        c.boundaries.z_min = crate::config::FaceConfig::Periodic {};
        c.boundaries.z_max = crate::config::FaceConfig::Periodic {};
        let p = crate::problem::Problem::new(&c);
        let b = &p.bounds;
        let mut k = 0.0;
        let mut fill = |d: &mut FaceData| {
            d.iter_mut().flatten().for_each(|x| {
                k += 1.0;
                *x = (k * 0.37f64).sin().abs();
            })
        };
        let (mut old_exits, mut exits) = (b.exit_zeros(&p.grid), b.exit_zeros(&p.grid));
        fill(&mut old_exits);
        fill(&mut exits);
        let partner = b.partner_inflow(&old_exits);
        let theta = 0.3;
        let want: FaceData = std::array::from_fn(|f| {
            let fresh = b.partner_inflow(&exits);
            partner[f].iter().zip(&fresh[f]).map(|(o, n)| (1.0 - theta) * o + theta * n).collect()
        });
        assert!(want.iter().filter(|v| !v.is_empty()).count() == 4, "x and z keep partner data");
        b.relax_exits(&mut exits, &partner, theta);
        let got = b.partner_inflow(&exits);
        for (g, w) in got.iter().zip(&want) {
            for (a, b) in g.iter().zip(w) {
                assert!((a - b).abs() <= 1e-15, "{a} vs {b}");
            }
        }
    }
}
