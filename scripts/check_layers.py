#!/usr/bin/env python3
"""check_layers.py [ROOT]: the library's layering, checked (docs/architecture.md).

The library's folders are layers, lowest first:

    core < dynamics < landscape < studies < bindings      (src/cli is the program on top)

A file of one layer may include the headers of its own layer and of the layers
below, never one above.  A public header include/scm/X.h belongs to the layer of
the module that implements it: the folder of the .c files whose first project
include is "scm/X.h" (each module's .c opens with its own header).  An internal
header "L/name.h" belongs to layer L.  Also checked: every public header has
exactly one layer, and every library .c lives in a layer folder.

Prints one line per violation and a last line "N passed, N failed" (the form the
test runner reads); exit status 1 on any violation."""
import os
import re
import sys

LAYERS = ["core", "dynamics", "landscape", "studies", "bindings"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
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

    owner = {}  # "scm/X.h" -> set of layers
    for path, (layer, incs) in sources.items():
        if path.endswith(".c") and incs and incs[0].startswith("scm/"):
            owner.setdefault(incs[0], set()).add(layer)
    for h in sorted(os.listdir(os.path.join(root, "include", "scm"))):
        checks += 1
        layers = owner.get("scm/" + h, set())
        if len(layers) != 1:
            failures.append(f"include/scm/{h}: implemented in {len(layers)} layers "
                            f"({', '.join(sorted(layers)) or 'none'}), want one")

    rank = {layer: i for i, layer in enumerate(LAYERS)}
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

    for f in failures:
        print("FAIL: " + f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
