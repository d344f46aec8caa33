#!/usr/bin/env python3
"""Convergence with specular and periodic side faces (docs/model.md, "Boundary conditions of
the correction" and "Specular and periodic faces with the second-order sweep").

    python3 docs/validation/partner_faces.py [knudsen binary] > docs/data/partner-faces-cpu.txt

Builds small cases (8^3 cells, 10^3 velocities, CPU, f64) in a temporary directory, runs
each with GSIS and with source iteration, and prints the sweeps each took and, for the GSIS
part, the relative L2 differences of the two answers (`knudsen compare`).

Part 1, GSIS with partner faces in an open domain: a wall at T = 0.9 (y_min) under a free
stream at Mach 0.3 along x (y_max), Kn 0.5, the x and z faces as named; to 1e-8 (and two
cases at Kn 0.05 to 1e-9). Part 2, the second-order sweep: diffuse walls at y_min (T = 0.9)
and y_max (T = 1, moving at 0.3 along x), to 1e-7, at most 400 sweeps; where the default
relaxes the partner data (`solver.partner_relaxation`, named in the row) the same runs
without it (1) follow. Part 3, the second-order sweep in Part 1's open box with GSIS, to
1e-8: relaxed (the default there) and not.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

K = sys.argv[1] if len(sys.argv) > 1 else "target/release/knudsen"
WALL = {"type": "diffuse_wall", "temperature": 1.0}
PER, SPEC, FS = {"type": "periodic"}, {"type": "specular"}, {"type": "free_stream"}


def axis(n):
    return {"min": 0.0, "max": 1.0, "cells": n}


def open_box(kn, x, z, cells=(8, 8, 8), mach=0.3, direction=(1.0, 0.0, 0.0)):
    return {
        "gas": {"kn": kn},
        "grid": {"x": axis(cells[0]), "y": axis(cells[1]), "z": axis(cells[2])},
        "velocity": {"points": 10, "max": 4.0},
        "free_stream": {"mach": mach, "direction": list(direction), "density": 1.0, "temperature": 1.0},
        "boundaries": {"x_min": x, "x_max": x, "y_min": {"type": "diffuse_wall", "temperature": 0.9},
                       "y_max": FS, "z_min": z, "z_max": z},
        "solver": {"coarse_grids": 0, "max_iterations": 3000},
    }


def channel(kn, faces, scheme, cells=(8, 8, 8)):
    b = {"x_min": WALL, "x_max": WALL, "z_min": WALL, "z_max": WALL}
    b.update(faces)
    b["y_min"] = {"type": "diffuse_wall", "temperature": 0.9}
    b["y_max"] = {"type": "diffuse_wall", "temperature": 1.0, "velocity": [0.3, 0.0, 0.0]}
    return {
        "gas": {"kn": kn},
        "grid": {"x": axis(cells[0]), "y": axis(cells[1]), "z": axis(cells[2])},
        "velocity": {"points": 10, "max": 4.0},
        "boundaries": b,
        "solver": {"coarse_grids": 0, "max_iterations": 400, "tolerance": 1e-7, "scheme": scheme},
    }


def run(tmp, name, case, acceleration, tolerance=None):
    path = os.path.join(tmp, f"{name}.json")
    with open(path, "w") as f:
        json.dump(case, f)
    out = os.path.join(tmp, f"{name}-{acceleration}")
    cmd = [K, "run", path, "--backend", "cpu", "--acceleration", acceleration, "--out", out]
    if tolerance:
        cmd += ["--tolerance", str(tolerance)]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    state = "converged" if s["converged"] else f"not converged, residual {s['final_residual']:.1e}"
    return out, f"{s['iterations']} sweeps ({state})", s.get("partner_relaxation")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        print("# Part 1: GSIS against source iteration, open box (Kn 0.5 to 1e-8 unless named)")
        part1 = [
            ("x periodic, z specular", open_box(0.5, PER, SPEC), 1e-8),
            ("x specular, z specular", open_box(0.5, SPEC, SPEC), 1e-8),
            ("x periodic, z specular, free stream along +y", open_box(0.5, PER, SPEC, direction=(0, 1, 0)), 1e-8),
            ("x periodic, z specular, Mach 0", open_box(0.5, PER, SPEC, mach=0.0), 1e-8),
            ("2 x 8 x 1 cells, x and z periodic", open_box(0.5, PER, PER, cells=(2, 8, 1)), 1e-8),
            ("x free stream, z specular", open_box(0.5, FS, SPEC), 1e-8),
            ("x periodic, z specular, Kn 0.05", open_box(0.05, PER, SPEC), 1e-9),
        ]
        closed = open_box(0.5, PER, SPEC)
        del closed["free_stream"]
        closed["boundaries"]["y_max"] = WALL
        part1.append(("closed: y_max a wall at T = 1, x periodic, z specular", closed, 1e-8))
        body = open_box(0.05, PER, SPEC)
        body["bodies"] = [{"min": [0.375, 0.0, 0.375], "max": [0.625, 0.25, 0.625], "temperature": 1.0}]
        part1.append(("x periodic, z specular, a block on the wall, Kn 0.05", body, 1e-9))
        for n, (title, case, tol) in enumerate(part1):
            g, gs, _ = run(tmp, f"p{n}", case, "gsis", tol)
            s, ss, _ = run(tmp, f"p{n}", case, "none", tol)
            print(f"{title} (to {tol:g}): GSIS {gs}, source iteration {ss}")
            cmp = subprocess.run([K, "compare", g, s], check=True, capture_output=True, text=True).stdout
            for line in cmp.splitlines()[1:4]:
                print("   ", line.strip())
        print("# Part 2: the second-order sweep, channel between y walls (Kn 5 unless named; to 1e-7, at most 400)")
        part2 = [
            ("all four diffuse", {}, 5.0),
            ("x specular", {"x_min": SPEC, "x_max": SPEC}, 5.0),
            ("z specular", {"z_min": SPEC, "z_max": SPEC}, 5.0),
            ("x_min and z_min specular", {"x_min": SPEC, "z_min": SPEC}, 5.0),
            ("x_min specular", {"x_min": SPEC}, 5.0),
            ("x specular, z_min specular", {"x_min": SPEC, "x_max": SPEC, "z_min": SPEC}, 5.0),
            ("x_min specular, z specular", {"x_min": SPEC, "z_min": SPEC, "z_max": SPEC}, 5.0),
            ("x periodic, z specular", {"x_min": PER, "x_max": PER, "z_min": SPEC, "z_max": SPEC}, 5.0),
            ("x periodic, z specular, Kn 0.5", {"x_min": PER, "x_max": PER, "z_min": SPEC, "z_max": SPEC}, 0.5),
            ("x and z specular", {"x_min": SPEC, "x_max": SPEC, "z_min": SPEC, "z_max": SPEC}, 5.0),
            ("x and z specular, Kn 0.5", {"x_min": SPEC, "x_max": SPEC, "z_min": SPEC, "z_max": SPEC}, 0.5),
            ("8 x 8 x 1 cells, z specular", {"z_min": SPEC, "z_max": SPEC}, 5.0, (8, 8, 1)),
            ("8 x 8 x 1 cells, z specular, Kn 0.5", {"z_min": SPEC, "z_max": SPEC}, 0.5, (8, 8, 1)),
            ("8 x 8 x 1 cells, z specular, Kn 0.05", {"z_min": SPEC, "z_max": SPEC}, 0.05, (8, 8, 1)),
            ("1 x 16 x 1 cells, x periodic, z specular, Kn 0.5",
             {"x_min": PER, "x_max": PER, "z_min": SPEC, "z_max": SPEC}, 0.5, (1, 16, 1)),
        ]
        for n, (title, faces, kn, *cells) in enumerate(part2):
            row = []
            for scheme in ["first_order", "second_order"]:
                case = channel(kn, faces, scheme, *cells)
                for acc in ["none", "gsis"]:
                    _, sweeps, theta = run(tmp, f"c{n}-{scheme}", case, acc)
                    row.append(f"{scheme} {acc}: {sweeps}")
                if theta is not None:
                    title += f" (second order relaxed by {theta})"
                    case["solver"]["partner_relaxation"] = 1.0
                    for acc in ["none", "gsis"]:
                        row.append(f"{scheme} unrelaxed {acc}: {run(tmp, f'c{n}-{scheme}-1', case, acc)[1]}")
            print(f"{title}: " + "; ".join(row))
        print("# Part 3: the second-order sweep in the open box (x periodic, z specular), GSIS, to 1e-8")
        for cells in [(8, 8, 8), (8, 8, 1)]:
            case = open_box(0.5, PER, SPEC, cells=cells)
            case["solver"]["scheme"] = "second_order"
            case["solver"]["max_iterations"] = 400
            g, gs, theta = run(tmp, f"o{cells[2]}", case, "gsis", 1e-8)
            case["solver"]["partner_relaxation"] = 1.0
            u, us, _ = run(tmp, f"o{cells[2]}-1", case, "gsis", 1e-8)
            print(f"{cells[0]} x {cells[1]} x {cells[2]} cells: relaxation {theta}: {gs}; unrelaxed: {us}")


if __name__ == "__main__":
    main()
