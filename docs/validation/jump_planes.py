#!/usr/bin/env python3
"""The lid edges' jump planes at the centre of the Kn 1 cavity (docs/validation.md, "The proxy
at 64^3, and why no limiter meets the 3x").

With discrete velocities, the lid (y = 1, moving along x) emits a distribution that jumps at
its four edges; each discrete velocity carries that jump along the plane through an edge in
its own direction. For the trapezoid velocity grid of the cavity cases (M points per axis on
[-4, 4]) this prints how many velocities put the cavity centre exactly on such a plane, and
how far from the centre the nearest other planes pass.

    python3 docs/validation/jump_planes.py [M ...]     (default: 16 32)
"""
import math
import sys


def nodes(m):
    return [-4.0 + 8.0 * k / (m - 1) for k in range(m)]


def on_centre(m):
    """Velocities entering the cavity from the lid (xi_y < 0) whose plane through an edge
    along z (|xi_x| = |xi_y|) or along x (|xi_z| = |xi_y|) contains the centre."""
    v = nodes(m)
    count = 0
    for x in v:
        for y in (y for y in v if y < 0.0):
            for z in v:
                if math.isclose(abs(x), abs(y)) or math.isclose(abs(z), abs(y)):
                    count += 1
    return count


def nearest(m, n=8):
    """Distances from the centre of the distinct planes through the edges along z (x = 0 or
    1, y = 1); the edges along x give the same by symmetry."""
    v = nodes(m)
    dist = set()
    for ex in (0.0, 1.0):
        for x in v:
            for y in (y for y in v if y < 0.0):
                px, py = 0.5 - ex, 0.5 - 1.0
                dist.add(round(abs(px * y - py * x) / math.hypot(x, y), 9))
    return sorted(dist)[:n]


def main():
    for m in [int(a) for a in sys.argv[1:]] or [16, 32]:
        print(f"{m}^3 velocities: the centre lies on the jump planes of {on_centre(m)} of {m ** 3}; "
              f"nearest planes at {', '.join(f'{d:.4f}' for d in nearest(m))}")


if __name__ == "__main__":
    main()
