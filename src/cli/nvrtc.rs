//! `knudsen nvrtc-check` (hidden): compile the CUDA kernels with NVRTC, no GPU needed; CI
//! runs it so a kernel that does not compile fails before it reaches a device.

use super::failure::Failure;
use std::path::Path;

#[cfg(feature = "cuda-driver")]
pub fn nvrtc_check(source: Option<&Path>, arch: String) -> Result<(), Failure> {
    use knudsen::backend::cuda::kernels;
    // NVRTC's options are 'static; this command compiles once and exits.
    let arch: &'static str = Box::leak(arch.into_boxed_str());
    let given = match source {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|e| Failure::BadInput(format!("{}: {e}", p.display())))?),
        None => None,
    };
    for sizes in kernels::check_sizes() {
        let src = given.clone().unwrap_or_else(|| kernels::program_for(&sizes));
        let tag = if sizes.f64 { ", f64" } else { "" };
        let ptx = kernels::compile_ptx(&src, &sizes, Some(arch))
            .map_err(|e| Failure::Run(anyhow::anyhow!("NVRTC, {arch}, NX = {}{tag}: {e}", sizes.nx)))?;
        let text = ptx.to_src();
        // For reading the PTX (e.g. whether an array went to local memory).
        if let Ok(dir) = std::env::var("KNUDSEN_PTX_DUMP") {
            let f64 = if sizes.f64 { "-f64" } else { "" };
            let path = Path::new(&dir).join(format!("knudsen-{arch}-nx{}{f64}.ptx", sizes.nx));
            std::fs::write(&path, &text).map_err(|e| Failure::Run(anyhow::anyhow!("{}: {e}", path.display())))?;
        }
        let fused: &[&str] = if sizes.f64 { &[] } else { &["sweep_fused", "fused_moments"] };
        for k in ["sweep_slice", "moment_slice", "wall_load_slice", "cell_records"].iter().chain(fused) {
            if source.is_none() && !text.contains(&format!(".entry {k}")) {
                return Err(Failure::Run(anyhow::anyhow!("NVRTC output has no entry {k}")));
            }
        }
        let target = text.lines().find(|l| l.starts_with(".target")).unwrap_or(".target ?");
        println!(
            "NVRTC {}: {arch}, NX = {}{tag}: {} bytes of PTX ({target})",
            kernels::nvrtc_version(),
            sizes.nx,
            text.len()
        );
    }
    if source.is_none() {
        for part in &kernels::SYNTHETIC {
            let file = part.file;
            let text = kernels::compile_synthetic_ptx(part.source, Some(arch))
                .map_err(|e| Failure::Run(anyhow::anyhow!("NVRTC, {arch}, {file}: {e}")))?
                .to_src();
            if let Some(k) = part.kernels.iter().find(|k| !text.contains(&format!(".entry {k}"))) {
                return Err(Failure::Run(anyhow::anyhow!("NVRTC output of {file} has no entry {k}")));
            }
            let target = text.lines().find(|l| l.starts_with(".target")).unwrap_or(".target ?");
            println!("NVRTC {}: {arch}, {file}: {} bytes of PTX ({target})", kernels::nvrtc_version(), text.len());
            // The form the solver loads: machine code for the real architecture.
            if let Some(sm) = arch.strip_prefix("compute_") {
                let bin = kernels::synthetic_cubin(part, sm)
                    .map_err(|e| Failure::Run(anyhow::anyhow!("NVRTC, sm_{sm}, {file} to CUBIN: {e}")))?;
                if !bin.starts_with(b"\x7fELF") {
                    return Err(Failure::Run(anyhow::anyhow!(
                        "NVRTC's CUBIN of {file} for sm_{sm} is not an ELF image"
                    )));
                }
                println!("NVRTC {}: sm_{sm}, {file}: {} bytes of CUBIN", kernels::nvrtc_version(), bin.len());
            }
        }
    }
    Ok(())
}

#[cfg(not(feature = "cuda-driver"))]
pub fn nvrtc_check(_: Option<&Path>, _: String) -> Result<(), Failure> {
    Err(Failure::BadInput(knudsen::backend::cuda_available().unwrap_err()))
}
