//! `knudsen info`: the CPU, the GPU adapters and CUDA devices found, and what `auto` picks.

use super::failure::Failure;
use knudsen::backend;

pub fn info() -> Result<(), Failure> {
    let list = backend::wgpu::device::adapters();
    println!("knudsen {} ({})", env!("CARGO_PKG_VERSION"), env!("KNUDSEN_COMMIT"));
    println!("cpu: {}", backend::cpu::cpu_name());
    if list.is_empty() {
        println!("wgpu: no adapter found");
    }
    for a in &list {
        print!("wgpu: {}", backend::wgpu::device::describe(a));
    }
    let cuda = backend::cuda_available();
    #[cfg(feature = "cuda-driver")]
    match backend::cuda::describe_devices() {
        Ok(devs) => devs.iter().for_each(|d| println!("cuda: {d}")),
        Err(why) => println!("cuda: {why}"),
    }
    #[cfg(not(feature = "cuda-driver"))]
    println!("cuda: {}", cuda.as_ref().unwrap_err());
    if cuda.is_ok() {
        println!("--backend auto picks: cuda on device 0");
        return Ok(());
    }
    match backend::wgpu::device::pick(list, false) {
        Ok(a) => println!("--backend auto picks: wgpu on {}", a.get_info().name),
        Err(why) => println!("--backend auto picks: cpu ({why})"),
    }
    Ok(())
}
