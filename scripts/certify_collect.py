#!/usr/bin/python3
"""certify_collect.py: the JSON results of scripts/certify_table.sh into
data/certified_minima.csv (one row per distinct certified strict local
minimum, and every point of the K = M = 1000 runs) and
data/certified_summary.csv (counts per (K, M)).

    /usr/bin/python3 scripts/certify_collect.py OUTDIR data/
"""
import collections
import csv
import glob
import json
import os
import sys

COLS = ["K", "M", "k1", "ansatz", "instance", "index", "eps", "loss_lo", "loss_hi", "radius",
        "lambda_min_lower", "lambda_min_float", "complement_lower", "verdict", "reason"]


def row(p):
    h = p.get("hessian", {})
    k1 = p.get("k1", "")  # anti-aligned students; "" if not specialised
    return [p["K"], p["M"], k1, p["ansatz"], p["ansatz_k1"], p["index"], repr(p["eps"]),
            repr(p["loss_enclosure"][0]), repr(p["loss_enclosure"][1]), repr(p["radius"]),
            repr(h.get("lambda_min_lower")), repr(h.get("lambda_min_float")),
            repr(h.get("complement_lower")), p["verdict"], p["reason"]]


def main(src, dst):
    rows, summary = [], []
    for f in sorted(glob.glob(os.path.join(src, "cert_*.json")),
                    key=lambda f: [int(x) if x.isdigit() else x
                                   for x in os.path.basename(f)[5:-5].replace("k", "_").split("_")]):
        d = json.load(open(f))
        pts = d["points"]
        if not pts:
            continue
        K, M = pts[0]["K"], pts[0]["M"]
        grid = "_k" not in os.path.basename(f)
        seen = set()
        cnt = collections.Counter()
        for p in pts:
            v = p["verdict"]
            cnt[v] += 1
            if grid and v != "certified strict local minimum":
                continue
            key = "%.11e" % p["eps"]
            if grid and key in seen:
                cnt["duplicate"] += 1
                continue
            seen.add(key)
            rows.append(row(p))
        if grid:
            summary.append([K, M, len(pts), d["n_certified"],
                            cnt["certified strict local minimum"],
                            cnt["certified strict local minimum"] - cnt["duplicate"],
                            cnt["certified saddle"],
                            cnt["certified critical point, strictness unproved"],
                            cnt["not certified"]])
    with open(os.path.join(dst, "certified_minima.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLS)
        w.writerows(rows)
    with open(os.path.join(dst, "certified_summary.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["K", "M", "points", "certified", "strict_minima", "strict_minima_distinct",
                    "saddles", "strictness_unproved", "not_certified"])
        w.writerows(summary)
    print("%d rows, %d grid files" % (len(rows), len(summary)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
