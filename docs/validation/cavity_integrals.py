#!/usr/bin/env python3
"""Domain integrals of the Kn = 1 cavity's fields against their centre value, over a grid
refinement (docs/validation.md, "Integral measures of the Kn 1 cavity").

    python3 docs/validation/cavity_integrals.py OUT8 OUT16 OUT32 OUT64

Each OUT is a `knudsen run` output folder of the cavity on n^3 equal cells (fields.h5, the
lid at y = 1 moving along x). Prints each measure per folder, the changes between
consecutive folders and how much each change shrinks. Needs h5py and numpy.
"""
import sys

import h5py
import numpy as np


def measures(folder):
    f = h5py.File(f"{folder}/fields.h5", "r")
    u, rho, t = f["velocity"][...], f["density"][...], f["temperature"][...]
    pxy, q = f["stress_xy"][...], f["heat_flux"][...]
    n = rho.shape[0]
    # Equal cells: a domain mean is the mean of the cell averages.
    c = slice(n // 2 - 1, n // 2 + 1)
    return {
        # Zero for the exact steady flow (no net mass flux through any x plane).
        "mean rho u_x": (rho * u[..., 0]).mean(),
        "mean |u|": np.sqrt((u**2).sum(-1)).mean(),
        # Equal to a wall integral of the momentum flux weighted by y (div of y P_x. = P_xy).
        "mean P_xy": pxy.mean(),
        "mean T - 1": (t - 1.0).mean(),
        "mean |q|": np.sqrt((q**2).sum(-1)).mean(),
        # The eight cells around the centre, as in the proxy tables above.
        "centre u_x": u[c, c, c, 0].mean(),
    }


def main(folders):
    rows = [measures(d) for d in folders]
    for key in rows[0]:
        v = [r[key] for r in rows]
        ch = [b - a for a, b in zip(v, v[1:])]
        shrink = [a / b for a, b in zip(ch, ch[1:])]
        print(f"{key:13s}", " ".join(f"{x:.7e}" for x in v), "| changes", " ".join(f"{x:.3e}" for x in ch),
              "| shrink", " ".join(f"{x:.2f}" for x in shrink))


if __name__ == "__main__":
    main(sys.argv[1:])
