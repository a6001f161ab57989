#!/usr/bin/env bash
# test_cli.sh SCM: the `scm` program end to end: help and version, a run and
# its result file, byte-identical reruns, --set, --csv, and every bad-input
# path (exit status 2, a message naming the key, no result file).
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }

# expect_error NAME PATTERN CONFIG-TEXT [scm args...]: exit 2, message, no file
expect_error() {
    local name=$1 pat=$2 text=$3
    shift 3
    printf '%s' "$text" > "$W/$name.json"
    "$SCM" run "$W/$name.json" -o "$W/$name.out.json" "$@" > "$W/$name.stdout" 2> "$W/$name.stderr"
    local rc=$?
    check "[ $rc -eq 2 ]" "$name: exit status $rc, want 2"
    check "grep -q -- \"$pat\" '$W/$name.stderr'" "$name: stderr lacks '$pat': $(cat "$W/$name.stderr")"
    check "[ ! -e '$W/$name.out.json' ]" "$name: a result file was written"
}

check "'$SCM' --help | grep -q 'usage: scm'" "--help"
check "'$SCM' --version | grep -q 'scm (scmode) [0-9]'" "--version"
check "'$SCM' run --help | grep -q 'usage: scm run'" "run --help"
"$SCM" frobnicate 2> "$W/e"; check "[ $? -eq 2 ] && grep -q \"unknown command 'frobnicate'\" '$W/e'" "unknown command"

# a run, its result and CSV
cd "$W"
"$SCM" run "$SRC/examples/relu_k2.json" --csv "$W/t.csv" > "$W/out1" 2>&1
check "[ $? -eq 0 ]" "example run failed: $(cat "$W/out1")"
check "[ -f '$W/relu_k2.result.json' ]" "default result name"
check "[ \"\$(stat -c %a '$W/relu_k2.result.json')\" = 644 ]" "result file mode $(stat -c %a "$W/relu_k2.result.json"), want 644 (not mkstemp's 600)"
check "grep -q 'stopped' '$W/out1' && grep -q 'wrote' '$W/out1'" "summary printed"
python3 - "$W/relu_k2.result.json" "$W/t.csv" <<'PY' && ok || ko "result file content"
import json, sys, csv
r = json.load(open(sys.argv[1]))
assert r["status"] == "ok" and r["error"] is None, r["status"]
assert r["stop_reason"] in ("fixed_point", "eps_threshold"), r["stop_reason"]
c = r["config"]
assert c["model"]["K"] == 2 and c["integrator"]["rtol"] == 1e-8 and c["init"]["seed"] == 1
assert c["model"]["T"] == "identity" and c["rule"] == "gd"
f = r["final"]
assert len(f["Q"]) == 2 and len(f["R"][0]) == 2 and f["eps"] < 1e-10
tr = r["trajectory"]
assert tr[0]["t"] == 0 and tr[-1]["t"] == f["t"] and tr[-1]["eps"] == f["eps"]
assert all(a["t"] < b["t"] for a, b in zip(tr, tr[1:]))
rows = list(csv.reader(open(sys.argv[2])))
assert rows[0][:3] == ["t", "eps", "Q_1_1"] and len(rows[0]) == 2 + 3 + 4, rows[0]
assert len(rows) == len(tr) + 1
assert float(rows[-1][1]) == f["eps"]
PY
"$SCM" run "$SRC/examples/relu_k2.json" -o "$W/again.json" -q > "$W/out2"
check "cmp -s '$W/relu_k2.result.json' '$W/again.json'" "rerun is not byte-identical"
check "[ ! -s '$W/out2' ]" "--quiet printed something"
"$SCM" run "$SRC/examples/relu_k2.json" -o "$W/set.json" -q --set model.K=3 --set model.activation=erf --set init.seed=5
check "[ $? -eq 0 ]" "--set run"
check "python3 -c \"import json; c=json.load(open('$W/set.json'))['config']; assert c['model']['K']==3 and c['model']['activation']=='erf' and c['init']['seed']==5\"" "--set values not used"

# a given initial state
cat > "$W/given.json" <<'JSON'
{"model": {"K": 2, "M": 2, "activation": "linear", "T": [[1, 0.2], [0.2, 1]], "v": [1, 0.5]},
 "init": {"type": "given", "Q": [[0.5, 0.1], [0.1, 0.4]], "R": [[0.1, 0], [0, 0.2]], "scale": 0.5}}
JSON
"$SCM" run "$W/given.json" -o "$W/given.out.json" -q
check "[ $? -eq 0 ]" "given init run"
check "python3 -c \"import json; r=json.load(open('$W/given.out.json')); assert abs(r['trajectory'][0]['Q'][0][0]-0.125)<1e-15 and r['config']['init']['scale']==0.5\"" "given init with scale"

# a run that fails numerically: exit 1, a complete result that says so
"$SCM" run "$SRC/examples/relu_k2.json" -o "$W/failed.json" -q --set integrator.rtol=1e-18 --set integrator.atol=1e-30 2> "$W/e"
check "[ $? -eq 1 ]" "failed run exit status"
check "grep -q 'the run failed' '$W/e'" "failed run message"
check "python3 -c \"import json; r=json.load(open('$W/failed.json')); assert r['status']=='failed' and 'CVODE' in r['error']\"" "failed run result"

# an unwritable output: exit 4 (CLI_EXIT_IO), no stray temporary file
"$SCM" run "$SRC/examples/relu_k2.json" -o "$W/nodir/x.json" -q 2> "$W/e"
check "[ $? -eq 4 ] && grep -q \"cannot create a temporary file for '$W/nodir/x.json'\" '$W/e'" "unwritable output: $(cat "$W/e")"
check "[ -z \"\$(ls '$W' | grep tmp)\" ]" "temporary file left behind"

# bad input, each named
expect_error unknown_top "unknown key 'modle'" '{"modle": {}}'
expect_error unknown_key "unknown key 'model.Kx'" '{"model": {"K": 2, "M": 2, "Kx": 1}}'
expect_error missing_model "missing section 'model'" '{}'
expect_error missing_M "'model.K' and 'model.M' are required" '{"model": {"K": 2}}'
expect_error K_type "'model.K' must be an integer" '{"model": {"K": 2.5, "M": 2}}'
expect_error K_string "'model.K' must be a finite number" '{"model": {"K": "two", "M": 2}}'
expect_error K_zero "'model.K' must be an integer in \[1," '{"model": {"K": 0, "M": 2}}'
expect_error activation "'model.activation' must be" '{"model": {"K": 2, "M": 2, "activation": "tanh"}}'
expect_error T_notpsd "T is not positive semi-definite" '{"model": {"K": 2, "M": 2, "T": [[1, 2], [2, 1]]}}'
expect_error T_shape "'model.T'" '{"model": {"K": 2, "M": 2, "T": [[1, 0]]}}'
# Found by fuzzing (docs/fuzzing.md): a large M or K with a small matrix was
# allocated (80 GB here) before its shape was checked.
expect_error T_huge_M "'model.T' (\\\"identity\\\" or an M x M matrix) must be an array of 100000 rows" '{"model": {"K": 2, "M": 100000, "T": [[1]]}}'
expect_error Q_huge_K "'init.Q' must be an array of 100000 rows" '{"model": {"K": 100000, "M": 1}, "init": {"type": "given", "Q": [[1]], "R": [[0]]}}'
expect_error set_huge_M "'model.T'.*100000 rows" '{"model": {"K": 2, "M": 2}}' --set model.M=100000 --set 'model.T=[[1]]'
expect_error T_asym "T is not symmetric" '{"model": {"K": 2, "M": 2, "T": [[1, 0.1], [0.2, 1]]}}'
expect_error v_len "'model.v' must be a number or an array of 2" '{"model": {"K": 2, "M": 2, "v": [1, 2, 3]}}'
expect_error d_small "'init.d' = 1 must be >= model.M = 2" '{"model": {"K": 2, "M": 2}, "init": {"d": 1}}'
expect_error sigma "'init.sigma' must be > 0" '{"model": {"K": 2, "M": 2}, "init": {"sigma": -1}}'
expect_error init_type "'init.type' must be" '{"model": {"K": 2, "M": 2}, "init": {"type": "zeros"}}'
expect_error given_noQ "needs 'init.Q'" '{"model": {"K": 2, "M": 2}, "init": {"type": "given"}}'
expect_error given_seed "'init.seed' is only for" '{"model": {"K": 1, "M": 1}, "init": {"type": "given", "Q": [[1]], "R": [[0]], "seed": 3}}'
expect_error given_notpsd "not positive semi-definite" '{"model": {"K": 1, "M": 1}, "init": {"type": "given", "Q": [[1]], "R": [[2]]}}'
expect_error Q_asym "'init.Q' is not symmetric" '{"model": {"K": 2, "M": 1}, "init": {"type": "given", "Q": [[1, 0.5], [0.1, 1]], "R": [[0], [0]]}}'
expect_error rtol "integrator.rtol must be in (0, 1)" '{"model": {"K": 2, "M": 2}, "integrator": {"rtol": 2}}'
expect_error method "'integrator.method' must be" '{"model": {"K": 2, "M": 2}, "integrator": {"method": "rk4"}}'
expect_error jtimes "'integrator.jtimes' must be .dq., .analytic. or .lagged., got .exact." '{"model": {"K": 2, "M": 2}, "integrator": {"jtimes": "exact"}}'
expect_error precond "'integrator.precond' must be .none. or .frozen_s., got .ilu." '{"model": {"K": 2, "M": 2}, "integrator": {"precond": "ilu"}}'
expect_error precond_rule "'integrator.precond' = .frozen_s. is for rule gd (rule is .two_layer.)" '{"model": {"K": 2, "M": 2}, "rule": "two_layer", "integrator": {"precond": "frozen_s"}}'
expect_error precond_dense "'integrator.precond' = .frozen_s. is for GMRES" '{"model": {"K": 2, "M": 2}, "integrator": {"precond": "frozen_s", "linear_solver": "dense"}}'
expect_error krylov_dim "'integrator.krylov_dim' must be an integer in \[1, 500\], got 0" '{"model": {"K": 2, "M": 2}, "integrator": {"krylov_dim": 0}}'
expect_error krylov_frac "'integrator.krylov_dim' must be an integer in \[1, 500\], got 2.5" '{"model": {"K": 2, "M": 2}, "integrator": {"krylov_dim": 2.5}}'
expect_error eps_lin "integrator.eps_lin must be in (0, 1), got 1" '{"model": {"K": 2, "M": 2}, "integrator": {"eps_lin": 1}}'
expect_error n_out "'integrator.n_out' must be an integer" '{"model": {"K": 2, "M": 2}, "integrator": {"n_out": 0}}'
expect_error rule "'rule' must be one of gd, normalised, stiefel, two_layer, sgd, got .adam." '{"model": {"K": 2, "M": 2}, "rule": "adam"}'
expect_error bad_json "invalid JSON near line 2" '{"model":
 {"K": 2,, "M": 2}}'
expect_error set_form "is not of the form key=value" '{"model": {"K": 2, "M": 2}}' --set modelK
expect_error set_key "unknown key 'integrator.tmax'" '{"model": {"K": 2, "M": 2}}' --set integrator.tmax=5
expect_error option "unknown option '--frob'" '{"model": {"K": 2, "M": 2}}' --frob
"$SCM" run "$W/does-not-exist.json" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q \"cannot open config '$W/does-not-exist.json'\" '$W/e'" "missing config file"

# scm fixed-points --stability: a class column (--all) and a "stability"
# object per point (the symmetric Hessian spectrum, issue 25) whose counts
# equal those of the dense Hessian of `scm stability --point` on the same point
"$SCM" fixed-points --K 4 --M 4 --k1 1 --starts 10 --stability --all -o "$W/fps.json" > "$W/fps.out" 2>&1
check "[ $? -eq 0 ]" "fixed-points --stability failed: $(cat "$W/fps.out")"
check "grep -q ' class ' '$W/fps.out' && grep -Eq ' (minimum|saddle) ' '$W/fps.out'" "fixed-points --stability: no class column"
n=$(python3 -c "import json; print(len(json.load(open('$W/fps.json'))['fixed_points']))" 2>/dev/null || echo 0)
check "[ $n -ge 2 ]" "fixed-points --stability: $n points"
for ((i = 0; i < n; i++)); do
    "$SCM" stability --point "$W/fps.json" --index "$i" --trials 3 --sigma 1e-4,1e-3,1e-2 -q \
        -o "$W/st$i.json" 2> "$W/st$i.err"
    check "[ $? -eq 0 ]" "stability --point index $i: $(cat "$W/st$i.err")"
    python3 - "$W/fps.json" "$i" "$W/st$i.json" <<'PY' && ok || ko "fixed-points --stability vs stability --point, index $i"
import json, sys
p = json.load(open(sys.argv[1]))["fixed_points"][int(sys.argv[2])]["stability"]
s = json.load(open(sys.argv[3]))
assert p["method"] == "symmetric_spectrum"
assert s["hessian"]["computed"]
assert p["hessian_negative"] == s["hessian"]["negative"], (p["hessian_negative"], s["hessian"]["negative"])
assert p["class"] == ("saddle" if s["hessian"]["negative"] > 0 else "minimum")
PY
done
# --seed-from: the points of K = M = 5 as starts at K = M = 6, tried and
# counted per instance; the list holds every point of the unseeded run
"$SCM" fixed-points --K 5 --M 5 --starts 10 -q -o "$W/fp5.json" 2> "$W/e"
"$SCM" fixed-points --K 6 --M 6 --starts 10 -q -o "$W/fp6.json" 2> "$W/e"
"$SCM" fixed-points --K 6 --M 6 --starts 10 -q --seed-from "$W/fp5.json" -o "$W/fp6s.json" 2> "$W/e"
check "[ $? -eq 0 ] && python3 - '$W/fp6.json' '$W/fp6s.json' <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert sum(s['continuation_seeds'] for s in b['searches']) > 0
assert all(s['continuation_seeds'] == 0 for s in a['searches'])
lb = [p['loss'] for p in b['fixed_points']]
assert all(any(abs(p['loss'] - x) <= 1e-9 * max(1, abs(x)) for x in lb) for p in a['fixed_points'])
PY" "fixed-points --seed-from: $(cat "$W/e")"
# --threads: the same file, byte for byte, on 1 and 3 threads (the k1
# sweeps of the ansätze run concurrently, each start's plain solve, each
# point's checks and polish in parallel); K = M + 1 has three ansätze
for KM in "6 6" "7 6"; do
    set -- $KM
    "$SCM" fixed-points --K $1 --M $2 --starts 10 -q --threads 1 -o "$W/fpt1.json" 2> "$W/e"
    "$SCM" fixed-points --K $1 --M $2 --starts 10 -q --threads 3 -o "$W/fpt3.json" 2>> "$W/e"
    check "[ -s '$W/fpt1.json' ] && cmp -s '$W/fpt1.json' '$W/fpt3.json'" "fixed-points K=$1 M=$2: --threads 3 differs from --threads 1: $(cat "$W/e")"
done
"$SCM" fixed-points --K 6 --M 6 --threads 0 -q -o "$W/fpt0.json" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q -- '--threads' '$W/e' && [ ! -e '$W/fpt0.json' ]" "--threads 0: $(cat "$W/e")"
# --chain-from: seeds from every smaller M; the list holds every point of
# the default, all below the residual bound (else exit 1)
"$SCM" fixed-points --K 6 --M 6 --starts 10 -q --chain-from 4 -o "$W/fpc.json" 2> "$W/e"
check "[ $? -eq 0 ] && python3 - '$W/fp6.json' '$W/fpc.json' <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert b['chain_from'] == 4 and 'chain_from' not in a
assert all(s['chain_links'] == 3 for s in b['searches'] if s['ansatz'] == 'k1_one' and s['instance'] == 0)
assert sum(s['continuation_seeds'] for s in b['searches']) > 0
lb = [p['loss'] for p in b['fixed_points']]
assert all(any(abs(p['loss'] - x) <= 1e-9 * max(1, abs(x)) for x in lb) for p in a['fixed_points'])
assert len(b['fixed_points']) > len(a['fixed_points'])
PY" "fixed-points --chain-from: $(cat "$W/e")"
"$SCM" fixed-points --K 6 --M 6 --chain-from 6 -q 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'chain-from must be below M' '$W/e'" "--chain-from M: $(cat "$W/e")"
"$SCM" fixed-points --K 6 --M 6 --chain-from 3 --k1 1 -q 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'needs the k1 sweep' '$W/e'" "--chain-from with --k1: $(cat "$W/e")"
# --grow-from: block level by continuation in M; at K = M = 12 the lowest
# loss of every family (anti-aligned count) among the specialised points of
# the full enumeration (random starts, full-space checks) is among its points
"$SCM" fixed-points --K 12 --M 12 --ansatz "$SRC/ansatz/k1.json" -q -o "$W/fpf12.json" 2> "$W/e"
"$SCM" fixed-points --K 12 --M 12 --ansatz "$SRC/ansatz/k1.json" --grow-from 8 -q -o "$W/fpg12.json" 2>> "$W/e"
check "[ $? -eq 0 ] && python3 - '$W/fpf12.json' '$W/fpg12.json' <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert b['level'] == 'block' and b['grow_from'] == 8 and b['probes'] == 1
assert b['searches'][0]['points'] == len(b['fixed_points']) > 0
assert all('Q' not in p and p['residual_block'] < 1e-10 for p in b['fixed_points'])
best = {}
for p in a['fixed_points']:
    if p['structure']['other'] == 0:
        f = p['structure']['anti']
        best[f] = min(best.get(f, 9.0), p['loss'])
assert len(best) == 13
lb = [p['loss'] for p in b['fixed_points']]
for f, l in best.items():
    assert any(abs(l - x) <= 1e-9 * max(1e-3, abs(x)) for x in lb), (f, l)
PY" "fixed-points --grow-from: $(cat "$W/e")"
"$SCM" fixed-points --K 12 --M 12 --grow-from 13 -q 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'grow-from M0 needs M0 <= M' '$W/e'" "--grow-from above M: $(cat "$W/e")"
"$SCM" fixed-points --K 12 --M 12 --grow-from 8 --k1 2 -q 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'goes without' '$W/e'" "--grow-from with --k1: $(cat "$W/e")"
"$SCM" fixed-points --K 12 --M 12 --probes 3 -q 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'go with --grow-from' '$W/e'" "--probes alone: $(cat "$W/e")"
"$SCM" fixed-points --K 13 --M 12 --ansatz "$SRC/ansatz/k1.json" --grow-from 8 -q -o "$W/fpg13.json" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'does not apply' '$W/e' && [ ! -e '$W/fpg13.json' ]" "--grow-from, k1 ansatz at K = M + 1: $(cat "$W/e")"
printf '{"K": 5}' > "$W/notfp.json"
"$SCM" fixed-points --K 6 --M 6 --seed-from "$W/notfp.json" -q -o "$W/fp6x.json" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'notfp.json' '$W/e' && grep -q 'fixed_points' '$W/e' && [ ! -e '$W/fp6x.json' ]" "--seed-from a non-result: $(cat "$W/e")"
printf '{"fixed_points": [{"ansatz": "k1", "k1": 1.5, "scalars": {}}]}' > "$W/badk1.json"
"$SCM" fixed-points --K 6 --M 6 --seed-from "$W/badk1.json" -q 2> "$W/e"
check "[ $? -eq 2 ] && grep -q \"fixed_points\\[0\\]: missing or bad 'k1'\" '$W/e'" "--seed-from bad k1: $(cat "$W/e")"
"$SCM" fixed-points --K 6 --M 6 --seed-from "$W/none.json" -q 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'none.json' '$W/e'" "--seed-from missing file: $(cat "$W/e")"
"$SCM" fixed-points --K 4 --M 4 --k1 1 --starts 10 -q -o "$W/fpn.json"
check "python3 -c \"import json; assert all('stability' not in p for p in json.load(open('$W/fpn.json'))['fixed_points'])\"" "fixed-points without --stability has a stability object"

# scm stability --K --M --k1 (issue 15): the family's point says what it is.
# K = M = 12, k1 = 2 is not the global minimum; --index and --loss pick.
"$SCM" stability --K 12 --M 12 --k1 2 --no-flow --no-hessian --trials 1 -o "$W/fam.json" > "$W/fam.out" 2>&1
check "[ $? -eq 0 ]" "stability --K 12 --M 12 --k1 2: $(cat "$W/fam.out")"
check "grep -q 'lowest-loss minimum candidate' '$W/fam.out'" "stability family: no selection line"
python3 - "$W/fam.json" <<'PY' && ok || ko "stability family JSON"
import json, sys
f = json.load(open(sys.argv[1]))["family"]
assert f["n_anti"] == 2 and f["k1"] == 2, f
assert f["loss"] > 1e-3 and f["class"] == "min_candidate", f
assert f["selection"] == "lowest-loss minimum candidate" and f["ansatz"] in ("k1", "k1_extra")
assert "R[anti,tanti].diag" in f["scalars"] or "R[al,tal].diag" in f["scalars"], f["scalars"]
assert all(p["loss"] > 1e-6 for p in f["points"]), f["points"]
PY
loss=$(python3 -c "import json; print(json.load(open('$W/fam.json'))['family']['loss'])")
"$SCM" stability --K 12 --M 12 --k1 2 --loss "$loss" --no-flow --no-hessian --trials 1 -q -o "$W/fam2.json" 2> "$W/e"
check "[ $? -eq 0 ] && python3 -c \"import json; f = json.load(open('$W/fam2.json'))['family']; assert f['selection'] == '--loss' and abs(f['loss'] - $loss) < 1e-9\"" "stability --loss: $(cat "$W/e")"
"$SCM" stability --K 12 --M 12 --k1 2 --index 999 --no-flow -q -o "$W/fam3.json" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q -- '--index 999' '$W/e' && [ ! -e '$W/fam3.json' ]" "stability --index out of range: $(cat "$W/e")"
"$SCM" stability --K 12 --M 12 --k1 2 --loss 0.5 --no-flow -q -o "$W/fam4.json" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q -- '--loss 0.5' '$W/e' && [ ! -e '$W/fam4.json' ]" "stability --loss no match: $(cat "$W/e")"
"$SCM" stability --K 12 --M 12 --k1 2 --loss 0.1 --index 0 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'not both' '$W/e'" "stability --loss with --index"

# the training rules from the config: two_layer writes v; bad combinations
expect_error lrv_gd "'rule_params.lr_v_ratio' applies to rules two_layer and sgd only" '{"model": {"K": 2, "M": 2}, "rule_params": {"lr_v_ratio": 2}}'
expect_error stiefel_d "rule stiefel needs K = 3 orthonormal students" '{"model": {"K": 3, "M": 2}, "rule": "stiefel", "init": {"d": 2}}'
expect_error norm_scale "'init.scale' = 0.5 has no effect with rule normalised" '{"model": {"K": 2, "M": 2}, "rule": "normalised", "init": {"scale": 0.5}}'
for r in normalised stiefel two_layer; do
    "$SCM" run "$SRC/examples/relu_k2.json" --set rule=$r -o "$W/$r.json" --csv "$W/$r.csv" -q 2> "$W/e"
    check "[ $? -eq 0 ]" "run rule $r: $(cat "$W/e")"
done
python3 - "$W" <<'PY' && ok || ko "rule results"
import csv, json, sys
w = sys.argv[1]
for r in ("normalised", "stiefel", "two_layer"):
    j = json.load(open(f"{w}/{r}.json"))
    assert j["config"]["rule"] == r and j["status"] == "ok", (r, j["status"])
    Q = j["final"]["Q"]
    if r == "normalised":
        assert all(Q[k][k] == 1.0 for k in range(2)), Q
    if r == "stiefel":
        assert Q == [[1.0, 0.0], [0.0, 1.0]], Q
    head = next(csv.reader(open(f"{w}/{r}.csv")))
    assert ("v_1" in head) == (r == "two_layer"), head
    if r == "two_layer":
        assert "v" in j["trajectory"][-1] and len(j["final"]["v"]) == 2
        assert j["config"]["rule_params"]["lr_v_ratio"] == 1
PY
# sgd from the config: rule_params echoed, v written, noise raises the final loss
expect_error sgd_noeta "rule sgd needs 'rule_params.eta'" '{"model": {"K": 2, "M": 2}, "rule": "sgd"}'
expect_error sgd_eta_gd "'rule_params.eta' applies to rule sgd only" '{"model": {"K": 2, "M": 2}, "rule_params": {"eta": 0.1}}'
expect_error sgd_noise "rule_params.noise must be >= 0" '{"model": {"K": 2, "M": 2}, "rule": "sgd", "rule_params": {"eta": 0.1, "noise": -1}}'
for noise in 0 0.1; do
    "$SCM" run "$SRC/examples/relu_k2.json" --set rule=sgd --set rule_params.eta=0.5 \
        --set rule_params.noise=$noise --set rule_params.lr_v_ratio=1 --set integrator.t_max=200 \
        -o "$W/sgd$noise.json" -q 2> "$W/e"
    check "[ $? -eq 0 ]" "run rule sgd: $(cat "$W/e")"
done
python3 - "$W" <<'PY' && ok || ko "sgd results"
import json, sys
a, b = (json.load(open(f"{sys.argv[1]}/sgd{n}.json")) for n in ("0", "0.1"))
assert a["config"]["rule_params"] == {"lr_v_ratio": 1, "eta": 0.5, "noise": 0}, a["config"]["rule_params"]
assert len(a["final"]["v"]) == 2 and b["final"]["eps"] > a["final"]["eps"], (a["final"]["eps"], b["final"]["eps"])
PY

# scm lintarget: outputs and bad options
"$SCM" lintarget --alpha 1e-2,1e-3 --c 0.5 -q -o "$W/lt" 2> "$W/e"
check "[ $? -eq 0 ] && [ -s '$W/lt.json' ] && [ -s '$W/lt.phases.csv' ] && [ -s '$W/lt.traces.csv' ]" "lintarget: $(cat "$W/e")"
check "python3 -c \"import json; r = json.load(open('$W/lt.json')); assert len(r['runs']) == 2 and r['saddle_manifold'][0]['verdict'].startswith('non-strict')\"" "lintarget JSON"
"$SCM" lintarget --alpha 2 -o "$W/lt2" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q -- '--alpha values must be in (0, 1)' '$W/e' && [ ! -e '$W/lt2.json' ]" "lintarget --alpha 2"
"$SCM" lintarget --c x -o "$W/lt3" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q -- \"--c needs\" '$W/e'" "lintarget --c x"

# scm compare --rule: one compare per rule and the table across rules.
# With K = M + 1 orthonormal students (stiefel) and v = 1 the extra student
# cannot be cancelled, so no run reaches the global minimum.
(cd "$W" && "$SCM" compare --M 3 --K 3,4 --runs 6 --rule gd,stiefel --no-plots --no-stability -q -o cr > cr.out 2> cr.err)
check "[ $? -eq 0 ] && [ -s '$W/cr.rules.json' ] && [ -s '$W/cr.rules.md' ]" "compare --rule: $(cat "$W/cr.err")"
python3 - "$W" <<'PY' && ok || ko "compare --rule table"
import json, sys
w = sys.argv[1]
t = json.load(open(f"{w}/cr.rules.json"))
assert [r["rule"] for r in t["rules"]] == ["gd", "stiefel"] and t["K"] == [3, 4]
for r in t["rules"]:
    for c in r["K"]:
        s = json.load(open(f"{w}/cr.{r['rule']}.K{c['K']}.summary.json"))
        g = sum(x["count"] for x in s["classes"] if x["class"].startswith("global_minimum"))
        assert c["global_minimum"]["count"] == g and c["runs"] == s["done"] == 6, (r["rule"], c)
        lo, hi = c["global_minimum"]["wilson95"]
        assert lo <= c["global_minimum"]["fraction"] <= hi
        a0 = sum(x["count"] for x in s["by_anti"] if x["anti"] == 0)
        assert c["no_anti_aligned"]["count"] == a0, (r["rule"], c, s["by_anti"])
st = t["rules"][1]["K"][1]
assert st["K"] == 4 and st["global_minimum"]["count"] == 0, st
# no family list for stiefel: its other ends are named by the anti count
assert st["most_frequent_other"] == "" or "anti-aligned" in st["most_frequent_other"], st
md = open(f"{w}/cr.rules.md").read()
assert "no anti-aligned student" in md
PY
(cd "$W" && "$SCM" compare --M 3 --K 3 --runs 2 --rule gd,adam -o cr2 > /dev/null 2> cr2.err)
check "[ $? -eq 2 ] && grep -q \"'adam' is not a rule\" '$W/cr2.err' && [ ! -e '$W/cr2.rules.json' ]" "compare --rule adam: $(cat "$W/cr2.err")"

# --set values are whole JSON values and keys have no empty segment; a key
# twice in one object is refused, in a file and in a --set value (issue 26)
GOOD='{"model": {"K": 2, "M": 2}}'
expect_error set_trailing "'3,4' is not a number" "$GOOD" --set model.K=3,4
expect_error set_suffix "'1e-8x' is not a number" "$GOOD" --set integrator.rtol=1e-8x
expect_error set_hex "'0x10' is not a number" "$GOOD" --set init.sigma=0x10
expect_error set_empty_mid "empty key segment" "$GOOD" --set model..K=3
expect_error set_empty_lead "empty key segment" "$GOOD" --set .model.K=3
expect_error set_empty_trail "empty key segment" "$GOOD" --set model.K.=3
expect_error set_dup "key 'K' appears twice" "$GOOD" --set 'model={"K": 2, "M": 2, "K": 3}'
expect_error dup_key "key 'model.K' appears twice" '{"model": {"K": 2, "M": 2, "K": 3}}'
expect_error dup_section "key 'model' appears twice" '{"model": {"K": 2, "M": 2}, "model": {"K": 3, "M": 3}}'

# init.seed: GSL keeps 32 bits and reads 0 as 4357, so only 1 .. 2^32 - 1
# are accepted (1 and 2^32 + 1 gave the same runs)
expect_error seed_wide "'init.seed' must be an integer in \\[1, 4294967295\\]" '{"model": {"K": 2, "M": 2}, "init": {"seed": 4294967297}}'
expect_error seed_zero "'init.seed' must be an integer in \\[1, 4294967295\\]" '{"model": {"K": 2, "M": 2}, "init": {"seed": 0}}'

# limits that CVODE or the dead-neuron test would otherwise trip over with a
# misleading reason, and messages that name the real problem (issue 26)
expect_error tmax_huge "'integrator.t_max' must be in \\[1e-20, 1e20\\]" "$GOOD" --set integrator.t_max=1e50
expect_error tmax_tiny "'integrator.t_max' must be in \\[1e-20, 1e20\\]" "$GOOD" --set integrator.t_first=1e-301 --set integrator.t_max=1e-300
expect_error dead_tol_huge "'integrator.dead_tol' (the Q_kk below which" "$GOOD" --set integrator.dead_tol=1e10
/usr/bin/python3 -c "print('[' * 2000 + ']' * 2000)" > "$W/deep.json"
"$SCM" run "$W/deep.json" -o "$W/deep.out" > /dev/null 2> "$W/deep.err"
check "[ $? -eq 2 ] && grep -q 'nested deeper than 1000 levels' '$W/deep.err'" "nesting depth: $(cat "$W/deep.err")"
mkdir -p "$W/cfgdir"
"$SCM" run "$W/cfgdir" -o "$W/cfgdir.out" > /dev/null 2> "$W/cfgdir.err"
check "[ $? -eq 2 ] && grep -q 'it is a directory' '$W/cfgdir.err'" "a directory as config: $(cat "$W/cfgdir.err")"

# Where an output may go (scm_output_check_path): a device is written
# through, never replaced; a link, a directory, the config itself or the
# other output are refused (exit 2) before anything is computed or written.
# The device is a private node (mknod, as root) so that a regression
# replaces nothing of the machine's.
O=$W/outputs
mkdir -p "$O"
cp "$SRC/examples/relu_k2.json" "$O/cfg.json"
if mknod "$O/null" c 1 3 2> /dev/null; then
    "$SCM" run "$O/cfg.json" -o "$O/null" -q > /dev/null 2> "$O/e"
    check "[ $? -eq 0 ] && [ -c '$O/null' ]" "-o a character device: $(cat "$O/e"); now $(stat -c %F "$O/null")"
    ln -s null "$O/nulllink"
    "$SCM" run "$O/cfg.json" -o "$O/nulllink" -q > /dev/null 2> "$O/e"
    check "[ $? -eq 0 ] && [ -L '$O/nulllink' ] && [ -c '$O/null' ]" "-o a link to a device: $(cat "$O/e")"
fi
if mknod "$O/full" c 1 7 2> /dev/null; then
    "$SCM" run "$O/cfg.json" -o "$O/full" -q > /dev/null 2> "$O/e"
    check "[ $? -eq 4 ] && grep -q 'No space left' '$O/e' && [ -c '$O/full' ]" "-o a full device: $(cat "$O/e")"
fi
mkfifo "$O/fifo"
timeout 20 cat "$O/fifo" > "$O/fifo.out" 2> /dev/null < /dev/null &
reader=$!
"$SCM" run "$O/cfg.json" -o "$O/fifo" -q > /dev/null 2> "$O/e"
check "[ $? -eq 0 ] && [ -p '$O/fifo' ]" "-o a FIFO: $(cat "$O/e")"
wait $reader
check "grep -q '\"command\":' '$O/fifo.out'" "-o a FIFO: the reader got no result"
"$SCM" run "$O/cfg.json" -o /dev/fd/1 -q > "$O/stdout.json" 2> "$O/e"
check "[ $? -eq 0 ] && grep -q '\"command\":' '$O/stdout.json'" "-o /dev/fd/1: $(cat "$O/e")"
echo '{"kept": true}' > "$O/target.json"
ln -s target.json "$O/link.json"
ln -s nowhere.json "$O/dangling.json"
for bad in link dangling; do
    "$SCM" run "$O/cfg.json" -o "$O/$bad.json" -q > /dev/null 2> "$O/e"
    check "[ $? -eq 2 ] && grep -q 'symbolic link' '$O/e' && [ -L '$O/$bad.json' ]" "-o $bad: $(cat "$O/e")"
done
check "grep -q kept '$O/target.json' && [ ! -e '$O/nowhere.json' ]" "a link's target was written"
"$SCM" run "$O/cfg.json" -o "$O" -q > /dev/null 2> "$O/e"
check "[ $? -eq 2 ] && grep -q 'is a directory' '$O/e'" "-o a directory: $(cat "$O/e")"
cp "$O/cfg.json" "$O/cfg.orig"
(cd "$O" && "$SCM" run cfg.json -o ./cfg.json -q > /dev/null 2> e)
check "[ $? -eq 2 ] && grep -q 'is the config file' '$O/e' && cmp -s '$O/cfg.json' '$O/cfg.orig'" "-o the config: $(cat "$O/e")"
"$SCM" run "$O/cfg.json" -o "$O/r.json" --csv "$O/cfg.json" -q > /dev/null 2> "$O/e"
check "[ $? -eq 2 ] && cmp -s '$O/cfg.json' '$O/cfg.orig' && [ ! -e '$O/r.json' ]" "--csv the config: $(cat "$O/e")"
"$SCM" run "$O/cfg.json" -o "$O/same" --csv "$O/same" -q > /dev/null 2> "$O/e"
check "[ $? -eq 2 ] && grep -q 'name the same file' '$O/e' && [ ! -e '$O/same' ]" "-o equal to --csv: $(cat "$O/e")"

# issue 25, scm fixed-points: the families table first, k1 = the family
# (anti-aligned count) everywhere, the ansatz instance under "instance",
# exit 0 with points above the residual bound, --states, --unmerged/--all
"$SCM" fixed-points --K 6 --M 6 --k1 1 -o "$W/f25.json" > "$W/f25.out" 2> "$W/f25.err"
check "[ $? -eq 0 ] && head -2 '$W/f25.out' | tail -1 | grep -q '^families: ' && python3 - '$W/f25.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pts = d['fixed_points']
assert pts and all(p['k1'] == 1 == p['structure']['anti'] for p in pts), [(p['k1'], p['structure']) for p in pts]
assert any(p['instance'] != 1 for p in pts)
ft = d['families']
assert len(ft) == 1 and ft[0]['k1'] == 1 and ft[0]['minima'] >= 1
best = min(p['loss'] for p in pts if p['class'] == 'minimum' and p['structure']['other'] == 0)
assert ft[0]['loss'] == best and pts[ft[0]['index']]['loss'] == best
assert ft[0]['points'] == ft[0]['minima'] + ft[0]['saddles'] + ft[0]['refused']
PY" "fixed-points --k1 1 is family 1, families table: $(cat "$W/f25.err")"
# the lowest k1 = 1 point at K = M = 6 lies in instance 3 of ansatz k1
check "python3 -c \"import json; d = json.load(open('$W/f25.json')); p = d['fixed_points'][0]; assert p['ansatz'] == 'k1' and p['instance'] == 3 and abs(p['loss'] - 0.023757738954) < 1e-11, p['loss']\"" "fixed-points --k1 1 at K = M = 6: lowest point"
# a point above the residual bound: flagged, counted, out of the families, exit 0
"$SCM" fixed-points --K 4 --M 3 --max-residual 1e-15 --all -o "$W/f25r.json" > "$W/f25r.out" 2> "$W/f25r.err"
check "[ $? -eq 0 ] && grep -q 'residual above 1e-15: not in the families table' '$W/f25r.out' && grep -q 'note: ' '$W/f25r.err' && python3 - '$W/f25r.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
above = [p for p in d['fixed_points'] if not p['residual_ok']]
assert d['status'] == 'ok' and above and d['points_above_residual'] == len(above)
assert sum(f['points'] for f in d['families']) == sum(1 for p in d['fixed_points'] if p['residual_ok'] and p['specialised'])
PY" "fixed-points: a point above the residual bound: $(cat "$W/f25r.err")"
# --states: Q and R of no point, of the minima, of all; bad value exit 2
for S in none minima all; do
    "$SCM" fixed-points --K 4 --M 4 --starts 20 -q --states $S -o "$W/f25s_$S.json" 2> "$W/e"
    check "[ $? -eq 0 ] && python3 - '$W/f25s_$S.json' $S <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); s = sys.argv[2]
assert d['states'] == s
for p in d['fixed_points']:
    want = s == 'all' or (s == 'minima' and p['class'] == 'minimum')
    assert (p['Q'] is not None) == want, (s, p['class'])
PY" "fixed-points --states $S: $(cat "$W/e")"
done
"$SCM" fixed-points --K 4 --M 4 --states some -q -o "$W/f25x.json" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q -- \"--states must be auto, none, minima or all, got 'some'\" '$W/e' && [ ! -e '$W/f25x.json' ]" "fixed-points --states some: $(cat "$W/e")"
# --stability: progress on stderr, the final line counting every point (the
# time at K = M = 10 is a benchmark figure, docs/fixed-points.md, not a test)
SCM_PROGRESS_SECONDS=0 "$SCM" fixed-points --K 6 --M 6 --stability -o "$W/f25k6.json" 2> "$W/e" > /dev/null
rc=$?
check "[ $rc -eq 0 ] && grep -Eq '^stability: points ([0-9]+)/\\1, [0-9]+ s$' '$W/e'" "fixed-points --K 6 --M 6 --stability: rc $rc: $(cat "$W/e")"
# --unmerged lists every solution; --all prints every point after the families
"$SCM" fixed-points --K 4 --M 3 --unmerged -q -o "$W/f25u.json" 2> "$W/e"
check "[ $? -eq 0 ] && python3 -c \"import json; a = json.load(open('$W/f25u.json')); b = json.load(open('$W/f25r.json')); assert len(a['fixed_points']) > len(b['fixed_points'])\"" "fixed-points --unmerged: $(cat "$W/e")"
"$SCM" fixed-points --K 4 --M 3 --all > "$W/f25a.out" 2> "$W/e"
"$SCM" fixed-points --K 4 --M 3 > "$W/f25n.out" 2>> "$W/e"
check "[ \$(wc -l < '$W/f25a.out') -gt \$(( \$(wc -l < '$W/f25n.out') + 30 )) ] && grep -q '^ansatz ' '$W/f25a.out' && ! grep -q '^ansatz ' '$W/f25n.out'" "fixed-points --all: $(cat "$W/e")"

# issue 25 item 6: one option parser for every command.  A usage error is
# one line naming the command and pointing to its --help, exit 2, nothing
# written (the old commands printed their whole usage, or nothing).
for args in "run" "run $SRC/examples/relu_k2.json --frob" "fixed-points --K 3" \
    "fixed-points --K x --M 3" "stability --K 3 --M 3" "sweep $SRC/examples/relu_k2.json" \
    "merge a.jsonl" "compare --M 3" "simulate" "lintarget --alpha" "split --K 3 --M 3 --k1 0" \
    "staircase --K 2" "crosscheck --M 2" "stability --point x --K 2 --index 0" \
    "sweep $SRC/examples/relu_k2.json --runs 2 --certify"; do
    cmd=${args%% *}
    "$SCM" $args > "$W/u.out" 2> "$W/u.err"
    rc=$?
    check "[ $rc -eq 2 ] && [ \$(wc -l < '$W/u.err') -eq 1 ] && grep -q \"^scm $cmd: .*; see scm $cmd --help\$\" '$W/u.err' && [ ! -s '$W/u.out' ]" "usage error 'scm $args': rc $rc: $(cat "$W/u.err")"
done
# every command's --help lists its options, on stdout, exit 0
for cmd in run fixed-points crosscheck stability sweep merge compare simulate lintarget split staircase; do
    "$SCM" $cmd --help > "$W/h.out" 2> "$W/h.err"
    check "[ $? -eq 0 ] && grep -q '^usage: scm $cmd' '$W/h.out' && grep -q '^exit status: ' '$W/h.out' && [ ! -s '$W/h.err' ]" "scm $cmd --help"
done
# --activation relu and --threads (the processors online) by default
for cmd in fixed-points crosscheck stability; do
    check "'$SCM' $cmd --help | grep -q -- '--activation NAME  relu (default)'" "$cmd --activation default"
done
for cmd in fixed-points crosscheck sweep compare simulate; do
    check "'$SCM' $cmd --help | grep -q -- '--threads T        threads (default: the processors online'" "$cmd --threads default"
done
# the sweep with the default threads writes the same file as --threads 1
cat > "$W/sw6.json" <<'JSON'
{"model": {"K": 3, "M": 2, "activation": "erf"}, "init": {"type": "random", "d": 100, "seed": 3},
 "integrator": {"t_max": 200}}
JSON
"$SCM" sweep "$W/sw6.json" --runs 4 -q -o "$W/sw6a.jsonl" && "$SCM" sweep "$W/sw6.json" --runs 4 -q --threads 1 -o "$W/sw6b.jsonl"
check "[ $? -eq 0 ] && cmp -s '$W/sw6a.jsonl' '$W/sw6b.jsonl'" "sweep: default threads and --threads 1 differ"
# --prefix for the commands that write several files (-o PREFIX still works)
"$SCM" lintarget --alpha 1e-2 --c 0.5 -q --prefix "$W/ltp" 2> "$W/e"
check "[ $? -eq 0 ] && [ -s '$W/ltp.json' ] && [ -s '$W/ltp.phases.csv' ] && cmp -s '$W/ltp.json' '$W/ltp.json'" "lintarget --prefix: $(cat "$W/e")"
"$SCM" lintarget --alpha 1e-2 --c 0.5 -q -o "$W/lto" 2> "$W/e"
check "[ $? -eq 0 ] && cmp -s '$W/ltp.phases.csv' '$W/lto.phases.csv'" "lintarget -o PREFIX (old spelling): $(cat "$W/e")"
cat > "$W/simp.json" <<'JSON'
{"model": {"K": 2, "M": 2, "activation": "erf"}, "init": {"type": "random", "d": 50, "seed": 1},
 "simulate": {"d": 50, "seeds": 1, "t_max": 0.5}}
JSON
"$SCM" simulate "$W/simp.json" --no-plot -q --prefix "$W/simpo" 2> "$W/e"
check "[ $? -eq 0 ] && [ -s '$W/simpo.json' ] && [ -s '$W/simpo.csv' ]" "simulate --prefix: $(cat "$W/e")"
"$SCM" compare --M 2 --K 2 --runs 2 --no-plots --no-stability -q --prefix "$W/cmpp" 2> "$W/e"
check "[ $? -eq 0 ] && [ -s '$W/cmpp.json' ] && [ -s '$W/cmpp.md' ] && [ -s '$W/cmpp.K2.runs.jsonl' ]" "compare --prefix: $(cat "$W/e")"
# scm stability: --gd-step and --perturb-size (not the config's eta and
# sigma); the old names still work and give the same file
"$SCM" stability --K 4 --M 4 --k1 1 --index 0 --trials 2 --gd-step 0.02 --perturb-size 1e-3 -q -o "$W/sn.json" 2> "$W/e"
check "[ $? -eq 0 ] && python3 -c \"import json; r = json.load(open('$W/sn.json')); s = json.dumps(r); assert '0.02' in s and '0.001' in s\"" "stability --gd-step --perturb-size: $(cat "$W/e")"
"$SCM" stability --K 4 --M 4 --k1 1 --index 0 --trials 2 --eta 0.02 --sigma 1e-3 -q -o "$W/so.json" 2> "$W/e"
check "cmp -s '$W/sn.json' '$W/so.json'" "stability --eta --sigma (old names): $(cat "$W/e")"
check "'$SCM' stability --help | grep -q -- '--perturb-size' && ! '$SCM' stability --help | grep -q -- '--sigma'" "stability --help names --perturb-size"
# --unset removes a config key (its default applies) wherever --set exists
printf '%s' '{"model": {"K": 2, "M": 2}, "init": {"type": "random", "d": 100, "seed": 2}, "integrator": {"t_max": 50, "n_out": 20}}' > "$W/unA.json"
printf '%s' '{"model": {"K": 2, "M": 2}, "init": {"type": "random", "d": 100, "seed": 2}, "integrator": {"n_out": 20}}' > "$W/unB.json"
"$SCM" run "$W/unA.json" -q -o "$W/unA.out.json" --unset integrator.t_max 2> "$W/e" && "$SCM" run "$W/unB.json" -q -o "$W/unB.out.json" 2>> "$W/e"
check "[ $? -eq 0 ] && cmp -s '$W/unA.out.json' '$W/unB.out.json'" "run --unset: not the run without the key: $(cat "$W/e")"
"$SCM" run "$SRC/examples/relu_k2.json" -q -o "$W/un2.json" --unset model.nope 2> "$W/e"
check "[ $? -eq 2 ] && grep -q -- '--unset model.nope' '$W/e' && [ ! -e '$W/un2.json' ]" "run --unset of a missing key: $(cat "$W/e")"
"$SCM" run "$SRC/examples/relu_k2.json" -q -o "$W/un3.json" --unset model.K 2> "$W/e"
check "[ $? -eq 2 ] && grep -q 'K' '$W/e' && [ ! -e '$W/un3.json' ]" "run --unset of a required key: $(cat "$W/e")"
"$SCM" sweep "$W/unA.json" --runs 2 -q -o "$W/swuA.jsonl" --unset integrator.t_max 2> "$W/e" && "$SCM" sweep "$W/unB.json" --runs 2 -q -o "$W/swuB.jsonl" 2>> "$W/e"
check "[ $? -eq 0 ] && cmp -s '$W/swuA.jsonl' '$W/swuB.jsonl'" "sweep --unset: not the sweep without the key: $(cat "$W/e")"
"$SCM" simulate "$W/simp.json" --no-plot -q --prefix "$W/simu" --unset simulate.t_max 2> "$W/e"
check "[ $? -eq 0 ] && python3 -c \"import json; a = json.load(open('$W/simu.json')); b = json.load(open('$W/simpo.json')); assert a['simulate']['t_max'] == 10 and b['simulate']['t_max'] == 0.5\"" "simulate --unset: $(cat "$W/e")"
"$SCM" compare --M 2 --K 2 --runs 2 --no-plots --no-stability -q --unset init.d --prefix "$W/cmpu" 2> "$W/e"
check "[ $? -eq 2 ] && grep -q -- '--unset needs CONFIG.json' '$W/e' && [ ! -e '$W/cmpu.json' ]" "compare --unset without a config: $(cat "$W/e")"

# issue 25 item 7: progress on stderr, one printer (done/total, time left).
# Not on a terminal: a line every CLI_PROGRESS_PERIOD = 5 s at most, none for
# a short run (so logs and golden files hold no timings); every update with
# SCM_PROGRESS_SECONDS=0; --quiet: none.
"$SCM" fixed-points --K 5 --M 5 --stability -o "$W/pg1.json" > /dev/null 2> "$W/e"
check "[ $? -eq 0 ] && [ ! -s '$W/e' ]" "a short fixed-points --stability printed progress off a terminal: $(cat "$W/e")"
SCM_PROGRESS_SECONDS=0 "$SCM" fixed-points --K 5 --M 5 --stability -o "$W/pg2.json" > /dev/null 2> "$W/e"
check "grep -Eq '^stability: points 1/([0-9]+), [0-9]+ s, about [0-9]+ s left$' '$W/e' && grep -Eq '^stability: points ([0-9]+)/\\1, [0-9]+ s$' '$W/e'" "fixed-points progress lines: $(cat "$W/e")"
SCM_PROGRESS_SECONDS=0 "$SCM" fixed-points --K 5 --M 5 --stability -q -o "$W/pg3.json" > /dev/null 2> "$W/e"
check "[ ! -s '$W/e' ]" "fixed-points -q printed progress: $(cat "$W/e")"
SCM_PROGRESS_SECONDS=0 "$SCM" sweep "$W/sw6.json" --runs 3 -o "$W/pg.jsonl" 2> "$W/e"
check "grep -Eq '^runs 1/3, [0-9]+ s, about [0-9]+ s left  ' '$W/e' && grep -Eq '^runs 3/3, [0-9]+ s  ' '$W/e'" "sweep progress lines: $(cat "$W/e")"
"$SCM" sweep "$W/sw6.json" --runs 3 -o "$W/pgb.jsonl" 2> "$W/e"
check "! grep -q '^runs ' '$W/e'" "a short sweep printed progress off a terminal: $(cat "$W/e")"
SCM_PROGRESS_SECONDS=0 "$SCM" simulate "$W/simp.json" --no-plot --seeds 2 --prefix "$W/pgs" > /dev/null 2> "$W/e"
check "grep -Eq '^simulate: seeds 1/2, [0-9]+ s, about [0-9]+ s left$' '$W/e' && grep -Eq '^simulate: seeds 2/2, [0-9]+ s$' '$W/e'" "simulate progress lines: $(cat "$W/e")"
SCM_PROGRESS_SECONDS=0 "$SCM" simulate "$W/simp.json" --no-plot --seeds 2 -q --prefix "$W/pgs" > /dev/null 2> "$W/e"
check "[ ! -s '$W/e' ]" "simulate -q printed progress: $(cat "$W/e")"
SCM_PROGRESS_SECONDS=0 "$SCM" compare --M 2 --K 2 --runs 2 --no-plots --no-stability --prefix "$W/pgc" > /dev/null 2> "$W/e"
check "grep -Eq '^runs 2/2, [0-9]+ s  ' '$W/e'" "compare progress lines: $(cat "$W/e")"
SCM_PROGRESS_SECONDS=0 "$SCM" stability --K 3 --M 3 --k1 0 --trials 2 -o "$W/pgst.json" > /dev/null 2> "$W/e"
check "grep -Eq '^stability: trials 1/8, [0-9]+ s, about [0-9]+ s left$' '$W/e' && grep -Eq '^stability: trials 8/8, [0-9]+ s$' '$W/e'" "stability progress lines: $(cat "$W/e")"
SCM_PROGRESS_SECONDS=0 "$SCM" stability --K 3 --M 3 --k1 0 --trials 2 --perturb qr -q -o "$W/pgst.json" > /dev/null 2> "$W/e"
check "[ $? -eq 0 ] && [ ! -s '$W/e' ]" "stability -q printed progress: $(cat "$W/e")"
"$SCM" stability --K 3 --M 3 --k1 0 --trials 2 -o "$W/pgst.json" > /dev/null 2> "$W/e"
check "[ $? -eq 0 ] && [ ! -s '$W/e' ]" "a short stability printed progress off a terminal: $(cat "$W/e")"

# issue 26 item 20: an output that cannot be written is exit status 4 in
# every command, and a command that writes several files writes all of them
# or none (a --csv that cannot be written after the JSON could: no JSON, and
# an old JSON of that name is left as it was)
mkdir -p "$W/io" && cd "$W/io"
"$SCM" run "$SRC/examples/relu_k2.json" -q -o new.json --csv "$W/nodir/t.csv" 2> "$W/e"
check "[ $? -eq 4 ] && [ ! -e new.json ] && [ -z \"\$(ls | grep tmp)\" ]" "run --csv unwritable: JSON left or exit not 4: $(cat "$W/e")"
echo old > old.json
"$SCM" run "$SRC/examples/relu_k2.json" -q -o old.json --csv "$W/nodir/t.csv" 2> "$W/e"
check "[ $? -eq 4 ] && [ \"\$(cat old.json)\" = old ]" "run --csv unwritable: the old JSON was replaced: $(cat "$W/e")"
for args in "fixed-points --K 3 --M 3 -q -o $W/nodir/f.json" "stability --K 3 --M 3 --k1 0 -q -o $W/nodir/s.json" \
    "split --K 3 --M 3 --index 2 --neuron 1 --lambda-grid 3 -q -o $W/nodir/s.json" \
    "staircase --K 2 --M 2 --alpha 1e-3 -q -o $W/nodir/s.json" "lintarget --alpha 1e-2 --c 0.5 -q --prefix $W/nodir/lt" \
    "simulate $W/simp.json --no-plot -q --prefix $W/nodir/s" "crosscheck --K 2 --M 2 --runs 2 -q -o $W/nodir/x.json" \
    "sweep $W/sw6.json --runs 2 -q -o $W/nodir/r.jsonl" "compare --M 2 --K 2 --runs 2 --no-plots --no-stability -q --prefix $W/nodir/c" \
    "certify --K 3 --M 3 --k1 1 -o $W/nodir/c.json" "map --M 2 --dK 0 --runs 2 --no-stability --no-plots -q -o $W/nodir/m"; do
    "$SCM" $args > /dev/null 2> "$W/e"
    rc=$?
    check "[ $rc -eq 4 ] && grep -q 'nodir' '$W/e'" "scm $args: exit $rc, want 4: $(cat "$W/e")"
done
# lintarget and simulate: every file or none (the JSON goes last into a
# folder where the CSVs could go: a directory of that name makes it fail)
mkdir lt.json
"$SCM" lintarget --alpha 1e-2 --c 0.5 -q --prefix lt 2> "$W/e"
check "[ $? -ne 0 ] && [ ! -e lt.phases.csv ] && [ ! -e lt.traces.csv ] && [ -z \"\$(ls | grep tmp)\" ]" "lintarget: a half-made set of files: $(ls) $(cat "$W/e")"
mkdir sm.csv
"$SCM" simulate "$W/simp.json" --no-plot -q --prefix sm 2> "$W/e"
check "[ $? -ne 0 ] && [ ! -e sm.json ]" "simulate: a half-made set of files: $(ls) $(cat "$W/e")"
mkdir mp.csv
"$SCM" map --M 2 --dK 0 --runs 2 --no-stability --no-plots -q -o mp 2> "$W/e"
check "[ $? -ne 0 ] && [ ! -e mp.json ] && [ -z \"\$(ls | grep tmp)\" ]" "map: a half-made set of files: $(ls) $(cat "$W/e")"
cd "$W"
check "'$SCM' run --help | grep -q '4 an output could not be'" "run --help documents exit status 4"

# scm --help lists every command
for cmd in run fixed-points crosscheck sweep merge compare stability simulate lintarget split staircase certify map; do
    check "'$SCM' --help | grep -q '^  $cmd '" "scm --help does not list $cmd"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
