"""Independent cross-check (NOT a literature value): linearised BGK / S-model,
plane Couette flow and plane heat transfer (Fourier flow), diffuse walls.
Discrete ordinates in c_y (half-range Gauss-Legendre), exact integration along
characteristics with piecewise-linear source, moment-matrix direct solve.
Units: y in H, c in v0=sqrt(2kT0/m), delta = p0 H/(mu0 v0).
"""
import numpy as np, sys

def half_quad(n, cmax=6.0):
    x, w = np.polynomial.legendre.leggauss(n)
    # map t in (0,1) -> c = cmax * t^2  (clusters near c=0)
    t = 0.5 * (x + 1); wt = 0.5 * w
    c = cmax * t**2; wc = wt * 2 * cmax * t
    return c, wc * np.exp(-c**2)

def grid(M, delta):
    s = np.linspace(0, np.pi, M + 1)
    return -0.5 * np.cos(s)  # clustered near walls

def weights(h, c, delta):
    k = delta * h / c
    E = np.exp(-k)
    om = -np.expm1(-k)  # 1-E
    with np.errstate(divide='ignore', invalid='ignore'):
        g = np.where(k > 1e-8, om / k, 1 - k / 2)
    w1 = 1 - g
    w0 = g - E
    return E, w0, w1

def sweep(Sp, Sm, Yin_lo, Yin_hi, y, c, delta):
    """Sp: source for +c (nrhs, M+1, N); Sm for -c (direction -c). Returns Yp, Ym."""
    nr, M1, N = Sp.shape
    Yp = np.empty_like(Sp); Ym = np.empty_like(Sm)
    Yp[:, 0, :] = Yin_lo
    Ym[:, -1, :] = Yin_hi
    for i in range(M1 - 1):
        E, w0, w1 = weights(y[i + 1] - y[i], c, delta)
        Yp[:, i + 1, :] = E * Yp[:, i, :] + w0 * Sp[:, i, :] + w1 * Sp[:, i + 1, :]
    for i in range(M1 - 1, 0, -1):
        E, w0, w1 = weights(y[i] - y[i - 1], c, delta)
        Ym[:, i - 1, :] = E * Ym[:, i, :] + w0 * Sm[:, i, :] + w1 * Sm[:, i - 1, :]
    return Yp, Ym

SQPI = np.sqrt(np.pi)

def couette(delta, model='BGK', M=200, N=48):
    c, w = half_quad(N)
    y = grid(M, delta); M1 = M + 1
    k4 = 4.0 / 15.0 if model == 'S' else 0.0
    nm = 2 if model == 'S' else 1   # moments: u, (q_x)
    def F(X):
        X = np.atleast_2d(X); nr = X.shape[0]
        u = X[:, :M1][:, :, None]
        q = X[:, M1:2 * M1][:, :, None] if nm == 2 else 0 * u
        out = []
        res = {}
        for sgn in (+1, -1):
            cy = sgn * c
            S1 = u + k4 * q * (1 + (cy**2 - 2.5) / 2)
            S2 = 2 * u + k4 * q * (3 + (cy**2 - 2.5))
            res[sgn] = (S1, S2)
        # walls: lower y=-1/2 moves -1/2, upper +1/2
        Y1p, Y1m = sweep(res[1][0], res[-1][0], -0.5, 0.5, y, c, delta)
        Y2p, Y2m = sweep(res[1][1], res[-1][1], -1.0, 1.0, y, c, delta)
        un = ((Y1p + Y1m) * w).sum(-1) / SQPI
        out.append(un)
        if nm == 2:
            qn = ((Y2p + (c**2 - 2.5) * Y1p) * w).sum(-1) + ((Y2m + (c**2 - 2.5) * Y1m) * w).sum(-1)
            out.append(qn / SQPI)
        P = (2 / SQPI) * ((c * (Y1p - Y1m)) * w).sum(-1)  # P_xy/p0 in units U/v0 at each node
        return np.concatenate(out, axis=1), P
    n = nm * M1
    b, _ = F(np.zeros(n))
    A = F(np.eye(n))[0] - b
    X = np.linalg.solve(np.eye(n) - A.T, b[0])
    _, P = F(X)
    Pfm = -1 / SQPI
    return P[0] / Pfm, X

def fourier(delta, model='S', M=200, N=48):
    c, w = half_quad(N)
    y = grid(M, delta); M1 = M + 1
    k4 = 4.0 / 15.0 if model == 'S' else 0.0
    tw_lo, tw_hi = 0.5, -0.5
    nX = 3 * M1 + 2  # rho, tau, q_y at nodes, nu' lower, nu' upper
    def F(X):
        X = np.atleast_2d(X); nr = X.shape[0]
        rho = X[:, :M1, None]; tau = X[:, M1:2 * M1, None]; q = X[:, 2 * M1:3 * M1, None]
        nlo = X[:, 3 * M1][:, None]; nhi = X[:, 3 * M1 + 1][:, None]
        S = {}
        for sgn in (+1, -1):
            cy = sgn * c
            Sphi = rho + tau * (cy**2 - 0.5) + k4 * q * cy * (cy**2 - 1.5)
            Spsi = tau + k4 * q * cy + 0 * rho
            S[sgn] = (Sphi, Spsi)
        Phip, Phim = sweep(S[1][0], S[-1][0], nlo + tw_lo * (c**2 + 1), nhi + tw_hi * (c**2 + 1), y, c, delta)
        Psip, Psim = sweep(S[1][1], S[-1][1], tw_lo + 0 * nlo, tw_hi + 0 * nhi, y, c, delta)
        rn = ((Phip + Phim) * w).sum(-1) / SQPI
        tn = (2 / 3) * ((Psip + (c**2 - 0.5) * Phip + Psim + (c**2 - 0.5) * Phim) * w).sum(-1) / SQPI
        qn = ((c * (Psip + (c**2 - 1.5) * Phip) - c * (Psim + (c**2 - 1.5) * Phim)) * w).sum(-1) / SQPI
        # zero mass flux at walls: lower wall incident = Phim at node 0 (c_y<0)
        inc_lo = (c * Phim[:, 0, :] * w).sum(-1)          # = -int_{cy<0} cy Phi e^{-cy^2}  (>0 flux toward wall)
        nlo_new = 2 * inc_lo - 2 * tw_lo
        inc_hi = (c * Phip[:, -1, :] * w).sum(-1)
        nhi_new = 2 * inc_hi - 2 * tw_hi
        return np.concatenate([rn, tn, qn, nlo_new[:, None], nhi_new[:, None]], axis=1), qn
    b, _ = F(np.zeros(nX))
    A = F(np.eye(nX))[0] - b
    Mx = np.eye(nX) - A.T
    X = np.linalg.lstsq(Mx, b[0], rcond=None)[0]
    _, q = F(X)
    return q[0], X

if __name__ == '__main__':
    pass
