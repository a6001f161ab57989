#!/usr/bin/env python3
"""plot_map.py MAP.json [OUT]: the figures of `scm map` (docs/map.md).

  OUT.heatmap.png   the fraction of runs reaching the global minimum over
                    (M, K - M), the count of runs in each cell;
  OUT.global.png    the global fraction against M, one curve per K - M, with
                    95% Wilson intervals;
  OUT.families.png  per cell, where the runs end: a stacked bar of the global
                    minimum, each k1 of the families reached, unmatched and
                    not converged;
  OUT.time.png      the median time to convergence (tau) against M, one curve
                    per K - M.

OUT defaults to MAP.json without .json.  Several MAP.json files (one per
law) are overlaid on OUT.global.png when given as MAP1.json,MAP2.json.
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
                ax.text(j, i, "%.2f" % f, ha="center", va="center", fontsize=8,
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
    fig, ax = plt.subplots(figsize=(6, 4))
    styles = ["-", "--", ":", "-."]
    for k, m in enumerate(maps):
        Ms, dKs, cell = grid(m)
        for d in dKs:
            xs = [M for M in Ms if (M, d) in cell]
            ys = [cell[(M, d)]["global"]["fraction"] for M in xs]
            lo = [y - cell[(M, d)]["global"]["wilson95"][0] for M, y in zip(xs, ys)]
            hi = [cell[(M, d)]["global"]["wilson95"][1] - y for M, y in zip(xs, ys)]
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2,
                        linestyle=styles[k % len(styles)],
                        label="K - M = %d (%s)" % (d, m.get("law", "?")))
    ax.set_xlabel("M")
    ax.set_ylabel("fraction reaching the global minimum")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7)
    ax.set_title("global convergence against width (95% Wilson intervals)", fontsize=9)
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
    Ms, dKs, cell = grid(m)
    keys = []
    for c in m["cells"]:
        for k, _ in cell_parts(c):
            if k not in keys:
                keys.append(k)
    keys.sort(key=part_key)
    col = part_colors(plt, keys)
    order = [(M, d) for M in Ms for d in dKs if (M, d) in cell]
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(order) + 3), 4))
    bottom = [0.0] * len(order)
    for key in keys:
        h = [dict(cell_parts(cell[o])).get(key, 0.0) for o in order]
        ax.bar(range(len(order)), h, bottom=bottom, label=key, width=0.8, color=col[key])
        bottom = [b + x for b, x in zip(bottom, h)]
    ax.set_xticks(range(len(order)), ["%d/%d" % o for o in order], rotation=90, fontsize=7)
    ax.set_xlabel("M / K - M")
    ax.set_ylabel("fraction of runs")
    ax.set_ylim(0, 1.0)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("where the runs end, per cell (%s law)" % m.get("law", "?"), fontsize=9)
    fig.tight_layout()
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
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        sys.stderr.write(__doc__)
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    paths = argv[1].split(",")
    try:
        maps = [load_map(p) for p in paths]
    except InputError as e:
        sys.stderr.write("%s: %s\n" % (ME, e))
        return 2
    out = argv[2] if len(argv) == 3 else paths[0].removesuffix(".json")
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
