#!/usr/bin/env bash
# test_install.sh BUILD_DIR SOURCE_DIR SANITIZE: `meson install` into a temporary
# destdir, then build examples/libscm_demo.c against the installed headers,
# shared library and libscm.pc only (PKG_CONFIG_SYSROOT_DIR points pkg-config's
# -I and -L flags into the destdir), and run it.
# Then link it statically the same way (pkg-config --static: the private
# flags of SUNDIALS, GSL and cJSON must be complete).
set -u
build=$1
src=$2
san=${3:-none} # the build's b_sanitize: an instrumented libscm needs the runtime
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() { # check NAME COMMAND...
    if "${@:2}" >"$tmp/out" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $1"
        cat "$tmp/out"
    fi
}
if ! meson install -C "$build" --destdir "$tmp/root" --no-rebuild >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    echo "0 passed, 1 failed"
    exit 1
fi
pc=$(find "$tmp/root" -name libscm.pc | head -n 1)
check "libscm.pc installed" test -n "$pc"
check "headers installed" test -n "$(find "$tmp/root" -path '*/include/scm/flow.h')"
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$tmp/root
flags=$(pkg-config --cflags --libs libscm)
sflags=$(pkg-config --static --cflags --libs libscm)
libdir=$(dirname "$(dirname "$pc")") # the .pc lives in LIBDIR/pkgconfig
cc=${CC:-cc}
sanflags=()
[ "$san" = none ] || sanflags=("-fsanitize=$san")
check "compile against the shared library" \
    "$cc" -std=c11 -Wall -Werror "${sanflags[@]}" "$src/examples/libscm_demo.c" $flags -o "$tmp/demo"
check "run with the installed shared library" env LD_LIBRARY_PATH="$libdir" "$tmp/demo"
check "linked to the installed libscm.so" \
    sh -c "LD_LIBRARY_PATH='$libdir' ldd '$tmp/demo' | grep -q '$libdir/libscm.so'"
# The archive itself, then every flag of --static but -lscm (which would
# pick the shared library again).
others=()
for f in $sflags; do [ "$f" = -lscm ] || others+=("$f"); done
check "compile against the static library" \
    "$cc" -std=c11 -Wall -Werror "${sanflags[@]}" "$src/examples/libscm_demo.c" \
    "$libdir/libscm.a" "${others[@]}" -o "$tmp/demo_static"
check "not linked to libscm.so" sh -c "! ldd '$tmp/demo_static' | grep -q libscm"
check "run statically linked" "$tmp/demo_static"
# The installed Python package finds the installed libscm by itself (no
# SCMODE_LIB, no LD_LIBRARY_PATH); not in a sanitizer build (docs/python.md).
pkgdir=$(find "$tmp/root" -path '*/scmode/__init__.py' | head -n 1)
check "python package installed" test -n "$pkgdir"
if [ "$san" = none ] && [ -n "$pkgdir" ] && [ -x /usr/bin/python3 ]; then
    check "installed scmode loads the installed libscm" env -u SCMODE_LIB -u LD_LIBRARY_PATH \
        PYTHONPATH="$(dirname "$(dirname "$pkgdir")")" /usr/bin/python3 -c "
import scmode, sys
p = scmode._lib._name
assert p.startswith('$tmp/root/'), p
assert abs(scmode.Model(2, 2).loss([[1, 0], [0, 1]], [[1, 0], [0, 1]])) < 1e-14
"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
