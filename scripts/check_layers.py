#!/usr/bin/env python3
"""check_layers.py [ROOT]: the library's layering, checked (docs/architecture.md).

The library's folders are layers, lowest first:

    core < dynamics < landscape < studies < bindings | exec   (src/cli is the program on top)

A file of one layer may include the headers of its own layer and of the layers
below, never one above.  bindings (libscm's JSON calls for Python) and exec (the
MPI executor of scm-mpi, built only with MPI) are siblings on one floor: neither
includes the other, so that libscm never needs MPI.  A public header include/scm/X.h belongs to the layer of
the files that define the functions it declares (a header of types and macros
only belongs to no layer and may be included anywhere); an internal header
"L/name.h" belongs to layer L.  Also checked: the functions of one public
header are defined in one layer, and every library .c lives in a layer folder.

Prints one line per violation and a last line "N passed, N failed" (the form the
test runner reads); exit status 1 on any violation."""
import os
import re
import sys

from script_args import parse

LAYERS = ["core", "dynamics", "landscape", "studies", "bindings", "exec"]
# the floor of each layer; siblings share one
FLOOR = {"core": 0, "dynamics": 1, "landscape": 2, "studies": 3, "bindings": 4, "exec": 4}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# a definition at file level: the name, its parameters, then a brace
DEFINITION = re.compile(r"^[A-Za-z_][\w \t\*]*?\b(scm_\w+)\s*\([^;{)]*(?:\([^)]*\)[^;{)]*)*\)\s*\{",
                        re.M)
DECLARATION = re.compile(r"\b(scm_\w+)\s*\(")


def strip(text):
    """Comments and string literals blanked, so that they declare nothing."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def main():
    args, _ = parse(__doc__, 0, 1, inputs=slice(0, 1))
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    src = os.path.join(root, "src")
    failures, checks = [], 0

    sources = {}  # path -> (layer, includes)
    for layer in LAYERS:
        d = os.path.join(src, layer)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.endswith((".c", ".h")):
                text = open(os.path.join(d, name), errors="replace").read()
                sources[f"{layer}/{name}"] = (layer, INCLUDE.findall(text))
    for name in sorted(os.listdir(src)):
        if name.endswith(".c"):
            checks += 1
            failures.append(f"src/{name}: a library source outside the layer folders")

    defined = {}  # function name -> layer of its definition
    for path, (layer, _) in sources.items():
        if path.endswith(".c"):
            text = strip(open(os.path.join(src, path), errors="replace").read())
            for name in DEFINITION.findall(text):
                defined.setdefault(name, layer)
    owner = {}  # "scm/X.h" -> set of layers
    for h in sorted(os.listdir(os.path.join(root, "include", "scm"))):
        checks += 1
        text = strip(open(os.path.join(root, "include", "scm", h), errors="replace").read())
        layers = {defined[n] for n in DECLARATION.findall(text) if n in defined}
        owner["scm/" + h] = layers
        if len(layers) > 1:
            failures.append(f"include/scm/{h}: its functions are defined in {len(layers)} layers "
                            f"({', '.join(sorted(layers))}), want one")

    rank = FLOOR
    for path, (layer, incs) in sorted(sources.items()):
        for inc in incs:
            checks += 1
            if inc.startswith("scm/"):
                layers = owner.get(inc, set())
                if not layers:
                    continue  # reported above, or a header-only module of no layer
                target = max(layers, key=rank.get)
            elif inc.split("/")[0] in rank:
                target = inc.split("/")[0]
            else:
                continue  # generated (scm_version.h) or system
            if rank[target] > rank[layer]:
                failures.append(f"src/{path}: includes {inc} of layer {target}, above {layer}")
            elif rank[target] == rank[layer] and target != layer:
                failures.append(f"src/{path}: includes {inc} of layer {target}, a sibling of "
                                f"{layer}")

    for f in failures:
        print("FAIL: " + f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
