//! WGSL sources, assembled from shaders/*.wgsl at build time.

const SWEEP: &str = include_str!("../../../shaders/sweep_slice.wgsl");
const MOMENT: &str = include_str!("../../../shaders/moment_slice.wgsl");
const REDUCE_WORKGROUP: &str = include_str!("../../../shaders/reduce_workgroup.wgsl");
const REDUCE_SUBGROUP: &str = include_str!("../../../shaders/reduce_subgroup.wgsl");
const WALL_LOAD: &str = include_str!("../../../shaders/wall_load_slice.wgsl");
const FACE_OFFSET: &str = include_str!("../../../shaders/face_offset.wgsl");
const PARTNER: &str = include_str!("../../../shaders/partner.wgsl");
const UPWIND2: &str = include_str!("../../../shaders/upwind2.wgsl");

pub fn sweep_source() -> String {
    format!("{SWEEP}\n{FACE_OFFSET}\n{PARTNER}\n{UPWIND2}")
}

/// The moment kernel with the subgroup reduction, or the workgroup-memory tree.
pub fn moment_source(subgroups: bool) -> String {
    format!("{MOMENT}\n{FACE_OFFSET}\n{PARTNER}\n{}", if subgroups { REDUCE_SUBGROUP } else { REDUCE_WORKGROUP })
}

pub fn wall_load_source() -> String {
    WALL_LOAD.to_string()
}

/// One shader knudsen can create.
pub struct Variant {
    pub label: &'static str,
    /// The entry point, also the kernel's name in kernels.rs.
    pub entry: &'static str,
    pub source: String,
    /// Needs the SUBGROUP feature (created only on adapters that offer it).
    pub subgroups: bool,
}

/// Every shader variant knudsen can create.
pub fn variants() -> Vec<Variant> {
    let v = |label, entry, source, subgroups| Variant { label, entry, source, subgroups };
    vec![
        v("sweep_slice", "sweep_slice", sweep_source(), false),
        v("moment_slice (workgroup reduction)", "moment_slice", moment_source(false), false),
        v("moment_slice (subgroup reduction)", "moment_slice", moment_source(true), true),
        v("wall_load_slice", "wall_load_slice", wall_load_source(), false),
    ]
}

/// Parse and validate a WGSL source with naga, with or without subgroup capabilities.
pub fn validate(src: &str, subgroups: bool) -> Result<naga::Module, String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    let mut caps = naga::valid::Capabilities::empty();
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
            validate(&v.source, v.subgroups).unwrap_or_else(|e| panic!("{}:\n{e}", v.label));
        }
    }

    #[test]
    fn subgroup_variant_needs_the_capability() {
        // The check has teeth: without SUBGROUP the subgroup reduction must be refused.
        assert!(validate(&moment_source(true), false).is_err());
    }
}
