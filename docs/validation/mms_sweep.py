#!/usr/bin/env python3
"""The second-order sweep's update on a smooth manufactured solution in three dimensions
(docs/validation.md, "A manufactured solution in three dimensions").

One velocity xi (all components positive), constant nu, n^3 cells on [0, 1]^3 with faces
(i / n)^stretch; the exact f_e = 1 + A sin(K x + p0) sin(K y + p1) sin(K z + p2) solves
xi . grad f = nu (g - f) for g = f_e + xi . grad f_e / nu (cell averages), with f_e's face
averages on the inflow faces. Prints the L1 and max errors of the cell values against f_e's
cell averages for n = 8, 16, 32, 64 and three limiters:
  clamp  the shipped one (src/backend/upwind2.rs::solve_cell, here in Python);
  none   the unlimited weighted diamond difference;
  faces  a range per axis that adds the upstream neighbours' outflows along that axis.

    python3 docs/validation/mms_sweep.py XI NU STRETCH [LIMITERS]
    python3 docs/validation/mms_sweep.py 0.7,0.4,0.25 1.0 1.0 clamp,none,faces
    MMS_CELLS=8,16,32 python3 docs/validation/mms_sweep.py ...   (fewer resolutions)

src/backend/upwind2_tests.rs's test `three_dimensional_manufactured_solution_...` runs the same
case on the Rust update (16^3 and 32^3).
"""
import math, sys

def solve_axes(a, inflow, nu, fs, lo3, hi3):
    """The update with F_d^out clamped to [lo3[d], hi3[d]] (upwind2.rs::solve_cell for one range)."""
    sa = a[0] + a[1] + a[2]
    w = min(sa / nu, 1.0)
    rhs = a[0]*inflow[0] + a[1]*inflow[1] + a[2]*inflow[2] + nu*fs
    def out(f, d):
        if a[d] <= 0: return f
        return min(max((1+w)*f - w*inflow[d], lo3[d]), hi3[d])
    f = (rhs + w*(rhs - nu*fs)) / ((1+w)*sa + nu)
    clamped = any(a[d] > 0 and not (lo3[d] <= (1+w)*f - w*inflow[d] <= hi3[d]) for d in range(3))
    lmin = min([fs] + [lo3[d] for d in range(3) if a[d] > 0]); hmax = max([fs] + [hi3[d] for d in range(3) if a[d] > 0])
    if clamped:
        g = lambda f: nu*f + sum(a[d]*out(f, d) for d in range(3))
        kl, kh = lmin, hmax
        gl, gh = g(kl), g(kh)
        for d in range(3):
            if a[d] <= 0: continue
            for k in ((w*inflow[d] + lo3[d])/(1+w), (w*inflow[d] + hi3[d])/(1+w)):
                if kl < k < kh:
                    gk = g(k)
                    if gk <= rhs: kl, gl = k, gk
                    else: kh, gh = k, gk
        f = kl + (rhs - gl)*(kh - kl)/(gh - gl) if gh > gl else kl
    f = min(max(f, lmin), hmax)
    return f, [out(f, d) for d in range(3)], clamped

def solve_cell(a, inflow, nu, fs, limit=True):
    """The shipped clamp: one range, the inflows of the active axes and fs, for every axis
    (or none, unlimited)."""
    lo = hi = fs
    for d in range(3):
        if a[d] > 0:
            lo = min(lo, inflow[d]); hi = max(hi, inflow[d])
    if not limit:
        lo, hi = -1e300, 1e300
    return solve_axes(a, inflow, nu, fs, [lo] * 3, [hi] * 3)

K = 2*math.pi
A = 0.5
# f_e = 1 + A sin(K x + 0.3) sin(K y + 0.7) sin(K z + 1.1): a product, so averages factor.
ph = (0.3, 0.7, 1.1)
def s_avg(lo, hi, p):   # average of sin(K t + p) over [lo, hi]
    return (math.cos(K*lo + p) - math.cos(K*hi + p)) / (K*(hi - lo))
def c_avg(lo, hi, p):   # average of K cos(K t + p) (the derivative) over [lo, hi]
    return (math.sin(K*hi + p) - math.sin(K*lo + p)) / (hi - lo)
def s_at(t, p): return math.sin(K*t + p)
def c_at(t, p): return K*math.cos(K*t + p)

def run(n, xi, nu, limit, stretch):
    face = [((i/n)**stretch) for i in range(n+1)]
    # fe averages per axis
    sx = [s_avg(face[i], face[i+1], ph[0]) for i in range(n)]
    cx = [c_avg(face[i], face[i+1], ph[0]) for i in range(n)]
    sy = [s_avg(face[i], face[i+1], ph[1]) for i in range(n)]
    cy = [c_avg(face[i], face[i+1], ph[1]) for i in range(n)]
    sz = [s_avg(face[i], face[i+1], ph[2]) for i in range(n)]
    cz = [c_avg(face[i], face[i+1], ph[2]) for i in range(n)]
    wdt = [face[i+1]-face[i] for i in range(n)]
    fz = [[1 + A*sx[i]*sy[j]*s_at(0, ph[2]) for i in range(n)] for j in range(n)]
    fxo_prev = fyo_prev = None
    err1 = errmax = 0.0
    ncl = 0
    for k in range(n):
        fy = [1 + A*sx[i]*s_at(0, ph[1])*sz[k] for i in range(n)]
        fxo = [[0.0]*n for _ in range(n)]; fyo = [[0.0]*n for _ in range(n)]
        for j in range(n):
            fx = 1 + A*s_at(0, ph[0])*sy[j]*sz[k]
            for i in range(n):
                fe = 1 + A*sx[i]*sy[j]*sz[k]
                grad = A*(xi[0]*cx[i]*sy[j]*sz[k] + xi[1]*sx[i]*cy[j]*sz[k] + xi[2]*sx[i]*sy[j]*cz[k])
                g = fe + grad/nu
                a = (xi[0]/wdt[i], xi[1]/wdt[j], xi[2]/wdt[k])
                up = (fx, fy[i], fz[j][i])
                if limit == "faces":
                    base = [g] + list(up)
                    ext = [[], [], []]
                    if i > 0: ext[1].append(fyo[j][i-1]); ext[2].append(fz[j][i-1])
                    if j > 0: ext[0].append(fxo[j-1][i]); ext[2].append(fz[j-1][i])
                    if k > 0: ext[0].append(fxo_prev[j][i]); ext[1].append(fyo_prev[j][i])
                    lo3 = [min(base + ext[d]) for d in range(3)]; hi3 = [max(base + ext[d]) for d in range(3)]
                    f, o, cl = solve_axes(a, up, nu, g, lo3, hi3)
                else:
                    f, o, cl = solve_cell(a, up, nu, g, limit == 'clamp')
                fxo[j][i] = o[0]; fyo[j][i] = o[1]
                ncl += cl
                e = abs(f - fe)
                err1 += e*wdt[i]*wdt[j]*wdt[k]; errmax = max(errmax, e)
                fx = o[0]; fy[i] = o[1]; fz[j][i] = o[2]
        fxo_prev, fyo_prev = fxo, fyo
    return err1, errmax, ncl/n**3

xi = tuple(float(v) for v in sys.argv[1].split(",")) if len(sys.argv) > 1 else (0.7, 0.4, 0.25)
nu = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
stretch = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
for limit in [m for m in (sys.argv[4].split(',') if len(sys.argv) > 4 else ['clamp','none','faces'])]:
    prev = None
    for n in [int(v) for v in __import__("os").environ.get("MMS_CELLS", "8,16,32,64").split(",")]:
        e1, em, fr = run(n, xi, nu, limit, stretch)
        o = f"  order L1 {math.log2(prev[0]/e1):.2f} max {math.log2(prev[1]/em):.2f}" if prev else ""
        print(f"xi {xi} nu {nu} stretch {stretch} {limit:5s} n {n:3d}: L1 {e1:.3e} max {em:.3e} clamped {fr:.3f}{o}", flush=True)
        prev = (e1, em)
