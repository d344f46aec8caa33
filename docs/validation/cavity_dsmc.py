#!/usr/bin/env python3
"""knudsen's argon cavity against the DSMC and full-Boltzmann (DGFS) profiles of
docs/data/cavity-dsmc/ along the diagonal (1,1,0) -> (0,0,1) (docs/validation.md, "The cubic
cavity against DSMC").

    python3 docs/validation/cavity_dsmc.py RUNS_DIR

RUNS_DIR holds one folder per run (tests/device/dsmc_cavity.sh's `d/`), named
kn<Kn>-<cells>-<scheme>-v<velocities>, each with `knudsen line --from 1,1,0 --to 0,0,1
--points 200` CSVs of density, velocity, temperature and stress. The references are put in
knudsen's units (lengths by L = 1 mm; density by n0; velocity by v0 = sqrt(2 k T0 / m);
temperature by T0 = 273 K; stress by n0 m v0^2), each with its own molecular mass: the DSMC
file's 6.63e-26 kg, DGFS's 39.96e-3 kg/mol; the number densities and DGFS's rho0 are those of
the study's inputs (Section 4.13/RawData/Kn=*/dsmc/cavity3D_Kn1.in, air.species, and
dgfs/adgfs_3d_cavity.ini in its data repository). Prints, per run and reference, the largest
and the root-mean-square difference along the diagonal (velocities in units of the lid speed
U_w, temperature in units of T0, density relative to n0, P_xy in units of rho0 v0^2 = 2 p0,
knudsen's unit of stress, the heat flux in rho0 v0^3); each profile's scatter (the rms of what an 11-point running mean
leaves, at the interior points); and the profiles at nine points.
"""
import math
import os
import sys

K_B = 1.380649e-23
T0 = 273.0
LID = 50.0  # m/s
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "cavity-dsmc")
# The studies' number densities (m^-3): the DSMC input's nrho; DGFS's rho0 over its mass.
N0 = {"1": 1.67912e21, "0.1": 1.67912e22}
MASS = {"dsmc": 6.63e-26, "dgfs": 39.96e-3 / 6.0221409e23}
DGFS_RHO0 = {"1": 1.1140244750324529e-4, "0.1": 1.1140244750324529e-3}


def table(path):
    rows, names = [], None
    for line in open(path):
        if line.startswith("#"):
            continue
        if names is None:
            names = line.split()
            continue
        rows.append(dict(zip(names, map(float, line.split()))))
    return rows


def reference(kind, kn):
    """The reference profile in knudsen's units: a list of dicts with s (arc length / L),
    n, ux, uy, uz (None for DSMC, which did not sample it), t, pxy."""
    m = MASS[kind]
    v0 = math.sqrt(2 * K_B * T0 / m)
    n0 = N0[kn] if kind == "dsmc" else DGFS_RHO0[kn] / m
    out = []
    for r in table(os.path.join(DATA, f"{kind}-kn{kn}.txt")):
        n = r["nden"] if kind == "dsmc" else r["rho"] / m
        out.append(
            {
                "s": r["arc_m"] / 1e-3,
                "n": n / n0,
                "ux": r["Ux"] / v0,
                "uy": r["Uy"] / v0,
                "uz": r["Uz"] / v0 if "Uz" in r else None,
                "t": r["T"] / T0,
                "pxy": r["Pxy"] / (n0 * m * v0 * v0),
                "qx": r["Qx"] / (n0 * m * v0**3),
                "qy": r["Qy"] / (n0 * m * v0**3),
                "qz": r["Qz"] / (n0 * m * v0**3),
            }
        )
    return out, v0


def run_profile(folder):
    def csv(name):
        lines = [l for l in open(os.path.join(folder, name + ".csv")) if not l.startswith("#")]
        head = lines[0].strip().split(",")
        return [dict(zip(head, map(float, l.split(",")))) for l in lines[1:]]

    rho, vel, tem, st, hf = csv("density"), csv("velocity"), csv("temperature"), csv("stress"), csv("heat_flux")
    # stress components: xx yy zz xy xz yz (docs/output.md)
    return [
        {
            "s": a["s"],
            "n": a["density"],
            "ux": b["velocity_0"],
            "uy": b["velocity_1"],
            "uz": b["velocity_2"],
            "t": c["temperature"],
            "pxy": d["stress_3"],
            "qx": e["heat_flux_0"],
            "qy": e["heat_flux_1"],
            "qz": e["heat_flux_2"],
        }
        for a, b, c, d, e in zip(rho, vel, tem, st, hf)
    ]


def differences(run, ref, u_w, p0, part):
    """max and rms of each quantity's difference along the diagonal (part "whole") or along
    its points at least 0.05 L from every wall (part "interior": 10 <= i <= 189 of 200), in
    the units above."""
    assert len(run) == len(ref), (len(run), len(ref))
    for a, b in zip(run, ref):
        assert abs(a["s"] - b["s"]) < 1e-3, (a["s"], b["s"])
    if part == "interior":
        # x = 1 - t, y = 1 - t, z = t along the diagonal: the nearest wall is min(t, 1 - t) away.
        keep = [min(i / (len(run) - 1), 1 - i / (len(run) - 1)) >= 0.05 - 1e-12 for i in range(len(run))]
        run = [a for a, k in zip(run, keep) if k]
        ref = [b for b, k in zip(ref, keep) if k]
    scale = {"ux": u_w, "uy": u_w, "uz": u_w, "t": 1.0, "n": 1.0, "pxy": p0, "qx": 1.0, "qy": 1.0, "qz": 1.0}
    out = {}
    for q, sc in scale.items():
        d = [(a[q] - b[q]) / sc for a, b in zip(run, ref) if b[q] is not None and a[q] is not None]
        if d:
            out[q] = (max(abs(x) for x in d), math.sqrt(sum(x * x for x in d) / len(d)))
    return out


def scatter(prof, q, scale):
    """rms of the profile less its 11-point running mean, at the interior points (10..189):
    the point-to-point noise, with the smooth trend (to its curvature over 11 points) removed."""
    vals = [p[q] for p in prof]
    out = []
    for i in range(10, len(vals) - 10):
        mean = sum(vals[i - 5 : i + 6]) / 11
        out.append((vals[i] - mean) / scale)
    return math.sqrt(sum(x * x for x in out) / len(out))


def main():
    runs = sys.argv[1] if len(sys.argv) > 1 else "."
    for part in ["interior", "whole"]:
        print(f"\n{part}:\n")
        report(runs, part)
    best = {"1": "kn1-128-second_order-v64", "0.1": "kn0.1-128-second_order-v64"}
    print("\nscatter (rms of the profile less its 11-point running mean, interior):\n")
    print("| Kn | profile | U_x / U_w | U_y / U_w | T / T0 |")
    print("|---|---|---|---|---|")
    for kn in ["1", "0.1"]:
        dsmc, v0 = reference("dsmc", kn)
        u_w = LID / v0
        profs = [("DSMC", dsmc), ("DGFS", reference("dgfs", kn)[0])]
        if os.path.isdir(os.path.join(runs, best[kn])):
            profs.append((best[kn], run_profile(os.path.join(runs, best[kn]))))
        for name, prof in profs:
            print(f"| {kn} | {name} | {scatter(prof, 'ux', u_w):.1e} | {scatter(prof, 'uy', u_w):.1e} | {scatter(prof, 't', 1.0):.1e} |")
    print("\nprofiles at nine points (U_x / U_w, then 1000 (T / T0 - 1)):\n")
    idx = [20, 40, 60, 80, 100, 120, 140, 160, 180]
    for kn in ["1", "0.1"]:
        dsmc, v0 = reference("dsmc", kn)
        u_w = LID / v0
        if not os.path.isdir(os.path.join(runs, best[kn])):
            continue
        profs = [("knudsen", run_profile(os.path.join(runs, best[kn]))), ("DSMC", dsmc), ("DGFS", reference("dgfs", kn)[0])]
        print(f"Kn {kn}, s = " + " | ".join(f"{dsmc[i]['s']:.3f}" for i in idx))
        for name, prof in profs:
            print(f"| {kn} | U_x / U_w | {name} | " + " | ".join(f"{prof[i]['ux'] / u_w:+.4f}" for i in idx) + " |")
        for name, prof in profs:
            print(f"| {kn} | 1000 (T / T0 - 1) | {name} | " + " | ".join(f"{1e3 * (prof[i]['t'] - 1):+.2f}" for i in idx) + " |")


def report(runs, part):
    qs = ["ux", "uy", "uz", "t", "n", "pxy", "qx", "qy", "qz"]
    print("| Kn | run | against | " + " | ".join(f"{q} max / rms" for q in qs) + " |")
    print("|---|---|---|" + "---|" * len(qs))
    for kn in ["1", "0.1"]:
        dsmc, v0 = reference("dsmc", kn)
        dgfs, _ = reference("dgfs", kn)
        u_w = LID / v0
        # P_xy in knudsen's unit, rho0 v0^2, as the references are put.
        p0 = 1.0
        rows = [("DGFS 8^3 x 32^3", "DSMC", differences(dgfs, dsmc, u_w, p0, part))]
        for tag in sorted(os.listdir(runs)):
            if not tag.startswith(f"kn{kn}-"):
                continue
            prof = run_profile(os.path.join(runs, tag))
            label = tag[len(f"kn{kn}-"):]
            rows.append((label, "DSMC", differences(prof, dsmc, u_w, p0, part)))
            rows.append((label, "DGFS", differences(prof, dgfs, u_w, p0, part)))
        for label, against, d in rows:
            cells = [f"{d[q][0]:.2e} / {d[q][1]:.2e}" if q in d else "-" for q in qs]
            print(f"| {kn} | {label} | {against} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
