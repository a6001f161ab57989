#!/usr/bin/env bash
# test_golden.sh SCM [--update]: behaviour unchanged, byte for byte.  Runs
# the reference commands of tests/golden/cases.sh (every command, small
# sizes) in a scratch folder, blanks the wall-clock timings
# (golden/normalise.py) and compares every file written, and every stdout,
# stderr and exit status, with tests/golden/expected/.  A refactoring must
# leave this test passing; a deliberate change of output is recorded with
# --update, and the diff of tests/golden/expected/ is then part of the commit.
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
EXP=$SRC/tests/golden/expected
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# progress lines appear only after a few seconds: a slow machine (or a
# sanitizer build) must not change stderr
export SCM_PROGRESS_SECONDS=1e30
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

cp "$SRC"/examples/*.json "$W"/
cd "$W"
case_() {
    local name=$1
    shift
    "$@" > "$name.out" 2> "$name.err"
    echo $? > "$name.rc"
}
. "$SRC/tests/golden/cases.sh"
rm -f ./*.tmp*
"$PY" "$SRC/tests/golden/normalise.py" "$W"

if [ "${2:-}" = "--update" ]; then
    rm -rf "$EXP"
    mkdir -p "$EXP"
    cp -- * "$EXP"/
    echo "updated $EXP ($(ls "$EXP" | wc -l) files)"
    exit 0
fi
pass=0 fail=0
for f in "$EXP"/* ./*; do
    n=$(basename "$f")
    [ -e "$EXP/$n" ] && [ "$f" != "$EXP/$n" ] && continue   # each name once
    if [ ! -e "$EXP/$n" ]; then
        fail=$((fail + 1)); echo "FAIL: $n is new (not in tests/golden/expected)" >&2
    elif [ ! -e "$W/$n" ]; then
        fail=$((fail + 1)); echo "FAIL: $n was not written" >&2
    elif cmp -s "$EXP/$n" "$W/$n"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL: $n differs:" >&2
        diff "$EXP/$n" "$W/$n" | head -20 >&2
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
