//! The f64 form of the device's cell records (shaders/cell_records_f64.wgsl), on adapters
//! with SHADER_F64: the host's formulas and Gaussian recurrence (`model::EqCoeffs::
//! new_on_grid`), so the records are the host's up to the last bits of f64 before their
//! rounding to f32. Only +, -, *, / and conversions run on the device in f64; exp and log are
//! written out ([`exp64`], [`log64`]), as the builtins are not usable on f64 there
//! (../shared/platform-facts.md). [`cell_records_f64_twin`] is the stage's CPU twin, line for
//! line. The host side (buffers, dispatch) is shared with the f32 stage in records.rs; here
//! are which stage a device gets ([`default_at`], [`choose`]) and the fields' upload
//! (`pack_into`).

use crate::backend::gpu_io::{RecordsAt, RECORD_FIELDS as FIELDS};
use crate::backend::wgpu::layout::CellCoeffs;
use crate::grid::solid::SOLID_BIT;
use crate::model::Macro;
use crate::problem::Problem;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;
use std::ops::{Add, Div, Mul, Sub};

/// Where the records are made when nothing asks: the f64 stage on a device with f64, else
/// the host (the f32 stage moves slip-regime fields; module docs).
pub fn default_at(has_f64: bool) -> RecordsAt {
    if has_f64 {
        RecordsAt::Device
    } else {
        RecordsAt::Host
    }
}

/// The stage to build for `at`: None (the host's records), Some(true) f64, Some(false) f32.
/// Device records on a device without f64 are an error (`device-f32` asks for the f32 stage).
pub fn choose(at: RecordsAt, has_f64: bool) -> anyhow::Result<Option<bool>> {
    match at {
        RecordsAt::Host => Ok(None),
        RecordsAt::Device if has_f64 => Ok(Some(true)),
        RecordsAt::Device => {
            anyhow::bail!("KNUDSEN_CELL_RECORDS=device: this device has no f64 (SHADER_F64); use device-f32 or host")
        }
        RecordsAt::DeviceF32 => Ok(Some(false)),
    }
}

/// (rho, U, T, q) of each cell as f64 into `out` (wgpu's staging memory, write-only), in
/// parallel: on the paper cube 400 MB, which `Queue::write_buffer` would copy on one thread
/// after the packing. The layout of [`pack_fields`].
pub(super) fn pack_into(fields: &[Macro], mut out: wgpu::WriteOnly<'_, [u8]>) {
    // Cells per part: 16 KiB of f64 packed on the stack, then copied out in one piece.
    const CELLS: usize = 256;
    const BYTES: usize = CELLS * FIELDS * 8;
    /// A part of the view, to hand to another thread.
    struct Part<'a>(wgpu::WriteOnly<'a, [u8]>);
    // SAFETY: a `WriteOnly<[u8]>` is an exclusive pointer to bytes, as `&mut [u8]` is, which
    // is Send; wgpu-types implements Send only for sized targets (its bound `T: Send` implies
    // `T: Sized`). The parts come from `split_at` and so never overlap.
    unsafe impl Send for Part<'_> {}
    let mut parts = Vec::with_capacity(fields.len().div_ceil(CELLS));
    while out.len() > BYTES {
        let (head, rest) = out.split_at(BYTES);
        parts.push(Part(head));
        out = rest;
    }
    parts.push(Part(out));
    parts.into_par_iter().zip(fields.par_chunks(CELLS)).for_each(|(mut dst, cells)| {
        let mut local = [0.0f64; CELLS * FIELDS];
        for (o, m) in local.chunks_mut(FIELDS).zip(cells) {
            o.copy_from_slice(&[m.rho, m.u[0], m.u[1], m.u[2], m.t, m.q[0], m.q[1], m.q[2]]);
        }
        dst.0.copy_from_slice(bytemuck::cast_slice(&local[..cells.len() * FIELDS]));
    });
}

/// Keep in sync with `RecordParams64` in shaders/cell_records_f64.wgsl (32 bytes: three f64,
/// two u32, as WGSL's uniform layout puts them).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct RecordParams64 {
    pub prandtl: f64,
    pub delta: f64,
    pub omega: f64,
    pub ncell: u32,
    pub row: u32,
}

/// 2^n exactly, by binary powers (the shader's `pow2`).
pub fn pow2(n: i32) -> f64 {
    let mut s = 1.0f64;
    let mut b = if n < 0 { 0.5 } else { 2.0 };
    let mut k = n.unsigned_abs();
    while k != 0 {
        if k & 1 != 0 {
            s *= b;
        }
        b *= b;
        k >>= 1;
    }
    s
}

/// ln 2 in two parts (fdlibm's): the high part's low 21 bits are zero, so n LN2_HI is exact.
/// The shader writes both as literals; a test holds them equal.
pub const LN2_HI: f64 = 6.931_471_803_691_238e-1;
pub const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// The Taylor series' denominators, 13! down to 0!, in Horner's order (the shader's
/// `1.0lf / N` literals, in the same order; a test holds them equal).
pub const TAYLOR: [f64; 14] = [
    6227020800.0,
    479001600.0,
    39916800.0,
    3628800.0,
    362880.0,
    40320.0,
    5040.0,
    720.0,
    120.0,
    24.0,
    6.0,
    2.0,
    1.0,
    1.0,
];

/// e^x as the shader's `exp64`: Cody and Waite's reduction by n ln 2, the Taylor series of
/// e^r to r^13, times 2^n; 0 below -708.
pub fn exp64(x: f64) -> f64 {
    if x < -708.0 {
        return 0.0;
    }
    let y = x * std::f64::consts::LOG2_E;
    let n = (y + if y >= 0.0 { 0.5 } else { -0.5 }) as i32;
    let nf = n as f64;
    let r = (x - nf * LN2_HI) - nf * LN2_LO;
    let mut p = 1.0 / TAYLOR[0];
    for d in &TAYLOR[1..] {
        p = p * r + 1.0 / d;
    }
    p * pow2(n)
}

/// ln t as the shader's `log64`: the f32 logarithm and two Newton steps in f64.
pub fn log64(t: f64) -> f64 {
    let mut y = (t as f32).ln() as f64;
    y += t * exp64(-y) - 1.0;
    y += t * exp64(-y) - 1.0;
    y
}

/// The shader's `gaussian_moments`: the host's recurrence (`model::gaussian_moments_of`)
/// with [`exp64`].
fn gaussian_moments(vgrid: &[f64], m: usize, u: f64, t: f64) -> [f64; 4] {
    let mut g = [0.0f64; 4];
    let mut add = |wg: f64, x: f64| {
        g[0] += wg;
        g[1] += wg * x;
        g[2] += wg * x * x;
        g[3] += wg * x * x * x;
    };
    if m < 2 {
        for i in 0..m {
            let x = vgrid[i] - u;
            add(vgrid[m + i] * exp64(-(x * x) / t), x);
        }
        return g;
    }
    let h = vgrid[1] - vgrid[0];
    let c = exp64(-2.0 * h * h / t);
    let v = if u < vgrid[0] { 0.0 } else { (u - vgrid[0]) / h };
    let mut kr = (v + 0.5) as usize;
    if kr as f64 - v > 0.5 {
        kr -= 1;
    }
    let k = kr.min(m - 1);
    for up in [true, false] {
        let first = if up { k } else { k.max(1) - 1 };
        let count = if up { m - k } else { k };
        let dh = if up { h } else { -h };
        let d = vgrid[first] - u;
        let mut gg = exp64(-d * d / t);
        let mut r = exp64(-(2.0 * d * dh + h * h) / t);
        for step in 0..count {
            let i = if up { first + step } else { first - step };
            let x = vgrid[i] - u;
            add(vgrid[m + i] * gg, x);
            gg *= r;
            r *= c;
        }
    }
    g
}

/// The Shakhov factor's constant, 1 - corr / Z, from the three axes' Gaussian moments `g`
/// (model.rs::EqCoeffs::new_on_grid): both stages' twins, in their precision, as the
/// shaders' `if any(s != 0) { ... }` blocks.
pub(crate) fn shakhov_base<T>(g: &[[T; 4]; 3], s: [T; 3], inv_t: T, z: T) -> T
where
    T: Copy + PartialEq + From<f32> + Add<Output = T> + Sub<Output = T> + Mul<Output = T> + Div<Output = T>,
{
    let (zero, two, five) = (T::from(0.0), T::from(2.0), T::from(5.0));
    if s == [zero; 3] {
        return T::from(1.0);
    }
    let mut corr = zero;
    for a in 0..3 {
        let (b, e) = ((a + 1) % 3, (a + 2) % 3);
        let cube = g[a][3] * g[b][0] * g[e][0] + g[a][1] * g[b][2] * g[e][0] + g[a][1] * g[b][0] * g[e][2];
        corr = corr + s[a] * (two * inv_t * cube - five * g[a][1] * g[b][0] * g[e][0]);
    }
    T::from(1.0) - corr / z
}

/// The stage's CPU twin, line for line in f64 (shaders/cell_records_f64.wgsl); `fields` as
/// uploaded ([`crate::backend::gpu_io::pack_fields`]).
pub fn cell_records_f64_twin(p: &Problem, fields: &[f64]) -> Vec<CellCoeffs> {
    let m = p.vgrid.m;
    let vgrid: Vec<f64> = p.vgrid.nodes.iter().chain(&p.vgrid.weights_1d).copied().collect();
    (0..p.grid.cells())
        .map(|c| {
            let word = p.bodies.solids.words.get(c).copied().unwrap_or(0);
            if word & SOLID_BIT != 0 {
                return CellCoeffs::solid(word);
            }
            let f = &fields[FIELDS * c..FIELDS * (c + 1)];
            let (rho, u, t) = (f[0], [f[1], f[2], f[3]], f[4]);
            let ks = (1.0 - p.prandtl) * 4.0 / (5.0 * rho * t * t);
            let s = [ks * f[5], ks * f[6], ks * f[7]];
            let nu = p.delta * rho * exp64((1.0 - p.omega) * log64(t));
            // The sweep's Maxwellian takes the matched parameters; nu and s the state's.
            let moments = |v: [f64; 3], t: f64| v.map(|va| gaussian_moments(&vgrid, m, va, t));
            let (u, tm, g) = crate::model::matched_maxwellian_by(moments, u, t, crate::model::MATCH_TOL);
            let inv_t = 1.0 / tm;
            let z = g[0][0] * g[1][0] * g[2][0];
            let pref = rho / z;
            let base = shakhov_base(&g, s, inv_t, z);
            CellCoeffs {
                rows: [
                    [pref as f32, inv_t as f32, nu as f32, f32::from_bits(word)],
                    [u[0] as f32, u[1] as f32, u[2] as f32, base as f32],
                    [s[0] as f32, s[1] as f32, s[2] as f32, (inv_t * std::f64::consts::LOG2_E) as f32],
                ],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_records_need_f64_unless_the_f32_stage_is_asked_for() {
        assert_eq!(default_at(true), RecordsAt::Device);
        assert_eq!(default_at(false), RecordsAt::Host);
        assert_eq!(choose(RecordsAt::Device, true).unwrap(), Some(true));
        assert_eq!(choose(RecordsAt::DeviceF32, true).unwrap(), Some(false));
        assert_eq!(choose(RecordsAt::DeviceF32, false).unwrap(), Some(false));
        assert_eq!(choose(RecordsAt::Host, true).unwrap(), None);
        let e = choose(RecordsAt::Device, false).unwrap_err().to_string();
        assert!(e.contains("no f64") && e.contains("device-f32"), "{e}");
    }

    #[test]
    fn exp64_and_log64_are_within_a_few_ulps_of_the_std_library() {
        // Arguments over the range the records use: Gaussian exponents down to -708,
        // ln T of cold and hot gas, and T^(1 - omega).
        let mut worst = [0.0f64; 2];
        for i in 0..20001 {
            let x = -708.0 + 718.0 * i as f64 / 20000.0;
            let (a, b) = (exp64(x), x.exp());
            worst[0] = worst[0].max((a - b).abs() / b);
        }
        for i in 1..20001 {
            let t = 1e-3 * (1e7f64).powf(i as f64 / 20000.0);
            let (a, b) = (log64(t), t.ln());
            // Absolute below |ln T| = 1: T^(1 - omega) = exp((1 - omega) ln T) carries ln T's
            // absolute error as its relative error.
            worst[1] = worst[1].max((a - b).abs() / b.abs().max(1.0));
        }
        // Horner's 14 steps and the reduction round a few times each: 8 ulps of f64 bound
        // them, far below the f32 ulp (5e-7 times larger) the records are rounded to.
        assert!(worst[0] < 8.0 * f64::EPSILON, "exp64: {:.2e}", worst[0]);
        assert!(worst[1] < 8.0 * f64::EPSILON, "log64: {:.2e}", worst[1]);
        assert_eq!(exp64(0.0), 1.0);
        assert_eq!(exp64(-709.0), 0.0);
        assert_eq!(pow2(-1022), f64::MIN_POSITIVE);
    }

    #[test]
    fn the_shader_and_the_twin_share_their_constants() {
        // A wrong high-order coefficient or ln 2 part moves exp64 by less than an f32 ulp,
        // which the stage's comparison with the host cannot see: hold the literals equal.
        let src = crate::backend::wgpu::shaders::EXP64;
        let body = &src[src.find("fn exp64").unwrap()..];
        let lits: Vec<f64> =
            body.split("1.0lf / ").skip(1).map(|t| t[..t.find("lf").unwrap()].parse().unwrap()).collect();
        // 13! .. 3!; the shader writes the last three steps as `+ 0.5lf` and `+ 1.0lf` twice.
        assert_eq!(lits, TAYLOR[..11].to_vec());
        assert_eq!(TAYLOR[11..], [2.0, 1.0, 1.0]);
        assert_eq!(body.matches("p = p * r + 0.5lf;").count(), 1);
        assert_eq!(body.matches("p = p * r + 1.0lf;").count(), 2);
        let cw: Vec<f64> = body.split("nf * ").skip(1).map(|t| t[..t.find("lf").unwrap()].parse().unwrap()).collect();
        assert_eq!(cw, [LN2_HI, LN2_LO]);
    }

    #[test]
    fn the_twin_gives_the_hosts_records() {
        let cfg = crate::config::Config::from_json(include_str!("../../../configs/cube-quick.json")).unwrap();
        let p = Problem::new(&cfg);
        let fields = super::super::records::tests::edge_fields(&p);
        let mut packed = vec![0.0f64; fields.len() * FIELDS];
        crate::backend::gpu_io::pack_fields(&fields, &mut packed, |x| x);
        let twin = cell_records_f64_twin(&p, &packed);
        let host = super::super::records::tests::host_records(&p, &fields);
        super::super::records::tests::assert_within_an_ulp(&p, &twin, &host, "twin");
    }
}
