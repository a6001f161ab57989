#!/usr/bin/env python3
"""earlystop_check.py: the early stop against the full runs (issue 12).

    python3 scripts/earlystop_check.py BASE_PREFIX CERT_PREFIX REF_PREFIX K1,K2,...

BASE_PREFIX.K<K>.runs.jsonl (or .runs.jsonl.gz) and CERT_PREFIX.K<K>... are the
runs of two `scm compare` with the same seeds, without and with --certify;
REF_PREFIX.K<K>.summary.json the report of record (data/compare_M17/compare_M17).
Prints, per K, the runs whose class differs (there should be none), the steps
and rhs evaluations saved, and a Markdown table of fractions per k1 with 95%
Wilson intervals next to the report of record's."""
import gzip
import json
import math
import sys
from collections import Counter

from script_args import parse


def load_runs(prefix, K):
    p = "%s.K%s.runs.jsonl" % (prefix, K)
    try:
        f = open(p)
    except FileNotFoundError:
        f = gzip.open(p + ".gz", "rt")
    with f:
        lines = [json.loads(l) for l in f]
    return lines[1:]


def wilson(k, n, z=1.959963984540054):
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (0.0 if k == 0 else max(0.0, c - h), 1.0 if k == n else min(1.0, c + h))


def rows_of_runs(runs):
    out = Counter()
    for r in runs:
        out["k1=%d" % r["k1"] if r["k1"] is not None else r["class"]] += 1
    return out, len(runs)


def rows_of_summary(path):
    s = json.load(open(path))
    s = s.get("summary", s)
    out = Counter()
    for c in s["classes"]:
        out["k1=%d" % c["k1"] if c["k1"] is not None else c["class"]] += c["count"]
    return out, s["done"]


def cell(k, n):
    lo, hi = wilson(k, n)
    return "%.4f [%.4f, %.4f] (%d)" % (k / n, lo, hi, k)


def main():
    (base, cert, ref, Ks), _ = parse(__doc__, 4, 4)
    Ks = Ks.split(",")
    bad = 0
    for K in Ks:
        A, B = load_runs(base, K), load_runs(cert, K)
        n = min(len(A), len(B))
        A, B = A[:n], B[:n]
        mis = [(a["index"], a["class"], a["stop"], b["class"], b["stop"])
               for a, b in zip(A, B) if a["class"] != b["class"]]
        bad += len(mis)
        sa, sb = sum(r["steps"] for r in A) / n, sum(r["steps"] for r in B) / n
        ra, rb = sum(r["rhs"] for r in A) / n, sum(r["rhs"] for r in B) / n
        print("K = %s: %d runs, %d in another class; mean steps %.0f -> %.0f (x%.2f), "
              "rhs %.0f -> %.0f (x%.2f)" % (K, n, len(mis), sa, sb, sa / sb, ra, rb, ra / rb))
        print("  stops without:", dict(Counter(r["stop"] for r in A)),
              " with:", dict(Counter(r["stop"] for r in B)))
        for m in mis:
            print("  DIFFERENT: run %d: %s (%s) without, %s (%s) with" % m)
        R, nr = rows_of_summary("%s.K%s.summary.json" % (ref, K))
        TA, na = rows_of_runs(A)
        TB, nb = rows_of_runs(B)
        keys = sorted(set(R) | set(TA) | set(TB),
                      key=lambda x: (not x.startswith("k1="), int(x[3:]) if x.startswith("k1=") else 0, x))
        print("\n| K = %s | report of record (%d runs) | without (%d) | with --certify (%d) | "
              "intervals overlap |\n| --- | --- | --- | --- | --- |" % (K, nr, na, nb))
        for k in keys:
            lo, hi = wilson(R[k], nr)
            l2, h2 = wilson(TB[k], nb)
            print("| %s | %s | %s | %s | %s |" % (k, cell(R[k], nr), cell(TA[k], na), cell(TB[k], nb),
                                                 "yes" if not (h2 < lo or l2 > hi) else "no"))
        print()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
