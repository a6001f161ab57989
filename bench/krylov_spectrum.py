#!/usr/bin/python3
"""krylov_spectrum.py CONFIG.json [--seed S] [--every N]: the spectrum of the
flow's Jacobian along one run, to see why GMRES needs the Krylov iterations
it takes (docs/map.md, "Speed").

Integrates the run as `scm run` does (init.seed = S if given), then at every
N-th output point assembles the closed-form Jacobian (scm_flow_jacobian,
n = K (K + 1) / 2 + K M unknowns), computes its eigenvalues with numpy and
prints how they are spread: a histogram of the real parts on a log scale and
the most populated values.  The Newton matrix of a BDF step is I - gamma J
(gamma about the step size), and GMRES needs about one iteration per
cluster of gamma lambda that is not close to 0: the histogram says how many
clusters there are and how many eigenvalues a deflation would have to take.

Run from the source tree with a built library (SCMODE_LIB, or build/):
    /usr/bin/python3 bench/krylov_spectrum.py \\
        data/map/gaussian/map_gaussian.M40.K42.config.json --seed 1463188694
(n = 2583 there: about 20 s of eigensolver per point).  /usr/bin/python3
(numpy from Debian).
"""
import argparse
import ctypes
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import scmode  # noqa: E402
from scmode import _lib  # noqa: E402

EDGES = [-np.inf, -15, -8, -4, -2, -1, -0.5, -0.25, -0.1, -0.03, -0.01, -1e-3, -1e-4, 0,
         1e-4, 1e-3, 1e-2, 0.1, 1, np.inf]


def declare_flow_calls():
    """The ctypes signatures of the flow calls the package does not wrap."""
    _lib.scm_flow_alloc.restype = ctypes.c_void_p
    _lib.scm_flow_alloc.argtypes = [ctypes.c_void_p]
    _lib.scm_flow_free.restype = None
    _lib.scm_flow_free.argtypes = [ctypes.c_void_p]
    _lib.scm_flow_jacobian.restype = ctypes.c_int
    _lib.scm_flow_jacobian.argtypes = [ctypes.c_void_p] * 4


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--every", type=int, default=4, help="every N-th output point (default 4)")
    a = ap.parse_args()
    if a.every < 1:
        sys.exit("krylov_spectrum.py: --every must be >= 1, got %d" % a.every)
    try:
        cfg = json.load(open(a.config))
    except (OSError, ValueError) as e:
        sys.exit("krylov_spectrum.py: %s: %s" % (a.config, e))
    sets = ["init.seed=%d" % a.seed] if a.seed is not None else []
    tr = scmode.run(cfg, sets)
    K, M = tr.R.shape[1], tr.R.shape[2]
    n = K * (K + 1) // 2 + K * M
    print("%s: K = %d, M = %d, n = %d unknowns; %s" % (a.config, K, M, n, tr))
    declare_flow_calls()
    err = scmode._Error()
    cfg_c = scmode._parse_config(json.dumps(cfg), sets)
    model = _lib.scm_config_model(cfg_c, ctypes.byref(err))
    if not model:
        sys.exit("krylov_spectrum.py: the model: %s" % err.msg.decode())
    fl = _lib.scm_flow_alloc(model)
    if not fl:
        sys.exit("krylov_spectrum.py: out of memory")
    J = np.empty((n, n))
    for i in range(0, len(tr.t), a.every):
        Q = np.ascontiguousarray(tr.Q[i])
        R = np.ascontiguousarray(tr.R[i])
        st = _lib.scm_flow_jacobian(fl, Q.ctypes.data, R.ctypes.data, J.ctypes.data)
        if st:
            print("t = %.4g: no closed-form Jacobian (%s)" %
                  (tr.t[i], _lib.scm_status_str(st).decode()))
            continue
        ev = np.linalg.eigvals(J)
        re = ev.real
        h, _ = np.histogram(re, bins=EDGES)
        vals, counts = np.unique(np.round(re, 2), return_counts=True)
        top = sorted(zip(counts, vals), reverse=True)[:8]
        print("t = %.4g, loss %.4g, max |Im| %.1e, lambda min %.4g, max %.4g" %
              (tr.t[i], tr.eps[i], np.abs(ev.imag).max(), re.min(), re.max()))
        print("  " + ", ".join("[%g, %g): %d" % (lo, hi, c)
                               for lo, hi, c in zip(EDGES[:-1], EDGES[1:], h) if c))
        print("  most populated (2 decimals): " +
              ", ".join("%g x%d" % (v, c) for c, v in top))
    _lib.scm_flow_free(fl)
    _lib.scm_model_free(model)
    _lib.scm_config_free(cfg_c)


if __name__ == "__main__":
    main()
