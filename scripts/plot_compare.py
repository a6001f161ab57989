#!/usr/bin/python3
"""plot_compare.py REPORT.json [OUTPREFIX]: the plots of an `scm compare` report.

Writes OUTPREFIX.hist.png (one panel per K: histogram of the final losses of
converged runs on log bins, with the losses of the given families as vertical
lines and the runs below 1e-12 -- the global minimum -- as a bar at the left
edge) and OUTPREFIX.traces.png (loss against time of the recorded runs, log
axes, one panel per K, with the family losses as horizontal lines).
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

    fig, axes = plt.subplots(len(Ks), 1, figsize=(8, 2.6 * len(Ks)), squeeze=False)
    for ax, h in zip(axes[:, 0], rep["histograms"]):
        H = h["histogram"]
        lo, per = H["log10_lo"], H["bins_per_decade"]
        edges = [10 ** (lo + i / per) for i in range(len(H["counts"]) + 1)]
        ax.stairs(H["counts"], edges, fill=True, alpha=0.6, label="converged runs")
        if H["below"]:
            ax.bar(edges[0], H["below"], width=edges[0] * 0.8, color="C2",
                   label="eps < 1e-12 (global minimum): %d" % H["below"])
        for f in fams.get(h["K"], []):
            if f["loss"] > 10 ** lo:
                ax.axvline(f["loss"], color="C3", lw=0.6, alpha=0.7)
        ax.set_xscale("log")
        ax.set_xlim(10 ** lo / 2, 10 ** H["log10_hi"])
        ax.set_ylabel("runs")
        ax.set_title("K = %d, M = %d (red: family losses)" % (h["K"], rep["M"]))
        ax.legend(fontsize=7, loc="upper left")
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
                ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1, label="run %d" % tr["index"])
        for f in fams.get(K, []):
            if 1e-12 < f["loss"] < 1:
                ax.axhline(f["loss"], color="C3", lw=0.5, alpha=0.5)
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
