#!/usr/bin/python3
"""plot_compare.py REPORT.json [OUTPREFIX]: the figures of an `scm compare` report.

Writes (OUTPREFIX defaults to REPORT without .json):
  OUTPREFIX.hist.png       final losses, one panel per K on a shared log-loss
                           axis: a bar per class reached (log count axis
                           fitted to the counts), the global-minimum runs as a
                           bar at a floor value, the analytic plateau losses
                           (lowest per k1 >= 1; k1 = 0's is the global
                           minimum) as dashed lines labelled by k1, no two
                           labels overlapping;
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
    return check_report(load_json_object(path), path)


def check_report(rep, path):
    """rep (a report's dict) with every key the figures use checked;
    InputError naming path (the file, or what rep is) and the key."""
    if not isinstance(rep, dict):
        raise InputError("%s: not a JSON object" % path)
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


def plateau_lines(rep, k1_max):
    """Per K, {k1: the lowest loss of the given families with that k1}, for
    1 <= k1 <= k1_max.  k1 = 0 (no anti-aligned student) has no line: its
    lowest point is the global minimum, eps = 0, drawn as the green bar (a
    k1 = 0 saddle at a non-zero loss is no plateau "of k1 = 0")."""
    fams = {}
    for f in rep["families"]:
        d = fams.setdefault(f["K"], {})
        if 1 <= f["k1"] <= k1_max and f["loss"] > 1e-9 and (f["k1"] not in d or
                                                              f["loss"] < d[f["k1"]]):
            d[f["k1"]] = f["loss"]
    return {K: fams.get(K, {}) for K in rep["K"]}


def overlap(a, b, pad=1.0):
    """Two display boxes (Bbox) overlap (closer than pad pixels)?"""
    return (a.x0 < b.x1 + pad and b.x0 < a.x1 + pad and a.y0 < b.y1 + pad and b.y0 < a.y1 + pad)


def fit_panel(ax, renderer, k1_labels, count_labels, bars, max_count):
    """After the layout: the k1 labels (top of the panel, axes coordinates)
    in levels so that no two overlap; a count label hidden where it would
    overlap a larger count's or another bar; the count axis's top raised
    (from 3x the largest count) until no bar or count label reaches a k1
    label and every count label is inside the panel."""
    placed = []
    for t in sorted(k1_labels, key=lambda t: t.get_position()[0]):
        h = t.get_window_extent(renderer).height / ax.get_window_extent(renderer).height
        for lv in range(40):
            t.set_y(0.97 - lv * (h + 0.02))
            bb = t.get_window_extent(renderer)
            if not any(overlap(bb, q) for q in placed):
                break
        placed.append(t.get_window_extent(renderer))
    top = max(3.0 * max_count, 3.0)
    for _ in range(40):
        ax.set_ylim(0.5, top)
        shown = []
        bar_boxes = [b.get_window_extent(renderer) for b in bars]
        for t in count_labels:  # largest counts first
            t.set_visible(True)
            bb = t.get_window_extent(renderer)
            if any(overlap(bb, q) for q in shown) or any(overlap(bb, q, -1.0) for q in bar_boxes):
                t.set_visible(False)
            else:
                shown.append(bb)
        boxes = shown + bar_boxes
        inside = ax.get_window_extent(renderer).y1 - 2.0
        if not any(overlap(b, q) for b in boxes for q in placed) and \
                all(b.y1 <= inside for b in shown):
            return
        top *= 1.5


def plot_hist(plt, ticker, rep, out):
    fig = hist_figure(plt, ticker, rep)
    save(fig, out + ".hist.png")
    plt.close(fig)


def hist_figure(plt, ticker, rep):
    """The histogram figure of a report (see the module's doc)."""
    Ks, M, runs = rep["K"], rep["M"], rep["runs"]
    spur_all = [c for h in rep["histograms"] for c in h["classes"]
                if c["class"] != "not_converged" and c["eps_max"] > 1e-9]
    # the dashed lines: the lowest plateau per k1, for k1 up to the largest
    # reached (at least 3), so the panels show where the runs could have ended
    k1_max = max([c["k1"] for c in spur_all if c["k1"] is not None] + [3])
    lines = plateau_lines(rep, k1_max)
    losses = [c[k] for c in spur_all for k in ("eps_min", "eps_max")]
    losses += [l for d in lines.values() for l in d.values()]
    lo_pl = min(losses) if losses else 1e-2
    hi_pl = max(losses) if losses else 1e-1
    floor = log_floor(lo_pl) / 10  # the global minimum's bar, a decade below
    xlo, xhi = floor / 2.5, hi_pl * 1.8
    bw = 1.022  # bar width as a factor in x
    fig, axes = plt.subplots(len(Ks), 1, figsize=(8, 2.5 * len(Ks) + 0.8), sharex=True,
                             squeeze=False)
    panels = []
    for ax, h in zip(axes[:, 0], rep["histograms"]):
        K = h["K"]
        cls = h["classes"]
        glob = sum(c["count"] for c in cls if c["class"] != "not_converged"
                   and c["eps_max"] <= 1e-9)
        nc = sum(c["count"] for c in cls if c["class"] == "not_converged")
        spur = [c for c in cls if c["class"] != "not_converged" and c["eps_max"] > 1e-9]
        k1_labels, count_labels, bars = [], [], []
        trans = ax.get_xaxis_transform()  # x in data, y in axes coordinates
        for k1, loss in sorted(lines[K].items(), key=lambda kv: kv[1]):
            ax.axvline(loss, color="0.55", ls="--", lw=0.7, zorder=1)
            k1_labels.append(ax.text(loss, 0.97, "%d" % k1, fontsize=6.5, ha="center",
                                     va="top", color="0.35", transform=trans,
                                     bbox=dict(fc="white", ec="none", pad=0.4)))
        labelled = []  # (count, x) of the bars, largest count first
        if glob:
            bars += ax.bar(floor, glob, width=floor * (bw - 1 / bw), bottom=0.5, color="C2",
                           zorder=2).patches
            labelled.append((glob, floor))
        for c in sorted(spur, key=lambda c: -c["count"]):
            x = 0.5 * (c["eps_min"] + c["eps_max"])
            if c["k1"] is not None or c["eps_max"] < c["eps_min"] * bw:
                color = "C0" if c["k1"] is not None else "C3"
                bars += ax.bar(x, c["count"], width=x * (bw - 1 / bw), bottom=0.5, color=color,
                               zorder=2).patches
            else:  # unmatched runs over a range of losses: a hatched span, not one bar
                x = math.sqrt(c["eps_min"] * c["eps_max"])
                bars += ax.bar(c["eps_min"], c["count"], width=c["eps_max"] - c["eps_min"],
                               bottom=0.5, align="edge", color="none", edgecolor="C3",
                               hatch="///", zorder=2).patches
            labelled.append((c["count"], x))
        for n, x in sorted(labelled, key=lambda p: -p[0]):
            count_labels.append(ax.text(x, n * 1.15, "%d" % n, ha="center", va="bottom",
                                        fontsize=6.5, rotation=90 if len(spur) > 6 else 0))
        max_count = max([n for n, _ in labelled] + [1])
        panels.append((ax, k1_labels, count_labels, bars, max_count))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(0.5, max(3.0 * max_count, 3.0))
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
    labels = ["global minimum", "plateau (matched family)",
              "analytic plateau loss, lowest per k1 (labelled k1)"]
    if any(c["k1"] is None and c["class"] != "not_converged" for c in spur_all):
        handles.insert(2, plt.Rectangle((0, 0), 1, 1, fc="none", ec="C3", hatch="///"))
        labels.insert(2, "unmatched (over its loss range)")
    fig.suptitle("Where training ends: M = %d, %d runs per K" % (M, runs), fontsize=10, y=0.99)
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=7.5,
               frameon=False, bbox_to_anchor=(0.5, 0.965))
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    renderer = fig.canvas.get_renderer()
    for p in panels:
        fit_panel(p[0], renderer, *p[1:])
    return fig


def row_label(r):
    return {"unmatched": "unmatched", "not_converged": "not\nconverged"}.get(r, r)


def plot_fractions(plt, rep, out):
    fig = fractions_figure(plt, rep)
    save(fig, out + ".fractions.png")
    plt.close(fig)


def fractions_figure(plt, rep):
    """The fraction table's figure of a report."""
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
    return fig


def plot_traces(plt, rep, out):
    fig = traces_figure(plt, rep)
    save(fig, out + ".traces.png")
    plt.close(fig)


def traces_figure(plt, rep):
    """The traces' figure of a report."""
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
    return fig


def plot_all(plt, ticker, rep, out):
    """The three figures of report rep (checked: check_report) written to
    out.hist.png, out.fractions.png, out.traces.png; their paths."""
    plot_hist(plt, ticker, rep, out)
    plot_fractions(plt, rep, out)
    plot_traces(plt, rep, out)
    return [out + ".hist.png", out + ".fractions.png", out + ".traces.png"]


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
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
    plot_all(plt, ticker, rep, out)
    print("wrote %s.hist.png, %s.fractions.png, %s.traces.png" % (out, out, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
