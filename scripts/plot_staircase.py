#!/usr/bin/python3
"""plot_staircase.py OUTPREFIX STAIRCASE.json...: the table and figure of `scm staircase` results.

Writes OUTPREFIX.csv (one row per plateau: K, M, alpha, its loss, the matched
fixed point's loss, start and escape times, and per fixed point the fitted
slope against log(1/alpha) with its error and 1/lambda) and OUTPREFIX.png (per
result: the loss curves, log axes, one per alpha, with the matched fixed
points' analytic losses as horizontal lines (and, with both layers trained,
the origin's loss); and the escape times against
log(1/alpha) with the fitted line and the line of slope 1/lambda through the
same mean).  Needs python3-matplotlib (Debian); uses the Agg backend."""
import csv
import json
import math
import os

from script_args import parse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLS = ["K", "M", "activation", "alpha", "plateau", "loss", "fixed_point_loss", "fixed_point",
        "tau_start", "tau_escape", "fit_slope", "fit_slope_se", "fit_intercept", "inverse_lambda"]


def main():
    args, _ = parse(__doc__, 2, None, inputs=slice(1, None))
    prefix, files = args[0], args[1:]
    res = [json.load(open(f)) for f in files]
    with open(prefix + ".csv.tmp", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLS)
        w.writeheader()
        for r in res:
            fits = {f["fixed_point"]: f for f in r["fits"]}
            for run in r["runs"]:
                for k, p in enumerate(run["plateaus"]):
                    fp = p["fixed_point"]
                    fit = fits.get(fp, {})
                    w.writerow({
                        "K": r["K"], "M": r["M"], "activation": r["activation"],
                        "alpha": run["alpha"], "plateau": k, "loss": p["loss"],
                        "fixed_point_loss": r["fixed_points"][fp]["loss"] if fp >= 0 else "",
                        "fixed_point": r["fixed_points"][fp]["ansatz"] if fp >= 0 else "",
                        "tau_start": p["tau_start"],
                        "tau_escape": "" if p["tau_escape"] is None else p["tau_escape"],
                        "fit_slope": fit.get("slope", ""), "fit_slope_se": fit.get("slope_se", ""),
                        "fit_intercept": fit.get("intercept", ""),
                        "inverse_lambda": fit.get("inverse_lambda", ""),
                    })
    os.replace(prefix + ".csv.tmp", prefix + ".csv")
    fig, axes = plt.subplots(len(res), 2, figsize=(10, 3.6 * len(res)), squeeze=False)
    for (ax, bx), r in zip(axes, res):
        seen = set()
        for run in r["runs"]:
            t = [a for a, e in zip(run["tau"], run["loss"]) if a > 0 and e > 0]
            e = [e for a, e in zip(run["tau"], run["loss"]) if a > 0 and e > 0]
            ax.loglog(t, e, lw=1, label="alpha = %g" % run["alpha"])
            seen.update(p["fixed_point"] for p in run["plateaus"] if p["fixed_point"] >= 0)
        if r.get("rule") == "two_layer":  # the origin (w = v = 0) is a fixed point
            e0 = r["runs"][0]["loss"][0]
            ax.axhline(e0, color="gray", ls="--", lw=0.8)
            ax.text(ax.get_xlim()[0] * 1.5, e0 * 0.6, "origin: eps = %.6g" % e0, fontsize=7)
        for fp in sorted(seen):
            f = r["fixed_points"][fp]
            ax.axhline(f["loss"], color="k", ls="--", lw=0.8)
            ax.text(ax.get_xlim()[0] * 1.5, f["loss"] * 1.15, "fixed point %s: eps = %.6g" % (
                f["ansatz"], f["loss"]), fontsize=7)
        ax.set_xlabel("tau")
        ax.set_ylabel("eps")
        ax.set_title("%s K = %d, M = %d, d = %d: loss curves and analytic plateaus" % (
            r["activation"], r["K"], r["M"], r["d"]), fontsize=9)
        ax.legend(fontsize=6)
        for fit in r["fits"]:
            fp = fit["fixed_point"]
            xs, ys = [], []
            for run in r["runs"]:
                for p in run["plateaus"]:
                    if p["fixed_point"] == fp and p["tau_escape"] is not None:
                        xs.append(math.log(1 / run["alpha"]))
                        ys.append(p["tau_escape"])
                        break
            bx.plot(xs, ys, "o", label="escape times (eps = %.6g)" % r["fixed_points"][fp]["loss"])
            lo, hi = min(xs), max(xs)
            bx.plot([lo, hi], [fit["slope"] * lo + fit["intercept"],
                               fit["slope"] * hi + fit["intercept"]], "-",
                    label="fit: slope %.4g +- %.2g" % (fit["slope"], fit["slope_se"]))
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            il = fit["inverse_lambda"]
            bx.plot([lo, hi], [my + il * (lo - mx), my + il * (hi - mx)], ":", color="k",
                    label="1/lambda = %.4g (Jacobian)" % il)
        bx.set_xlabel("log(1/alpha)")
        bx.set_ylabel("escape time tau")
        bx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + ".png.tmp.png", dpi=120)
    os.replace(prefix + ".png.tmp.png", prefix + ".png")
    print("wrote %s.csv and %s.png" % (prefix, prefix))


if __name__ == "__main__":
    main()
