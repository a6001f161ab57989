#!/usr/bin/env python3
"""The map of record (data/map, docs/map.md) as tables, and its check.

    map_table.py [DIR]          markdown tables of the maps DIR/LAW/NAME_LAW.json
    map_table.py --check [DIR]  recount every cell from its runs file
    map_table.py --check DIR --same-runs REF
                                also: every cell of DIR that the maps of REF
                                have too holds their runs, record for record
                                (the first runs of a larger map are those of
                                a smaller one with the same settings)

DIR defaults to data/map next to this script; LAW is every folder of DIR
holding maps written by `scm map` as LAW/NAME_LAW.json (map_LAW.json, and
rows run separately such as dk3_LAW.json), merged.  The
tables: the global fraction per (M, dK, law) with its 95% Wilson
interval, the smallest dK reaching 0.99 per M (over the merged cells),
and the families that trap runs at K = M + 1.  --check recounts each
cell of each file from its runs file (gzipped or not), recomputes the
Wilson intervals and each file's smallest_dK_99 from the counts, checks
the cells of DIR/shared/ (record cells run again with --ansatz, or swept
again with --families) against their runs and the record's
(check_shared), and exits 1 on any
difference.  Standard library only (the test runs it with any python3).
"""
import gzip
import json
import math
import os
import sys

from script_args import refuse


def wilson95(k, n):
    """The 95% Wilson score interval of k successes in n trials."""
    if n == 0:
        return (0.0, 1.0)
    z = 1.959963984540054
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def load_files(root):
    """{law: [map.json, ...]}: the maps written by `scm map` in LAW/ as
    LAW/NAME_LAW.json, LAW/map_LAW.json first where there is one (the
    others are supplementary rows, such as dk3_LAW.json: dK = 3)."""
    files = {}
    for law in sorted(os.listdir(root)):
        d = os.path.join(root, law)
        if law == "shared" or not os.path.isdir(d):
            continue
        names = sorted(n for n in os.listdir(d) if n.endswith("_%s.json" % law))
        names.sort(key=lambda n: n != "map_%s.json" % law)
        for name in names:
            with open(os.path.join(d, name)) as f:
                m = json.load(f)
            if m.get("command") == "map":
                files.setdefault(law, []).append(m)
    if not files:
        sys.exit("map_table.py: no map (LAW/NAME_LAW.json) under '%s'" % root)
    return files


def merged(ms):
    """One map from a law's files: their cells, the union of M and dK, and
    smallest_dK_99 over all of them."""
    cells = [c for m in ms for c in m["cells"]]
    Ms = sorted({c["M"] for c in cells})
    dKs = sorted({c["dK"] for c in cells})
    small = []
    for M in Ms:
        ok = [c for c in cells if c["M"] == M and c["global"]["fraction"] >= 0.99]
        c = min(ok, key=lambda c: c["dK"]) if ok else None
        small.append(dict(M=M, dK=c["dK"], **c["global"]) if c else {"M": M, "dK": None})
    return {"cells": cells, "M": Ms, "dK": dKs, "smallest_dK_99": small}


def load_maps(root):
    return {law: merged(ms) for law, ms in load_files(root).items()}


def cell(m, M, dK):
    for c in m["cells"]:
        if c["M"] == M and c["dK"] == dK:
            return c
    return None


def fmt(share):
    lo, hi = share["wilson95"]
    return "%.3f [%.3f, %.3f]" % (share["fraction"], lo, hi)


def tables(maps):
    laws = list(maps)
    first = maps[laws[0]]
    out = ["| M | " + " | ".join("K=M%s %s" % ("+%d" % dK if dK else "", law)
                                for dK in first["dK"] for law in laws) + " |"]
    out.append("| --- " * (1 + len(first["dK"]) * len(laws)) + "|")
    for M in first["M"]:
        row = []
        for dK in first["dK"]:
            for law in laws:
                c = cell(maps[law], M, dK)
                row.append(fmt(c["global"]) if c else "-")
        out.append("| %d | %s |" % (M, " | ".join(row)))
    out.append("")
    out.append("smallest dK with global fraction >= 0.99:")
    for law in laws:
        s = ["M=%d: %s" % (e["M"], "none" if e.get("dK") is None else
                           "%d (%s)" % (e["dK"], fmt(e)))
             for e in maps[law]["smallest_dK_99"]]
        out.append("- %s: %s" % (law, "; ".join(s)))
    out.append("")
    out.append("families trapping runs at K = M + 1 (k1: loss, Hessian verdict, runs per law):")
    for M in first["M"]:
        fams = {}
        for law in laws:
            c = cell(maps[law], M, 1)
            for f in (c["families"] if c else []):
                key = (-1 if f["k1"] is None else f["k1"], round(f["loss"], 8))
                fams.setdefault(key, {"hv": f.get("hessian_verdict", "-"), "n": {}})
                fams[key]["n"][law] = fams[key]["n"].get(law, 0) + f["count"]
        parts = ["%s: %.4g %s %s" % ("unmatched" if k1 < 0 else "k1=%d" % k1, loss, v["hv"],
                                         "/".join(str(v["n"].get(l, 0)) for l in laws))
                 for (k1, loss), v in sorted(fams.items())]
        out.append("- M=%d: %s" % (M, "; ".join(parts) if parts else "none"))
    return "\n".join(out)


def runs_lines(path):
    """The records of a runs file (its lines after the header) as text,
    gzipped or not."""
    opener = gzip.open if not os.path.exists(path) else open
    with opener(path if os.path.exists(path) else path + ".gz", "rt") as f:
        return [line for line in f.read().splitlines()[1:] if line.strip()]


def read_runs(path):
    return [json.loads(line) for line in runs_lines(path)]


def check_cell(where, c, recs, same):
    """The counts and Wilson intervals of a map cell against its runs."""
    n = len(recs)
    same(where + " done", c["done"], n)
    same(where + " indices", [r["index"] for r in recs], list(range(n)))
    glob = sum(1 for r in recs if r["class"] == "global_minimum/k1=0")
    unconv = sum(1 for r in recs if not r["converged"])
    same(where + " global", c["global"]["count"], glob)
    same(where + " not_converged", c["not_converged"]["count"], unconv)
    for key, k in (("global", glob), ("not_converged", unconv)):
        for a, b in zip(c[key]["wilson95"], wilson95(k, n)):
            same(where + " " + key + " wilson", a, b)
    for f in c["families"]:
        k = sum(1 for r in recs if r["class"] == f["class"] and r["converged"])
        same(where + " " + f["class"], f["count"], k)
        for a, b in zip(f["wilson95"], wilson95(k, n)):
            same(where + " " + f["class"] + " wilson", a, b)
    listed = glob + unconv + sum(f["count"] for f in c["families"])
    same(where + " every run counted once", listed, n)


def same_as_record(where, root, maps, law, M, K, recs, prefixes, same):
    """The runs recs of a record cell run again with more families: every
    run ends as in the record (loss, stop, time), and a run classed
    otherwise was unmatched there and is now in one of the families named
    by prefixes.  False when the record has no such cell."""
    ref = [rc for rm in maps.get(law, []) for rc in rm["cells"] if (rc["M"], rc["K"]) == (M, K)]
    same(where + " cells of the record", len(ref), 1)
    if len(ref) != 1:
        return False
    old = read_runs(os.path.join(root, law, ref[0]["files"]["runs"]))
    same(where + " runs of the record", len(old), len(recs))
    changed = 0
    for x, y in zip(old, recs):
        same(where + " run %d ends as in the record" % x["index"],
             (x["eps"], x["stop"], x["t"]), (y["eps"], y["stop"], y["t"]))
        if x["class"] != y["class"]:
            changed += 1
            same(where + " run %d: %s, then %s" % (x["index"], x["class"], y["class"]),
                 (x["family"], y["class"].startswith(prefixes)), (None, True))
    same(where + " runs newly classified", changed > 0, True)
    return True


def check_swept_cell(root, maps, d, name, same):
    """shared/sweep_LAW.M<M>.K<K>.summary.json and its runs: the classes
    recounted, and the runs against the record's (same_as_record, the new
    families those of the ansatz of K = M + 2, 3, 4: k1_shared, k1_shared2,
    k1_shared3).  1 when the record has the cell."""
    law, mk = name[len("sweep_"):].split(".", 1)
    M, K = (int(x[1:]) for x in mk.split(".")[:2])
    ansatz = "k1_shared" if K - M == 2 else "k1_shared%d" % (K - M - 1)
    where = "shared/" + name
    recs = read_runs(os.path.join(d, name.replace(".summary.json", ".runs.jsonl")))
    with open(os.path.join(d, name)) as f:
        summ = json.load(f)
    count = {}
    for r in recs:
        count[r["class"]] = count.get(r["class"], 0) + 1
    same(where + " runs", summ["done"], len(recs))
    listed = {c["class"]: c["count"] for c in summ["classes"]}
    for cls in sorted(set(listed) | set(count)):
        same(where + " class " + cls, listed.get(cls, 0), count.get(cls, 0))
    return 1 if same_as_record(where, root, maps, law, M, K, recs, (ansatz + "/",), same) else 0


def check_shared(root, maps, same):
    """The record's cells run again with more families, in DIR/shared/:
    LAW_dkN.json, maps run with an --ansatz file (docs/map.md), each
    counted from its runs; and sweep_LAW.M<M>.K<K>.runs.jsonl(.gz) with
    its .summary.json, a cell's sweep run again with --families FILE (a
    fixed-points result of a k1_shared ansatz: check_swept_cell).  Both
    against the record's runs (same_as_record).  Returns the cells
    checked."""
    d = os.path.join(root, "shared")
    cells = 0
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if name.startswith("sweep_") and name.endswith(".summary.json"):
            cells += check_swept_cell(root, maps, d, name, same)
            continue
        if not name.endswith(".json") or name.count(".") != 1:
            continue
        with open(os.path.join(d, name)) as f:
            m = json.load(f)
        if m.get("command") != "map":
            continue
        prefixes = tuple(os.path.splitext(os.path.basename(a))[0] + "/" for a in m["ansatz"])
        for c in m["cells"]:
            where = "shared/%s M=%d K=%d" % (name, c["M"], c["K"])
            recs = read_runs(os.path.join(d, c["files"]["runs"]))
            check_cell(where, c, recs, same)
            if same_as_record(where, root, maps, m["law"], c["M"], c["K"], recs, prefixes, same):
                cells += 1
    return cells


def check(root, maps):
    bad = []

    def same(what, a, b):
        if isinstance(a, float) or isinstance(b, float):
            ok = abs(a - b) <= 1e-12
        else:
            ok = a == b
        if not ok:
            bad.append("%s: %r != %r" % (what, a, b))

    cells = 0
    for law, m in ((law, m) for law, ms in maps.items() for m in ms):
        for c in m["cells"]:
            where = "%s M=%d K=%d" % (law, c["M"], c["K"])
            check_cell(where, c, read_runs(os.path.join(root, law, c["files"]["runs"])), same)
            cells += 1
        for e in m["smallest_dK_99"]:
            frac = {c["dK"]: c["global"]["fraction"] for c in m["cells"] if c["M"] == e["M"]}
            want = min((dK for dK, x in frac.items() if x >= 0.99), default=None)
            same("%s M=%d smallest_dK_99" % (law, e["M"]), e.get("dK"), want)
    shared = check_shared(root, maps, same)
    for b in bad[:20]:
        print("map_table.py: " + b, file=sys.stderr)
    print("map_table.py --check: %d cells and %d cells run again with more families, "
          "%d differences" % (cells, shared, len(bad)))
    return 1 if bad else 0


def check_same_runs(root, ref):
    """Every cell of the maps of root that the maps of ref have (same law,
    M, K): the runs of the smaller map are the first runs of the larger,
    each record the same text (bit for bit: the same ends, times, counts).
    Prints the cells compared; 1 on any difference or when none compare."""
    refs = {(law, c["M"], c["K"]): (law, c["files"]["runs"])
            for law, ms in load_files(ref).items() for m in ms for c in m["cells"]}
    cells = runs = 0
    bad = []
    for law, ms in load_files(root).items():
        for c in (c for m in ms for c in m["cells"]):
            if (law, c["M"], c["K"]) not in refs:
                continue
            a = runs_lines(os.path.join(root, law, c["files"]["runs"]))
            rlaw, rfile = refs[(law, c["M"], c["K"])]
            b = runs_lines(os.path.join(ref, rlaw, rfile))
            n = min(len(a), len(b))
            diff = [i for i in range(n) if a[i] != b[i]]
            if diff:
                bad.append("%s M=%d K=%d: run %d differs from %s's" % (law, c["M"], c["K"],
                                                                     diff[0], ref))
            cells += 1
            runs += n
    for b in bad[:20]:
        print("map_table.py: " + b, file=sys.stderr)
    print("map_table.py --same-runs: %d cells, %d runs compared with %s, %d differences"
          % (cells, runs, ref, len(bad)))
    return 1 if bad or not cells else 0


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    args = [a for a in argv if a != "--check"]
    unknown = [a for a in args if a.startswith("-") and a != "--same-runs"]
    if unknown:
        refuse("unknown option %s" % unknown[0])
    ref = None
    if "--same-runs" in args:
        i = args.index("--same-runs")
        if i + 1 >= len(args):
            refuse("--same-runs needs a directory")
        ref = args[i + 1]
        del args[i:i + 2]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "..", "data", "map")
    if len(args) > 1:
        refuse("one directory, not %d" % len(args))
    for d in (root, ref) if ref else (root,):
        if not os.path.isdir(d):
            refuse("%s: not a directory" % d)
    if "--check" in argv:
        rc = check(root, load_files(root))
        return rc or (check_same_runs(root, ref) if ref else 0)
    print(tables(load_maps(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
