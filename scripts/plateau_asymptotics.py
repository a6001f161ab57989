#!/usr/bin/python3
"""The large-M loss of the k1 = 1 plateau (docs/fixed-points.md, "The plateau
table to M = 100"): fit and figure, and the counts of families per (K, M).

Usage: plateau_asymptotics.py TABLE.csv BRANCH.json [LOG.txt ...]
  TABLE.csv   data/plateau_table_M100.csv (K = M, M + 1, M + 2; M = 2..100)
  BRANCH.json `scm fixed-points --K 7 --M 7 --k1 1 --continue-to 10000 -o BRANCH.json`:
              the k1 = 1 branch continued in real M, a computation independent of
              the table, used to test the fit's extrapolation
  LOG.txt     the generator's stderr (optional: unspecialised/unconverged counts)
Writes data/plateau_k1_asymptotics.csv, data/plateau_k1_asymptotics.png and
data/plateau_counts_M100.csv; prints the fits.

The k1 = 1 plateau at K = M is the lowest loss among the rows with
family_n_anti = 1 and a min* classification.  Two fits by linear least squares
(relative residuals) on M = 40..100:
  integer powers:  eps = a/M + b/M^2
  half-integer:    eps = a/M + b/M^(3/2) + c/M^2 + d/M^(5/2)
each extrapolated to the branch's points at 1000 <= M <= 10^4 (the loss there
has round-off ~1e-16 M^2, below 1e-8 relative up to M = 10^4).
"""
import csv
import json
import re

from script_args import parse

import numpy as np


def k1_plateau(path):
    best = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["dK"] != "0" or r["family_n_anti"] != "1":
                continue
            if not r["classification"].startswith("min"):
                continue
            M, e = int(r["M"]), float(r["loss"])
            best[M] = min(best.get(M, np.inf), e)
    Ms = np.array(sorted(best), float)
    return Ms, np.array([best[int(m)] for m in Ms])


def branch(path, M7_loss):
    """The continued branch that starts at the K = M = 7 k1 = 1 point."""
    d = json.load(open(path))
    for p in d["fixed_points"]:
        c = p.get("continuation")
        if c and abs(p["loss"] - M7_loss) < 1e-9:
            return np.array(c["M"]), np.array(c["loss"])
    raise SystemExit("no continued branch from the k1 = 1 point in " + path)


def fit(M, e, powers):
    A = np.stack([M ** -p for p in powers], 1) / e[:, None]
    coef, *_ = np.linalg.lstsq(A, np.ones_like(e), rcond=None)
    return coef


def ev(M, coef, powers):
    return sum(c * M ** -p for c, p in zip(coef, powers))


def counts(table, logs):
    omitted = {}
    for lg in logs:
        for line in open(lg):
            m = re.match(r"K=(\d+) M=(\d+): \d+ listed .* (\d+) unspecialised and (\d+) with", line)
            if m:
                omitted[(int(m[1]), int(m[2]))] = (int(m[3]), int(m[4]))
    lev = {}
    with open(table) as f:
        for r in csv.DictReader(f):
            key = (int(r["K"]), int(r["M"]))
            L = lev.setdefault(key, {"rows": 0, "min": 0, "fam": set(), "fam_min": set()})
            L["rows"] += 1
            L["fam"].add(r["family_n_anti"])
            if r["classification"].startswith("min"):
                L["min"] += 1
                L["fam_min"].add(r["family_n_anti"])
    with open("data/plateau_counts_M100.csv", "w") as f:
        f.write("K,M,dK,rows,families,min_candidate_rows,families_with_min_candidate,"
                "stability_level,unspecialised_omitted,unconverged_omitted\n")
        for (K, M) in sorted(lev, key=lambda k: (k[0] - k[1], k[1])):
            L = lev[(K, M)]
            u = omitted.get((K, M), ("", ""))
            f.write("%d,%d,%d,%d,%d,%d,%d,%s,%s,%s\n" % (
                K, M, K - M, L["rows"], len(L["fam"]), L["min"], len(L["fam_min"]),
                "full" if K <= 20 else "symmetric", u[0], u[1]))


def main():
    args, _ = parse(__doc__, 2, None, inputs=slice(0, None))
    table, bpath, logs = args[0], args[1], args[2:]
    Ms, E = k1_plateau(table)
    bM, bE = branch(bpath, E[Ms == 7][0])
    sel = (Ms >= 40) & (Ms <= 100)
    fits = {"integer": [1, 2], "half": [1, 1.5, 2, 2.5]}
    far = (bM >= 1000) & (bM <= 10000)
    out = {}
    for name, pw in fits.items():
        c = fit(Ms[sel], E[sel], pw)
        dev_fit = np.max(np.abs(ev(Ms[sel], c, pw) / E[sel] - 1))
        dev_far = np.max(np.abs(ev(bM[far], c, pw) / bE[far] - 1))
        out[name] = (c, pw)
        print("%-8s powers %s: coefficients %s; max rel. deviation on M = 40..100 %.1e, "
              "on the branch at 1000 <= M <= 10^4 %.1e" % (
                  name, pw, " ".join("%.6g" % x for x in c), dev_fit, dev_far))
    # also the branch itself below 100 against the table (the same points, two computations)
    common = [m for m in Ms if np.any(np.abs(bM - m) < 1e-9)]
    dev = max(abs(bE[np.argmin(np.abs(bM - m))] / E[Ms == m][0] - 1) for m in common)
    print("branch vs table at %d common integer M: max rel. difference %.1e" % (len(common), dev))
    with open("data/plateau_k1_asymptotics.csv", "w") as f:
        f.write("M,loss,source,fit_half_integer,fit_integer\n")
        for m, e in zip(Ms, E):
            f.write("%d,%.12g,table,%.12g,%.12g\n" % (m, e, ev(m, *out["half"]), ev(m, *out["integer"])))
        for m, e in zip(bM, bE):
            if m > 100:
                f.write("%.6f,%.12g,continuation,%.12g,%.12g\n" % (
                    m, e, ev(m, *out["half"]), ev(m, *out["integer"])))
    counts(table, logs)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(Ms, Ms * E, "o", ms=3, label="plateau table, K = M, family 1 (M = 2..100)")
    b = bM > 100
    ax.plot(bM[b], bM[b] * bE[b], "-", color="k", lw=1,
            label="k1 = 1 branch continued in M (scm fixed-points --continue-to)")
    xs = np.logspace(np.log10(20), 4, 200)
    c, pw = out["half"]
    ax.plot(xs, xs * ev(xs, c, pw), "--",
            label="fit a/M + b/M^1.5 + c/M^2 + d/M^2.5 (M = 40..100), a = %.4f" % c[0])
    c2, pw2 = out["integer"]
    ax.plot(xs, xs * ev(xs, c2, pw2), ":", label="fit a/M + b/M^2 (M = 40..100), a = %.4f" % c2[0])
    ax.axhline(c[0], color="grey", lw=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("M (= K)")
    ax.set_ylabel("M eps of the k1 = 1 plateau")
    ax.set_title("ReLU, T = I, v = v* = 1: the k1 = 1 plateau at large M")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig("data/plateau_k1_asymptotics.png", dpi=120)
    print("wrote data/plateau_k1_asymptotics.{csv,png} and data/plateau_counts_M100.csv")


if __name__ == "__main__":
    main()
