//! `knudsen validate [FILES] [--fast]`: run the validation suites and write their results.

use super::failure::Failure;
use knudsen::backend::BackendChoice;
use knudsen::config::{Acceleration, Precision};
use knudsen::validate::{run_suite, Suite, SuiteResult};
use std::path::{Path, PathBuf};

pub fn validate(
    files: Vec<PathBuf>,
    fast: bool,
    backend: BackendChoice,
    given: (Acceleration, Option<Precision>),
    out: &Path,
) -> Result<(), Failure> {
    super::failure::one_process("validate")?;
    let files = if files.is_empty() { default_suites()? } else { files };
    // Every file is read and checked before anything runs.
    let suites: Vec<Suite> = files
        .iter()
        .map(|f| Suite::from_file(f))
        .collect::<anyhow::Result<_>>()
        .map_err(|e| Failure::BadInput(format!("{e:#}")))?;
    // Results are keyed by suite name (the report takes one per name): a name twice would
    // hide one of them.
    let mut names: Vec<&str> = suites.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Failure::BadInput(format!("suite `{}` is given twice (by file or by name)", w[0])));
    }
    let subset = if fast { "fast" } else { "full" };
    // The place of the results is checked before hours of runs, not after.
    if out.exists() && !out.is_dir() {
        return Err(Failure::BadInput(format!("--out {}: exists and is not a directory", out.display())));
    }
    let path = out.join(format!("results-{subset}.json"));
    if path.is_dir() {
        return Err(Failure::BadInput(format!("{} is a directory; move it or choose another --out", path.display())));
    }
    // A file written and removed in it, so that an unwritable folder is found now.
    super::out_dir::probe_output_dir(out).map_err(|e| Failure::BadInput(format!("--out: {e}")))?;
    let mut results = Vec::new();
    for s in &suites {
        println!("{} [{}]", s.title, s.name);
        let r = run_suite(s, subset, backend, given, &mut |line| println!("{line}"));
        print_verdict(&r);
        results.push(r);
    }
    let doc = serde_json::json!({
        "knudsen": env!("CARGO_PKG_VERSION"),
        "subset": subset,
        "suites": results,
    });
    knudsen::output::make_dir(out).map_err(Failure::Run)?;
    knudsen::output::write_atomic_bytes(&path, serde_json::to_string_pretty(&doc).unwrap().as_bytes())
        .map_err(Failure::Run)?;
    let failed: Vec<&str> = results.iter().filter(|r| !r.pass).map(|r| r.name.as_str()).collect();
    println!("results in {}", path.display());
    if failed.is_empty() {
        println!("all {} suites pass", results.len());
        Ok(())
    } else {
        Err(Failure::Run(anyhow::anyhow!("{} of {} suites failed: {}", failed.len(), results.len(), failed.join(", "))))
    }
}

/// Every `configs/validation/*.json`, sorted.
fn default_suites() -> Result<Vec<PathBuf>, Failure> {
    let dir = Path::new("configs/validation");
    let mut list: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| {
            Failure::BadInput(format!("{}: {e} (run from the repository root or name the files)", dir.display()))
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    if list.is_empty() {
        // No suite would be "all 0 suites pass".
        return Err(Failure::BadInput(format!("{}: holds no suite (*.json)", dir.display())));
    }
    list.sort();
    Ok(list)
}

fn print_verdict(r: &SuiteResult) {
    match (r.observed_order, r.richardson_relative) {
        (Some(p), Some(rel)) => println!(
            "  observed order {p:.3}, Richardson error of the finest {:.3e} ({:.3}%)",
            r.richardson_error.unwrap(),
            100.0 * rel
        ),
        (None, Some(rel)) => println!("  not monotone; last relative change {:.3}%", 100.0 * rel),
        _ => {}
    }
    println!("  {}", if r.pass { "PASS".to_string() } else { format!("FAIL: {}", r.failures.join("; ")) });
}
