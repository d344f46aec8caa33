//! Adapters: listing them (`knudsen info`), choosing one, opening a device.

use std::fmt::Write;

pub fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

pub fn adapters() -> Vec<wgpu::Adapter> {
    super::quiet::graphics_stack_quietly(|| pollster::block_on(instance().enumerate_adapters(wgpu::Backends::all())))
}

/// Software rasterisers (lavapipe, llvmpipe, WARP, SwiftShader) report type Cpu.
pub fn is_software(info: &wgpu::AdapterInfo) -> bool {
    info.device_type == wgpu::DeviceType::Cpu
}

/// The memory of a discrete GPU reached through Vulkan: its largest device-local heap, which
/// wgpu does not report itself. None elsewhere (other APIs, integrated GPUs whose
/// device-local heap is the host's memory, software adapters).
pub fn discrete_memory_bytes(adapter: &wgpu::Adapter) -> Option<u64> {
    if adapter.get_info().device_type != wgpu::DeviceType::DiscreteGpu {
        return None;
    }
    vulkan_device_local_bytes(adapter)
}

#[cfg(any(target_os = "linux", target_os = "windows"))]
fn vulkan_device_local_bytes(adapter: &wgpu::Adapter) -> Option<u64> {
    // SAFETY: the hal adapter is only used while `adapter` lives, and the physical device
    // belongs to the instance it is queried through.
    let hal = unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() }?;
    let props = unsafe {
        hal.shared_instance().raw_instance().get_physical_device_memory_properties(hal.raw_physical_device())
    };
    props
        .memory_heaps_as_slice()
        .iter()
        .filter(|h| h.flags.contains(ash::vk::MemoryHeapFlags::DEVICE_LOCAL))
        .map(|h| h.size)
        .max()
}

#[cfg(not(any(target_os = "linux", target_os = "windows")))]
fn vulkan_device_local_bytes(_: &wgpu::Adapter) -> Option<u64> {
    None
}

fn rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// Choose an adapter. `WGPU_ADAPTER_NAME` (a case-insensitive substring of the name) picks
/// one by name, software or not. Otherwise the best hardware adapter, discrete before
/// integrated; a software adapter only when `allow_software`. Among equals, Vulkan, Metal
/// and DX12 come before GL, which lacks subgroups and f64.
pub fn pick(mut list: Vec<wgpu::Adapter>, allow_software: bool) -> Result<wgpu::Adapter, String> {
    if let Ok(want) = std::env::var("WGPU_ADAPTER_NAME") {
        let w = want.to_lowercase();
        return list
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&w))
            .ok_or_else(|| format!("no adapter matches WGPU_ADAPTER_NAME={want}"));
    }
    list.retain(|a| allow_software || !is_software(&a.get_info()));
    let key = |a: &wgpu::Adapter| {
        let i = a.get_info();
        (rank(i.device_type), u8::from(i.backend == wgpu::Backend::Gl))
    };
    list.sort_by_key(key);
    // Processes on one machine (MPI ranks) spread over the equally good adapters.
    let best = list.first().map(key);
    let equals = list.iter().take_while(|a| Some(key(a)) == best).count().max(1);
    let slot = crate::backend::device_slot() % equals;
    list.into_iter().nth(slot).ok_or_else(|| {
        if allow_software {
            "no wgpu adapter found (install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers)".to_string()
        } else {
            "no hardware GPU adapter found".to_string()
        }
    })
}

/// Open a device with the adapter's own limits (wgpu's defaults are far smaller), subgroups
/// where offered and asked, and f64 where offered (the cell records' f64 stage).
/// `limits` overrides the limits (tests use WebGPU's minimum).
pub fn open(
    adapter: &wgpu::Adapter,
    limits: Option<wgpu::Limits>,
    subgroups: bool,
) -> Result<(wgpu::Device, wgpu::Queue), String> {
    let mut features = wgpu::Features::empty();
    if subgroups && adapter.features().contains(wgpu::Features::SUBGROUP) {
        features |= wgpu::Features::SUBGROUP;
    }
    features |= adapter.features() & wgpu::Features::SHADER_F64;
    let desc = wgpu::DeviceDescriptor {
        label: Some("knudsen"),
        required_features: features,
        required_limits: limits.unwrap_or_else(|| adapter.limits()),
        ..Default::default()
    };
    pollster::block_on(adapter.request_device(&desc))
        .map_err(|e| format!("cannot open {}: {e}", adapter.get_info().name))
}

/// A device kept for the next backend built on this thread ([`keep_devices`]).
struct Kept {
    key: String,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// What later layers compiled for this device and keep with it, one value per type
    /// ([`keep_with_device`]).
    extras: Vec<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

/// Called with each device opened to be kept ([`on_keeping_open`]).
type OnOpen = std::rc::Rc<dyn Fn(&wgpu::Device)>;

thread_local! {
    static KEEPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static KEPT: std::cell::RefCell<Option<Kept>> = const { std::cell::RefCell::new(None) };
    static ON_OPEN: std::cell::RefCell<Option<OnOpen>> = const { std::cell::RefCell::new(None) };
}

/// Call `f` with each device this thread opens while devices are kept, once it is the kept
/// one, before the backend that opened it builds anything on it (`knudsen run` starts the
/// synthetic solve's kernels compiling there, beside the coarse level's set-up); None
/// stops. Layers above the backend hand it in, so the backend knows nothing of them.
pub fn on_keeping_open(f: Option<OnOpen>) {
    ON_OPEN.with(|o| *o.borrow_mut() = f);
}

/// While on, the adapter and device that a backend opens on this thread are kept, and the
/// next backend built on this thread with the same adapter, limits and features takes them
/// instead of enumerating adapters and opening a device again (the coarse start's level and
/// then the case's own backend: 0.13-0.15 s on an H100, `docs/performance.md`, "The coarse
/// start"). Off drops what is kept. Thread-local, so that backends built on other threads
/// (tests run side by side) never share a device, whose fault callbacks each backend sets.
pub fn keep_devices(on: bool) {
    KEEPING.with(|k| k.set(on));
    if !on {
        on_keeping_open(None);
        // Dropped outside the borrow: a kept value's drop may wait (`super::prewarm`).
        let kept = KEPT.with(|k| k.borrow_mut().take());
        drop(kept);
    }
}

/// Whether devices are kept on this thread ([`keep_devices`]) and `device` is the kept one.
pub fn is_kept(device: &wgpu::Device) -> bool {
    KEEPING.with(|k| k.get()) && KEPT.with(|k| k.borrow().as_ref().is_some_and(|d| &d.device == device))
}

/// The kept adapter, while devices are kept and one is.
pub fn kept_adapter() -> Option<wgpu::Adapter> {
    KEEPING.with(|k| k.get()).then(|| KEPT.with(|k| k.borrow().as_ref().map(|d| d.adapter.clone()))).flatten()
}

/// What [`keep_with_device`] kept with `device`, if devices are kept, `device` is the kept
/// one and the kept value is a `T`.
///
/// `Device`'s equality compares wgpu's device id, which two devices of different
/// `Instance`s (each [`adapters`] call makes one) can share. It identifies the device here
/// because every backend built on this thread while devices are kept opens its device
/// through [`open_or_kept`], which makes that device the kept one: a device of this
/// thread's backends either is the kept one or was opened before keeping began (`knudsen run`
/// turns keeping on before it builds any backend).
pub fn kept_with_device<T: std::any::Any + Send + Sync>(device: &wgpu::Device) -> Option<std::sync::Arc<T>> {
    if !KEEPING.with(|k| k.get()) {
        return None;
    }
    KEPT.with(|k| {
        let kept = k.borrow();
        let extras = kept.as_ref().filter(|d| &d.device == device).map(|d| d.extras.clone()).unwrap_or_default();
        extras.into_iter().find_map(|x| x.downcast::<T>().ok())
    })
}

/// Keep `x` with the kept device, if devices are kept and `device` is the kept one, in
/// place of a value of the same type kept before (the synthetic solve's pipelines, which
/// depend on the device alone: the coarse start's level and the case after it share them;
/// the case's fused sweep compiled while the level runs, `super::prewarm`). Thread-local
/// like the device: both are this thread's.
pub fn keep_with_device<T: std::any::Any + Send + Sync>(device: &wgpu::Device, x: std::sync::Arc<T>) {
    if KEEPING.with(|k| k.get()) {
        KEPT.with(|k| {
            if let Some(d) = k.borrow_mut().as_mut().filter(|d| &d.device == device) {
                d.extras.retain(|e| !(**e).is::<T>());
                d.extras.push(x);
            }
        });
    }
}

/// [`open`], or the kept device where it matches (after waiting for the GPU to finish with,
/// and free, what the backend before it dropped).
pub fn open_or_kept(
    adapter: &wgpu::Adapter,
    limits: wgpu::Limits,
    subgroups: bool,
) -> Result<(wgpu::Device, wgpu::Queue), String> {
    let info = adapter.get_info();
    let key = format!("{}|{:?}|{:?}|{limits:?}|{subgroups}", info.name, info.backend, info.device);
    if !KEEPING.with(|k| k.get()) {
        return open(adapter, Some(limits), subgroups);
    }
    let kept = KEPT.with(|k| k.borrow().as_ref().filter(|d| d.key == key).map(|d| (d.device.clone(), d.queue.clone())));
    if let Some((device, queue)) = kept {
        super::faults::wait(&device, None).map_err(|e| format!("the kept device: {e}"))?;
        return Ok((device, queue));
    }
    let (device, queue) = open(adapter, Some(limits), subgroups)?;
    let keep = Kept { key, adapter: adapter.clone(), device: device.clone(), queue: queue.clone(), extras: Vec::new() };
    KEPT.with(|k| *k.borrow_mut() = Some(keep));
    if let Some(f) = ON_OPEN.with(|o| o.borrow().clone()) {
        f(&device);
    }
    Ok((device, queue))
}

/// One adapter, as `knudsen info` prints it.
pub fn describe(a: &wgpu::Adapter) -> String {
    let i = a.get_info();
    let l = a.limits();
    let f = a.features();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} ({:?}, {:?}{})",
        i.name,
        i.backend,
        i.device_type,
        if is_software(&i) { ", software" } else { "" }
    );
    let _ =
        writeln!(s, "  driver: {} {}; vendor 0x{:04x} device 0x{:04x}", i.driver, i.driver_info, i.vendor, i.device);
    let _ = writeln!(
        s,
        "  limits: storage binding {} MiB, buffer {} MiB, workgroups/dim {}, invocations/workgroup {}, workgroup memory {} KiB, storage buffers/stage {}",
        l.max_storage_buffer_binding_size >> 20,
        l.max_buffer_size >> 20,
        l.max_compute_workgroups_per_dimension,
        l.max_compute_invocations_per_workgroup,
        l.max_compute_workgroup_storage_size >> 10,
        l.max_storage_buffers_per_shader_stage
    );
    let flag = |x: wgpu::Features| if f.contains(x) { "yes" } else { "no" };
    let _ = writeln!(
        s,
        "  features: subgroups {}, f64 {}, timestamps {}, f16 {}",
        flag(wgpu::Features::SUBGROUP),
        flag(wgpu::Features::SHADER_F64),
        flag(wgpu::Features::TIMESTAMP_QUERY),
        flag(wgpu::Features::SHADER_F16)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_discrete_gpus_report_memory_for_the_budget() {
        // lavapipe in CI (a Cpu-type adapter): no memory, so the 2048 MiB default; a machine
        // with a discrete Vulkan GPU reports its device-local heap.
        let Ok(adapter) = pick(adapters(), true) else {
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true but no wgpu adapter");
            return;
        };
        let info = adapter.get_info();
        let memory = discrete_memory_bytes(&adapter);
        let budget = super::super::default_budget_bytes(&adapter);
        if info.device_type == wgpu::DeviceType::DiscreteGpu && info.backend == wgpu::Backend::Vulkan {
            let m = memory.expect("a discrete Vulkan GPU reports a device-local heap");
            assert_eq!(budget, (m / 2).max(2048 << 20));
        } else {
            assert_eq!((memory, budget), (None, 2048 << 20), "{info:?}");
        }
    }

    #[test]
    fn a_value_kept_with_the_device_is_found_with_that_device_only_while_devices_are_kept() {
        let Ok(adapter) = pick(adapters(), true) else {
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true but no wgpu adapter");
            return;
        };
        let (other, _) = open(&adapter, None, false).unwrap();
        keep_devices(true);
        let (device, _) = open_or_kept(&adapter, adapter.limits(), false).unwrap();
        keep_with_device(&device, std::sync::Arc::new(7u32));
        assert_eq!(kept_with_device::<u32>(&device).as_deref(), Some(&7));
        assert!(kept_with_device::<u64>(&device).is_none(), "another type");
        keep_with_device(&other, std::sync::Arc::new(8u32));
        assert_eq!(kept_with_device::<u32>(&device).as_deref(), Some(&7), "a device not kept keeps nothing");
        // Thread-local: another thread sees nothing.
        let d = device.clone();
        assert!(std::thread::spawn(move || kept_with_device::<u32>(&d).is_none()).join().unwrap());
        keep_devices(false);
        assert!(kept_with_device::<u32>(&device).is_none(), "devices no longer kept");
    }
}
