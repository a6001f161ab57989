#!/usr/bin/python3
"""certify_collect.py: the JSON results of scripts/certify_table.sh into
tables (docs/certify.md section 6):

  certified_minima.csv    one row per distinct (by loss) certified strict local
                          minimum of the grid, and every point of the K = M = 1000
                          runs;
  certified_summary.csv   counts per (K, M);
  certified_coverage.csv  per (K, M, k1): the minimum candidates listed (block
                          stable, or the family's classes below M = 8), how many
                          are certified strict minima, certified saddles (the
                          candidate's full Hessian has a proved negative
                          eigenvalue), certified but strictness unproved, or not
                          certified; the lowest certified minimum's loss and bound;
  certified_refused.csv   every candidate that is not a certified strict minimum
                          or saddle, with its reason.

    /usr/bin/python3 scripts/certify_collect.py OUTDIR DEST [--coverage-only]
    /usr/bin/python3 scripts/certify_collect.py --table RESULT.json DEST [CERT_1000.json ...]

--coverage-only writes the last two only (a minima-mode run, which lists
no saddles of the grid, would make the first two incomparable).

--table: RESULT.json is `scm certify --table data/plateau_table_M100.csv -o`
(the plateau table's minimum rows, min_candidate and global_min); then
certified_minima.csv has one row per (K, M, family k1) with a candidate:
its lowest certified strict minimum, or, if none, the verdict and reason of
its lowest candidate ("no certified minimum"), and the rows of the
CERT_1000.json files (`scm certify --K 1000 --M 1000 --k1 k -o`) as they
are; the counts of certified_coverage.csv are those of the table rows."""
import collections
import csv
import glob
import json
import os
import sys

from script_args import parse

COLS = ["K", "M", "dK", "k1", "ansatz", "instance", "index", "eps", "loss_lo", "loss_hi",
        "radius", "lambda_min_lower", "lambda_min_float", "complement_lower", "verdict",
        "reason"]
MIN, SAD = "certified strict local minimum", "certified saddle"
UNPROVED = "certified critical point, strictness unproved"


def instance(p):
    """The point's ansatz instance label ("ansatz_k1" in files of before 2026-12-06)."""
    return p["instance"] if "instance" in p else p["ansatz_k1"]


def row(p):
    h = p.get("hessian", {})
    k1 = p.get("k1", "")  # anti-aligned students; "" if not specialised
    return [p["K"], p["M"], p["K"] - p["M"], k1, p["ansatz"], instance(p), p["index"],
            repr(p["eps"]), repr(p["loss_enclosure"][0]), repr(p["loss_enclosure"][1]),
            repr(p["radius"]), repr(h.get("lambda_min_lower")), repr(h.get("lambda_min_float")),
            repr(h.get("complement_lower")), p["verdict"], p["reason"]]


def files(src):
    def key(f):
        return [int(x) if x.isdigit() else x
                for x in os.path.basename(f)[5:-5].replace("k", "_").split("_")]
    return sorted(glob.glob(os.path.join(src, "cert_*.json")), key=key)


def coverage(pts, K, M, cov, refused):
    by = collections.defaultdict(list)
    for p in pts:
        by[p.get("k1", -1)].append(p)
    for k1 in sorted(by):
        c = collections.Counter(p["verdict"] for p in by[k1])
        mins = [p for p in by[k1] if p["verdict"] == MIN]
        best = min(mins, key=lambda p: p["eps"]) if mins else None
        cov.append([K, M, K - M, k1, len(by[k1]), c[MIN], len({"%.11e" % p["eps"] for p in mins}),
                    c[SAD], c[UNPROVED], c["not certified"],
                    repr(best["eps"]) if best else "",
                    repr(best["hessian"]["lambda_min_lower"]) if best else ""])
        for p in by[k1]:
            if p["verdict"] not in (MIN, SAD):
                refused.append([K, M, K - M, k1, p["ansatz"], instance(p), p["index"],
                                repr(p["eps"]), p["verdict"], p["reason"]])


def write(path, head, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        w.writerows(rows)


def main(src, dst, coverage_only):
    rows, summary, cov, refused = [], [], [], []
    for f in files(src):
        d = json.load(open(f))
        pts = d["points"]
        if not pts:
            continue
        K, M = pts[0]["K"], pts[0]["M"]
        grid = "_k" not in os.path.basename(f)
        if grid:
            coverage(pts, K, M, cov, refused)
        seen = set()
        cnt = collections.Counter()
        for p in pts:
            v = p["verdict"]
            cnt[v] += 1
            if grid and v != MIN:
                continue
            key = "%.11e" % p["eps"]
            if grid and key in seen:
                cnt["duplicate"] += 1
                continue
            seen.add(key)
            rows.append(row(p))
        if grid:
            summary.append([K, M, K - M, len(pts), d["n_certified"], cnt[MIN],
                            cnt[MIN] - cnt["duplicate"], cnt[SAD], cnt[UNPROVED],
                            cnt["not certified"]])
    write(os.path.join(dst, "certified_coverage.csv"),
          ["K", "M", "dK", "k1", "candidates", "strict_minima", "strict_minima_distinct",
           "saddles", "strictness_unproved", "not_certified", "lowest_min_eps",
           "lowest_min_lambda_lower"], cov)
    write(os.path.join(dst, "certified_refused.csv"),
          ["K", "M", "dK", "k1", "ansatz", "instance", "index", "eps", "verdict", "reason"],
          refused)
    if not coverage_only:
        write(os.path.join(dst, "certified_minima.csv"), COLS, rows)
        write(os.path.join(dst, "certified_summary.csv"),
              ["K", "M", "dK", "points", "certified", "strict_minima", "strict_minima_distinct",
               "saddles", "strictness_unproved", "not_certified"], summary)
    print("%d minima rows, %d grid files, %d (K, M, k1) families, %d not certified minima"
          % (len(rows), len(summary), len(cov), len(refused)))


FAM_COLS = ["K", "M", "dK", "k1", "candidates", "strict_minima", "ansatz", "instance",
            "table_line", "eps", "loss_lo", "loss_hi", "radius", "lambda_min_lower",
            "lambda_min_float", "complement_lower", "verdict", "reason"]


def num(v):
    return "" if v is None else repr(v)


def fam_row(p, n, nmin):
    h = p.get("hessian", {})
    verdict = p["verdict"] if p["verdict"] == MIN else "no certified minimum"
    reason = p["reason"] if p["verdict"] == MIN else "%s: %s" % (p["verdict"], p["reason"])
    return [p["K"], p["M"], p["K"] - p["M"], p.get("k1", ""), n, nmin, p["ansatz"],
            instance(p), p.get("table_line", p["index"]), num(p["eps"]),
            num(p["loss_enclosure"][0]), num(p["loss_enclosure"][1]), num(p["radius"]),
            num(h.get("lambda_min_lower")), num(h.get("lambda_min_float")),
            num(h.get("complement_lower")), verdict, reason]


def main_table(res, dst, extra):
    pts = json.load(open(res))["points"]
    by = collections.defaultdict(list)
    for p in pts:
        by[(p["K"], p["M"])].append(p)
    fams, summary, cov, refused = [], [], [], []
    for K, M in sorted(by, key=lambda km: (km[0] - km[1], km[1])):
        q = by[(K, M)]
        coverage(q, K, M, cov, refused)
        fam = collections.defaultdict(list)
        for p in q:
            fam[p.get("k1", -1)].append(p)
        for k1 in sorted(fam):
            mins = [p for p in fam[k1] if p["verdict"] == MIN]
            best = min(mins or fam[k1], key=lambda p: p["eps"])
            fams.append(fam_row(best, len(fam[k1]), len(mins)))
        c = collections.Counter(p["verdict"] for p in q)
        summary.append([K, M, K - M, len(q), sum(p["certified"] for p in q), c[MIN],
                        len({"%.11e" % p["eps"] for p in q if p["verdict"] == MIN}), c[SAD],
                        c[UNPROVED], c["not certified"]])
    for f in extra:
        for p in json.load(open(f))["points"]:
            fams.append(fam_row(p, "", int(p["verdict"] == MIN)))
    write(os.path.join(dst, "certified_coverage.csv"),
          ["K", "M", "dK", "k1", "candidates", "strict_minima", "strict_minima_distinct",
           "saddles", "strictness_unproved", "not_certified", "lowest_min_eps",
           "lowest_min_lambda_lower"], cov)
    write(os.path.join(dst, "certified_refused.csv"),
          ["K", "M", "dK", "k1", "ansatz", "instance", "index", "eps", "verdict", "reason"],
          refused)
    write(os.path.join(dst, "certified_minima.csv"), FAM_COLS, fams)
    write(os.path.join(dst, "certified_summary.csv"),
          ["K", "M", "dK", "points", "certified", "strict_minima", "strict_minima_distinct",
           "saddles", "strictness_unproved", "not_certified"], summary)
    print("%d family rows, %d (K, M), %d (K, M, k1) families, %d candidates not certified "
          "minima" % (len(fams), len(summary), len(cov), len(refused)))


if __name__ == "__main__":
    if "--table" in sys.argv[1:]:
        args, _ = parse(__doc__, 2, None, ("--table",), (slice(0, 1), slice(2, None)))
        main_table(args[0], args[1], args[2:])
    else:
        args, flags = parse(__doc__, 2, 2, ("--coverage-only",), slice(0, 1))
        main(args[0], args[1], "--coverage-only" in flags)
