#!/usr/bin/env python3
"""plot_map.py MAP.json [OUT]: the figures of `scm map` (docs/map.md).

  OUT.heatmap.png   the fraction of runs reaching the global minimum over
                    (M, K - M), the count of runs in each cell;
  OUT.global.png    the global fraction against M, one curve per K - M, with
                    95% Wilson intervals, and beside it the fraction that
                    misses it on a log scale;
  OUT.families.png  per cell, where the runs end: a stacked bar of the global
                    minimum, each k1 of the families reached, unmatched and
                    not converged (one panel per K - M, a bar per M);
  OUT.time.png      the median time to convergence (tau) against M, one curve
                    per K - M.

OUT defaults to MAP.json without .json.  Several MAP.json files (one per
law) are overlaid on OUT.global.png when given as MAP1.json,MAP2.json.
The maps of one law made separately (rows run as maps of their own, such
as data/map/LAW/dk3_LAW.json) are drawn as one when joined by '+':
map_LAW.json+dk3_LAW.json; they must share the law, the initialisation
and the runs per cell, and no cell (M, K - M) may be in two of them.
Exit status: 0 done, 2 bad input, 3 matplotlib missing."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_common import InputError, import_pyplot, load_json_object, save  # noqa: E402

ME = "plot_map.py"


def load_map(path):
    m = load_json_object(path)
    if m.get("command") != "map":
        raise InputError("%s: not a map (its \"command\" is %r)" % (path, m.get("command")))
    cells = m.get("cells")
    if not isinstance(cells, list) or not cells:
        raise InputError("%s: \"cells\" is not a non-empty array" % path)
    for i, c in enumerate(cells):
        for key in ("M", "K", "dK", "done", "global", "families", "not_converged"):
            if key not in c:
                raise InputError("%s: cells[%d] has no \"%s\"" % (path, i, key))
    return m


def joined(paths):
    """One map from the maps of one law (paths joined by '+'): the cells of
    all, refused when the law, the initialisation or the runs per cell
    differ, or a cell repeats."""
    maps = [load_map(p) for p in paths]
    first, where = maps[0], {}
    for p, m in zip(paths, maps):
        for key in ("law", "runs", "init"):
            if m.get(key) != first.get(key):
                raise InputError("%s: its \"%s\" is %r, %s's is %r: only maps of one law, "
                                 "initialisation and number of runs are joined"
                                 % (p, key, m.get(key), paths[0], first.get(key)))
        for c in m["cells"]:
            at = (c["M"], c["dK"])
            if at in where:
                raise InputError("%s: the cell M = %d, K - M = %d is also in %s"
                                 % (p, at[0], at[1], where[at]))
            where[at] = p
    if len(maps) == 1:
        return first
    return dict(first, cells=[c for m in maps for c in m["cells"]])


def grid(m):
    Ms = sorted({c["M"] for c in m["cells"]})
    dKs = sorted({c["dK"] for c in m["cells"]})
    return Ms, dKs, {(c["M"], c["dK"]): c for c in m["cells"]}


def plot_heatmap(plt, m, out):
    Ms, dKs, cell = grid(m)
    z = [[cell[(M, d)]["global"]["fraction"] if (M, d) in cell else math.nan for M in Ms]
         for d in dKs]
    fig, ax = plt.subplots(figsize=(1.2 + 0.7 * len(Ms), 1.6 + 0.6 * len(dKs)))
    im = ax.imshow(z, origin="lower", vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for i, d in enumerate(dKs):
        for j, M in enumerate(Ms):
            if (M, d) in cell:
                f = cell[(M, d)]["global"]["fraction"]
                ax.text(j, i, "%.3f" % f, ha="center", va="center", fontsize=7,
                        color="black" if f > 0.6 else "white")
    ax.set_xticks(range(len(Ms)), [str(M) for M in Ms])
    ax.set_yticks(range(len(dKs)), [str(d) for d in dKs])
    ax.set_xlabel("M (teachers)")
    ax.set_ylabel("K - M (extra students)")
    ax.set_title("fraction reaching the global minimum (%s law, %d runs per cell)"
                 % (m.get("law", "?"), m.get("runs", 0)), fontsize=9)
    fig.colorbar(im, ax=ax, label="global fraction")
    fig.tight_layout()
    save(fig, out + ".heatmap.png")
    plt.close(fig)


def plot_global(plt, maps, out):
    """Left: the global fraction against M, one colour per K - M and one line
    style per law.  Right: the fraction that misses it, on a log scale, where
    the left panel's curves crowd at 1; a cell with no miss is drawn as the
    upper end of its interval (a downward triangle)."""
    fig, (ax, lx) = plt.subplots(1, 2, figsize=(11, 4))
    styles = ["-", "--", ":", "-."]
    all_dK = sorted({c["dK"] for m in maps for c in m["cells"]})
    for k, m in enumerate(maps):
        Ms, dKs, cell = grid(m)
        for d in dKs:
            col = "C%d" % (all_dK.index(d) % 10)
            xs = [M for M in Ms if (M, d) in cell]
            g = [cell[(M, d)]["global"] for M in xs]
            ys = [c["fraction"] for c in g]
            ax.errorbar(xs, ys, yerr=[[y - c["wilson95"][0] for y, c in zip(ys, g)],
                                      [c["wilson95"][1] - y for y, c in zip(ys, g)]],
                        marker="o", ms=3, capsize=2, color=col, linestyle=styles[k % len(styles)],
                        label="K - M = %d (%s)" % (d, m.get("law", "?")))
            miss = [(M, 1 - c["fraction"], 1 - c["wilson95"][1], 1 - c["wilson95"][0])
                    for M, c in zip(xs, g)]
            hit = [t for t in miss if t[1] > 0]
            if hit:
                lx.errorbar([t[0] for t in hit], [t[1] for t in hit],
                            yerr=[[t[1] - max(t[2], 1e-4) for t in hit], [t[3] - t[1] for t in hit]],
                            marker="o", ms=3, capsize=2, color=col,
                            linestyle=styles[k % len(styles)])
            none = [t for t in miss if t[1] == 0]
            if none:
                lx.plot([t[0] for t in none], [t[3] for t in none], "v", ms=3, color=col,
                        alpha=0.5)
    ax.set_xlabel("M")
    ax.set_ylabel("fraction reaching the global minimum")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7)
    ax.set_title("global convergence against width (95% Wilson intervals)", fontsize=9)
    lx.set_yscale("log")
    lx.set_ylim(1e-3, 1.05)
    lx.set_xlabel("M")
    lx.set_ylabel("fraction missing the global minimum")
    lx.set_title("the misses, log scale (triangle: no miss, upper end of the interval)",
                 fontsize=9)
    fig.tight_layout()
    save(fig, out + ".global.png")
    plt.close(fig)


def cell_parts(c):
    """(label, fraction) of where the runs of a cell end."""
    parts = [("global", c["global"]["fraction"])]
    byk = {}
    for f in c["families"]:
        key = "unmatched" if f["class"] == "unmatched" else "k1=%s" % f.get("k1")
        byk[key] = byk.get(key, 0.0) + f["fraction"]
    for key in sorted(byk, key=lambda s: (s == "unmatched", s)):
        parts.append((key, byk[key]))
    parts.append(("not converged", c["not_converged"]["fraction"]))
    return parts


def part_key(k):
    """global first, then the k1 in increasing order, unmatched, not converged."""
    if k == "global":
        return (0, 0)
    if k.startswith("k1="):
        try:
            return (1, int(k[3:]))
        except ValueError:
            return (1, 10 ** 6)
    return (2, 0) if k == "unmatched" else (3, 0)


def part_colors(plt, keys):
    """One colour per part: global green, the k1 along a colour map (no
    colour twice however many), unmatched grey, not converged black."""
    k1s = [k for k in keys if part_key(k)[0] == 1]
    cmap = plt.get_cmap("plasma")
    col = {"global": "tab:green", "unmatched": "0.6", "not converged": "black"}
    for i, k in enumerate(k1s):
        col[k] = cmap(0.9 * i / max(1, len(k1s) - 1))
    return col


def plot_families(plt, m, out):
    """One panel per K - M (top: the largest), a stacked bar per M."""
    Ms, dKs, cell = grid(m)
    keys = []
    for c in m["cells"]:
        for k, _ in cell_parts(c):
            if k not in keys:
                keys.append(k)
    keys.sort(key=part_key)
    col = part_colors(plt, keys)
    fig, axes = plt.subplots(len(dKs), 1, sharex=True, squeeze=False,
                             figsize=(max(6, 0.4 * len(Ms) + 3), 0.4 + 1.5 * len(dKs)))
    width = 0.8 * min([b - a for a, b in zip(Ms, Ms[1:])] or [1])  # M may step by 1 or 2
    for ax, d in zip(axes[:, 0], reversed(dKs)):
        xs = [M for M in Ms if (M, d) in cell]
        bottom = [0.0] * len(xs)
        for key in keys:
            h = [dict(cell_parts(cell[(M, d)])).get(key, 0.0) for M in xs]
            ax.bar(xs, h, bottom=bottom, label=key, width=width, color=col[key])
            bottom = [b + x for b, x in zip(bottom, h)]
        ax.set_ylim(0, 1.0)
        ax.set_ylabel("K - M = %d" % d, fontsize=8)
    top, last = axes[0, 0], axes[-1, 0]
    last.set_xticks(Ms, [str(M) for M in Ms], fontsize=7)
    last.set_xlabel("M (teachers)")
    handles, labels = top.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="center right")
    top.set_title("where the runs end, per cell: fraction of runs (%s law)" % m.get("law", "?"),
                  fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.88, 1))
    save(fig, out + ".families.png")
    plt.close(fig)


def plot_time(plt, m, out):
    Ms, dKs, cell = grid(m)
    fig, ax = plt.subplots(figsize=(6, 4))
    for d in dKs:
        xs = [M for M in Ms if (M, d) in cell and cell[(M, d)].get("median_t_converged")]
        ax.plot(xs, [cell[(M, d)]["median_t_converged"] for M in xs], marker="o",
                label="K - M = %d" % d)
    ax.set_yscale("log")
    ax.set_xlabel("M")
    ax.set_ylabel("median time to convergence (tau)")
    ax.legend(fontsize=7)
    ax.set_title("median time to convergence (%s law)" % m.get("law", "?"), fontsize=9)
    fig.tight_layout()
    save(fig, out + ".time.png")
    plt.close(fig)


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    laws = argv[1].split(",")
    try:
        maps = [joined(law.split("+")) for law in laws]
    except InputError as e:
        sys.stderr.write("%s: %s\n" % (ME, e))
        return 2
    out = argv[2] if len(argv) == 3 else laws[0].split("+")[0].removesuffix(".json")
    plt = import_pyplot(ME, argv)
    if plt is None:
        return 3
    plot_heatmap(plt, maps[0], out)
    plot_global(plt, maps, out)
    plot_families(plt, maps[0], out)
    plot_time(plt, maps[0], out)
    print("wrote %s.heatmap.png, %s.global.png, %s.families.png, %s.time.png"
          % (out, out, out, out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
