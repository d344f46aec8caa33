//! WGSL sources, assembled from shaders/*.wgsl at build time.

const SWEEP: &str = include_str!("../../../shaders/sweep_slice.wgsl");
const MOMENT: &str = include_str!("../../../shaders/moment_slice.wgsl");
const REDUCE_WORKGROUP: &str = include_str!("../../../shaders/reduce_workgroup.wgsl");
const REDUCE_SUBGROUP: &str = include_str!("../../../shaders/reduce_subgroup.wgsl");
const WALL_LOAD: &str = include_str!("../../../shaders/wall_load_slice.wgsl");
const FACE_OFFSET: &str = include_str!("../../../shaders/face_offset.wgsl");
const PARTNER: &str = include_str!("../../../shaders/partner.wgsl");
/// The second-order cell update (the slice sweep and sweep_fused2).
pub const UPWIND2: &str = include_str!("../../../shaders/upwind2.wgsl");
/// Helpers of both sweeps (sweep_slice.wgsl and sweep_fused.wgsl).
pub const SWEEP_COMMON: &str = include_str!("../../../shaders/sweep_common.wgsl");
pub const COPY_BANDWIDTH: &str = include_str!("../../../shaders/copy_bandwidth.wgsl");
pub const CELL_RECORDS: &str = include_str!("../../../shaders/cell_records.wgsl");
pub const CELL_RECORDS_F64: &str = include_str!("../../../shaders/cell_records_f64.wgsl");
/// e^x in f64 from +, -, *, / (the builtin is not usable on f64).
pub const EXP64: &str = include_str!("../../../shaders/exp64.wgsl");
/// The slice kernels' value type `real` and its helpers, in f32 and in f64.
pub const REAL_F32: &str = include_str!("../../../shaders/real_f32.wgsl");
const REAL_F64: &str = include_str!("../../../shaders/real_f64.wgsl");

/// The source of cell_records_f64 (with exp64 appended).
pub fn cell_records_f64_source() -> String {
    format!("{CELL_RECORDS_F64}\n{EXP64}")
}

/// What the slice kernels' sources start with: `real` as f32, or as f64 with exp64
/// (`solver.precision = "f64"`, adapters with SHADER_F64).
pub fn real_prelude(f64: bool) -> String {
    if f64 {
        format!("{REAL_F64}\n{EXP64}")
    } else {
        REAL_F32.to_string()
    }
}

/// sweep_slice.wgsl for `bindings` slice bindings and `rows` invocations per velocity (its
/// ROWS): with one row the wavefront's barriers (lines marked `@wavefront`) are left out and
/// the early return of spare invocations (marked `@one-per-velocity`) kept, the loop the
/// one-invocation sweep always had (measured 2% faster than the barrier-free form without
/// the return on an H200: docs/performance.md, "Rows in flight"); with more, the reverse.
pub fn sweep_source(bindings: usize, f64: bool, rows: u32) -> String {
    assert!(rows == 1 || sweep_rows_allowed(bindings), "more than one row needs one slice binding");
    let drop = if rows == 1 { "// @wavefront" } else { "// @one-per-velocity" };
    let src: String = SWEEP.lines().filter(|l| !l.contains(drop)).map(|l| format!("{l}\n")).collect();
    format!(
        "{}\n{}\n{SWEEP_COMMON}\n{FACE_OFFSET}\n{PARTNER}\n{UPWIND2}",
        real_prelude(f64),
        per_binding(&src, bindings)
    )
}

/// sweep_slice.wgsl with its last function, `sweep_velocity_B`, copied once per slice
/// binding (`slices_B` becoming `slices0..`), and `sweep_velocity(c, v, lv, lane, live)`,
/// which calls chunk c's copy: the binding is chosen once per invocation, not at every
/// access. With more than one binding the copies are called in non-uniform control flow, so
/// ROWS must be 1 and [`sweep_source`] leaves the wavefront's barrier out
/// ([`sweep_rows_allowed`]).
fn per_binding(src: &str, bindings: usize) -> String {
    let at = src.find("fn sweep_velocity_B(").expect("sweep_slice.wgsl ends with sweep_velocity_B");
    let (head, body) = src.split_at(at);
    let mut s = head.to_string();
    s += &declarations(bindings, Access::ReadWrite, "real");
    for c in 0..bindings {
        s += &body
            .replace("sweep_velocity_B", &format!("sweep_velocity_{c}"))
            .replace("slices_B", &format!("slices{c}"));
        s += "\n";
    }
    s += "fn sweep_velocity(c: u32, v: u32, lv: u32, lane: u32, live: bool) {\n";
    for c in 1..bindings {
        s += &format!("    if c == {c}u {{\n        sweep_velocity_{c}(v, lv, lane, live);\n        return;\n    }}\n");
    }
    s += "    sweep_velocity_0(v, lv, lane, live);\n}\n";
    s
}

/// Whether sweep_slice may run more than one invocation per velocity (ROWS > 1) with
/// `bindings` slice bindings: only with one (the per-binding copies of `sweep_velocity` are
/// called per invocation, where a barrier may not be).
pub fn sweep_rows_allowed(bindings: usize) -> bool {
    bindings == 1
}

/// The moment kernel with the subgroup reduction, or the workgroup-memory tree.
/// In f64 only the workgroup-memory tree (subgroup operations on f64 are an extension few
/// adapters offer).
pub fn moment_source(subgroups: bool, bindings: usize, f64: bool) -> String {
    assert!(!(subgroups && f64), "the subgroup reduction is f32 only");
    format!(
        "{}\n{MOMENT}\n{}\n{FACE_OFFSET}\n{PARTNER}\n{}",
        real_prelude(f64),
        slice_bindings(bindings, Access::Read, "vec4<real>"),
        if subgroups { REDUCE_SUBGROUP } else { REDUCE_WORKGROUP }
    )
}

pub fn wall_load_source(bindings: usize, f64: bool) -> String {
    format!("{}\n{WALL_LOAD}\n{}", real_prelude(f64), slice_bindings(bindings, Access::Read, "real"))
}

/// The first slice binding of every kernel: bindings 1-3 hold its fixed storage buffers
/// (kernels.rs).
pub const FIRST_SLICE_BINDING: u32 = 1 + super::group::FIXED_STORAGE_BUFFERS;

#[derive(Clone, Copy, PartialEq)]
pub enum Access {
    Read,
    ReadWrite,
}

/// The slice bindings of a dispatch group (group.rs): `slices0..`, from
/// [`FIRST_SLICE_BINDING`].
fn declarations(count: usize, access: Access, elem: &str) -> String {
    let mode = if access == Access::ReadWrite { "read_write" } else { "read" };
    (0..count)
        .map(|c| {
            let b = FIRST_SLICE_BINDING as usize + c;
            format!("@group(0) @binding({b}) var<storage, {mode}> slices{c}: array<{elem}>;\n")
        })
        .collect()
}

/// The slice bindings of a dispatch group (`declarations`) and `slice_load(c, i)`
/// (`slice_load4` for vec4 elements), which reads chunk c's. WGSL has no arrays of storage
/// buffers without a native-only feature, so the choice is a chain of branches, uniform
/// across a warp except at chunk ends: cheap in the moment and wall kernels, whose many
/// warps hide it (the sweep chooses once per invocation instead, `per_binding`). CPU twin:
/// twin.rs, `Slices::load`.
pub fn slice_bindings(count: usize, access: Access, elem: &str) -> String {
    let load = if elem == "real" { "slice_load" } else { "slice_load4" };
    let mut s = declarations(count, access, elem);
    s += &format!("fn {load}(c: u32, i: u32) -> {elem} {{\n");
    for c in 1..count {
        s += &format!("    if c == {c}u {{\n        return slices{c}[i];\n    }}\n");
    }
    s += "    return slices0[i];\n}\n";
    s
}

/// One shader knudsen can create.
pub struct Variant {
    pub label: String,
    /// The entry point, also the kernel's name in kernels.rs.
    pub entry: &'static str,
    pub source: String,
    /// Needs the SUBGROUP feature (created only on adapters that offer it).
    pub subgroups: bool,
    /// Needs the SHADER_F64 feature (created only on adapters that offer it; never Metal).
    pub f64: bool,
}

/// Every shader variant knudsen can create.
pub fn variants() -> Vec<Variant> {
    let v = |label, entry, source, subgroups| Variant { label, entry, source, subgroups, f64: false };
    let f64v = |label, entry, source| Variant { label, entry, source, subgroups: false, f64: true };
    // One slice binding (adapters at wgpu's downlevel minimum) and several (group.rs).
    [(1, ""), (3, ", 3 slice bindings")]
        .into_iter()
        .flat_map(|(n, tag)| {
            [
                v(format!("sweep_slice{tag}"), "sweep_slice", sweep_source(n, false, 1), false),
                v(
                    format!("moment_slice (workgroup reduction){tag}"),
                    "moment_slice",
                    moment_source(false, n, false),
                    false,
                ),
                v(
                    format!("moment_slice (subgroup reduction){tag}"),
                    "moment_slice",
                    moment_source(true, n, false),
                    true,
                ),
                v(format!("wall_load_slice{tag}"), "wall_load_slice", wall_load_source(n, false), false),
                f64v(format!("sweep_slice in f64{tag}"), "sweep_slice", sweep_source(n, true, 1)),
                f64v(format!("moment_slice in f64{tag}"), "moment_slice", moment_source(false, n, true)),
                f64v(format!("wall_load_slice in f64{tag}"), "wall_load_slice", wall_load_source(n, true)),
            ]
        })
        .chain([
            // Rows in flight: the wavefront's barriers, one slice binding.
            v("sweep_slice, rows in flight".into(), "sweep_slice", sweep_source(1, false, 4), false),
            f64v("sweep_slice in f64, rows in flight".into(), "sweep_slice", sweep_source(1, true, 4)),
            v("copy_bandwidth".into(), "copy_bandwidth", COPY_BANDWIDTH.to_string(), false),
            v("cell_records".into(), "cell_records", CELL_RECORDS.to_string(), false),
            f64v("cell_records_f64".into(), "cell_records_f64", cell_records_f64_source()),
        ])
        .collect()
}

/// Parse and validate a WGSL source with naga, with or without subgroup capabilities.
pub fn validate(src: &str, subgroups: bool) -> Result<naga::Module, String> {
    validate_with(src, subgroups, false)
}

/// [`validate`], with the FLOAT64 capability where `f64`.
pub fn validate_with(src: &str, subgroups: bool, f64: bool) -> Result<naga::Module, String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    let mut caps = naga::valid::Capabilities::empty();
    if f64 {
        caps |= naga::valid::Capabilities::FLOAT64;
    }
    let mut stages = naga::valid::ShaderStages::empty();
    let mut ops = naga::valid::SubgroupOperationSet::empty();
    if subgroups {
        caps |= naga::valid::Capabilities::SUBGROUP;
        stages = naga::valid::ShaderStages::COMPUTE;
        ops = naga::valid::SubgroupOperationSet::all();
    }
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .subgroup_stages(stages)
        .subgroup_operations(ops)
        .validate(&module)
        .map_err(|e| e.emit_to_string(src))?;
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shader_parses_and_validates() {
        for v in variants() {
            validate_with(&v.source, v.subgroups, v.f64).unwrap_or_else(|e| panic!("{}:\n{e}", v.label));
        }
        // The check has teeth: the f64 stage needs the capability.
        assert!(validate(&cell_records_f64_source(), false).is_err());
        assert!(validate(&sweep_source(1, true, 1), false).is_err());
    }

    /// naga does not check that a barrier stands in uniform control flow (its analyser only
    /// records that one is used), so the two forms of sweep_slice are checked by their text:
    /// with one row no barrier and the spare invocations' early return; with rows the
    /// barrier and no early return; rows with several slice bindings refused.
    #[test]
    fn sweep_slice_keeps_barriers_out_of_non_uniform_control_flow() {
        for f64 in [false, true] {
            for n in [1, 3] {
                let one = sweep_source(n, f64, 1);
                assert!(
                    !one.contains("storageBarrier") && one.contains("if !live { return; }"),
                    "{n} bindings, one row"
                );
            }
            let rows = sweep_source(1, f64, 4);
            assert!(rows.contains("storageBarrier()") && !rows.contains("return; }"), "rows in flight");
            assert!(std::panic::catch_unwind(|| sweep_source(3, f64, 4)).is_err(), "rows with 3 bindings");
        }
    }

    #[test]
    fn subgroup_variant_needs_the_capability() {
        // The check has teeth: without SUBGROUP the subgroup reduction must be refused.
        assert!(validate(&moment_source(true, 1, false), false).is_err());
    }
}
