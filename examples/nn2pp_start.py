"""Start scmode from the initial overlaps an nn2pp run printed (docs/nn2pp.md).

nn2pp (the field's usual integrator of the committee-machine ODEs) prints the
order parameters it starts from.  Paste them below as whitespace-separated rows
(numpy's print format; brackets are ignored): Q (K x K), R (K x M), T (M x M),
and the run's options lr, --both/--lr2, --sigma.  This script writes the
equivalent scmode config (init.type "given") and integrates it:

    /usr/bin/python3 examples/nn2pp_start.py [OUT.json]

The dictionary of the translation (docs/nn2pp.md):
    alpha (steps / N)      -> tau = lr * alpha
    the ODE with lr^2 terms -> rule "sgd", rule_params.eta = lr   (not "gd")
    --both --lr2 LR2       -> rule_params.lr_v_ratio = LR2 / lr  (sgd keeps v fixed by default)
    --sigma S (std. dev.)  -> rule_params.noise = S**2
"""
import json
import re
import sys

import numpy as np

import scmode

# ---- what the nn2pp run printed (here: erf, K = M = 2, lr = 0.5) -------------
NN2PP_Q = """
[[ 0.98322  0.01477]
 [ 0.01477  1.01941]]
"""
NN2PP_R = """
[[ 0.02134 -0.00871]
 [-0.01602  0.01214]]
"""
NN2PP_T = """
[[ 1.  0.]
 [ 0.  1.]]
"""
LR, LR2, SIGMA, BOTH = 0.5, 0.5, 0.0, False   # nn2pp's --lr, --lr2, --sigma, --both
ACTIVATION = "erf"                            # nn2pp's g: erf (Saad-Solla convention)
ALPHA_MAX = 2000.0                            # nn2pp's final alpha (steps / N)


def matrix(text):
    """Rows of numbers, numpy's printing or plain whitespace; brackets ignored."""
    rows = [r for r in (re.sub(r"[\[\],]", " ", line).split() for line in text.splitlines()) if r]
    return np.array([[float(x) for x in r] for r in rows])


def config():
    Q, R, T = matrix(NN2PP_Q), matrix(NN2PP_R), matrix(NN2PP_T)
    K, M = R.shape
    params = {"eta": LR, "noise": SIGMA ** 2}
    if BOTH:
        params["lr_v_ratio"] = LR2 / LR
    return {
        "model": {"K": K, "M": M, "activation": ACTIVATION, "T": T.tolist()},
        "rule": "sgd", "rule_params": params,
        "init": {"type": "given", "Q": Q.tolist(), "R": R.tolist()},
        "integrator": {"t_max": LR * ALPHA_MAX, "t_first": 0.01, "n_out": 60},
    }


if __name__ == "__main__":
    cfg = config()
    out = sys.argv[1] if len(sys.argv) > 1 else "nn2pp_start.json"
    with open(out, "w") as f:
        json.dump(cfg, f, indent=1)
    tr = scmode.run(cfg)
    print("wrote %s (the same run: scm run %s)" % (out, out))
    print("%12s %12s %14s" % ("alpha", "tau", "eps_g"))
    for t, e in list(zip(tr.t, tr.eps))[::6]:
        print("%12.5g %12.5g %14.8g" % (t / LR, t, e))
    print("stop: %s at alpha = %.6g" % (tr.stop, tr.t[-1] / LR))
