#!/usr/bin/python3
"""plot_split.py OUTPREFIX SPLIT.json...: the table and figure of `scm split` results.

Writes OUTPREFIX.csv (one row per split point: the parent, its inner Hessian's
class, lambda, the residual, the Hessian's measured and predicted inertia, the
smallest eigenvalue without the explained zero modes (times d), the verdicts)
and OUTPREFIX.png (that eigenvalue against lambda, one panel per parent, the
marker showing the Hessian verdict and a ring the perturbation test's).
Needs python3-matplotlib (Debian); uses the Agg backend."""
import csv
import json
import os

from script_args import parse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLS = ["parent", "K", "M", "neuron", "v_r", "loss", "inner_class", "inner_span_eigenvalues",
        "inner_complement", "lambda", "residual", "neg", "zero", "pos", "pred_neg", "pred_zero",
        "pred_pos", "explained_zero", "min_eig_times_d", "verdict", "perturbation"]


def rows(path):
    r = json.load(open(path))
    name = os.path.splitext(os.path.basename(path))[0]
    ih = r["inner_hessian"]
    for p in r["points"]:
        yield {
            "parent": name, "K": r["K"], "M": r["M"], "neuron": r["neuron"],
            "v_r": r["v"][r["neuron"]], "loss": p["loss"], "inner_class": ih["class"],
            "inner_span_eigenvalues": " ".join("%.6g" % x for x in ih["span_eigenvalues"]),
            "inner_complement": ih["complement_eigenvalue"], "lambda": p["mu"][0],
            "residual": p["residual"], "neg": p["negative"], "zero": p["zero"],
            "pos": p["positive"], "pred_neg": p["predicted_negative"],
            "pred_zero": p["predicted_zero"], "pred_pos": p["predicted_positive"],
            "explained_zero": p["explained_zero_modes"],
            "min_eig_times_d": p["min_eigenvalue_times_d"], "verdict": p["verdict"],
            "perturbation": p.get("perturbation_verdict", ""),
        }


def main():
    args, _ = parse(__doc__, 2, None, inputs=slice(1, None))
    prefix, files = args[0], args[1:]
    table = {f: list(rows(f)) for f in files}
    with open(prefix + ".csv.tmp", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLS)
        w.writeheader()
        for f in files:
            w.writerows(table[f])
    os.replace(prefix + ".csv.tmp", prefix + ".csv")
    ncol = min(3, len(files))
    nrow = (len(files) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.6 * nrow), squeeze=False)
    for ax in axes.flat[len(files):]:
        ax.axis("off")
    style = {"min": ("o", "tab:green"), "saddle": ("v", "tab:red"),
             "degenerate": ("s", "tab:gray"), "inconsistent": ("x", "k")}
    for ax, f in zip(axes.flat, files):
        t = table[f]
        lam = [x["lambda"] for x in t]
        ev = [x["min_eig_times_d"] if x["min_eig_times_d"] is not None else float("nan")
              for x in t]
        ax.plot(lam, ev, "-", color="0.7", lw=1)
        for v, (mk, col) in style.items():
            sel = [(a, b) for a, b, x in zip(lam, ev, t) if x["verdict"] == v]
            if sel:
                ax.plot(*zip(*sel), mk, color=col, ms=4, label="Hessian: " + v)
        sel = [(a, b) for a, b, x in zip(lam, ev, t) if x["perturbation"] == "unstable"]
        if sel:
            ax.plot(*zip(*sel), "o", mfc="none", mec="k", ms=8, lw=0.5,
                    label="perturbation: unstable")
        ax.axhline(0, color="k", lw=0.5)
        ax.axvspan(0, 1, color="tab:blue", alpha=0.07)
        ax.set_xlabel("lambda (daughters' weights lambda v_r, (1 - lambda) v_r)", fontsize=7)
        ax.set_title("%s (K=%d, M=%d)\ninner H_r %s, eps = %.5g" % (
            t[0]["parent"], t[0]["K"], t[0]["M"], t[0]["inner_class"], t[0]["loss"]),
            fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=5, loc="best")
    for row in axes:
        row[0].set_ylabel("d x smallest Hessian eigenvalue\n(explained zero modes removed)",
                          fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + ".png.tmp.png", dpi=130)
    os.replace(prefix + ".png.tmp.png", prefix + ".png")
    print("wrote %s.csv (%d rows) and %s.png" % (prefix, sum(len(v) for v in table.values()),
                                                 prefix))


if __name__ == "__main__":
    main()
