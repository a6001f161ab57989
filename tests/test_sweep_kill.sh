#!/usr/bin/env bash
# test_sweep_kill.sh SCM: a sweep killed with SIGKILL at 20 random moments
# and resumed each time (--resume) ends with the same runs file, byte for
# byte, as an uninterrupted sweep: nothing lost, nothing duplicated.  Kill
# moments are 0.02 s (start-up) plus a fraction, uniform in [0.005, 0.04]
# (RANDOM seeded), of the time the uninterrupted sweep took on this machine,
# so the 20 kills together cut into about half of the work whatever the
# machine's speed; threads alternate between 1 and 2.  At least half the
# kills must have hit a running sweep (else the test proves nothing and
# fails).
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }
cd "$W"
RUNS=1000
printf '{"model": {"K": 3, "M": 2}, "init": {"d": 100, "seed": 11}}' > c.json
t0=$(date +%s%N)
"$SCM" sweep c.json --runs $RUNS -o ref.jsonl -q
check "[ $? -eq 0 ]" "uninterrupted sweep"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))

RANDOM=20261203
hits=0
prev=0
for i in $(seq 1 20); do
    delay_ms=$(( 20 + ms * (5 + RANDOM % 36) / 1000 ))
    delay=$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))
    "$SCM" sweep c.json --runs $RUNS -o k.jsonl --resume --threads $((1 + i % 2)) -q \
        > out.$i 2>&1 &
    pid=$!
    sleep "$delay"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    [ "$rc" -eq 137 ] && hits=$((hits + 1))
    # exit 0 (finished before the kill) or 137 (killed), never a complaint
    check "[ $rc -eq 0 ] || [ $rc -eq 137 ]" "kill $i: exit status $rc: $(cat out.$i)"
    n=$(grep -c '' k.jsonl 2>/dev/null || echo 0)
    check "[ $n -ge $prev ]" "kill $i: the file lost lines ($prev -> $n)"
    prev=$n
    # every complete line is a line of the reference, in order
    check "cmp -s <(head -n \$(( \$(wc -l < k.jsonl) )) k.jsonl) <(head -n \$(( \$(wc -l < k.jsonl) )) ref.jsonl)" \
        "kill $i: the complete lines differ from the uninterrupted sweep"
done
echo "$hits of 20 kills hit a running sweep (uninterrupted: $ms ms); $prev lines before the final resume"
check "[ $hits -ge 10 ]" "only $hits kills hit a running sweep"
"$SCM" sweep c.json --runs $RUNS -o k.jsonl --resume -q
check "[ $? -eq 0 ]" "final resume"
check "cmp -s ref.jsonl k.jsonl" "the resumed file differs from the uninterrupted one"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
