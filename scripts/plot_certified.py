#!/usr/bin/python3
"""plot_certified.py: data/certified_minima.csv -> data/certified_minima.png:
the certified lower bound of the smallest eigenvalue of d H and the loss of
the lowest-loss certified strict minimum of each k1 family, against M, at
K = M (solid) and K = M + 1 (dashed); and, per M, the families k1 >= 1 with
a minimum candidate in the table (lines) and those with a certified strict
minimum (markers), from the rows with a `candidates` column (the table route,
scripts/certify_collect.py --table).

    /usr/bin/python3 scripts/plot_certified.py data/certified_minima.csv data/certified_minima.png
"""
import csv

from script_args import parse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def coverage(ax, rows):
    cand, cert = {}, {}
    for r in rows:
        if not r.get("candidates") or not r["k1"] or int(r["k1"]) < 1:
            continue
        key = (int(r["K"]) - int(r["M"]), int(r["M"]))
        cand[key] = cand.get(key, 0) + 1
        cert[key] = cert.get(key, 0) + (r["verdict"] == "certified strict local minimum")
    for off, c in ((0, "C0"), (1, "C3")):
        Ms = sorted(M for (o, M) in cand if o == off)
        lab = "K = M%s" % (" + 1" if off else "")
        ax.plot(Ms, [cand[(off, M)] for M in Ms], "-", color=c, label=lab + ": with a candidate")
        ax.plot(Ms, [cert[(off, M)] for M in Ms], "o", color=c, ms=2.5, mfc="none",
                label=lab + ": certified")
    ax.set_xlabel("M")
    ax.set_ylabel("families k1 >= 1")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def main(src, dst, kmax=6):
    best = {}
    rows = list(csv.DictReader(open(src)))
    for r in rows:
        if r["verdict"] != "certified strict local minimum":
            continue
        if not r["k1"]:
            continue
        K, M, k1 = int(r["K"]), int(r["M"]), int(r["k1"])
        if K - M not in (0, 1) or not 1 <= k1 <= kmax:
            continue
        key = (K - M, k1, M)
        eps = float(r["eps"])
        if key not in best or eps < best[key][0]:
            best[key] = (eps, float(r["lambda_min_lower"]))
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.4))
    for k1 in range(1, kmax + 1):
        for off, ls in ((0, "-"), (1, "--")):
            Ms = sorted(M for (o, k, M) in best if o == off and k == k1)
            if not Ms:
                continue
            lab = "k1 = %d, K = M%s" % (k1, " + 1" if off else "")
            c = "C%d" % (k1 - 1)
            ax[0].plot(Ms, [best[(off, k1, M)][1] for M in Ms], ls, color=c, marker="o", ms=3,
                       label=lab)
            ax[1].plot(Ms, [best[(off, k1, M)][0] for M in Ms], ls, color=c, marker="o", ms=3,
                       label=lab)
    ax[0].set_ylabel("certified lower bound of lambda_min(d H)")
    ax[1].set_ylabel("loss (certified enclosure midpoint)")
    coverage(ax[2], rows)
    for a in ax[:2]:
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("M")
        a.grid(alpha=0.3)
    ax[1].legend(fontsize=7, ncol=2)
    fig.suptitle("certified strict local minima (ReLU, T = I, v = v* = 1)")
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


if __name__ == "__main__":
    args, _ = parse(__doc__, 2, 2, inputs=slice(0, 1))
    main(args[0], args[1])
