#!/usr/bin/python3
"""plot_certified.py: data/certified_minima.csv -> data/certified_minima.png:
the certified lower bound of the smallest eigenvalue of d H and the loss of
the lowest-loss certified strict minimum of each k1 family, against M, at
K = M (solid) and K = M + 1 (dashed).

    /usr/bin/python3 scripts/plot_certified.py data/certified_minima.csv data/certified_minima.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst, kmax=6):
    best = {}
    for r in csv.DictReader(open(src)):
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
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
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
    for a in ax:
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("M")
        a.grid(alpha=0.3)
    ax[1].legend(fontsize=7, ncol=2)
    fig.suptitle("certified strict local minima (ReLU, T = I, v = v* = 1)")
    fig.tight_layout()
    fig.savefig(dst, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
