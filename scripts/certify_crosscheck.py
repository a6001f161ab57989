#!/usr/bin/python3
"""certify_crosscheck.py: the table route against the enumeration route
(docs/certify.md section 6).

    /usr/bin/python3 scripts/certify_crosscheck.py TABLE.json DIR [DIR ...]

TABLE.json: `scm certify --table data/plateau_table_M100.csv [...] -o`;
DIR: cert_K_M.json files of scripts/certify_table.sh (the points a fresh
enumeration finds, certified).  For every (K, M) in DIR and every family k1:
the certified strict minima of each side, matched by loss (within 1e-9),
the ones only one side has (with their ansatz), and every point that one
side calls a certified strict minimum and the other a certified saddle
(a conflict: there must be none); the largest relative difference of
the proved eigenvalue bounds of the minima both have.  Exit 1 on a conflict."""
import collections
import glob
import json
import os
import sys

from script_args import parse

MIN, SAD = "certified strict local minimum", "certified saddle"
TOL = 1e-9


def instance(p):
    """The point's ansatz instance label ("ansatz_k1" in files of before 2026-12-06)."""
    return p["instance"] if "instance" in p else p["ansatz_k1"]


def near(x, xs):
    return any(abs(x - y) < TOL for y in xs)


def by_family(pts, K, M):
    t = collections.defaultdict(lambda: collections.defaultdict(list))
    for p in pts:
        if p["K"] == K and p["M"] == M:
            t[p.get("k1", -1)][p["verdict"]].append(p)
    return t


def main(table, dirs):
    tab = json.load(open(table))["points"]
    conflicts = 0
    tot = collections.Counter()
    worst = [0.0]
    for f in sorted(f for d in dirs for f in glob.glob(os.path.join(d, "cert_*_*.json"))):
        pts = json.load(open(f))["points"]
        if not pts:
            continue
        K, M = pts[0]["K"], pts[0]["M"]
        E, T = by_family(pts, K, M), by_family(tab, K, M)
        if not T:
            continue
        tot["(K, M)"] += 1
        for k1 in sorted(set(E) | set(T)):
            em = [p["eps"] for p in E[k1][MIN]]
            tm = [p["eps"] for p in T[k1][MIN]]
            tot["families with a minimum, both"] += bool(em) and bool(tm)
            tot["families with a minimum, enumeration only"] += bool(em) and not tm
            tot["families with a minimum, table only"] += bool(tm) and not em
            only_e = [p for p in E[k1][MIN] if not near(p["eps"], tm)]
            only_t = [p for p in T[k1][MIN] if not near(p["eps"], em)]
            for p in only_e + only_t:
                side = "enumeration" if p in only_e else "table"
                tot["minima only in the " + side] += 1
                print("K=%d M=%d k1=%s: minimum only in the %s: %s instance %d eps %.12g" %
                      (K, M, k1, side, p["ansatz"], instance(p), p["eps"]))
            for p in T[k1][MIN]:
                q = [q for q in E[k1][MIN] if abs(q["eps"] - p["eps"]) < TOL]
                if q:
                    a, b = p["hessian"]["lambda_min_lower"], q[0]["hessian"]["lambda_min_lower"]
                    worst[0] = max(worst[0], abs(a - b) / abs(b))
            for a, b in ((E, T), (T, E)):
                for p in a[k1][MIN]:
                    if near(p["eps"], [q["eps"] for q in b[k1][SAD]]):
                        conflicts += 1
                        print("CONFLICT K=%d M=%d k1=%s eps %.12g: minimum and saddle" %
                              (K, M, k1, p["eps"]))
    for k, v in sorted(tot.items()):
        print("%s: %d" % (k, v))
    print("largest relative difference of the minima's lambda_min_lower: %.2g" % worst[0])
    print("conflicts: %d" % conflicts)
    return 1 if conflicts else 0


if __name__ == "__main__":
    args, _ = parse(__doc__, 2, None, inputs=slice(0, None))
    sys.exit(main(args[0], args[1:]))
