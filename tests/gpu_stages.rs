//! Each WGSL stage against its CPU twin (src/backend/wgpu/twin.rs), on the same f32 inputs:
//! the first two z-steps of one dispatch group, from a non-trivial state (drifting, hot, with heat
//! flux, on a nonuniform-temperature field) so every term of the kernels matters.

mod common;
use common::*;
use knudsen::backend::gpu_tables::{moment_index, velocity_table};
use knudsen::backend::wgpu::group;
use knudsen::backend::wgpu::layout::{CellCoeffs, StepParams, MSTRIDE};
use knudsen::backend::wgpu::twin::{self, Consts, Slices, SweepBindings, VelocityIndex};
use knudsen::backend::wgpu::{WgpuBackend, WgpuOptions};
use knudsen::backend::SweepInput;
use knudsen::boundary::Face;
use knudsen::config::Scheme;
use knudsen::model::Macro;
use knudsen::problem::Problem;
use std::sync::Arc;

fn rel_max(a: &[f32], b: &[f32]) -> f64 {
    let scale = b.iter().fold(0.0f32, |m, x| m.max(x.abs())) as f64;
    a.iter().zip(b).map(|(x, y)| (x - y).abs() as f64).fold(0.0, f64::max) / scale
}

#[test]
fn sweep_and_moment_stages_match_their_cpu_twins() {
    check_stages(false, Scheme::FirstOrder, None);
}

/// One dispatch over several chunks, each in its own slice binding (group.rs): the kernels'
/// choice of binding and slot, the +z/-z split across chunks, the padding between them.
#[test]
fn stages_over_several_slice_bindings_match_their_cpu_twins() {
    // 10 KiB bindings hold 128 velocities of this case's 20-cell slices (first order) or 32
    // (second order, four slots): the 1728 velocities fill 14 chunks, one group whose split
    // falls inside it, or 54 chunks, four groups of at most 16 bindings.
    check_stages(false, Scheme::FirstOrder, Some(10 << 10));
    check_stages(true, Scheme::SecondOrder, Some(10 << 10));
}

/// The second-order scheme's four slots (shaders/upwind2.wgsl, twin2.rs), with partner faces
/// so that the exits carry emitted face values too.
#[test]
fn second_order_stages_match_their_cpu_twins() {
    check_stages(true, Scheme::SecondOrder, None);
}

/// The same with specular y_min and z_min faces: partner inflow read by sweep_slice from
/// `bnd`, exits written by moment_slice after the incident fluxes.
#[test]
fn partner_reads_and_exit_writes_match_their_cpu_twins() {
    check_stages(true, Scheme::FirstOrder, None);
}

fn check_stages(partner_faces: bool, scheme: Scheme, max_slice_binding: Option<u64>) {
    let Some(adapter) = gpu_adapter() else { return };
    let mut v = cavity_json(5, 12, 4.0, 0.1);
    if partner_faces {
        v["boundaries"]["y_min"] = serde_json::json!({"type": "specular"});
        v["boundaries"]["z_min"] = serde_json::json!({"type": "specular"});
    }
    v["grid"]["x"]["cells"] = serde_json::json!(4);
    v["grid"]["z"]["cells"] = serde_json::json!(4);
    // A body in slices 1 and 2, reached by both z-steps from either end: the solid cells and
    // the wall emission of sweep_slice, and wall_load_slice, all take part. It reaches
    // across y and moves along y, tangentially to every face that meets gas.
    v["bodies"] = serde_json::json!([{"min": [0.25, 0.0, 0.25], "max": [0.5, 1.0, 0.75], "temperature": 1.3,
        "velocity": [0.0, 0.1, 0.0]}]);
    let mut cfg = config(&v);
    cfg.solver.scheme = scheme;
    let p = Arc::new(Problem::new(&cfg));
    let g = &p.grid;
    // A state that varies from cell to cell.
    let eq: Vec<_> = (0..g.cells())
        .map(|c| {
            let t = 1.0 + 0.1 * ((c % 7) as f64 / 7.0);
            let mut m = Macro::equilibrium(1.0 + 0.05 * ((c % 5) as f64 / 5.0), [0.05, -0.03, 0.02], t);
            m.q = [0.01, -0.02, 0.005];
            p.eq_coeffs(&m)
        })
        .collect();
    let dens: knudsen::boundary::FaceData =
        std::array::from_fn(|f| (0..Face::ALL[f].cells(g)).map(|i| 0.9 + 0.01 * (i % 9) as f64).collect());
    let nwalls = p.bodies.solids.walls.len();
    let wall_dens: Vec<f64> = (0..nwalls).map(|w| 0.8 + 0.03 * (w % 7) as f64).collect();
    // Partner inflow that differs from slot to slot and cell to cell.
    let partner: knudsen::boundary::FaceData = std::array::from_fn(|f| {
        if p.bounds.stores_inflow(Face::ALL[f]) {
            let n = Face::ALL[f].cells(g) * knudsen::boundary::slots_per_cell(p.vgrid.m);
            (0..n).map(|i| 0.01 + 0.001 * (i % 13) as f64).collect()
        } else {
            Vec::new()
        }
    });
    assert_eq!(partner.iter().filter(|d| !d.is_empty()).count(), if partner_faces { 2 } else { 0 });
    let input = SweepInput { eq: &eq, fields: &[], face_density: &dens, wall_density: &wall_dens, partner: &partner };
    // The stages of the slice kernels.
    let opts = WgpuOptions {
        max_slice_binding,
        sweep: Some(knudsen::backend::fused::SweepKernel::Slices),
        ..Default::default()
    };
    let mut gpu = WgpuBackend::with_adapter(p.clone(), 64 << 20, &opts, &adapter).unwrap();
    let ([moments, incident, wall_sums], chunks) = gpu.first_steps_for_check(&input).unwrap();

    // The twins, on the same f32 inputs.
    let s = gpu.schedule();
    let grp = &s.waves[0].groups[0];
    if max_slice_binding.is_some() {
        assert!(grp.chunks >= 2, "one binding: {grp:?}");
        if s.waves[0].groups.len() == 1 {
            assert!(grp.split > 0 && grp.split < grp.count, "the split inside the group: {grp:?}");
        }
    }
    let velocities = group::velocities(&s.waves[0].chunks, grp, s.chunk_stride);
    // The buffer layout the backends use (gpu_io), filled like theirs.
    let layout = knudsen::backend::gpu_io::device_tables(&p).unwrap();
    let k = Consts::of(&p, s.chunk_stride, &layout);
    assert!(k.has_walls);
    let table = velocity_table(&p, &velocities);
    let vidx = moment_index(&p, &velocities);
    let solids = &p.bodies.solids;
    let cells: Vec<CellCoeffs> = eq.iter().zip(&solids.words).map(|(e, &w)| CellCoeffs::from_eq(e, w)).collect();
    let mut walls: Vec<[u32; 4]> = solids.slice_walls.iter().map(|r| [r.start as u32, r.len() as u32, 0, 0]).collect();
    let nxy = g.slice_cells() as u32;
    walls.extend(solids.walls.iter().enumerate().map(|(n, w)| [w.cell % nxy, w.side.id() as u32, n as u32, 0]));
    let mut t_wall_sums = vec![0.0f32; nwalls * 5];
    let inv_widths: Vec<f32> =
        [&g.x.widths, &g.y.widths, &g.z.widths].iter().flat_map(|w| w.iter().map(|d| (1.0 / d) as f32)).collect();
    let face_density: Vec<f32> = dens.iter().flat_map(|f| f.iter().map(|&x| x as f32)).collect();
    let mut t_incident = vec![0.0f32; layout.incident_len];
    let bnd: Vec<f32> = inv_widths
        .iter()
        .copied()
        .chain(face_density)
        .chain(wall_dens.iter().map(|&x| x as f32))
        .chain(partner.iter().flat_map(|f| f.iter().map(|&x| x as f32)))
        .collect();
    assert_eq!(bnd.len(), layout.bnd.len());
    let mut t_slices = Slices(vec![vec![0.0f32; s.chunk_stride * g.slice_cells() * s.slots]; grp.chunks]);
    let mut t_moments = vec![0.0f32; g.cells() * MSTRIDE];
    let vi =
        VelocityIndex { m: p.vgrid.m as u32, step: (p.vgrid.half_width / (p.vgrid.m - 1) as f64) as f32, vidx: &vidx };
    for step in 0..2u32 {
        let params = StepParams { step, count: grp.count as u32, split: grp.split as u32, pad: 0 };
        let b = SweepBindings { params, cells: &cells, bnd: &bnd, table: &table };
        for v in 0..params.count {
            twin::sweep_slice(&k, &b, v, &mut t_slices);
        }
        for cell in 0..g.slice_cells() as u32 {
            twin::moment_slice(&k, &params, &vi, &t_slices, cell, &mut t_moments, &mut t_incident);
        }
        for part in 0..2 {
            for n in 0..nwalls as u32 {
                twin::wall_load_slice(&k, &params, &table, &t_slices, &walls, part, n, &mut t_wall_sums);
            }
        }
    }
    // Same f32 operations in the same order for the sweep, up to exp() and fused
    // multiply-adds the GPU compiler may form: a few ulps. The moment stage reduces with a
    // tree on the GPU and in order on the CPU: f32 round-off of sums over ~900 terms, 1e-5.
    let slices: Vec<f32> = chunks.concat();
    let t_slices: Vec<f32> = t_slices.0.concat();
    let ds = rel_max(&slices, &t_slices);
    let dm = rel_max(&moments, &t_moments);
    let di = rel_max(&incident, &t_incident);
    let dw = rel_max(&wall_sums[..t_wall_sums.len()], &t_wall_sums);
    eprintln!("sweep_slice {ds:.1e}, moment_slice moments {dm:.1e}, incident {di:.1e}, wall_load_slice {dw:.1e}");
    assert!(dw < 1e-5, "wall_load_slice differs from its twin by {dw:e}");
    // The wall stage saw faces in both z-steps, and solid cells hold zero.
    assert!(t_wall_sums.iter().filter(|&&x| x != 0.0).count() >= 5 * 4, "{t_wall_sums:?}");
    // After two steps the +z velocities hold slice 1 and the -z ones slice nz - 2 = 2; the body
    // fills the same (i, j) cells of both, so every velocity slot there must read 0.
    let solid_s = (0..g.slice_cells()).find(|&s| solids.is_solid(g.slice_cells() + s)).unwrap();
    assert!(solids.is_solid(2 * g.slice_cells() + solid_s));
    for chunk in &chunks {
        let row = &chunk[solid_s * s.chunk_stride..(solid_s + 1) * s.chunk_stride];
        assert!(row.iter().all(|&x| x == 0.0), "gas inside the body: {row:?}");
    }
    assert!(ds < 1e-5, "sweep_slice differs from its twin by {ds:e}");
    assert!(dm < 1e-5, "moment_slice differs from its twin by {dm:e}");
    assert!(di < 1e-5, "moment_slice incident fluxes differ from the twin by {di:e}");
    // The comparison has teeth: the two steps wrote non-zero slices and sums.
    assert!(t_slices.iter().filter(|&&x| x > 0.0).count() > t_slices.len() / 2);
    assert!(t_incident.iter().any(|&x| x > 0.0) && t_moments.iter().any(|&x| x > 0.0));
    if partner_faces {
        // The -y velocities crossed y_min in both steps (z_min is reached only at the last
        // step of the -z ones). Exits are copies of slice values, so they agree as closely.
        // The sweep comparison above covers the partner reads: a kernel that ignored them
        // would take density x shape (about 0.9 f_M) instead of the 0.01-0.023 given here.
        let exits = &t_incident[layout.face_offsets[6]..];
        assert!(exits.iter().filter(|&&x| x > 0.0).count() > 100, "no exits recorded");
        let de = rel_max(&incident[layout.face_offsets[6]..], exits);
        assert!(de < 1e-5, "exits differ from the twin by {de:e}");
    }
}
