#!/usr/bin/python3
"""plot_simulate.py SIM.csv [OUT.png]: the plot of an `scm simulate` run.

Panels against time tau (log axis): the population loss eps (log axis),
the entries of R, the entries of Q (and v when it is trained): each seed's simulation is a thin
coloured line, its ODE (integrated from the same realised Q(0), R(0)) a
dashed black line over it.  When SIM.json (the same prefix) is there, a
fourth panel shows the gap: the mean over seeds of eps_sim - eps_ode with
2 standard errors, and the rms over seeds of the largest difference of an
entry of Q, R or v, beside 1 / sqrt(d).  OUT.png defaults
to SIM.csv with .png; it is written atomically.  Needs python3-matplotlib
(Debian); uses the Agg backend, so no display is needed.  `scm simulate`
calls this script itself when matplotlib is available."""
import csv
import json
import os
import sys

from script_args import parse

try:
    import matplotlib
except ImportError:
    sys.stderr.write("plot_simulate.py: matplotlib is not installed (python3-matplotlib)\n")
    sys.exit(3)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    """{seed: {"sim": rows, "ode": rows}} with rows lists of dicts of floats."""
    runs = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            side = runs.setdefault(row["seed"], {"sim": [], "ode": []})[row["source"]]
            side.append({k: float(v) for k, v in row.items()
                         if k not in ("seed", "source") and v != ""})
    return runs


def series(rows, key):
    pts = [(r["t"], r[key]) for r in rows if r["t"] > 0 and key in r]
    return [p[0] for p in pts], [p[1] for p in pts]


def main():
    args, _ = parse(__doc__, 1, 2, inputs=slice(0, 1))
    src = args[0]
    out = args[1] if len(args) == 2 else src.removesuffix(".csv") + ".png"
    runs = load(src)
    keys = list(next(iter(runs.values()))["ode"][0].keys())
    rdiag = [k for k in keys if k.startswith("R_") and k.split("_")[1] == k.split("_")[2]]
    roff = [k for k in keys if k.startswith("R_") and k not in rdiag]
    qs = [k for k in keys if k.startswith("Q_")]
    vs = [k for k in keys if k.startswith("v_")]
    # v gets its own panel when it is trained (it moves in some run).
    trained = any(len({r[k] for r in run["sim"] if k in r}) > 1
                  for run in runs.values() for k in vs)
    jpath = src.removesuffix(".csv") + ".json"
    summary = json.load(open(jpath)) if os.path.exists(jpath) else None
    groups = [["eps"], rdiag + roff, qs] + ([vs] if trained else [])
    npanel = len(groups) + (1 if summary else 0)
    fig, axes = plt.subplots(1, npanel, figsize=(5 * npanel, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (seed, run) in enumerate(sorted(runs.items(), key=lambda kv: int(kv[0]))):
        c = colours[i % len(colours)]
        for ax, ks in zip(axes, groups):
            for j, k in enumerate(ks):
                lab = f"seed {seed}" if j == 0 and ax is axes[0] else None
                ax.plot(*series(run["sim"], k), color=c, lw=1.0, alpha=0.8, label=lab)
                ax.plot(*series(run["ode"], k), color="k", lw=0.9, ls="--",
                        label="ODE" if i == 0 and j == 0 and ax is axes[0] else None)
    if trained:
        axes[3].set_ylabel("v (second layer)")
    if summary:
        ax = axes[-1]
        pts = [p for p in summary["summary"] if p["t"] and p["t"] > 0]
        t = [p["t"] for p in pts]
        mean = [p["eps_diff_mean"] for p in pts]
        se = [2 * (p["eps_diff_se"] or 0) for p in pts]
        ax.errorbar(t, mean, yerr=se, fmt="o-", ms=3, lw=1, label="eps_sim - eps_ode (2 s.e.)")
        ax.plot(t, [p["state_dev_rms"] for p in pts], "s-", ms=3, lw=1,
                label="rms max |dQ|, |dR|, |dv|")
        d = summary["simulate"]["d"]
        ax.axhline(d ** -0.5, color="grey", ls=":", label=f"1/sqrt(d), d = {d}")
        ax.axhline(0, color="k", lw=0.5)
        ax.set_ylabel("simulation - ODE")
        ax.legend(fontsize=7)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("population loss eps")
    axes[1].set_ylabel("R (teacher overlaps)")
    axes[2].set_ylabel("Q (student overlaps)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("tau = eta t / d")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{os.path.basename(src)}: simulation (colour) and ODE (dashed)")
    fig.tight_layout()
    tmp = out + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
