#!/usr/bin/python3
"""plot_compare.py REPORT.json [OUTPREFIX]: the plots of an `scm compare` report.

Writes OUTPREFIX.hist.png (one panel per K: the final losses of the runs,
one bar per plateau reached, with the analytic plateau losses of the given
families as vertical lines; the global-minimum and not-converged counts in
the title) and OUTPREFIX.traces.png (loss against time of the recorded runs, log
axes, one panel per K, with the losses of the families reached as horizontal
lines).
OUTPREFIX defaults to REPORT without .json.  Needs python3-matplotlib
(Debian); uses the Agg backend, so no display is needed."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    rep = json.load(open(sys.argv[1]))
    out = sys.argv[2] if len(sys.argv) == 3 else sys.argv[1].removesuffix(".json")
    Ks = rep["K"]
    fams = {}
    for f in rep.get("families", []):
        fams.setdefault(f["K"], []).append(f)

    # Final losses: runs end on discrete plateaus, so each class reached is a
    # bar at its loss (log axis, zoomed on the spurious plateaus), the
    # analytic plateau losses of the families (lowest per k1) are dashed
    # lines, and the global-minimum count goes into the legend.
    fig, axes = plt.subplots(len(Ks), 1, figsize=(8, 2.8 * len(Ks)), squeeze=False)
    for ax, h in zip(axes[:, 0], rep["histograms"]):
        K = h["K"]
        spur = [c for c in h["classes"] if c.get("k1") not in (None, 0)
                and c.get("eps_min") is not None and c["eps_min"] > 1e-10]
        glob = sum(c["count"] for c in h["classes"] if c.get("k1") == 0)
        nc = sum(c["count"] for c in h["classes"] if c.get("k1") is None)
        if spur:
            lo = min(c["eps_min"] for c in spur) / 1.6
            hi = max(c["eps_max"] for c in spur) * 1.6
        else:
            lo, hi = 1e-3, 1e-1
        lowest = {}
        for f in fams.get(K, []):
            if lo < f["loss"] < hi and (f["k1"] not in lowest or f["loss"] < lowest[f["k1"]]):
                lowest[f["k1"]] = f["loss"]
        for k1, loss in sorted(lowest.items()):
            ax.axvline(loss, color="0.5", ls="--", lw=0.7)
        for c in spur:
            x = 0.5 * (c["eps_min"] + c["eps_max"])
            ax.bar(x, c["count"], width=x * 0.04, color="C0")
            ax.annotate("k1=%d" % c["k1"], (x, c["count"]), fontsize=7, ha="center",
                        va="bottom")
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylabel("runs")
        ax.set_title("K = %d, M = %d: %d runs at the global minimum, %d not converged"
                     % (K, rep["M"], glob, nc), fontsize=9)
        ax.plot([], [], color="0.5", ls="--", lw=0.7, label="plateau losses (lowest per k1)")
        ax.bar([], [], color="C0", label="runs ending there")
        ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("final loss eps")
    fig.tight_layout()
    fig.savefig(out + ".hist.png", dpi=120)

    fig, axes = plt.subplots(1, len(Ks), figsize=(5 * len(Ks), 3.6), squeeze=False)
    for ax, K in zip(axes[0], Ks):
        for tr in rep["traces"]:
            if tr["K"] != K:
                continue
            pts = [(t, e) for t, e in zip(tr["t"], tr["eps"])
                   if t is not None and e is not None and t > 0 and e > 0]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1,
                        label="run %d: %s" % (tr["index"], tr.get("class", "?")))
        reached = [f for f in rep.get("families_reached", []) if f["K"] == K and f["loss"] > 1e-9]
        for f in reached:
            ax.axhline(f["loss"], color="C3", lw=0.5, alpha=0.6)
        if reached:
            ax.plot([], [], color="C3", lw=0.5, label="plateaus reached")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tau")
        ax.set_ylabel("eps")
        ax.set_title("K = %d, M = %d" % (K, rep["M"]))
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out + ".traces.png", dpi=120)
    print("wrote %s.hist.png, %s.traces.png" % (out, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
