#!/usr/bin/env python3
"""Centre-line profiles of the paper cavity (docs/validation.md, "Centre-line profiles of the
paper cavity"): the runs' `knudsen line` files compared with the second-order 128^3 run.

    python3 docs/validation/cavity_profiles.py docs/data/cavity-profiles-h100

Each run's folder (knKN-CELLS-SCHEME) holds velocity-vertical.csv (U along y through
x = z = 0.5), velocity-horizontal.csv (along x through y = z = 0.5) and the same for the
temperature. A 64^3 cell centre lies midway between two 128^3 centres, so the 128^3 profile
is taken there as their mean (linear interpolation, exact at that point).
"""
import csv
import json
import os
import sys

LID = 0.1  # the lid speed of configs/cavity-kn1.json, in v0
POINTS = [0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875]  # faces of both grids


def read(path):
    with open(path) as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    return [[float(v) for v in r] for r in rows[1:]]


def at_faces(rows, col, points):
    """The profile at points that are faces between two centres: the mean of the two."""
    out = []
    for p in points:
        below = max((r for r in rows if r[0] < p), key=lambda r: r[0])
        above = min((r for r in rows if r[0] > p), key=lambda r: r[0])
        out.append(0.5 * (below[col] + above[col]))
    return out


def on_coarse(fine, col):
    """The fine (2n) profile at the coarse (n) centres: the mean of each pair."""
    return [0.5 * (fine[2 * i][col] + fine[2 * i + 1][col]) for i in range(len(fine) // 2)]


def main():
    root = sys.argv[1]
    runs = sorted(os.listdir(root))
    lines = {"vertical": ("U_x / U on the vertical centre line", "velocity", 1, LID),
             "horizontal": ("U_y / U on the horizontal centre line", "velocity", 2, LID)}
    temps = {"vertical": ("T - 1 on the vertical centre line", "temperature", 1, 1.0),
             "horizontal": ("T - 1 on the horizontal centre line", "temperature", 1, 1.0)}
    for kn in ["1", "0.1"]:
        ref_tag = f"kn{kn}-128-second_order"
        print(f"\n## Kn {kn}: largest difference from {ref_tag} along the line")
        print("| run | sweeps | U_x / U, vertical | U_y / U, horizontal | T, vertical | T, horizontal |")
        print("|---|---|---|---|---|---|")
        for tag in [r for r in runs if r.startswith(f"kn{kn}-") and r != ref_tag]:
            s = json.load(open(os.path.join(root, tag, "summary.json")))
            cells = s["cells"][0]
            diffs = []
            for table in (lines, temps):
                for side, (_, field, col, scale) in table.items():
                    ref = read(os.path.join(root, ref_tag, f"{field}-{side}.csv"))
                    run = read(os.path.join(root, tag, f"{field}-{side}.csv"))
                    ref_vals = on_coarse(ref, col) if cells * 2 == len(ref) else [r[col] for r in ref]
                    d = max(abs(a[col] - b) for a, b in zip(run, ref_vals)) / scale
                    diffs.append(d)
            print(f"| {tag} | {s['iterations']} | " + " | ".join(f"{d:.2e}" for d in diffs) + " |")
        print(f"\n## Kn {kn}: {ref_tag} at the points " + ", ".join(str(p) for p in POINTS))
        print("| quantity | " + " | ".join(str(p) for p in POINTS) + " |")
        print("|---|" + "---|" * len(POINTS))
        for table, scale_name in ((lines, "U"), (temps, "T")):
            for side, (title, field, col, scale) in table.items():
                rows = read(os.path.join(root, ref_tag, f"{field}-{side}.csv"))
                vals = at_faces(rows, col, POINTS)
                vals = [v / scale - (1.0 if field == "temperature" else 0.0) for v in vals]
                print(f"| {title} | " + " | ".join(f"{v:+.5f}" for v in vals) + " |")


if __name__ == "__main__":
    main()
