#!/usr/bin/env python3
"""compare_agreement.py REF_PREFIX NEW_PREFIX K1,K2,...: two `scm compare`
reports of the same runs (seeds) side by side, per K and k1 (the summaries'
classes summed by k1, and the runs not converged): counts, fractions with
their 95% Wilson intervals, whether the intervals overlap, and the mean
steps of each (docs/sweeps.md)."""
import json
from collections import Counter

from script_args import parse


def by_k1(summary):
    c = Counter()
    for cl in summary["classes"]:
        c["k1=%d" % cl["k1"] if cl.get("k1") is not None and cl["k1"] >= 0 else cl["class"]] += \
            cl["count"]
    # the classes list the runs not converged as a class of their own
    # (older summaries may not): count them once
    c["not_converged"] = max(c["not_converged"], summary["not_converged"]["total"])
    return c


def wilson(k, n, z=1.959963984540054):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / d
    return (max(0.0, c - h), min(1.0, c + h))


def main():
    (ref, new, ks), _ = parse(__doc__, 3, 3)
    ks = ks.split(",")
    for K in ks:
        a = json.load(open("%s.K%s.summary.json" % (ref, K)))
        b = json.load(open("%s.K%s.summary.json" % (new, K)))
        ca, cb = by_k1(a), by_k1(b)
        na, nb = a["done"], b["done"]
        print("K = %s: %d and %d runs; mean steps %.0f -> %.0f (x%.2f)\n" %
              (K, na, nb, a["solver"]["steps_mean"], b["solver"]["steps_mean"],
               a["solver"]["steps_mean"] / b["solver"]["steps_mean"]))
        print("| K = %s | reference | new | intervals overlap |" % K)
        print("| --- | --- | --- | --- |")
        keys = sorted(set(ca) | set(cb), key=lambda k: (k == "not_converged",
                      int(k[3:]) if k.startswith("k1=") else 99, k))
        bad = 0
        for k in keys:
            wa, wb = wilson(ca[k], na), wilson(cb[k], nb)
            ok = wa[0] <= wb[1] and wb[0] <= wa[1]
            bad += not ok
            print("| %s | %.4f [%.4f, %.4f] (%d) | %.4f [%.4f, %.4f] (%d) | %s |" %
                  (k, ca[k] / na, wa[0], wa[1], ca[k], cb[k] / nb, wb[0], wb[1], cb[k],
                   "yes" if ok else "no"))
        print("\n%d of %d rows without overlap\n" % (bad, len(keys)))


if __name__ == "__main__":
    main()
