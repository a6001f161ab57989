#!/usr/bin/python3
"""plot_fixed_points.py: figures of the fixed-point data.

  plot_fixed_points.py plateau TABLE.csv [OUT.png]
      The plateau losses against M for K = M, M + 1, M + 2 (one panel each)
      from the plateau table (data/plateau_table.csv): per family (number of
      anti-aligned students, 1..6) the lowest-loss point at each M, the
      stability classification as the marker.  OUT defaults to
      data/plateau_losses.png next to TABLE (TABLE without .csv + _losses.png).

  plot_fixed_points.py continuation [--csv OUT.csv] [--max-loss L] [-o OUT.png] FILE...
      The continuation branches in M (one panel per K - M) with the points
      where they end early: a fold (singular Jacobian), leaving the PSD cone,
      Newton failing.  FILE: `scm fixed-points --continue-to` JSON output, a
      CSV written by --csv (data/continuation_M7.csv), or an M,loss,residual
      CSV of one branch (data/continuation_k1.csv).  --csv OUT.csv writes the
      branches read (those starting below --max-loss, default 0.06, and above
      the global minimum) as one CSV; -o the figure (default: OUT.csv's name
      with .png, or continuation.png).

Exit status: 0 written, 2 bad input (the message names the file, the line or
key), 3 matplotlib missing (apt-get install python3-matplotlib).  docs/plots.md."""
import csv
import json
import math
import os
import sys

from plot_common import InputError, import_pyplot, save

ME = "plot_fixed_points.py"
FAM_COLORS = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"]
CLASS_MARKERS = {  # classification -> (marker, filled, legend text)
    "min_candidate": ("o", True, "min candidate (full Jacobian)"),
    "min_candidate_block_only": ("o", False, "min candidate (block Jacobian only, K > 20)"),
    "saddle": ("x", True, "saddle"),
    "degenerate": ("d", False, "degenerate (PSD Hessian, a continuum)"),
}
END_MARKERS = {  # how a branch ends -> (marker, colour, legend text)
    "fold": ("X", "red", "fold (singular Jacobian)"),
    "psd": ("s", "black", "leaves the PSD cone"),
    "newton": ("^", "0.4", "Newton fails (no convergence)"),
}
# k1 = the number of anti-aligned students at the branch's start (its family),
# instance = the ansatz instance it was found in (the fixed-points JSON's keys)
CONT_COLUMNS = ["K", "M0", "dK", "branch", "k1", "ansatz", "instance", "start_loss", "M", "loss",
                "end"]
# the columns before k1 had one meaning (they read as the above)
OLD_COLUMNS = {"n_anti": "k1", "k1": "instance"}


def read_csv(path, required):
    """Rows of a CSV as dicts; InputError names the file and the column."""
    try:
        with open(path, newline="") as f:
            rd = csv.DictReader(f)
            if rd.fieldnames is None:
                raise InputError("%s: empty file" % path)
            missing = [c for c in required if c not in rd.fieldnames]
            if missing:
                raise InputError("%s: missing column(s) %s" % (path, ", ".join(missing)))
            return list(rd), rd.fieldnames
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    except csv.Error as e:
        raise InputError("%s: not CSV: %s" % (path, e))


def field(row, key, path, line, kind=float, allow_nan=False):
    v = row.get(key)
    try:
        x = kind(v)
    except (TypeError, ValueError):
        raise InputError("%s:%d: column '%s' is not a number: %r" % (path, line, key, v))
    if kind is float and not allow_nan and not math.isfinite(x):
        raise InputError("%s:%d: column '%s' is not finite: %r" % (path, line, key, v))
    return x


# ---- plateau losses against M ---------------------------------------------

def load_plateau(path):
    rows, _ = read_csv(path, ["K", "M", "dK", "family_n_anti", "loss", "classification"])
    out = []
    for i, r in enumerate(rows):
        line = i + 2
        cl = r["classification"]
        if cl not in CLASS_MARKERS and cl != "global_min":
            raise InputError("%s:%d: column 'classification' has unknown value %r"
                             % (path, line, cl))
        out.append(dict(K=field(r, "K", path, line, int), M=field(r, "M", path, line, int),
                        dK=field(r, "dK", path, line, int),
                        fam=field(r, "family_n_anti", path, line, int),
                        loss=field(r, "loss", path, line), cl=cl))
    if not out:
        raise InputError("%s: no rows" % path)
    return out


def plot_plateau(plt, rows, out, max_family=6):
    dKs = sorted({r["dK"] for r in rows})
    fig, axes = plt.subplots(1, len(dKs), figsize=(4.6 * len(dKs), 4.6), sharey=True,
                             squeeze=False)
    for ax, dK in zip(axes[0], dKs):
        best = {}  # (family, M) -> the lowest-loss row
        for r in rows:
            if r["dK"] == dK and 1 <= r["fam"] <= max_family and r["cl"] != "global_min":
                k = (r["fam"], r["M"])
                if k not in best or r["loss"] < best[k]["loss"]:
                    best[k] = r
        for fam in range(1, max_family + 1):
            pts = sorted((r for (f, _), r in best.items() if f == fam), key=lambda r: r["M"])
            if not pts:
                continue
            col = FAM_COLORS[(fam - 1) % len(FAM_COLORS)]
            ax.plot([r["M"] for r in pts], [r["loss"] for r in pts], color=col, lw=0.8,
                    label="%d anti-aligned" % fam)
            for cl, (mk, filled, _) in CLASS_MARKERS.items():
                sel = [r for r in pts if r["cl"] == cl]
                if sel and mk == "x":  # a line marker: no face or edge colours
                    ax.scatter([r["M"] for r in sel], [r["loss"] for r in sel], marker=mk, s=16,
                               color=col, linewidths=0.8, zorder=3)
                elif sel:
                    ax.scatter([r["M"] for r in sel], [r["loss"] for r in sel], marker=mk, s=16,
                               facecolors=col if filled else "none", edgecolors=col,
                               linewidths=0.8, zorder=3)
        ax.set_yscale("log")
        ax.set_xlabel("M (teachers)")
        ax.set_title("K = M" if dK == 0 else "K = M + %d" % dK, fontsize=10)
        ax.grid(lw=0.3, alpha=0.5)
        if not best:
            ax.text(0.5, 0.5, "no spurious fixed point", transform=ax.transAxes, ha="center")
    axes[0, 0].set_ylabel("plateau loss eps (lowest per family and M)")
    fam_leg = axes[0, 0].legend(fontsize=7, loc="lower left", title="family", title_fontsize=7)
    axes[0, 0].add_artist(fam_leg)
    handles = [plt.Line2D([], [], ls="", marker=mk, color="0.3",
                          markerfacecolor="0.3" if filled else "none", label=txt)
               for mk, filled, txt in CLASS_MARKERS.values()]
    axes[0, -1].legend(handles=handles, fontsize=7, loc="upper right", title="stability class",
                       title_fontsize=7)
    fig.suptitle("Spurious plateaus of the ReLU committee machine (T = I, v = v* = 1)",
                 fontsize=10)
    fig.tight_layout()
    save(fig, out)
    plt.close(fig)


# ---- continuation branches ------------------------------------------------

def end_kind(why):
    if not why:
        return ""
    if "singular" in why:
        return "fold"
    if "PSD" in why:
        return "psd"
    if "Newton failed" in why:
        return "newton"
    return "other"


def branches_from_json(path, rep, max_loss):
    """Branches of a `scm fixed-points --continue-to` result."""
    K = rep.get("K")
    M0 = rep.get("M")
    if not isinstance(K, int) or not isinstance(M0, (int, float)):
        raise InputError("%s: keys 'K' and 'M' must be numbers" % path)
    pts = rep.get("fixed_points")
    if not isinstance(pts, list):
        raise InputError("%s: key 'fixed_points' is missing or not a list" % path)
    out = []
    new_keys = any(isinstance(p, dict) and "instance" in p for p in pts)
    for i, p in enumerate(pts):
        where = "%s: fixed_points[%d]" % (path, i)
        c = p.get("continuation") if isinstance(p, dict) else None
        if c is None:
            raise InputError("%s: key 'continuation' is missing (run scm fixed-points with "
                             "--continue-to)" % where)
        Ms, ls = c.get("M"), c.get("loss")
        if not isinstance(Ms, list) or not isinstance(ls, list) or len(Ms) != len(ls):
            raise InputError("%s: keys 'continuation.M' and '.loss' must be lists of one length"
                             % where)
        if not all(isinstance(x, (int, float)) for x in Ms + ls):
            raise InputError("%s: 'continuation.M' or '.loss' holds a non-number" % where)
        loss0, st = p.get("loss"), p.get("structure")
        if not isinstance(loss0, (int, float)) or not isinstance(st, dict) or \
                not isinstance(st.get("anti"), int):
            raise InputError("%s: keys 'loss' and 'structure.anti' must be numbers" % where)
        if not (1e-9 < loss0 < max_loss) or len(Ms) < 2:
            continue
        why = c.get("why") if c.get("ended_early") else ""
        # the ansatz instance: "instance" ("k1" in files written before k1
        # meant the anti-aligned count everywhere)
        inst = p.get("instance") if new_keys else p.get("k1")
        out.append(dict(K=K, M0=M0, dK=K - int(round(M0)), branch=i, n_anti=st["anti"],
                        ansatz=str(p.get("ansatz", "?")), instance=inst if isinstance(inst, int)
                        else -1,
                        start_loss=loss0,
                        M=Ms, loss=ls, end=end_kind(why) if why else "reached"))
    return out


def branches_from_csv(path, max_loss):
    with open(path, newline="") as f:
        header = f.readline().strip().split(",")
    if header[:3] == ["M", "loss", "residual"]:  # one branch (data/continuation_k1.csv)
        rows, _ = read_csv(path, ["M", "loss"])
        if not rows:
            raise InputError("%s: no rows" % path)
        Ms = [field(r, "M", path, i + 2) for i, r in enumerate(rows)]
        ls = [field(r, "loss", path, i + 2) for i, r in enumerate(rows)]
        return [dict(K=-1, M0=Ms[0], dK=0, branch=0, n_anti=-1, ansatz=os.path.basename(path),
                     instance=-1, start_loss=ls[0], M=Ms, loss=ls, end="reached")]
    if "n_anti" in header:  # written before k1 had one meaning
        rows, _ = read_csv(path, [{"k1": "n_anti", "instance": "k1"}.get(c, c)
                                  for c in CONT_COLUMNS])
        rows = [{OLD_COLUMNS.get(k, k): v for k, v in r.items()} for r in rows]
    else:
        rows, _ = read_csv(path, CONT_COLUMNS)
    by = {}
    for i, r in enumerate(rows):
        line = i + 2
        key = (field(r, "K", path, line, int), field(r, "branch", path, line, int))
        if key not in by:
            by[key] = dict(K=key[0], M0=field(r, "M0", path, line), dK=field(r, "dK", path, line, int),
                           branch=key[1], n_anti=field(r, "k1", path, line, int),
                           ansatz=r["ansatz"], instance=field(r, "instance", path, line, int),
                           start_loss=field(r, "start_loss", path, line), M=[], loss=[], end="")
        b = by[key]
        b["M"].append(field(r, "M", path, line))
        b["loss"].append(field(r, "loss", path, line))
        if r["end"]:
            if r["end"] not in ("reached", "other") and r["end"] not in END_MARKERS:
                raise InputError("%s:%d: column 'end' has unknown value %r" % (path, line, r["end"]))
            b["end"] = r["end"]
    if not by:
        raise InputError("%s: no rows" % path)
    return [b for b in by.values() if b["start_loss"] < max_loss]


def load_branches(paths, max_loss):
    out = []
    for path in paths:
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            raise InputError("%s: cannot read: %s" % (path, e.strerror))
        if text.lstrip().startswith("{"):
            try:
                rep = json.loads(text)
            except ValueError as e:
                raise InputError("%s: not JSON: %s" % (path, e))
            out += branches_from_json(path, rep, max_loss)
        else:
            out += branches_from_csv(path, max_loss)
    if not out:
        raise InputError("no branch to plot in %s (starting below loss %g)"
                         % (", ".join(paths), max_loss))
    return out


def write_csv(path, branches):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(CONT_COLUMNS)
        for b in branches:
            for n, (M, l) in enumerate(zip(b["M"], b["loss"])):
                last = n == len(b["M"]) - 1
                w.writerow([b["K"], "%.12g" % b["M0"], b["dK"], b["branch"], b["n_anti"],
                            b["ansatz"], b["instance"], "%.12g" % b["start_loss"], "%.12g" % M,
                            "%.12g" % l, b["end"] if last else ""])
    os.replace(tmp, path)


def plot_continuation(plt, branches, out):
    dKs = sorted({b["dK"] for b in branches})
    fig, axes = plt.subplots(1, len(dKs), figsize=(4.8 * len(dKs), 4.6), sharey=True,
                             squeeze=False)
    for ax, dK in zip(axes[0], dKs):
        sel = sorted((b for b in branches if b["dK"] == dK), key=lambda b: b["start_loss"])
        seen, marked = set(), []
        for b in sel:
            col = FAM_COLORS[b["n_anti"] % len(FAM_COLORS)] if b["n_anti"] >= 0 else "C0"
            lab = None
            if b["n_anti"] not in seen:
                seen.add(b["n_anti"])
                lab = ("%d anti-aligned" % b["n_anti"]) if b["n_anti"] >= 0 else b["ansatz"]
            ax.plot(b["M"], b["loss"], color=col, lw=1, label=lab)
            if b["end"] in END_MARKERS:
                mk, c, _ = END_MARKERS[b["end"]]
                ax.scatter([b["M"][-1]], [b["loss"][-1]], marker=mk, s=45, color=c, zorder=4)
                xy = (b["M"][-1], b["loss"][-1])
                if all(abs(xy[0] / m - 1) > 0.02 or abs(xy[1] / l - 1) > 0.1 for m, l in marked):
                    marked.append(xy)  # one label for branches ending at the same point
                    ax.annotate("M = %.3g" % xy[0], xy, xytext=(5, -9),
                                textcoords="offset points", fontsize=6.5, color=c)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("M (teachers; K - M = %d fixed, group sizes real)" % dK, fontsize=8.5)
        M0 = sel[0]["M0"] if sel else 0
        ax.set_title(("K = M" if dK == 0 else "K = M + %d" % dK) + ", from M = %g" % M0,
                     fontsize=10)
        ax.grid(lw=0.3, alpha=0.5)
        ax.legend(fontsize=7, loc="lower left", title="family at the start", title_fontsize=7)
    axes[0, 0].set_ylabel("loss eps along the branch")
    ends = {b["end"] for b in branches}
    handles = [plt.Line2D([], [], ls="", marker=mk, color=c, label=txt)
               for e, (mk, c, txt) in END_MARKERS.items() if e in ends]
    if handles:
        fig.legend(handles=handles, fontsize=7.5, loc="lower center", ncol=len(handles),
                   title="where a branch ends early", title_fontsize=7.5, frameon=False)
    fig.suptitle("Fixed-point branches continued in M (scm fixed-points --continue-to)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.09 if handles else 0, 1, 1))
    save(fig, out)
    plt.close(fig)


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    try:
        if argv[1] == "plateau" and len(argv) in (3, 4):
            rows = load_plateau(argv[2])
            out = argv[3] if len(argv) == 4 else argv[2].removesuffix(".csv") + "_losses.png"
            plt = import_pyplot(ME, argv)
            if plt is None:
                return 3
            plot_plateau(plt, rows, out)
        elif argv[1] == "continuation":
            csv_out, out, max_loss, files = None, None, 0.06, []
            it = iter(argv[2:])
            for a in it:
                if a in ("--csv", "-o", "--max-loss"):
                    v = next(it, None)
                    if v is None:
                        raise InputError("option %s needs a value" % a)
                    if a == "--csv":
                        csv_out = v
                    elif a == "-o":
                        out = v
                    else:
                        try:
                            max_loss = float(v)
                        except ValueError:
                            raise InputError("--max-loss must be a number, got %r" % v)
                else:
                    files.append(a)
            if not files:
                raise InputError("continuation needs at least one FILE")
            branches = load_branches(files, max_loss)
            if csv_out:
                write_csv(csv_out, branches)
            if out is None:
                out = csv_out.removesuffix(".csv") + ".png" if csv_out else "continuation.png"
            plt = import_pyplot(ME, argv)
            if plt is None:
                return 3
            plot_continuation(plt, branches, out)
        else:
            raise InputError("%s: not a command (plateau CSV [OUT], or continuation FILE...; "
                             "see --help)" % " ".join(argv[1:]))
    except InputError as e:
        sys.stderr.write("%s: %s\n" % (ME, e))
        return 2
    print("wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
