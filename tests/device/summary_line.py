#!/usr/bin/env python3
"""One line from a run's summary.json, for the device scripts (run_ab.sh, gsis_vs_none.sh):

    python3 tests/device/summary_line.py OUT/summary.json "LABEL"

prints `LABEL: N iterations, converged B, residual R, S s, C_D [...]`, or that the summary is
missing (a run that failed or timed out writes none)."""
import json
import sys

path, label = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        d = json.load(f)
except OSError as e:
    print(f"{label}: no summary ({e})")
    sys.exit()
cd = [b.get("drag_coefficient") for b in d.get("bodies", [])]
print(f"{label}: {d['iterations']} iterations, converged {d['converged']}, "
      f"residual {d['final_residual']:.2e}, {d['total_seconds']:.3f} s, C_D {cd}")
