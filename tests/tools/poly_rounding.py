#!/usr/bin/env python3
"""f32 rounding of the fused sweep's Maxwellian factor, the old form (c = xi - U, |c|^2 times
-log2(e)/T, then times G) against the polynomial in xi (shaders/cuda/sweep_fused.cu,
fused_coeffs), emulated with numpy: every operation rounded to f32 as the kernels round it
(an FMA as one rounding of the exact result), the exponential exact, so that only the
argument's rounding differs. Prints, per speed ratio S = |U| / sqrt(T), the worst relative
error of G 2^ell against f64 over velocities where the factor is at least 1e-3 of its peak.

    python3 tests/tools/poly_rounding.py        (numpy; docs/performance.md quotes its output)
"""
import numpy as np

f = np.float32


def fma(a, b, c):
    # Exact in f64 for f32 inputs' product, one rounding to f32 (double rounding aside).
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(f)


def worst(S, T=1.0, rho=1.0, nu=1.0, n=121, seed=1):
    rng = np.random.default_rng(seed)
    U = np.array([S * np.sqrt(T), 0.3 * np.sqrt(T), -0.2 * np.sqrt(T)])
    # Velocities around U out to 4 thermal widths, on a grid offset from U (as a velocity grid is).
    g1 = np.linspace(-4, 4, n) * np.sqrt(T) + 0.0137
    X, Y, Z = np.meshgrid(U[0] + g1, U[1] + g1 * 0.5, U[2] + g1 * 0.5, indexing="ij")
    xi = np.stack([X.ravel(), Y.ravel(), Z.ravel()]).astype(f)
    xd = xi.astype(np.float64)
    pref = rho / (np.pi * T) ** 1.5
    G = nu * pref
    exact = G * np.exp(-((xd - U[:, None]) ** 2).sum(0) / T)
    keep = exact >= 1e-3 * exact.max()
    # The records as the host writes them (f32).
    Uf, lf, Gf = U.astype(f), f(np.log2(np.e) / T), f(f(pref) * f(nu))
    # Old: c = xi - U, |c|^2 (contracted into FMAs), times -l, 2^L times G.
    c = (xi - Uf[:, None]).astype(f)
    c2 = fma(c[2], c[2], fma(c[1], c[1], (c[0] * c[0]).astype(f)))
    old = Gf.astype(np.float64) * np.exp2((c2 * -lf).astype(f).astype(np.float64))
    # New: the cell's constants in f32, then four FMAs per point.
    g = f(np.log2(Gf))
    u2 = fma(Uf[2], Uf[2], fma(Uf[1], Uf[1], f(Uf[0] * Uf[0])))
    B = (f(2.0) * lf * Uf).astype(f)
    C = fma(np.array(-lf, dtype=f), u2, g)
    xi2 = fma(xi[2], xi[2], fma(xi[1], xi[1], (xi[0] * xi[0]).astype(f)))
    ell = fma(np.full_like(xi2, -lf), xi2, np.full_like(xi2, C))
    for k in (2, 1, 0):
        ell = fma(np.full_like(xi2, B[k]), xi[k], ell)
    new = np.exp2(ell.astype(np.float64))
    rel = lambda a: np.max(np.abs(a[keep] - exact[keep]) / exact[keep])
    return rel(old), rel(new)


if __name__ == "__main__":
    print("S      old form   polynomial   (worst relative error of G 2^ell where it is >= 1e-3 of its peak)")
    for S in (0.0, 1.0, 1.8, 5.0, 10.0, 20.0):
        o, p = worst(S)
        print(f"{S:<6} {o:9.2e}   {p:9.2e}")
