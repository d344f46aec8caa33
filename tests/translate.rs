//! Every WGSL shader variant knudsen can create, translated by naga's own back ends to
//! SPIR-V (Vulkan), MSL (Metal) and HLSL (DX12), after substituting the pipeline-overridable
//! constants the way wgpu does at pipeline creation. Only Vulkan runs on our machines; this
//! is the evidence that Metal and DX12 drivers receive valid source (docs/platforms.md).
//!
//! Options are each back end's defaults, except where a variant needs a capability that a
//! device offering it implies: the subgroup reduction exists only on adapters with SUBGROUP,
//! for which wgpu writes MSL 2.4 and HLSL shader model 6.0 (wave intrinsics need 6.0); the
//! f64 cell records only on adapters with SHADER_F64, which wgpu offers on Vulkan alone
//! (Metal has no double), so they go to SPIR-V and HLSL, not MSL.

use knudsen::backend::wgpu::kernels::Sizes;
use knudsen::backend::wgpu::shaders::{validate_with, variants, Variant};
use naga::back::{hlsl, msl, spv};
use naga::ir::ShaderStage;

/// Override values of a representative case (the paper's cube: 191 x 181 x 181 cells, 48^3
/// velocities, one body) and of a small one, so both the large-index and the small-grid
/// foldings are exercised.
fn cases() -> Vec<Sizes> {
    vec![
        Sizes {
            nx: 191,
            ny: 181,
            nz: 181,
            chunk_stride: 110592,
            m: 48,
            step: 4.0 / 47.0,
            srow: 2,
            walls: true,
            part_at: [u32::MAX; 6],
            exit_at: [u32::MAX; 6],
            slots: 1,
            f64: false,
            rows: 1,
        },
        // A quarter domain: specular y_min and z_min with partner data and exits.
        Sizes {
            nx: 6,
            ny: 5,
            nz: 4,
            chunk_stride: 1728,
            m: 12,
            step: 4.0 / 11.0,
            srow: 1,
            walls: false,
            part_at: [u32::MAX, u32::MAX, 500, u32::MAX, 30000, u32::MAX],
            exit_at: [u32::MAX, u32::MAX, 200, u32::MAX, 30000, u32::MAX],
            // The second-order scheme's four slots.
            slots: 4,
            f64: false,
            // Rows in flight: more than the grid's five rows take two blocks of them.
            rows: 4,
        },
    ]
}

fn translate(v: &Variant, sizes: &Sizes) -> Result<(), String> {
    validate_with(&v.source, v.subgroups, v.f64)?;
    let mut caps = naga::valid::Capabilities::empty();
    if v.subgroups {
        caps |= naga::valid::Capabilities::SUBGROUP;
    }
    if v.f64 {
        caps |= naga::valid::Capabilities::FLOAT64;
    }
    let constants: naga::back::PipelineConstants = if v.entry.starts_with("syn_") {
        // The synthetic solve's one constant: cells per neighbour-block binding, here for
        // a 2 GiB binding (src/solver/synthetic/wgpu/mod.rs).
        [("OFF_CELLS".to_string(), ((2u64 << 30) / 600) as f64)].into_iter().collect()
    } else {
        sizes.constants(v.entry).into_iter().map(|(k, x)| (k.to_string(), x)).collect()
    };
    translate_source(&v.source, v.entry, v.subgroups, caps, &constants, !v.f64)
}

/// Parse, validate with `caps`, substitute `constants`, and write all three targets. A back
/// end that panics (naga reaches `unreachable!` on some unsupported types) counts as a
/// refusal, like one that returns an error.
fn translate_source(
    source: &str,
    entry_name: &str,
    subgroups: bool,
    caps: naga::valid::Capabilities,
    constants: &naga::back::PipelineConstants,
    metal: bool,
) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let mut validator = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps);
    if subgroups {
        validator
            .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
            .subgroup_operations(naga::valid::SubgroupOperationSet::all());
    }
    let info = validator.validate(&module).map_err(|e| format!("{e:?}"))?;
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((ShaderStage::Compute, entry_name)),
        constants,
    )
    .map_err(|e| format!("overrides: {e}"))?;
    let (module, info) = (module.into_owned(), info.into_owned());
    let guarded = |target: &str, f: &dyn Fn() -> Result<(), String>| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or_else(|_| Err(format!("{target}: the back end panicked")))
    };
    let entry = Some((ShaderStage::Compute, entry_name.to_string()));
    guarded("SPIR-V", &|| spv_out(&module, &info, entry_name))?;
    if metal {
        guarded("MSL", &|| msl_out(&module, &info, entry.clone(), subgroups))?;
    }
    guarded("HLSL", &|| hlsl_out(&module, &info, entry.clone(), subgroups))
}

fn spv_out(module: &naga::Module, info: &naga::valid::ModuleInfo, entry: &str) -> Result<(), String> {
    let spv_pipe = spv::PipelineOptions { shader_stage: ShaderStage::Compute, entry_point: entry.to_string() };
    let words =
        spv::write_vec(module, info, &spv::Options::default(), Some(&spv_pipe)).map_err(|e| format!("SPIR-V: {e}"))?;
    if words.first() != Some(&0x0723_0203) {
        return Err("SPIR-V: no magic number".into());
    }
    Ok(())
}

fn msl_out(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: Option<(ShaderStage, String)>,
    subgroups: bool,
) -> Result<(), String> {
    let mut msl_opts = msl::Options::default();
    if subgroups {
        msl_opts.lang_version = (2, 4);
    }
    let msl_pipe = msl::PipelineOptions { entry_point: entry, ..Default::default() };
    let (metal, _) = msl::write_string(module, info, &msl_opts, &msl_pipe).map_err(|e| format!("MSL: {e}"))?;
    if !metal.contains("kernel void") {
        return Err("MSL: no kernel function".into());
    }
    Ok(())
}

fn hlsl_out(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: Option<(ShaderStage, String)>,
    subgroups: bool,
) -> Result<(), String> {
    let mut hlsl_opts = hlsl::Options::default();
    if subgroups {
        hlsl_opts.shader_model = hlsl::ShaderModel::V6_0;
    }
    let mut text = String::new();
    hlsl::Writer::new(&mut text, &hlsl_opts, &hlsl::PipelineOptions { entry_point: entry })
        .write(module, info, None)
        .map_err(|e| format!("HLSL: {e}"))?;
    if !text.contains("[numthreads(") {
        return Err("HLSL: no compute entry".into());
    }
    Ok(())
}

#[test]
fn every_shader_translates_to_spirv_msl_and_hlsl() {
    let mut failures = Vec::new();
    let mut count = 0;
    let synthetic = knudsen::solver::synthetic::wgpu::kernels::variants();
    for v in variants().into_iter().chain(synthetic) {
        for sizes in cases() {
            count += 1;
            if let Err(e) = translate(&v, &sizes) {
                failures.push(format!("{} (NX = {}): {e}", v.label, sizes.nx));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(count >= 8);
}

#[test]
fn translation_rejects_what_a_target_cannot_express() {
    // The check has teeth: a shader using 64-bit floats validates with the FLOAT64
    // capability and translates to SPIR-V, but Metal has no double, so the chain must fail.
    let src = "@group(0) @binding(0) var<storage, read_write> x: array<f64>;\n\
               @compute @workgroup_size(1) fn main() { x[0] = x[0] * 2.0lf; }";
    let r = translate_source(src, "main", false, naga::valid::Capabilities::FLOAT64, &Default::default(), true);
    let e = r.expect_err("f64 must not reach Metal");
    assert!(e.starts_with("MSL"), "{e}");
}
