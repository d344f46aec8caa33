#!/usr/bin/env python3
"""Render a plane written by `knudsen slice` as a PNG: colour map plus contour lines.

    python3 docs/plot_plane.py plane.csv out.png [--title TEXT] [--box x0 x1 y0 y1]
        [--xlim a b] [--ylim a b] [--column N]

`--box` outlines a body (e.g. the cube's section). Needs numpy and matplotlib.
"""
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--title", default=None)
    ap.add_argument("--box", type=float, nargs=4, default=None)
    ap.add_argument("--xlim", type=float, nargs=2, default=None)
    ap.add_argument("--ylim", type=float, nargs=2, default=None)
    ap.add_argument("--column", type=int, default=2, help="value column (0-based; 2 = first component)")
    ap.add_argument("--levels", type=int, default=16)
    a = ap.parse_args()

    with open(a.csv) as f:
        comment = f.readline().strip("# \n")
        header = f.readline().strip().split(",")
    d = np.loadtxt(a.csv, delimiter=",", comments="#", skiprows=2)
    u, v, val = d[:, 0], d[:, 1], d[:, a.column]
    us, vs = np.unique(u), np.unique(v)
    grid = np.full((len(vs), len(us)), np.nan)
    iu = np.searchsorted(us, u)
    iv = np.searchsorted(vs, v)
    grid[iv, iu] = val
    grid = np.ma.masked_invalid(grid)

    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    pc = ax.pcolormesh(us, vs, grid, shading="nearest", cmap="inferno")
    cs = ax.contour(us, vs, grid, levels=a.levels, colors="white", linewidths=0.5)
    ax.clabel(cs, fontsize=6, fmt="%.2f")
    fig.colorbar(pc, ax=ax, label=header[a.column])
    if a.box:
        x0, x1, y0, y1 = a.box
        ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=True, color="0.6", zorder=3))
    if a.xlim:
        ax.set_xlim(*a.xlim)
    if a.ylim:
        ax.set_ylim(*a.ylim)
    ax.set_aspect("equal")
    ax.set_xlabel(header[0])
    ax.set_ylabel(header[1])
    ax.set_title(a.title or comment, fontsize=10)
    fig.tight_layout()
    fig.savefig(a.png)


if __name__ == "__main__":
    main()
