#!/usr/bin/env bash
# test_reported_losses.sh SCM: the reported losses in the outputs (issue 25,
# item 5; docs/sweeps.md "Reported losses").
#  - `scm run` with scm compare's integrator options, ReLU K = M = 4: a run
#    whose final state's own loss is negative (seed 7) reports eps 0 and says
#    so in final ("eps_of": "global_minimum", "psd_gap" > 0); the own loss of
#    its final (Q, R), recomputed here from the arc-cosine kernel, is indeed
#    negative, and its Schur complement's lowest eigenvalue is -psd_gap; a
#    run that ends above 0 (seed 2) has neither key, and reports its own loss
#    (to the 1e-10 round-off of the double sum near the minimum);
#  - `scm sweep --summary` counts the runs whose loss was zeroed
#    ("eps_zeroed": count = the records carrying "eps_of", psd_gap_max = the
#    largest of their psd_gap), and writes no such key when there are none.
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }

# scm compare's integrator options (src/studies/compare.c, base_text)
CMP=(--set model.K=4 --set model.M=4 --set integrator.linear_solver=gmres
     --set integrator.grad_stop=1e-10 --set integrator.loose_until=1e-6
     --set integrator.loose_rtol=1e-4 --set integrator.loose_atol=1e-6
     --set integrator.jtimes=lagged --set integrator.krylov_dim=20
     --set integrator.eps_stop=1e-10 --set integrator.max_steps=100000)
for s in 2 7; do
    "$SCM" run "$SRC/examples/relu_k2.json" "${CMP[@]}" --set init.seed=$s -q \
        -o "$W/r$s.json" > "$W/r$s.txt" 2>&1
    check "[ $? -eq 0 ]" "scm run seed $s: $(cat "$W/r$s.txt")"
done
/usr/bin/python3 - "$W/r7.json" "$W/r2.json" <<'PY' && ok || ko "scm run: eps_of and psd_gap"
import json, sys
import mpmath as mp
import numpy as np

def own_loss(Q, R):
    """eps = 1/2 sum f(Q) - sum f(R) + 1/2 sum f(T), ReLU arc-cosine kernel,
    T = I, v = v* = 1 (MATH.md section 2), in 40-digit arithmetic (mpmath):
    the loss of the state as written, without the double sum's round-off
    (about 1e-10 near the minimum, where a - c^2 cancels in the kernels)."""
    mp.mp.dps = 40
    def f(a, b, c):
        a, b, c = mp.mpf(a), mp.mpf(b), mp.mpf(c)
        s2 = a * b - c * c
        s = mp.sqrt(s2) if s2 > 0 else mp.mpf(0)
        return (s + c * mp.atan2(s, -c)) / (2 * mp.pi)
    K, M = R.shape
    e = sum(f(1, 1, float(m == n)) for m in range(M) for n in range(M)) / 2
    e += sum(f(Q[k, k], Q[l, l], Q[k, l]) for k in range(K) for l in range(K)) / 2
    e -= sum(f(Q[k, k], 1.0, R[k, m]) for k in range(K) for m in range(M))
    return float(e)

z = json.load(open(sys.argv[1]))["final"]
Q, R = np.array(z["Q"]), np.array(z["R"])
assert z["eps"] == 0 and z["eps_of"] == "global_minimum", z["eps"]
assert 0 < z["psd_gap"] < 1e-6 and z["max_psd_gap"] >= z["psd_gap"], z
own = own_loss(Q, R)
assert own < 0, own
# the gap: the most negative eigenvalue of Q - R R^T, negated (T = I)
lam = np.linalg.eigvalsh(Q - R @ R.T).min()
assert abs(-lam - z["psd_gap"]) <= 1e-3 * z["psd_gap"], (lam, z["psd_gap"])
p = json.load(open(sys.argv[2]))["final"]
assert "eps_of" not in p and "psd_gap" not in p, p.keys()
own = own_loss(np.array(p["Q"]), np.array(p["R"]))
assert p["eps"] > 0 and abs(own - p["eps"]) <= 1e-9, (own, p["eps"])
PY

# the sweep summary counts the zeroed runs
"$SCM" sweep "$SRC/examples/relu_k2.json" "${CMP[@]}" --runs 12 --threads 2 -o "$W/s.jsonl" \
    --summary "$W/s.json" --quiet > "$W/s.txt" 2>&1
check "[ $? -eq 0 ]" "sweep: $(cat "$W/s.txt")"
# runs stopped at t = 5, on the way: nothing zeroed, no key
"$SCM" sweep "$SRC/examples/relu_k2.json" --set integrator.t_max=5 --runs 4 --threads 2 -o "$W/n.jsonl" \
    --summary "$W/n.json" --quiet > "$W/n.txt" 2>&1
check "[ $? -eq 0 ]" "sweep without zeroed runs: $(cat "$W/n.txt")"
/usr/bin/python3 - "$W/s.jsonl" "$W/s.json" "$W/n.jsonl" "$W/n.json" <<'PY' && ok || ko "sweep summary: eps_zeroed"
import json, sys
def recs(path):
    out = []
    for line in open(path):
        r = json.loads(line)
        if "index" in r:
            out.append(r)
    return out
rs = recs(sys.argv[1])
z = [r for r in rs if r.get("eps_of") == "global_minimum"]
assert len(rs) == 12 and len(z) >= 1, (len(rs), len(z))
assert all(r["eps"] == 0 and r["psd_gap"] > 0 for r in z)
s = json.load(open(sys.argv[2]))
s = s.get("summary", s)
ez = s["eps_zeroed"]
assert ez["count"] == len(z), (ez, len(z))
assert ez["psd_gap_max"] == max(r["psd_gap"] for r in z), ez
assert not any("eps_of" in r for r in recs(sys.argv[3]))
n = json.load(open(sys.argv[4]))
assert "eps_zeroed" not in n.get("summary", n), n
print("zeroed runs:", len(z), "of", len(rs))
PY

# the tail stage from the CLI (integrator.tail_eps): echoed in the config,
# its start reported, and the final loss that of the final state in
# extended precision (against the 40-digit own_loss; its accuracy along the
# trajectory is test_loss_accuracy's); a bad value refused
TAIL=(--set model.K=3 --set model.M=3 --set integrator.rtol=1e-10 --set integrator.atol=1e-12
      --set integrator.eps_stop=1e-13 --set integrator.tail_eps=1e-6 --set init.seed=3)
"$SCM" run "$SRC/examples/relu_k2.json" "${TAIL[@]}" -q -o "$W/t.json" > "$W/t.txt" 2>&1
check "[ $? -eq 0 ]" "scm run with the tail stage: $(cat "$W/t.txt")"
/usr/bin/python3 - "$W/t.json" <<'PY' && ok || ko "scm run: the tail stage"
import json, sys
import mpmath as mp
import numpy as np
mp.mp.dps = 40
def f(a, b, c):
    a, b, c = mp.mpf(a), mp.mpf(b), mp.mpf(c)
    s2 = a * b - c * c
    s = mp.sqrt(s2) if s2 > 0 else mp.mpf(0)
    return (s + c * mp.atan2(s, -c)) / (2 * mp.pi)
r = json.load(open(sys.argv[1]))
assert r["config"]["integrator"]["tail_eps"] == 1e-6, r["config"]["integrator"]
assert r["solver"]["tail_t"] < r["final"]["t"] and r["solver"]["tail_steps"] > 0, r["solver"]
z = r["final"]
Q, R = np.array(z["Q"]), np.array(z["R"])
K, M = R.shape
e = sum(f(1, 1, float(m == n)) for m in range(M) for n in range(M)) / 2
e += sum(f(Q[k, k], Q[l, l], Q[k, l]) for k in range(K) for l in range(K)) / 2
e -= sum(f(Q[k, k], 1.0, R[k, m]) for k in range(K) for m in range(M))
assert 0 < z["eps"] < 1e-12, z["eps"]
# the written Q is the tail's C + R R^T rounded to double, and at the cone's
# edge the loss moves by about that rounding (1e-16 per entry), so the two
# agree to the rounding of Q, 1e-15 absolute (the double sum alone is off by
# up to 1e-10 here)
assert abs(float(e) - z["eps"]) <= 1e-15, (float(e), z["eps"])
PY
"$SCM" run "$SRC/examples/relu_k2.json" --set integrator.tail_eps=2 -q -o "$W/bad.json" > "$W/bad.txt" 2>&1
check "[ $? -eq 2 ] && grep -q tail_eps '$W/bad.txt' && [ ! -e '$W/bad.json' ]" \
    "tail_eps=2 not refused: $(cat "$W/bad.txt")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
