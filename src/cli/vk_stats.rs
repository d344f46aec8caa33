//! `knudsen vk-stats` (hidden): what the Vulkan driver made of the fused sweep's WGSL, the
//! counterpart of `ptxas -v` for the CUDA kernels. The wgpu backend cannot see it: wgpu
//! creates its pipelines without VK_KHR_pipeline_executable_properties. This opens a device
//! of its own through wgpu-hal with that extension, builds `sweep_fused` as the wgpu backend
//! would (the same WGSL, tile, unrolling and override constants, translated by naga with the
//! options wgpu-hal uses for the backend's trusted modules on a Vulkan 1.3 device) and
//! prints each executable's
//! statistics: on NVIDIA, registers per thread, spills, shared memory, instruction counts.

use super::failure::Failure;
use knudsen::backend::wgpu::fused;
use knudsen::problem::Problem;
use std::ffi::CStr;

/// Statistics of `sweep_fused` (under second order `sweep_fused2`) for each tile
/// (`TXxTY,...`; tiles whose workgroup memory the device does not give are skipped) on
/// `row`'s case (a `knudsen bench` row); with `ir`, the driver's internal representations of
/// each executable (where it gives any) written there as `KERNEL-TXxTY-EXECUTABLE-N-NAME.txt`.
pub fn vk_stats(
    row: &str,
    tiles: Option<&str>,
    scheme: knudsen::config::Scheme,
    ir: Option<&std::path::Path>,
) -> Result<(), Failure> {
    let second = scheme.slices() > 1;
    let kernel = fused::kernel_names(second)[0];
    let tiles = tiles
        .unwrap_or(if second { "4x2,2x4,2x2,4x4" } else { "4x4,8x4,4x8,8x8" })
        .split(',')
        .map(|t| match t.split_once('x').map(|(a, b)| (a.trim().parse(), b.trim().parse())) {
            Some((Ok(a), Ok(b))) if knudsen::backend::fused::tile_fits([a, b], second) => Ok([a, b]),
            _ => Err(Failure::BadInput(format!(
                "tile `{t}`: expected TXxTY whose product divides 128{}",
                if second { "" } else { " (at least 16)" }
            ))),
        })
        .collect::<Result<Vec<[usize; 2]>, _>>()?;
    let cfg = row
        .parse::<knudsen::bench::Row>()
        .map_err(Failure::BadInput)?
        .config(scheme, Default::default(), None, 1)
        .map_err(Failure::Run)?;
    let p = Problem::new(&cfg);
    let device = Device::open().map_err(Failure::Run)?;
    println!("{}: {row}", device.name);
    for &tile in &tiles {
        let (need, have) = (fused::workgroup_bytes(tile, second), device.max_workgroup_bytes);
        if need > have {
            println!(
                "{kernel}, tile {}x{}: {need} B of workgroup memory, over the device's {have}; skipped",
                tile[0], tile[1]
            );
            continue;
        }
        let words = spirv(&p, tile, kernel).map_err(Failure::Run)?;
        // SAFETY: the device outlives the call; the SPIR-V was validated by naga.
        let stats = unsafe { device.statistics(&words, kernel, ir.is_some()) }.map_err(Failure::Run)?;
        for (x, (exe, lines, reps)) in stats.into_iter().enumerate() {
            println!("{kernel}, tile {}x{} ({exe}):", tile[0], tile[1]);
            for l in lines {
                println!("  {l}");
            }
            let Some(dir) = ir else { continue };
            let reps = match reps {
                Ok(r) => r,
                Err(e) => {
                    println!("  internal representations: none ({e:#})");
                    continue;
                }
            };
            println!("  internal representations: {}", reps.len());
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::Run(anyhow::anyhow!("creating {}: {e}", dir.display())))?;
            for (n, (name, text)) in reps.iter().enumerate() {
                let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
                let path = dir.join(format!("{kernel}-{}x{}-{x}-{n}-{safe}.txt", tile[0], tile[1]));
                std::fs::write(&path, text)
                    .map_err(|e| Failure::Run(anyhow::anyhow!("writing {}: {e}", path.display())))?;
                println!("  {name}: {} bytes -> {}", text.len(), path.display());
            }
        }
    }
    Ok(())
}

/// `sweep_fused`'s SPIR-V with `tile` and `p`'s override constants (those of
/// `wgpu::fused::FusedGpu::new`; no partner faces, the stride one wave of every velocity),
/// written with the options wgpu-hal 30 derives for it (`vulkan/device.rs`): no bounds
/// checks, loop bounding, integer-division guards or workgroup zeroing (`kernels::kernel_with`
/// creates the module unchecked and asks for no zeroing), SPIR-V 1.6 for a Vulkan 1.3 device.
fn spirv(p: &Problem, tile: [usize; 2], kernel: &str) -> anyhow::Result<Vec<u32>> {
    use naga::back::spv;
    let src = fused::source(kernel, tile, p.grid.dims());
    let module = naga::front::wgsl::parse_str(&src).map_err(|e| anyhow::anyhow!("{}", e.emit_to_string(&src)))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)?;
    let [nx, ny, nz] = p.grid.dims().map(|n| n as f64);
    let mut constants = naga::back::PipelineConstants::default();
    for (k, v) in [
        ("NX", nx),
        ("NY", ny),
        ("NZ", nz),
        ("FCH", p.vgrid.len() as f64),
        ("SROW", knudsen::backend::gpu_tables::shape_rows(p) as f64),
        ("HAS_WALLS", f64::from(u8::from(p.bodies.solids.any()))),
        ("M", p.vgrid.m as f64),
    ] {
        constants.insert(k.to_string(), v);
    }
    let entry = (naga::ShaderStage::Compute, kernel);
    let (module, info) = naga::back::pipeline_constants::process_overrides(&module, &info, Some(entry), &constants)?;
    let options = spv::Options {
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Unchecked,
            buffer: naga::proc::BoundsCheckPolicy::Unchecked,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        force_loop_bounding: false,
        emit_int_div_checks: false,
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        lang_version: (1, 6),
        ..Default::default()
    };
    let pipeline = spv::PipelineOptions { shader_stage: entry.0, entry_point: entry.1.to_string() };
    Ok(spv::write_vec(&module, &info, &options, Some(&pipeline))?)
}

/// A Vulkan device with VK_KHR_pipeline_executable_properties, opened through wgpu-hal.
struct Device {
    name: String,
    /// maxComputeSharedMemorySize.
    max_workgroup_bytes: u32,
    open: wgpu::hal::OpenDevice<wgpu::hal::api::Vulkan>,
    instance: ash::Instance,
    // Keeps the adapter (and its instance) alive as long as the device.
    _adapter: wgpu::Adapter,
}

impl Device {
    fn open() -> anyhow::Result<Self> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| anyhow::anyhow!("no Vulkan adapter: {e}"))?;
        let name = adapter.get_info().name;
        // SAFETY: the hal adapter is only used while `adapter` lives.
        let hal = unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() }
            .ok_or_else(|| anyhow::anyhow!("{name} is not a Vulkan adapter"))?;
        let ext: &'static CStr = ash::khr::pipeline_executable_properties::NAME;
        let instance = hal.shared_instance().raw_instance().clone();
        // SAFETY: the physical device belongs to this instance.
        let offered = unsafe { instance.enumerate_device_extension_properties(hal.raw_physical_device()) }?;
        if !offered.iter().any(|e| e.extension_name_as_c_str() == Ok(ext)) {
            anyhow::bail!("the Vulkan driver of {name} does not offer {}", ext.to_string_lossy());
        }
        // The feature struct must outlive device creation: leaked (one per process).
        let feature: &'static mut ash::vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR<'static> =
            Box::leak(Box::new(
                ash::vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
                    .pipeline_executable_info(true),
            ));
        let feature: *mut ash::vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR<'static> = feature;
        let callback = Box::new(move |args: wgpu::hal::vulkan::CreateDeviceCallbackArgs<'_, '_, '_>| {
            args.extensions.push(ext);
            // Prepended to the create info's chain by hand: the leaked struct lives as long
            // as the process, whatever lifetime the chain's builder would ask of it.
            // SAFETY: `feature` points to the leaked struct, used by nothing else.
            unsafe {
                (*feature).p_next = args.create_info.p_next as *mut std::ffi::c_void;
            }
            args.create_info.p_next = feature as *const std::ffi::c_void;
        });
        // SAFETY: the callback only adds an extension and a feature the driver is asked for.
        let open = unsafe {
            hal.open_with_callback(
                wgpu::Features::empty(),
                &wgpu::Limits::default(),
                &wgpu::MemoryHints::Performance,
                Some(callback),
            )
        }
        .map_err(|e| anyhow::anyhow!("opening {name} with {ext:?}: {e}"))?;
        drop(hal);
        let max_workgroup_bytes = adapter.limits().max_compute_workgroup_storage_size;
        Ok(Self { name, max_workgroup_bytes, open, instance, _adapter: adapter })
    }

    /// Build a compute pipeline from `words` (bindings as sweep_fused's: a uniform at 0,
    /// storage buffers at 1-7) with statistics captured, and internal representations too
    /// where `ir` asks (the flag may change how a driver builds it); per executable, its
    /// statistics and its internal representations (name, text), or why there are none.
    #[allow(clippy::type_complexity)]
    unsafe fn statistics(
        &self,
        words: &[u32],
        entry: &str,
        ir: bool,
    ) -> anyhow::Result<Vec<(String, Vec<String>, anyhow::Result<Vec<(String, String)>>)>> {
        use ash::vk;
        let dev = self.open.device.raw_device();
        // Every object made here, destroyed on every way out: none may outlive the device.
        struct Made<'d> {
            dev: &'d ash::Device,
            module: vk::ShaderModule,
            set: vk::DescriptorSetLayout,
            layout: vk::PipelineLayout,
            pipeline: vk::Pipeline,
        }
        impl Drop for Made<'_> {
            fn drop(&mut self) {
                // SAFETY: each handle is null or was made on `dev`, and nothing uses it now.
                unsafe {
                    self.dev.destroy_pipeline(self.pipeline, None);
                    self.dev.destroy_pipeline_layout(self.layout, None);
                    self.dev.destroy_descriptor_set_layout(self.set, None);
                    self.dev.destroy_shader_module(self.module, None);
                }
            }
        }
        let mut made = Made {
            dev,
            module: vk::ShaderModule::null(),
            set: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
        };
        made.module = dev.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(words), None)?;
        let bindings: Vec<_> = (0..8u32)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(if b == 0 {
                        vk::DescriptorType::UNIFORM_BUFFER
                    } else {
                        vk::DescriptorType::STORAGE_BUFFER
                    })
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        made.set =
            dev.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None)?;
        let sets = [made.set];
        made.layout = dev.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None)?;
        let name = std::ffi::CString::new(entry)?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(made.module)
            .name(&name);
        let info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(made.layout).flags(if ir {
            vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
                | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR
        } else {
            vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
        });
        made.pipeline = dev
            .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
            .map_err(|(_, e)| anyhow::anyhow!("creating the pipeline: {e}"))?[0];
        let pipeline = made.pipeline;
        let ext = ash::khr::pipeline_executable_properties::Device::new(&self.instance, dev);
        let mut out = Vec::new();
        let exes = ext.get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline))?;
        for (i, e) in exes.iter().enumerate() {
            let label = e.name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let stats = ext.get_pipeline_executable_statistics(
                &vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(i as u32),
            )?;
            let lines = stats
                .iter()
                .map(|s| {
                    let n = s.name_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
                    let v = match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => format!("{}", s.value.b32 != 0),
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => format!("{}", s.value.i64),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => format!("{}", s.value.u64),
                        _ => format!("{}", s.value.f64),
                    };
                    format!("{n}: {v}")
                })
                .collect();
            let info = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(i as u32);
            let reps = if ir { internal_representations(&ext, &info) } else { Ok(Vec::new()) };
            out.push((label, lines, reps));
        }
        Ok(out)
    }
}

/// The driver's internal representations of one executable (name, text; binary ones as a
/// note of their size). ash's wrapper asks only for their sizes; the data takes a second
/// call with buffers of those sizes.
unsafe fn internal_representations(
    ext: &ash::khr::pipeline_executable_properties::Device,
    info: &ash::vk::PipelineExecutableInfoKHR<'_>,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut reps = ext.get_pipeline_executable_internal_representations(info)?;
    let mut bufs: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
    for (r, b) in reps.iter_mut().zip(&mut bufs) {
        r.p_data = b.as_mut_ptr().cast();
    }
    let mut count = reps.len() as u32;
    // SAFETY: `reps` holds `count` structures, each pointing to a buffer of its data_size.
    (ext.fp().get_pipeline_executable_internal_representations_khr)(ext.device(), info, &mut count, reps.as_mut_ptr())
        .result()?;
    Ok(reps
        .iter()
        .zip(&bufs)
        .take(count as usize)
        .map(|(r, b)| {
            let name = r.name_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
            let data = &b[..r.data_size.min(b.len())];
            let text = if r.is_text != 0 {
                String::from_utf8_lossy(data.split(|&c| c == 0).next().unwrap_or(data)).into_owned()
            } else {
                format!("(binary, {} bytes)", data.len())
            };
            (name, text)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fused_sweep_translates_to_spirv_for_every_tile_it_is_asked_for() {
        use knudsen::config::Scheme;
        for scheme in [Scheme::FirstOrder, Scheme::SecondOrder] {
            let cfg = "16x16".parse::<knudsen::bench::Row>().unwrap().config(scheme, Default::default(), None, 1);
            let p = Problem::new(&cfg.unwrap());
            let kernel = fused::kernel_names(scheme.slices() > 1)[0];
            let tiles: &[[usize; 2]] = if scheme.slices() > 1 {
                &[[4, 2], [2, 4], [2, 2], [4, 4]]
            } else {
                &[[4, 4], [8, 4], [4, 8], [8, 8], [2, 8]]
            };
            for &tile in tiles {
                let words = spirv(&p, tile, kernel).unwrap();
                assert_eq!(words[0], 0x0723_0203, "{kernel} {tile:?}: SPIR-V starts with its magic number");
                assert!(words.len() > 1000, "{kernel} {tile:?}: {} words", words.len());
            }
        }
        assert!(
            vk_stats("16x16", Some("3x3"), Default::default(), None).is_err(),
            "a tile that does not divide the block is refused"
        );
    }
}
