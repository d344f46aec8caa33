//! Whether two cases describe the same solution: what a restart must agree on.
//!
//! The stopping rule (the stall rule too), the memory budget, the checkpoint interval, the output directory and
//! the case's name do not change the iterates, and the acceleration, the partner data's
//! relaxation and the coarse start change them but not the fixed point, so a run may be
//! continued with other values of them; every other key changes the solution.

use super::Config;
use serde_json::Value;

/// Keys a continued run may change (dotted, as in error messages).
const FREE_KEYS: [&str; 11] = [
    "name",
    "output",
    "solver.tolerance",
    "solver.max_iterations",
    "solver.memory_budget_mib",
    "solver.checkpoint_minutes",
    "solver.stall_sweeps",
    // Acceleration and the partner data's relaxation change the path to the fixed point,
    // not the fixed point.
    "solver.acceleration",
    "solver.partner_relaxation",
    // The coarse start changes only a run's first state, and a continued run makes none.
    "solver.coarse_grids",
    // The arithmetic changes the round-off, not the fixed point: a run stalled at the f32
    // floor continues in f64 (docs/configs.md, "The f32 floor").
    "solver.precision",
];

impl Config {
    /// The case as JSON without the keys a continued run may change.
    fn state_json(&self) -> Value {
        let mut v = serde_json::to_value(self).expect("a config serialises");
        for key in FREE_KEYS {
            remove(&mut v, key);
        }
        v
    }

    /// A hash of the keys that shape the solution (FNV-1a, 64 bits, of their JSON), stored
    /// with checkpoints and results so a restart can tell whether the case changed.
    pub fn state_hash(&self) -> String {
        format!("{:016x}", fnv1a(&self.state_json().to_string()))
    }

    /// The dotted keys whose values differ between `self` and a stored case (the JSON of a
    /// `Config`), leaving out the keys a continued run may change. Empty when the solution
    /// is the same.
    pub fn state_changes(&self, stored: &Value) -> Vec<String> {
        let mut stored = stored.clone();
        for key in FREE_KEYS {
            remove(&mut stored, key);
        }
        let mut out = Vec::new();
        diff("", &stored, &self.state_json(), &mut out);
        out
    }
}

/// 64-bit FNV-1a of `text`: a fingerprint stable across builds and platforms (std's hasher
/// promises neither), for comparing cases between runs and processes.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

fn remove(v: &mut Value, dotted: &str) {
    let mut parts = dotted.split('.').peekable();
    let mut at = v;
    while let Some(p) = parts.next() {
        let Some(obj) = at.as_object_mut() else { return };
        if parts.peek().is_none() {
            obj.remove(p);
            return;
        }
        let Some(next) = obj.get_mut(p) else { return };
        at = next;
    }
}

fn diff(prefix: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => diff(&key, p, q, out),
                    _ => out.push(key),
                }
            }
        }
        _ if a != b => out.push(if prefix.is_empty() { "(the whole case)".into() } else { prefix.into() }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> Config {
        super::super::walled_box([2, 2, 2], 10)
    }

    #[test]
    fn stopping_rule_output_and_the_path_do_not_change_the_state() {
        let a = case();
        let mut b = a.clone();
        b.solver.tolerance = 1e-3;
        b.solver.max_iterations = 7;
        b.output.dir = Some("elsewhere".into());
        b.name = Some("renamed".into());
        b.solver.acceleration = crate::config::Acceleration::Gsis;
        b.solver.partner_relaxation = Some(0.5);
        b.solver.coarse_grids = 0;
        b.solver.stall_sweeps = 0;
        b.solver.precision = Some(crate::config::Precision::F64);
        assert_eq!(a.state_hash(), b.state_hash());
        assert!(a.state_changes(&serde_json::to_value(&b).unwrap()).is_empty());
    }

    #[test]
    fn physics_keys_are_named() {
        let a = case();
        let mut b = a.clone();
        b.gas.kn = Some(0.5);
        b.velocity.points = 12;
        assert_ne!(a.state_hash(), b.state_hash());
        let changed = a.state_changes(&serde_json::to_value(&b).unwrap());
        assert_eq!(changed, vec!["gas.kn".to_string(), "velocity.points".to_string()]);
    }
}
