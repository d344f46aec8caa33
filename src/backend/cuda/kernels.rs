//! CUDA sources (shaders/cuda/), assembled into one NVRTC program, and their compilation.

use cudarc::driver::{CudaContext, CudaModule};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};
use std::sync::Arc;

pub use super::sizes::{check_sizes, Sizes};

const COMMON: &str = include_str!("../../../shaders/cuda/common.cuh");
const UPWIND2: &str = include_str!("../../../shaders/cuda/upwind2.cu");
const SWEEP: &str = include_str!("../../../shaders/cuda/sweep_slice.cu");
const MOMENT: &str = include_str!("../../../shaders/cuda/moment_slice.cu");
const WALL_LOAD: &str = include_str!("../../../shaders/cuda/wall_load_slice.cu");
const FUSED: &str = include_str!("../../../shaders/cuda/sweep_fused.cu");
const FUSED2: &str = include_str!("../../../shaders/cuda/sweep_fused2.cu");
const FUSED_MARCH: &str = include_str!("../../../shaders/cuda/sweep_fused_march.cu");
const FUSED_MOMENTS: &str = include_str!("../../../shaders/cuda/fused_moments.cu");
const CELL_RECORDS: &str = include_str!("../../../shaders/cuda/cell_records.cu");
/// One NVRTC program of the synthetic (GSIS) solve: its file under shaders/cuda/, its
/// source (synthetic_common.cuh, then the file) and the kernels it defines.
pub struct SyntheticPart {
    pub file: &'static str,
    pub source: &'static str,
    pub kernels: &'static [&'static str],
}

/// The synthetic solve's kernels, without size constants (src/solver/synthetic/cuda/
/// launches them), in three programs that NVRTC compiles side by side on threads of their
/// own: as one program they took 0.69 s on the developer machine and 1.0-1.7 s in an H100
/// host's first run, where the largest of the three takes 0.32 s here.
pub const SYNTHETIC: [SyntheticPart; 3] = [
    SyntheticPart {
        file: "synthetic.cu",
        source: concat!(
            include_str!("../../../shaders/cuda/synthetic_common.cuh"),
            "\n",
            include_str!("../../../shaders/cuda/synthetic.cu")
        ),
        kernels: &[
            "syn_row",
            "syn_restrict",
            "syn_prolong",
            "syn_jacobi_first",
            "syn_jacobi",
            "syn_dense",
            "syn_axpy",
            "syn_scale",
            "syn_dot",
            "syn_dot_total",
        ],
    },
    SyntheticPart {
        file: "synthetic_lines.cu",
        source: concat!(
            include_str!("../../../shaders/cuda/synthetic_common.cuh"),
            "\n",
            include_str!("../../../shaders/cuda/synthetic_lines.cu")
        ),
        kernels: &["syn_lines"],
    },
    SyntheticPart {
        file: "synthetic_factor.cu",
        source: concat!(
            include_str!("../../../shaders/cuda/synthetic_common.cuh"),
            "\n",
            include_str!("../../../shaders/cuda/synthetic_factor.cu")
        ),
        kernels: &["syn_line_factor"],
    },
];

/// `compile` run on every part of [`SYNTHETIC`] at once, one thread each; the results in
/// the parts' order, or the first part's error.
pub fn each_synthetic_part<T: Send>(
    compile: impl Fn(&SyntheticPart) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let compile = &compile;
    std::thread::scope(|s| {
        let jobs: Vec<_> = SYNTHETIC.iter().map(|part| s.spawn(move || compile(part))).collect();
        jobs.into_iter()
            .zip(&SYNTHETIC)
            .map(|(j, part)| {
                j.join()
                    .map_err(|_| format!("{}: the compile thread panicked", part.file))?
                    .map_err(|e| format!("{}: {e}", part.file))
            })
            .collect()
    })
}

/// The whole program: the shared header, then the second-order cell update and the slice
/// kernels, then the fused sweep (its definitions and first-order level, its second-order
/// level, its march and kernel), then the cell records.
pub fn program() -> String {
    format!(
        "{COMMON}\n{UPWIND2}\n{SWEEP}\n{MOMENT}\n{WALL_LOAD}\n{FUSED}\n{FUSED2}\n{FUSED_MARCH}\n{FUSED_MOMENTS}\n{CELL_RECORDS}"
    )
}

/// The f64 program (`solver.precision = "f64"`): the shared header, the second-order cell
/// update, the slice kernels and the cell records, compiled with `KN_F64=1`; the fused sweep
/// is f32 only and not part of it.
pub fn program_f64() -> String {
    format!("{COMMON}\n{UPWIND2}\n{SWEEP}\n{MOMENT}\n{WALL_LOAD}\n{CELL_RECORDS}")
}

/// The program for `sizes`: [`program_f64`] where they ask for f64, else [`program`].
pub fn program_for(sizes: &Sizes) -> String {
    if sizes.f64 {
        program_f64()
    } else {
        program()
    }
}

/// Compile `source` (normally [`program_for`] the sizes) to PTX. `arch`: e.g. "compute_90"; None lets
/// NVRTC choose its default.
pub fn compile_ptx(source: &str, sizes: &Sizes, arch: Option<&'static str>) -> Result<Ptx, String> {
    nvrtc(source, sizes.defines(), arch)
}

/// Why NVRTC cannot be used here, if it cannot: a compiler this machine does not have, which
/// (unlike a compile that fails) is no fault of the device (`backend::fault`).
fn nvrtc_missing() -> Option<String> {
    // SAFETY: only probes whether the shared library can be opened.
    (!unsafe { cudarc::nvrtc::sys::is_culib_present() }).then(|| "NVRTC (libnvrtc.so) not found; install the CUDA toolkit or PyPI's nvidia-cuda-nvrtc and put its lib directory on LD_LIBRARY_PATH".into())
}

fn nvrtc(source: &str, options: Vec<String>, arch: Option<&'static str>) -> Result<Ptx, String> {
    if let Some(why) = nvrtc_missing() {
        return Err(why);
    }
    let opts = CompileOptions { options, arch, ..Default::default() };
    // Every field of the options (not only those set here) is part of the key.
    let key = super::kernel_cache::key("ptx", source, &[format!("{opts:?}")], arch, &nvrtc_version());
    let text = super::kernel_cache::load_or_compile(&key, || {
        compile_ptx_with_opts(source, opts).map(|p| p.to_src().into_bytes()).map_err(|e| compile_error_text(&e))
    })?;
    String::from_utf8(text).map(Ptx::from_src).map_err(|e| format!("PTX from the kernel cache: {e}"))
}

/// NVRTC's error with its compiler log as the log reads, line by line: cudarc's Display is
/// its Debug, which prints the log as one escaped string.
fn compile_error_text(e: &cudarc::nvrtc::CompileError) -> String {
    match e {
        cudarc::nvrtc::CompileError::CompileError { nvrtc, log, .. } => {
            format!("NVRTC failed to compile the kernels ({nvrtc:?}):\n{}", log.to_string_lossy().trim_end())
        }
        other => format!("NVRTC: {other:?}"),
    }
}

/// NVRTC's version, "major.minor" (the library found at run time).
pub fn nvrtc_version() -> String {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-parameters; the library is present when this is called (compile_ptx
    // checked it first).
    let rc = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if rc == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        format!("{major}.{minor}")
    } else {
        "version unknown".into()
    }
}

/// The PTX target for `ctx`'s device. NVRTC wants a 'static str; the architectures knudsen
/// targets are listed, others use NVRTC's default (PTX is JIT-compiled forward by the driver).
fn arch_of(ctx: &Arc<CudaContext>) -> anyhow::Result<Option<&'static str>> {
    let (major, minor) = ctx.compute_capability()?;
    Ok(match (major, minor) {
        // Kepler (K40, K80): NVRTC 11.x only, with the `cuda-11` build (docs/platforms.md).
        (3, 5) => Some("compute_35"),
        (3, 7) => Some("compute_37"),
        (7, 0) => Some("compute_70"),
        (7, 5) => Some("compute_75"),
        (8, 0) => Some("compute_80"),
        (8, 6) => Some("compute_86"),
        (8, 9) => Some("compute_89"),
        (9, 0) => Some("compute_90"),
        (10, 0) => Some("compute_100"),
        (12, 0) => Some("compute_120"),
        _ => None,
    })
}

/// Compile for `ctx`'s device and load the module.
pub fn compile(ctx: &Arc<CudaContext>, sizes: &Sizes) -> anyhow::Result<Arc<CudaModule>> {
    let t0 = std::time::Instant::now();
    if let Some(why) = nvrtc_missing() {
        anyhow::bail!(why);
    }
    let ptx = compile_ptx(&program_for(sizes), sizes, arch_of(ctx)?)
        .map_err(|e| crate::backend::fault::Fault::error(crate::backend::fault::FaultKind::Compile, e))?;
    let t1 = t0.elapsed().as_secs_f64();
    let module = ctx.load_module(ptx)?;
    log::debug!(
        "cuda kernels: NVRTC (or the kernel cache) {t1:.3} s, module load {:.3} s",
        t0.elapsed().as_secs_f64() - t1
    );
    Ok(module)
}

/// Compile a part of [`SYNTHETIC`] for `arch` (None: NVRTC's default). Without contracted
/// multiply-adds: the synthetic kernels then round as their host twins do, operation for
/// operation (they are memory-bound, so the extra instructions cost nothing measurable).
pub fn compile_synthetic_ptx(source: &str, arch: Option<&'static str>) -> Result<Ptx, String> {
    nvrtc(source, vec!["--fmad=false".into()], arch)
}

/// [`SYNTHETIC`] compiled for the device of `ordinal` (NVRTC only, no module loaded): a job
/// for a thread of its own (`synthetic::cuda::PtxJob`); one module per part, true with
/// machine code. Where NVRTC knows the device's architecture, straight to its machine code
/// (CUBIN), so that loading the modules later needs no JIT compile by the driver: on a
/// machine's first run (no driver cache) that JIT cost the first synthetic solve ~0.4 s on
/// the critical path, where this thread's extra ptxas time is hidden behind the first sweep.
/// Else, or if that fails, PTX.
pub fn compile_synthetic_for(ordinal: usize) -> anyhow::Result<(Vec<Ptx>, bool)> {
    let ctx = CudaContext::new(ordinal)?;
    let arch = arch_of(&ctx)?;
    if let Some(sm) = arch.and_then(|a| a.strip_prefix("compute_")) {
        match each_synthetic_part(|part| synthetic_cubin(part, sm)) {
            Ok(bins) => return Ok((bins.into_iter().map(Ptx::from_binary).collect(), true)),
            Err(e) => log::debug!("NVRTC to sm_{sm} failed, compiling to PTX instead: {e}"),
        }
    }
    Ok((synthetic_ptx(arch)?, false))
}

/// [`SYNTHETIC`] as PTX for the device of `ordinal`, one module per part (the driver
/// JIT-compiles them at load).
pub fn compile_synthetic_ptx_for(ordinal: usize) -> anyhow::Result<Vec<Ptx>> {
    synthetic_ptx(arch_of(&CudaContext::new(ordinal)?)?)
}

/// Every part of [`SYNTHETIC`] as PTX for `arch`, side by side.
fn synthetic_ptx(arch: Option<&'static str>) -> anyhow::Result<Vec<Ptx>> {
    each_synthetic_part(|part| compile_synthetic_ptx(part.source, arch)).map_err(|e| anyhow::anyhow!(e))
}

/// A part of [`SYNTHETIC`] as machine code for `sm_<sm>` (e.g. "90"), with the PTX form's
/// options.
pub fn synthetic_cubin(part: &SyntheticPart, sm: &str) -> Result<Vec<u8>, String> {
    // SAFETY: only probes whether the shared library can be opened.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc.so) not found".into());
    }
    cubin(part.source, &[format!("--gpu-architecture=sm_{sm}"), "--fmad=false".into()])
}

/// `source` compiled by NVRTC to CUBIN (`options` must name a real architecture, sm_XY).
fn cubin(source: &str, options: &[String]) -> Result<Vec<u8>, String> {
    let key = super::kernel_cache::key("cubin", source, options, None, &nvrtc_version());
    super::kernel_cache::load_or_compile(&key, || nvrtc_cubin(source, options))
}

fn nvrtc_cubin(source: &str, options: &[String]) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::{result, sys};
    let src = std::ffi::CString::new(source).map_err(|e| e.to_string())?;
    let prog = result::create_program(&src, None).map_err(|e| e.to_string())?;
    // SAFETY: `prog` was created just above and is destroyed once, at the end; the buffers
    // passed to NVRTC have the sizes it reported.
    unsafe {
        let out = match result::compile_program(prog, options) {
            Ok(()) => {
                let mut size = 0usize;
                sys::nvrtcGetCUBINSize(prog, &mut size).result().map_err(|e| e.to_string()).and_then(|()| {
                    let mut bin = vec![0u8; size];
                    sys::nvrtcGetCUBIN(prog, bin.as_mut_ptr().cast()).result().map_err(|e| e.to_string())?;
                    Ok(bin)
                })
            }
            Err(e) => {
                let log = result::get_program_log(prog).unwrap_or_default();
                let log: Vec<u8> = log.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                Err(format!("{e}: {}", String::from_utf8_lossy(&log)))
            }
        };
        let _ = result::destroy_program(prog);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::SYNTHETIC;

    /// The solver takes each synthetic kernel from the module of the part that lists it
    /// (`synthetic::cuda::Kernels::load`): a kernel moved between files without its name
    /// would be missing at run time, on a GPU only.
    #[test]
    fn each_synthetic_kernel_is_listed_with_the_part_that_defines_it() {
        const ENTRY: &str = "extern \"C\" __global__ void ";
        for part in &SYNTHETIC {
            let mut defined: Vec<&str> = part
                .source
                .match_indices(ENTRY)
                .map(|(at, _)| {
                    let rest = &part.source[at + ENTRY.len()..];
                    rest[..rest.find('(').expect("a kernel's parameter list")].trim()
                })
                .collect();
            let mut listed = part.kernels.to_vec();
            defined.sort_unstable();
            listed.sort_unstable();
            assert_eq!(defined, listed, "{}", part.file);
        }
    }
}
