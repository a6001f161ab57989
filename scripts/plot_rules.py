#!/usr/bin/python3
"""plot_rules.py RULES.json [OUTPREFIX] [--reference CSV]: the figure of an
`scm compare --rule R1,R2,...` table.

Writes OUTPREFIX.png (OUTPREFIX defaults to RULES without .json): two panels
side by side, one group of bars per K and one bar per rule, with the 95%
Wilson intervals as error bars:
  left   the fraction of runs reaching the global minimum (eps < eps_stop);
  right  the fraction of runs ending with no anti-aligned student (k1 = 0),
         the best end of a manifold rule when K > M.
--reference CSV (columns rule,K,percent; percent empty for "does not
converge") draws published figures as black diamonds (open circles at 0 for
"does not converge") on both panels.
Exit status: 0 written, 2 bad input (the message names the file and the key),
3 matplotlib missing (apt-get install python3-matplotlib).  docs/rules.md."""
import csv
import math
import sys

from plot_common import InputError, import_pyplot, load_json_object, save

ME = "plot_rules.py"
COLORS = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8"]
PANELS = [("global_minimum", "reached the global minimum"),
          ("no_anti_aligned", "ended with no anti-aligned student")]


def frac(cell, key, where):
    f = cell.get(key) if isinstance(cell, dict) else None
    if not isinstance(f, dict):
        raise InputError("%s: key '%s' is missing" % (where, key))
    x, w = f.get("fraction"), f.get("wilson95")
    ok = isinstance(x, (int, float)) and isinstance(w, list) and len(w) == 2 and \
        all(isinstance(v, (int, float)) for v in w) and math.isfinite(x)
    if not ok or not (0 <= w[0] <= x <= w[1] <= 1):
        raise InputError("%s: key '%s' needs fraction and wilson95 [lo, hi] around it"
                         % (where, key))
    return x, w[0], w[1]


def load_rules(path):
    """{rule: {K: {key: (fraction, lo, hi)}}}, the K list and M, every key checked."""
    rep = load_json_object(path)
    Ks, M, rules = rep.get("K"), rep.get("M"), rep.get("rules")
    if not isinstance(Ks, list) or not Ks or not all(isinstance(k, int) for k in Ks):
        raise InputError("%s: key 'K' must be a non-empty list of integers" % path)
    if not isinstance(M, int):
        raise InputError("%s: key 'M' must be an integer" % path)
    if not isinstance(rules, list) or not rules:
        raise InputError("%s: key 'rules' must be a non-empty list" % path)
    table = {}
    for i, r in enumerate(rules):
        where = "%s: rules[%d]" % (path, i)
        name = r.get("rule") if isinstance(r, dict) else None
        cells = r.get("K") if isinstance(r, dict) else None
        if not isinstance(name, str) or not isinstance(cells, list) or len(cells) != len(Ks):
            raise InputError("%s: needs 'rule' and one 'K' cell per K" % where)
        table[name] = {}
        for j, c in enumerate(cells):
            w = "%s.K[%d]" % (where, j)
            if not isinstance(c, dict) or c.get("K") != Ks[j]:
                raise InputError("%s: key 'K' must be %d" % (w, Ks[j]))
            table[name][Ks[j]] = {key: frac(c, key, w) for key, _ in PANELS}
    return table, Ks, M


def load_reference(path):
    """[(rule, K, percent or None)] from a CSV with columns rule,K,percent."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    out = []
    for i, row in enumerate(rows, start=2):
        try:
            K = int(row["K"])
            p = row["percent"].strip()
            out.append((row["rule"], K, float(p) if p else None))
        except (KeyError, ValueError, AttributeError):
            raise InputError("%s: line %d: needs rule,K,percent (percent a number or empty)"
                             % (path, i))
    return out


def plot(plt, table, Ks, M, ref, out):
    rules = list(table)
    width = 0.8 / len(rules)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, (key, title) in zip(axes, PANELS):
        for i, r in enumerate(rules):
            xs = [j + (i - (len(rules) - 1) / 2) * width for j in range(len(Ks))]
            f = [table[r][K][key] for K in Ks]
            ax.bar(xs, [x for x, _, _ in f], width * 0.9, color=COLORS[i % len(COLORS)],
                   label=r, yerr=[[x - lo for x, lo, _ in f], [hi - x for x, _, hi in f]],
                   capsize=3, error_kw={"lw": 0.8})
            for rule, K, p in ref:
                if rule == r and K in Ks:
                    x = xs[Ks.index(K)]
                    if p is None:
                        ax.plot([x], [0], "o", mfc="none", mec="k", ms=6)
                    else:
                        ax.plot([x], [p / 100], "D", color="k", ms=4)
        ax.set_xticks(range(len(Ks)))
        ax.set_xticklabels(["K = %d" % K for K in Ks])
        ax.set_ylim(0, 1.05)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("fraction of runs")
    handles, labels = axes[0].get_legend_handles_labels()
    if ref:
        handles += [plt.Line2D([], [], ls="", marker="D", color="k", ms=4),
                    plt.Line2D([], [], ls="", marker="o", mfc="none", mec="k", ms=6)]
        labels += ["reference", "reference: does not converge"]
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=len(labels))
    fig.suptitle("Training rules, M = %d (95%% Wilson intervals)" % M, fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save(fig, out + ".png")


def main(argv):
    args = list(argv[1:])
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if not args:
        sys.stderr.write(__doc__)
        return 2
    ref_path = None
    if "--reference" in args:
        i = args.index("--reference")
        if i + 1 >= len(args):
            sys.stderr.write("%s: --reference needs a CSV file\n" % ME)
            return 2
        ref_path = args[i + 1]
        del args[i:i + 2]
    if len(args) not in (1, 2):
        sys.stderr.write(__doc__)
        return 2
    try:
        table, Ks, M = load_rules(args[0])
        ref = load_reference(ref_path) if ref_path else []
    except InputError as e:
        sys.stderr.write("%s: %s\n" % (ME, e))
        return 2
    out = args[1] if len(args) == 2 else args[0].removesuffix(".json")
    plt = import_pyplot(ME, argv)
    if plt is None:
        return 3
    plot(plt, table, Ks, M, ref, out)
    print("wrote %s.png" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
