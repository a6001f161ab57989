#!/usr/bin/env python3
"""crosscheck_table.py DIR: one CSV row per `scm crosscheck` result file
DIR/K*_M*.json (docs/crosscheck.md): K, M, runs, enumerated points, then per
method converged, global minimum, matched, unmatched, not converged (and how
many of those had a vanishing student), and the distinct unmatched losses.
With --md: the Markdown table of docs/crosscheck.md instead (both methods,
plus each method's seconds)."""
import glob
import json
import os

from script_args import parse


def main():
    (d,), flags = parse(__doc__, 1, 1, ("--md",), slice(0, 1))
    md = "--md" in flags
    if md:
        return markdown(d)
    rows = []
    for f in glob.glob(os.path.join(d, "K*_M*.json")):
        r = json.load(open(f))
        e = r["enumeration"]
        row = [r["K"], r["M"], r["runs"], e["points"], e["deflate"], e.get("sweep_passes", 0),
               "+".join(e["ansatze"])]
        for m in ("ode", "gd"):
            s = r["summary"].get(m)
            if s is None:
                row += [""] * 7
                continue
            row += [s["converged"], s["global_minimum"], s["matched"], s["unmatched"],
                    s["not_converged"], s.get("with_small_students", ""),
                    s.get("with_dead_students", "")]
        losses = sorted({round(p["loss"], 10) for p in r["unmatched_points"]})
        row.append(" ".join("%.10g" % x for x in losses))
        rows.append(row)
    rows.sort(key=lambda x: (x[1], x[0]))
    print("K,M,runs,enumerated,deflate,sweep_passes,ansatze,ode_converged,ode_global,ode_matched,ode_unmatched,"
          "ode_not_converged,ode_small,ode_dead,gd_converged,gd_global,gd_matched,gd_unmatched,"
          "gd_not_converged,gd_small,gd_dead,unmatched_losses")
    for row in rows:
        print(",".join(str(x) for x in row))


def markdown(d):
    rows = []
    for f in glob.glob(os.path.join(d, "K*_M*.json")):
        r = json.load(open(f))
        row = [r["K"], r["M"], r["enumeration"]["points"]]
        for m in ("ode", "gd"):
            s = r["summary"][m]
            row += [s["global_minimum"], s["matched"], s["unmatched"], s["not_converged"],
                    "%s / %s" % (s["with_small_students"], s["with_dead_students"]),
                    "%.0f" % s["seconds"]]
        rows.append(row)
    rows.sort(key=lambda x: (x[1], x[0]))
    head = ["K", "M", "enumerated"] + ["%s_%s" % (m, c) for m in ("ode", "gd")
                                       for c in ("global", "matched", "unmatched",
                                                 "not_converged", "small / dead", "s")]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")


if __name__ == "__main__":
    main()
