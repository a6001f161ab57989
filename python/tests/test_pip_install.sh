#!/usr/bin/env bash
# pip install . into a fresh venv (Debian's python3 with --system-site-packages,
# offline: --no-build-isolation --no-index), then import scmode from /tmp and
# run a fixed-points call against the CLI's result (docs/python.md).
#   test_pip_install.sh SRC_DIR SCM_EXE [--sanitized]
# Exits 77 (SKIP) under a sanitizer build: the wheel is a release build
# anyway, and the sanitized tree is not what pip builds.
set -uo pipefail
src=$(realpath "$1") scm=$(realpath "$2")
[ "${3:-}" = "--sanitized" ] && { echo "skipped: sanitizer build"; exit 77; }
py=/usr/bin/python3
for mod in mesonpy venv numpy; do
    "$py" -c "import $mod" 2>/dev/null || { echo "FAIL: $py lacks $mod (bash scripts/setup.sh installs it)"; echo "0 passed, 1 failed"; exit 1; }
done
tmp=$(mktemp -d)
# meson-python 0.12 leaves its native file in the source tree: remove it
# afterwards unless it was there before
native="$src/.mesonpy-native-file.ini"
had_native=0; [ -e "$native" ] && had_native=1
cleanup() { rm -rf "$tmp"; [ $had_native = 1 ] || rm -f "$native"; }
trap cleanup EXIT
pass=0 fail=0
ok() { if [ "$1" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
"$py" -m venv --system-site-packages "$tmp/venv"; ok $? "venv"
# pip copies nothing: meson-python builds out of tree in its own directory
( cd "$tmp" && "$tmp/venv/bin/pip" install --no-build-isolation --no-index "$src" ) > "$tmp/pip.log" 2>&1
rc=$?; ok $rc "pip install (log below)"
[ $rc = 0 ] || tail -40 "$tmp/pip.log"
( cd "$tmp" && "$scm" fixed-points --K 3 --M 3 -o fp.json -q ); ok $? "scm fixed-points"
cd /tmp
env -u SCMODE_LIB -u PYTHONPATH "$tmp/venv/bin/python" - "$tmp/fp.json" <<'PY'
import json, sys
import scmode
assert "site-packages" in scmode.__file__, scmode.__file__
fp = scmode.fixed_points(3, 3)
ref = json.load(open(sys.argv[1]))
assert [p["loss"] for p in fp] == [p["loss"] for p in ref["fixed_points"]], "losses differ"
assert fp.result["fixed_points"][0]["Q"] == ref["fixed_points"][0]["Q"]
print("import from", scmode.__file__, "and", len(fp), "fixed points as the CLI")
PY
ok $? "import scmode from /tmp in the venv and fixed_points(3, 3) equal to the CLI's"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
