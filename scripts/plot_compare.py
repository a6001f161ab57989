#!/usr/bin/python3
"""plot_compare.py REPORT.json [OUTPREFIX]: the figures of an `scm compare` report.

Writes (OUTPREFIX defaults to REPORT without .json):
  OUTPREFIX.hist.png       final losses, one panel per K on a shared log-loss
                           axis: a bar per class reached (log count axis), the
                           global-minimum runs as a bar at a floor value, the
                           analytic plateau losses (lowest per k1) as dashed
                           lines labelled by k1;
  OUTPREFIX.fractions.png  the fraction table: one group per k1 row, one bar
                           per K, 95% Wilson intervals as error bars;
  OUTPREFIX.traces.png     loss against time of the recorded runs, log axes,
                           one panel per K, with the losses of the traced
                           plateaus.
Exit status: 0 written, 2 bad input (the message names the file and the key),
3 matplotlib missing (apt-get install python3-matplotlib).  Uses the Agg
backend: no display needed.  docs/plots.md."""
import math
import sys

from plot_common import InputError, import_pyplot, load_json_object, save

ME = "plot_compare.py"
COLORS = ["C0", "C1", "C2", "C4", "C5", "C6", "C8", "C9"]


def need(obj, key, types, where):
    """obj[key], checked to be of one of types; InputError names where/key."""
    if not isinstance(obj, dict) or key not in obj:
        raise InputError("%s: key '%s' is missing" % (where, key))
    v = obj[key]
    ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in types)
    if not ok:
        raise InputError("%s: key '%s' has the wrong type (%s)" % (where, key, type(v).__name__))
    return v


def num(obj, key, where, allow_none=False):
    types = (int, float, type(None)) if allow_none else (int, float)
    v = need(obj, key, types, where)
    if v is not None and not math.isfinite(v):
        raise InputError("%s: key '%s' is not finite" % (where, key))
    return v


def load_report(path):
    """The report, with every key the figures use checked."""
    rep = load_json_object(path)
    num(rep, "M", path), num(rep, "runs", path)
    Ks = need(rep, "K", list, path)
    if not Ks or not all(isinstance(k, int) for k in Ks):
        raise InputError("%s: key 'K' is not a non-empty list of integers" % path)
    fr = need(rep, "fractions", dict, path)
    rows = need(fr, "rows", list, path + ": fractions")
    for key in ("count", "fraction", "wilson95"):
        tab = need(fr, key, list, path + ": fractions")
        if len(tab) != len(rows) or any(not isinstance(r, list) or len(r) != len(Ks) for r in tab):
            raise InputError("%s: fractions.%s is not a %d x %d table (rows x K)"
                             % (path, key, len(rows), len(Ks)))
    for i, w in enumerate(sum(fr["wilson95"], [])):
        if not (isinstance(w, list) and len(w) == 2 and all(isinstance(x, (int, float)) for x in w)):
            raise InputError("%s: fractions.wilson95 entry %d is not [lo, hi]" % (path, i))
    for i, f in enumerate(need(rep, "families", list, path)):
        where = "%s: families[%d]" % (path, i)
        num(f, "K", where), num(f, "k1", where), num(f, "loss", where)
    for i, f in enumerate(need(rep, "families_reached", list, path)):
        where = "%s: families_reached[%d]" % (path, i)
        num(f, "K", where), num(f, "loss", where)
    hists = need(rep, "histograms", list, path)
    for i, h in enumerate(hists):
        where = "%s: histograms[%d]" % (path, i)
        num(h, "K", where)
        for j, c in enumerate(need(h, "classes", list, where)):
            w2 = "%s.classes[%d]" % (where, j)
            need(c, "class", str, w2)
            num(c, "k1", w2, allow_none=True), num(c, "count", w2)
            num(c, "eps_min", w2), num(c, "eps_max", w2)
    if [h["K"] for h in hists] != Ks:
        raise InputError("%s: the histograms' K do not match key 'K'" % path)
    for i, t in enumerate(need(rep, "traces", list, path)):
        where = "%s: traces[%d]" % (path, i)
        num(t, "K", where), num(t, "index", where)
        ts, es = need(t, "t", list, where), need(t, "eps", list, where)
        if len(ts) != len(es):
            raise InputError("%s: keys 't' and 'eps' differ in length" % where)
    return rep


def log_floor(x):
    return 10.0 ** math.floor(math.log10(x))


def dodge(xs, min_gap):
    """Label levels 0, 1, 2, ... so that labels closer than min_gap (in
    log10 x) do not share a level."""
    levels, last = [], {}
    for x in xs:
        lv = 0
        while lv in last and math.log10(x) - last[lv] < min_gap:
            lv += 1
        last[lv] = math.log10(x)
        levels.append(lv)
    return levels


def plot_hist(plt, ticker, rep, out):
    Ks, M, runs = rep["K"], rep["M"], rep["runs"]
    fams = {}
    for f in rep["families"]:
        fams.setdefault(f["K"], {})
        if f["loss"] > 1e-9 and (f["k1"] not in fams[f["K"]] or f["loss"] < fams[f["K"]][f["k1"]]):
            fams[f["K"]][f["k1"]] = f["loss"]
    spur_all = [c for h in rep["histograms"] for c in h["classes"]
                if c["class"] != "not_converged" and c["eps_min"] > 1e-9]
    # the dashed lines: the lowest plateau per k1, for k1 up to the largest
    # reached (at least 3), so the panels show where the runs could have ended
    k1_max = max([c["k1"] for c in spur_all if c["k1"] is not None] + [3])
    lines = {K: {k: l for k, l in fams.get(K, {}).items() if k <= k1_max} for K in Ks}
    losses = [c[k] for c in spur_all for k in ("eps_min", "eps_max")]
    losses += [l for d in lines.values() for l in d.values()]
    lo_pl = min(losses) if losses else 1e-2
    hi_pl = max(losses) if losses else 1e-1
    floor = log_floor(lo_pl) / 10  # the global minimum's bar, a decade below
    xlo, xhi = floor / 2.5, hi_pl * 1.8
    ymax = max(100 * runs, 100)  # room above the bars for the k1 labels
    bw = 1.022  # bar width as a factor in x
    fig, axes = plt.subplots(len(Ks), 1, figsize=(8, 2.5 * len(Ks) + 0.8), sharex=True,
                             squeeze=False)
    for ax, h in zip(axes[:, 0], rep["histograms"]):
        K = h["K"]
        cls = h["classes"]
        glob = sum(c["count"] for c in cls if c["class"] != "not_converged"
                   and c["eps_max"] <= 1e-9)
        nc = sum(c["count"] for c in cls if c["class"] == "not_converged")
        spur = [c for c in cls if c["class"] != "not_converged" and c["eps_max"] > 1e-9]
        for k1, loss in sorted(lines[K].items(), key=lambda kv: kv[1]):
            ax.axvline(loss, color="0.55", ls="--", lw=0.7, zorder=1)
        xs = sorted(lines[K].items(), key=lambda kv: kv[1])
        for (k1, loss), lv in zip(xs, dodge([l for _, l in xs], 0.045)):
            ax.text(loss, ymax / 1.3 / 3.2 ** lv, "k1=%d" % k1, rotation=90, fontsize=6.5,
                    ha="right", va="top", color="0.35")
        if glob:
            ax.bar(floor, glob, width=floor * (bw - 1 / bw), bottom=0.5, color="C2", zorder=2)
            ax.text(floor, glob * 1.4, "%d" % glob, ha="center", va="bottom", fontsize=7)
        shown = []  # (log x, log y) of the count labels, to skip overlapping ones
        for c in sorted(spur, key=lambda c: -c["count"]):
            x = 0.5 * (c["eps_min"] + c["eps_max"])
            if c["k1"] is not None or c["eps_max"] < c["eps_min"] * bw:
                color = "C0" if c["k1"] is not None else "C3"
                ax.bar(x, c["count"], width=x * (bw - 1 / bw), bottom=0.5, color=color, zorder=2)
            else:  # unmatched runs over a range of losses: a hatched span, not one bar
                x = math.sqrt(c["eps_min"] * c["eps_max"])
                ax.bar(c["eps_min"], c["count"], width=c["eps_max"] - c["eps_min"], bottom=0.5,
                       align="edge", color="none", edgecolor="C3", hatch="///", zorder=2)
            lx, ly = math.log10(x), math.log10(c["count"])
            if all(abs(lx - a) > 0.03 or abs(ly - b) > 0.6 for a, b in shown):
                shown.append((lx, ly))
                ax.text(x, c["count"] * 1.4, "%d" % c["count"], ha="center", va="bottom",
                        fontsize=6.5, rotation=90 if len(spur) > 6 else 0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(0.5, ymax)
        ax.set_xlim(xlo, xhi)
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, numticks=8))
        ax.yaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(
            lambda y, _: "%d" % round(y) if y >= 1 else ""))
        ax.set_ylabel("runs")
        done = sum(c["count"] for c in cls)
        note = "K = %d: %d runs, %d at the global minimum, %d on plateaus" % (
            K, done, glob, sum(c["count"] for c in spur))
        unm = sum(c["count"] for c in spur if c["k1"] is None)
        if unm:
            note += " (%d unmatched)" % unm
        if nc:
            note += ", %d not converged" % nc
        if not spur:
            note += " (no run ends on a plateau)"
        ax.set_title(note, loc="left", fontsize=8.5)
    ax = axes[-1, 0]
    ticks = [t for t in ax.get_xticks() if floor * 3 <= t <= xhi]
    ax.set_xticks([floor] + ticks)
    ax.set_xticklabels(["global\nminimum"] + ["$10^{%d}$" % round(math.log10(t)) for t in ticks])
    ax.set_xlim(xlo, xhi)
    ax.set_xlabel("final loss  eps  (log scale; global minimum: eps < eps_stop, drawn at %g)"
                  % floor, fontsize=8.5)
    handles = [plt.Rectangle((0, 0), 1, 1, color="C2"), plt.Rectangle((0, 0), 1, 1, color="C0"),
               plt.Line2D([], [], color="0.55", ls="--", lw=0.7)]
    labels = ["global minimum", "plateau (matched family)", "analytic plateau loss, lowest per k1"]
    if any(c["k1"] is None and c["class"] != "not_converged" for c in spur_all):
        handles.insert(2, plt.Rectangle((0, 0), 1, 1, fc="none", ec="C3", hatch="///"))
        labels.insert(2, "unmatched (over its loss range)")
    fig.suptitle("Where training ends: M = %d, %d runs per K" % (M, runs), fontsize=10, y=0.99)
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=7.5,
               frameon=False, bbox_to_anchor=(0.5, 0.965))
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    save(fig, out + ".hist.png")
    plt.close(fig)


def row_label(r):
    return {"unmatched": "unmatched", "not_converged": "not\nconverged"}.get(r, r)


def plot_fractions(plt, rep, out):
    Ks, fr = rep["K"], rep["fractions"]
    keep = range(len(fr["rows"]))  # the rows of the report's table, as PREFIX.md
    fig, axes = plt.subplots(2, 1, figsize=(min(14, max(6.5, 0.2 * len(keep) * len(Ks) + 3)), 6.4),
                             sharex=True)
    w = 0.8 / len(Ks)
    for ax, log in zip(axes, (False, True)):
        for j, K in enumerate(Ks):
            xs = [i + (j - (len(Ks) - 1) / 2) * w for i in range(len(keep))]
            f = [fr["fraction"][i][j] for i in keep]
            lo = [max(f[n] - fr["wilson95"][i][j][0], 0) for n, i in enumerate(keep)]
            hi = [max(fr["wilson95"][i][j][1] - f[n], 0) for n, i in enumerate(keep)]
            ax.bar(xs, f, width=w * 0.92, color=COLORS[j % len(COLORS)], label="K = %d" % K,
                   yerr=[lo, hi], capsize=2, error_kw=dict(lw=0.8, ecolor="0.2"))
        if log:
            ax.set_yscale("log")
            small = min([fr["wilson95"][i][j][1] for i in keep for j in range(len(Ks))] +
                        [fr["fraction"][i][j] for i in keep for j in range(len(Ks))
                         if fr["fraction"][i][j] > 0] + [1e-3])
            ax.set_ylim(max(small / 3, 1e-6), 1.5)
            ax.set_ylabel("fraction (log)")
        else:
            ax.set_ylim(0, 1.05)
            ax.set_ylabel("fraction of runs")
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.grid(axis="y", lw=0.3, alpha=0.6)
    axes[1].set_xticks(range(len(keep)))
    axes[1].set_xticklabels([row_label(fr["rows"][i]) for i in keep], fontsize=8)
    axes[1].set_xlabel("k1 (family the run ends in; 0 = global minimum)")
    title = ("Fractions per family, M = %d, %d runs per K\n95%% Wilson intervals "
             "(a count of 0 shows its upper bound)") % (rep["M"], rep["runs"])
    axes[0].set_title(title, fontsize=9)
    fig.tight_layout()
    save(fig, out + ".fractions.png")
    plt.close(fig)


def plot_traces(plt, rep, out):
    Ks = rep["K"]
    fig, axes = plt.subplots(1, len(Ks), figsize=(4.6 * len(Ks), 3.8), sharey=True,
                             squeeze=False)
    for ax, K in zip(axes[0], Ks):
        n = 0
        for tr in rep["traces"]:
            if tr["K"] != K:
                continue
            pts = [(t, e) for t, e in zip(tr["t"], tr["eps"])
                   if isinstance(t, (int, float)) and isinstance(e, (int, float)) and t > 0 and e > 0]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.1,
                        color=COLORS[n % len(COLORS)],
                        label="run %d: %s" % (tr["index"], tr.get("class", "?")))
                n += 1
        traced = {tr.get("class") for tr in rep["traces"] if tr["K"] == K}
        reached = [f for f in rep["families_reached"]
                   if f["K"] == K and f["loss"] > 1e-9 and f.get("class") in traced]
        for f in reached:
            ax.axhline(f["loss"], color="0.5", ls=":", lw=0.8)
        if reached:
            ax.plot([], [], color="0.5", ls=":", lw=0.8, label="plateau losses of these classes")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("time tau")
        ax.set_title("K = %d, M = %d" % (K, rep["M"]), fontsize=10)
        if n:
            ax.legend(fontsize=6.5, loc="lower left")
        else:
            ax.text(0.5, 0.5, "no traces recorded", transform=ax.transAxes, ha="center")
    axes[0, 0].set_ylabel("loss eps")
    fig.tight_layout()
    save(fig, out + ".traces.png")
    plt.close(fig)


def main(argv):
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        sys.stderr.write(__doc__)
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    try:
        rep = load_report(argv[1])
    except InputError as e:
        sys.stderr.write("%s: %s\n" % (ME, e))
        return 2
    out = argv[2] if len(argv) == 3 else argv[1].removesuffix(".json")
    plt = import_pyplot(ME, argv)
    if plt is None:
        return 3
    import matplotlib.ticker as ticker
    plot_hist(plt, ticker, rep, out)
    plot_fractions(plt, rep, out)
    plot_traces(plt, rep, out)
    print("wrote %s.hist.png, %s.fractions.png, %s.traces.png" % (out, out, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
