#!/usr/bin/env bash
# test_simulate_cli.sh SCM: `scm simulate` end to end: the JSON and CSV
# written, their content consistent (sim and ODE start from the same state,
# one row per seed, side and time; the summary's mean matches the rows), a
# byte-identical rerun (also on two threads), and every bad-input path (exit 2, a message naming
# the key or option, no result file).
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }
cd "$W"

cat > erf.json <<'J'
{"model": {"K": 2, "M": 2, "activation": "erf"}, "init": {"seed": 3},
 "integrator": {"t_first": 0.1, "n_out": 8},
 "simulate": {"d": 300, "seeds": 3, "eta": 0.2, "t_max": 2}}
J
"$SCM" simulate erf.json --no-plot > out1 2>&1
check "[ $? -eq 0 ]" "simulate failed: $(cat out1)"
check "[ -f erf.sim.json ] && [ -f erf.sim.csv ]" "default outputs"
check "grep -q 'eps_sim - eps_ode' out1" "summary printed"
/usr/bin/python3 - erf.sim.json erf.sim.csv <<'PY' && ok || ko "result content"
import json, sys, csv, math
r = json.load(open(sys.argv[1]))
assert r["status"] == "ok" and r["command"] == "simulate"
s = r["simulate"]
assert s["d"] == 300 and s["seeds"] == 3 and s["eta"] == 0.2 and s["mode"] == "online"
assert r["config"]["init"]["d"] == 300
assert [x["init_seed"] for x in r["seeds"]] == [3, 4, 5]
for sd in r["seeds"]:
    tr = sd["trajectory"]
    assert sd["error"] is None and len(tr) >= 9
    assert tr[0]["sim"]["Q"] == tr[0]["ode"]["Q"] and tr[0]["sim"]["eps"] == tr[0]["ode"]["eps"]
    assert abs(tr[-1]["ode"]["t"] - 2) < 1e-12
    for p in tr:
        assert abs(p["sim"]["t"] - p["ode"]["t"]) <= 0.2 / 600 + 1e-12
        assert abs(p["sim"]["eps"] - p["ode"]["eps"]) < 0.1
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 2 * sum(len(x["trajectory"]) for x in r["seeds"])
last = r["summary"][-1]
d = [sd["trajectory"][-1]["sim"]["eps"] - sd["trajectory"][-1]["ode"]["eps"] for sd in r["seeds"]]
assert abs(last["eps_diff_mean"] - sum(d) / 3) < 1e-15
PY
"$SCM" simulate erf.json --no-plot -q -o again
check "cmp -s erf.sim.json again.json && cmp -s erf.sim.csv again.csv" "rerun not byte-identical"
if /usr/bin/python3 -c 'import matplotlib' 2> /dev/null; then
    "$SCM" simulate erf.json -q -o plotted --seeds 1
    check "[ -s plotted.png ] && [ ! -e plotted.png.tmp.png ]" "the plot was not written"
fi
"$SCM" simulate erf.json --no-plot -q -o thr --threads 2
check "cmp -s erf.sim.json thr.json && cmp -s erf.sim.csv thr.csv" "--threads 2 differs from one thread"
"$SCM" simulate erf.json --no-plot -q -o b --mode batch --n 600 --d 100 --seeds 1 --t-max 0.5
check "[ $? -eq 0 ] && grep -q '\"mode\":\"batch\"' b.json" "batch mode run"

# every rule: the manifold ones keep Q_kk = 1 / Q = I on both sides, two_layer moves v
for rule in normalised stiefel two_layer; do
    "$SCM" simulate erf.json --no-plot -q -o "rule_$rule" --set rule=$rule --set model.v=0.7 \
        --t-max 1 --seeds 2
    check "[ \$? -eq 0 ]" "rule $rule run"
done
/usr/bin/python3 - <<'PY' && ok || ko "rules: invariants and v in the result"
import json
for rule in ("normalised", "stiefel", "two_layer"):
    r = json.load(open(f"rule_{rule}.json"))
    assert r["status"] == "ok" and r["config"]["rule"] == rule and r["simulate"]["rule"] == rule
    s = r["simulate"]
    assert s["constraint"] == {"normalised": "sphere", "stiefel": "stiefel"}.get(rule, "none")
    assert s["eta_v_ratio"] == (1 if rule == "two_layer" else 0)
    for sd in r["seeds"]:
        for p in sd["trajectory"]:
            for side in ("sim", "ode"):
                Q, v = p[side]["Q"], p[side]["v"]
                for k in range(2):
                    for l in range(2):
                        if rule != "two_layer" and (k == l or rule == "stiefel"):
                            assert abs(Q[k][l] - (k == l)) < 1e-9, (rule, side, Q)
                assert rule == "two_layer" or v == [0.7, 0.7], (rule, v)
            assert abs(p["sim"]["v"][0] - p["ode"]["v"][0]) < 0.05
        if rule == "two_layer":
            assert abs(sd["trajectory"][-1]["ode"]["v"][0] - 0.7) > 1e-2
PY

# rule sgd: the simulation runs at the rule's eta (an equal --eta is accepted), with its noise
"$SCM" simulate erf.json --no-plot -q -o sgd --set rule=sgd --set rule_params.eta=0.4 \
    --set rule_params.noise=0.05 --t-max 1 --seeds 2 --eta 0.4
check "[ \$? -eq 0 ] && grep -q '\"eta\":0.4,\"eta_v_ratio\":0,\"noise\":0.05' sgd.json" "rule sgd: $(head -c 300 sgd.json)"

# expect_error NAME PATTERN CONFIG-TEXT [args...]: exit 2, message, no file
expect_error() {
    local name=$1 pat=$2 text=$3
    shift 3
    printf '%s' "$text" > "$name.json"
    "$SCM" simulate "$name.json" -o "$name.out" --no-plot "$@" > "$name.stdout" 2> "$name.stderr"
    local rc=$?
    check "[ $rc -eq 2 ]" "$name: exit status $rc, want 2"
    check "grep -q -- \"$pat\" '$name.stderr'" "$name: stderr lacks '$pat': $(cat "$name.stderr")"
    check "[ ! -e '$name.out.json' ] && [ ! -e '$name.out.csv' ]" "$name: a result file was written"
}
M='"model": {"K": 2, "M": 2, "activation": "erf"}'
expect_error unknown_key "unknown key 'simulate.dd'" "{$M, \"simulate\": {\"dd\": 5}}"
expect_error bad_d "'simulate.d' must be" "{$M, \"simulate\": {\"d\": 2.5}}"
expect_error small_d "d = 3 must be >= K + M" "{$M, \"simulate\": {\"d\": 3}}"
expect_error bad_mode "'simulate.mode' must be" "{$M, \"simulate\": {\"mode\": \"minibatch\"}}"
expect_error bad_eta "'simulate.eta' must be" "{$M, \"simulate\": {\"eta\": -1}}"
expect_error bad_seeds "'simulate.seeds' must be" "{$M, \"simulate\": {\"seeds\": 0}}"
expect_error bad_tmax "'simulate.t_max' must be" "{$M, \"simulate\": {\"t_max\": \"long\"}}"
expect_error not_object "'simulate' must be an object" "{$M, \"simulate\": 3}"
expect_error batch_no_n "batch mode needs the number of samples" "{$M}" --mode batch
expect_error huge_batch "exceeds" "{$M}" --mode batch --n 1000000 --d 1000
expect_error opt_d "--d needs an integer" "{$M}" --d x
expect_error opt_mode "--mode must be online or batch" "{$M}" --mode fast
expect_error opt_eta "--eta needs a positive number" "{$M}" --eta 0
expect_error opt_threads "--threads needs an integer" "{$M}" --threads 0
expect_error opt_unknown "unknown option '--frob'" "{$M}" --frob 1
expect_error cfg_key "frob" "{$M, \"frob\": 1}"
expect_error set_key "unknown key 'simulate.frob'" "{$M}" --set simulate.frob=2
expect_error set_d "'simulate.d' must be" "{$M}" --set simulate.d=-4
expect_error sgd_eta0 "rule sgd needs 'rule_params.eta' > 0" "{$M, \"rule\": \"sgd\", \"rule_params\": {\"eta\": 0}}"
expect_error sgd_eta_mismatch "differs from rule_params.eta" "{$M, \"rule\": \"sgd\", \"rule_params\": {\"eta\": 0.5}}" --eta 0.2
expect_error sgd_batch "rule sgd is one-pass online SGD" "{$M, \"rule\": \"sgd\", \"rule_params\": {\"eta\": 0.5}}" --mode batch --n 100
expect_error t_first "t_first = 0.01 must be below simulate.t_max" "{$M}" --t-max 0.005
"$SCM" simulate erf.json --no-plot -q -o setd --set simulate.d=200 --set model.activation=relu
check "[ \$? -eq 0 ] && grep -q '\"d\":200' setd.json && grep -q '\"relu\"' setd.json" "--set simulate.d and model key"
"$SCM" simulate /nonexistent.json > /dev/null 2> e; check "[ $? -eq 2 ] && grep -q 'cannot read' e" "missing config"
check "'$SCM' simulate --help | grep -q 'usage: scm simulate'" "--help"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
