#!/usr/bin/env bash
# test_readme.sh SCM: README.md states what is true (issue 25 item 8).
#  - The worked example: the block between "<!-- readme-test: worked-example"
#    and "<!-- /readme-test -->" holds a ```sh block of commands and a ```
#    block of their printed output.  The commands are run (./build/scm is
#    SCM, in a scratch folder with the repository's examples/) and their
#    output compared line for line with the README's, the solver's wall time
#    ("..., 0.002 s") aside.
#  - The plateau tables' paragraph ("<!-- readme-test: plateau-tables"): each
#    of its claims checked against data/ and the built-in ansätze
#    (src/landscape/ansatz_builtin.c, made from ansatz/*.json): which ansätze
#    the table covers (every built-in one at its K - M), its M and K - M,
#    residuals, stability classes (no block-only one), that the k1_one
#    minimum at K = M = 20 (0.0597534191121) is a min_candidate row, the
#    M = 100 table's equal rows up to
#    M = 40 and its counts, the large-M fit 0.2973/M, the stability data's
#    coverage; and that the README says exactly these things.
# Prints "N passed, N failed".
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
exec "$PY" - "$SCM" "$SRC" "$W" <<'PY'
import csv
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict

SCM, SRC, W = sys.argv[1:4]
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what)


readme = open(os.path.join(SRC, "README.md")).read()


def block(tag):
    """The README text between <!-- readme-test: tag ... --> and <!-- /readme-test -->."""
    m = re.search(r"<!-- readme-test: %s\b.*?-->\n(.*?)<!-- /readme-test -->" % tag, readme,
                  re.S)
    check(m is not None, "README.md has no readme-test block '%s'" % tag)
    return m.group(1) if m else ""


# ---- the worked example -------------------------------------------------
ex = block("worked-example")
fences = re.findall(r"```(\w*)\n(.*?)```", ex, re.S)
check(len(fences) == 2 and fences[0][0] == "sh" and fences[1][0] == "",
      "worked example: a ```sh block of commands, then a ``` block of output")
if len(fences) == 2:
    os.makedirs(os.path.join(W, "examples"))
    for f in os.listdir(os.path.join(SRC, "examples")):
        if f.endswith(".json"):
            with open(os.path.join(SRC, "examples", f)) as a, \
                    open(os.path.join(W, "examples", f), "w") as b:
                b.write(a.read())
    out = ""
    for cmd in fences[0][1].strip().splitlines():
        argv = cmd.split()
        check(argv[0] == "./build/scm", "worked example: a command not of scm: %r" % cmd)
        r = subprocess.run([SCM] + argv[1:], cwd=W, capture_output=True, text=True)
        check(r.returncode == 0, "worked example: %r exits %d: %s" % (cmd, r.returncode, r.stderr))
        out += r.stdout

    def untimed(text):
        return [re.sub(r"(Jacobians, )[0-9.]+ s$", r"\1(time) s", ln)
                for ln in text.rstrip("\n").split("\n")]
    want, got = untimed(fences[1][1]), untimed(out)
    check(len(want) == len(got), "worked example: %d lines printed, README shows %d"
          % (len(got), len(want)))
    for i, (a, b) in enumerate(zip(want, got)):
        check(a == b, "worked example line %d: README %r, real %r" % (i + 1, a, b))
    check(any("(time) s" in ln for ln in got), "worked example: no solver time line to mask")

# ---- the plateau tables' claims ------------------------------------------
para = " ".join(block("plateau-tables").split())


def says(text):
    check(text in para, "README's plateau paragraph no longer says %r" % text)


def rows(name):
    with open(os.path.join(SRC, "data", name), newline="") as f:
        return list(csv.DictReader(f))


builtin = re.findall(r'\\"name\\": \\"([A-Za-z0-9_]+)\\"',
                     open(os.path.join(SRC, "src", "landscape", "ansatz_builtin.c")).read())
shipped = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(SRC, "ansatz"))
                 if f.endswith(".json"))
check(sorted(builtin) == shipped, "built-in ansätze %s vs ansatz/*.json %s" % (builtin, shipped))

T = rows("plateau_table.csv")
by_dK = defaultdict(set)
for r in T:
    by_dK[int(r["dK"])].add(r["ansatz"])
check(dict(by_dK) == {0: {"k1", "k1_one"}, 1: {"k1_extra"}, 2: {"k1_extra"}},
      "plateau table's ansätze by K - M: %s" % dict(by_dK))
says("block-symmetric ansätze `k1` and `k1_one` (the K = M rows: every built-in ansatz for "
     "K = M) and `k1_extra` (K = M + 1, M + 2)")
km = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(SRC, "ansatz"))
            if f.endswith(".json") and "K - M" in
            json.load(open(os.path.join(SRC, "ansatz", f))).get("require", []))
check(km == sorted(by_dK[0]) and len(builtin) == 3,
      "built-in ansätze for K = M %s, the K = M rows' %s" % (km, sorted(by_dK[0])))
missing = sorted(set(builtin) - set().union(*by_dK.values()))
check(missing == [], "built-in ansätze not in the table: %s" % missing)
Ms = {int(r["M"]) for r in T}
check(Ms == set(range(2, 41)), "plateau table's M: %d..%d" % (min(Ms), max(Ms)))
says("M = 2 .. 40")
check(all(r["residual_kind"] in ("full", "full_polished") and float(r["residual"]) < 1e-12
          for r in T),
      "a plateau table row with a full residual >= 1e-12")
says("full residual (below 1e-12)")
cls = Counter(r["classification"] for r in T)
check(set(cls) == {"min_candidate", "saddle", "global_min", "degenerate"} and
      all(float(r["full_max_eig"]) <= 1e-6 for r in T if r["classification"] == "min_candidate"),
      "stability classes %s; a min_candidate without the full Jacobian's spectrum" % dict(cls))
says("a stability class (`min_candidate`, `saddle`, `global_min`) from the full Jacobian at "
     "every row: dense up to K = 20, beyond it its exact symmetric spectrum")
near = [r for r in T if r["K"] == r["M"] == "20" and abs(float(r["loss"]) - 0.0597534191121) < 1e-9]
check(len(near) == 1 and near[0]["ansatz"] == "k1_one" and
      near[0]["classification"] == "min_candidate",
      "the k1_one minimum at K = M = 20 in the table: %s" % near)
says("The `k1_one` minimum at K = M = 20, loss 0.0597534191121 (docs/crosscheck.md), is a "
     "`min_candidate` row")
check("0.0597534191121" in open(os.path.join(SRC, "docs", "crosscheck.md")).read(),
      "docs/crosscheck.md no longer gives the k1_one minimum's loss")

T100 = rows("plateau_table_M100.csv")
M100 = {int(r["M"]) for r in T100}
check(M100 == set(range(2, 101)), "M = 100 table's M: %d..%d" % (min(M100), max(M100)))
key = ("K", "M", "loss", "ansatz", "instance", "classification", "scalars")
low = [tuple(r[k] for k in key) for r in T100 if int(r["M"]) <= 40]
check(low == [tuple(r[k] for k in key) for r in T], "M = 100 table's rows up to M = 40")
check({r["ansatz"] for r in T100} == set().union(*by_dK.values()) and
      {r["classification"] for r in T100} == set(cls), "M = 100 table: other ansätze or classes")
one100 = [int(r["M"]) for r in T100 if r["ansatz"] == "k1_one"]
check(one100 and max(one100) == 40, "k1_one rows of the M = 100 table up to M = %s"
      % (max(one100) if one100 else None))
says("extends it to M = 100 (the same rows up to M = 40, the same stability classes; `k1_one` "
     "rows only up to M = 40;")
n = Counter((r["K"], r["M"]) for r in T100)
C = rows("plateau_counts_M100.csv")
check(len(C) == len(n) and all(int(c["rows"]) == n[(c["K"], c["M"])] for c in C),
      "plateau_counts_M100.csv against the M = 100 table's rows per (K, M)")
says("with the families counted per (K, M) in `data/plateau_counts_M100.csv`")
A = rows("plateau_k1_asymptotics.csv")
big = max(A, key=lambda r: float(r["M"]))
Mb = float(big["M"])
check(Mb >= 1e4 and abs(Mb * float(big["fit_half_integer"]) / 0.2973 - 1) < 0.01 and
      all(abs(float(r["fit_half_integer"]) / float(r["loss"]) - 1) < 1e-3
          for r in A if float(r["M"]) >= 100),
      "the k1 = 1 plateau's fit: M eps = %.5g at M = %g, not 0.2973 to 1%%"
      % (Mb * float(big["fit_half_integer"]), Mb))
says("eps ~ 0.2973/M with corrections in powers of M^(-1/2)")
S = rows("plateau_stability.csv")
SC = rows("plateau_stability_counts.csv")
minima = Counter((r["K"], r["M"]) for r in T
                 if r["classification"] in ("min_candidate", "global_min") and int(r["K"]) <= 22)
done = Counter((r["K"], r["M"]) for r in S)
check(done == minima and max(int(r["K"]) for r in S) == 22,
      "plateau_stability.csv: not the table's minima with K <= 22")
tab = Counter((r["K"], r["M"]) for r in T)
check(all(int(c["analysed"]) == done[(c["K"], c["M"])] and int(c["table_rows"]) ==
          tab[(c["K"], c["M"])] == sum(int(c[k]) for k in ("analysed", "saddle_not_run",
          "min_candidate_not_run", "other_not_run")) for c in SC) and
      len(SC) == len(tab), "plateau_stability_counts.csv against the tables")
says("adds stability verdicts (Hessian, Jacobian, perturbation test) for its minima with K <= 22")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
