#!/usr/bin/env python3
"""plot_lintarget.py PREFIX: the figure of `scm lintarget -o PREFIX`.

Reads PREFIX.json and PREFIX.traces.csv; writes PREFIX.png: the loss, the
alignment |cos| of each student with +-a and the output coefficients
|v_k| |w_k| against tau for every alpha (phase ends marked), and the phase
times against log(1/alpha) with the fitted lines."""
import csv
import json
import math
import sys

from script_args import parse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def fail(msg):
    print(f"plot_lintarget: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    (prefix,), _ = parse(__doc__, 1, 1)
    try:
        rep = json.load(open(prefix + ".json"))
        rows = list(csv.DictReader(open(prefix + ".traces.csv")))
    except (OSError, ValueError) as e:
        fail(f"cannot read {prefix}.json / .traces.csv: {e}")
    for key in ("runs", "fits_vs_log_inv_alpha", "settings"):
        if key not in rep:
            fail(f"{prefix}.json: no '{key}'")
    t11 = rep["settings"]["t"]
    by = {}
    for r in rows:
        try:
            by.setdefault(float(r["alpha"]), []).append(r)
        except (KeyError, ValueError):
            fail(f"{prefix}.traces.csv: a row without a numeric 'alpha'")
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    cmap = plt.get_cmap("viridis")
    alphas = sorted(by, reverse=True)
    for i, a in enumerate(alphas):
        col = cmap(i / max(1, len(alphas) - 1))
        t = [float(r["t"]) for r in by[a]]
        eps = [max(float(r["eps"]), 1e-16) for r in by[a]]
        c1 = [abs(float(r["cos1"])) for r in by[a]]
        c2 = [abs(float(r["cos2"])) for r in by[a]]
        k1 = [abs(float(r["v1"])) * math.sqrt(max(float(r["Q11"]), 0)) / math.sqrt(t11) for r in by[a]]
        k2 = [abs(float(r["v2"])) * math.sqrt(max(float(r["Q22"]), 0)) / math.sqrt(t11) for r in by[a]]
        lab = f"alpha = {a:.0e}"
        ax[0][0].semilogy(t, eps, color=col, label=lab)
        ax[0][1].plot(t, c1, color=col, label=lab)
        ax[0][1].plot(t, c2, color=col, ls="--")
        ax[1][0].semilogy(t, [max(x, 1e-14) for x in k1], color=col, label=lab)
        ax[1][0].semilogy(t, [max(x, 1e-14) for x in k2], color=col, ls="--")
        run = next((r for r in rep["runs"] if abs(r["alpha"] - a) <= 1e-12 * a), None)
        if run:
            for key, mk in (("t_align", "o"), ("t_grow_end", "s"), ("t_conv", "^")):
                if run.get(key) is not None:
                    ax[0][0].axvline(run[key], color=col, lw=0.5, ls=":")
    ax[0][0].set(xlabel="tau", ylabel="eps", title="loss (dotted: end of alignment, growth, convergence)")
    ax[0][1].set(xlabel="tau", ylabel="|cos(w_k, +-a)|", title="alignment (solid: student 1, dashed: 2)")
    ax[1][0].set(xlabel="tau", ylabel="|v_k| |w_k| / |a|", title="output coefficients (target 1)")
    for a_ in (ax[0][0], ax[0][1], ax[1][0]):
        a_.set_xscale("log")
        a_.grid(alpha=0.3)
    ax[0][0].legend(fontsize=7)
    x = [math.log(1 / r["alpha"]) for r in rep["runs"]]
    for key, mk in (("t_align", "o"), ("t_grow_start", "v"), ("t_grow_end", "s"), ("t_conv", "^")):
        y = [r.get(key) for r in rep["runs"]]
        pts = [(a, b) for a, b in zip(x, y) if b is not None]
        if not pts:
            continue
        ax[1][1].plot([p[0] for p in pts], [p[1] for p in pts], mk, label=key)
        fit = rep["fits_vs_log_inv_alpha"].get(key, {})
        if "slope" in fit:
            xs = [min(x), max(x)]
            ax[1][1].plot(xs, [fit["intercept"] + fit["slope"] * v for v in xs], lw=0.8,
                          label=f"{key}: slope {fit['slope']:.3f}")
    ax[1][1].set(xlabel="log(1/alpha)", ylabel="tau", title=f"phase times (growth slope 2/sqrt(t) = {2 / math.sqrt(t11):.3f})")
    ax[1][1].grid(alpha=0.3)
    ax[1][1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)
    print(f"wrote {prefix}.png")


if __name__ == "__main__":
    main()
