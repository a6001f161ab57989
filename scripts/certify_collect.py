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

--coverage-only writes the last two only (a minima-mode run, which lists
no saddles of the grid, would make the first two incomparable)."""
import collections
import csv
import glob
import json
import os
import sys

COLS = ["K", "M", "dK", "k1", "ansatz", "instance", "index", "eps", "loss_lo", "loss_hi",
        "radius", "lambda_min_lower", "lambda_min_float", "complement_lower", "verdict",
        "reason"]
MIN, SAD = "certified strict local minimum", "certified saddle"
UNPROVED = "certified critical point, strictness unproved"


def row(p):
    h = p.get("hessian", {})
    k1 = p.get("k1", "")  # anti-aligned students; "" if not specialised
    return [p["K"], p["M"], p["K"] - p["M"], k1, p["ansatz"], p["ansatz_k1"], p["index"],
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
                refused.append([K, M, K - M, k1, p["ansatz"], p["ansatz_k1"], p["index"],
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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--coverage-only" in sys.argv[3:])
