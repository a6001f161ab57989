"""Start scmode from the initial overlaps an nn2pp run printed (docs/nn2pp.md).

nn2pp (github.com/sgoldt/nn2pp, the field's usual integrator of the
committee-machine ODEs: scmpp_ode.cpp, and the simulator nn2pp.cpp) prints a
header and then one line per output time, in the format of its status()
(libnn2pp.h): comma-separated

    steps/N, eg, et, eg_frac, et_frac, diff, Q (upper triangle, row by row),
    R (K x M, row by row), A (the teacher's second layer, M), v (the student's, K)

with C++'s default 6 significant digits (the ODE prints nan for et,
eg_frac, et_frac, diff).  Paste the header and the first line (steps/N = 0)
below, exactly as printed.  This script reads K, M, g, lr, lr2, sigma, wd
and --both from the header and Q, R, A, v from the line, checks that
scmode's loss of that state is the eg nn2pp printed (to its 6 digits),
writes the equivalent scmode config (init.type "given", rule "sgd") and
integrates it:

    /usr/bin/python3 examples/nn2pp_start.py [OUT.json]

The dictionary of the translation (docs/nn2pp.md):
    alpha (steps / N)       -> tau = lr * alpha
    the ODE with lr^2 terms -> rule "sgd", rule_params.eta = lr   (not "gd")
    --both --lr2 LR2        -> rule_params.lr_v_ratio = LR2 / lr (nn2pp's lr2 defaults to lr;
                               without --both v stays fixed, lr_v_ratio 0)
    --sigma S (std. dev.)   -> rule_params.noise = S**2
    A, v printed            -> model.v_star = A, model.v = v
    T                       -> identity (nn2pp's ODE; not printed)
"""
import json
import re
import sys

import numpy as np

import scmode

# ---- what an nn2pp ODE run printed (erf, K = M = 2, lr = 0.5), verbatim -------
NN2PP_OUTPUT = """\
# This is scm++ ODE integrator for two-layer NN
# g1=g2=erf, M=2, K=2, steps/N=1000, seed=0
# lr=0.5, lr2=0.5, sigma=0, wd=0, dt 0.01, initial overlap=0.01
# steps / N, eg, et, diff
0, 0.668687, nan, nan, nan, nan, 0.98322, 0.01477, 1.01941, 0.02134, -0.00871, -0.01602, 0.01214, 1, 1, 1.00731, 0.99264
"""
ALPHA_MAX = 2000.0   # the final alpha (steps / N) to integrate to


class Nn2ppError(ValueError):
    """nn2pp's output could not be read; the message says where."""


def _header(text, key, conv, default=None):
    m = re.search(r"(?:^|[\s,=])%s=([^,\s]+)" % re.escape(key), text, re.M)
    if not m:
        if default is not None:
            return default
        raise Nn2ppError("nn2pp header: no '%s=' (paste the lines starting with #)" % key)
    try:
        return conv(m.group(1))
    except ValueError:
        raise Nn2ppError("nn2pp header: %s=%s is not a number" % (key, m.group(1))) from None


def parse(text):
    """nn2pp's printed header and first status line: a dict with K, M,
    activation, lr, lr2, sigma, wd, both, alpha0, eg, Q, R, v_star (A), v."""
    head = "\n".join(ln for ln in text.splitlines() if ln.startswith("#"))
    data = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if not data:
        raise Nn2ppError("nn2pp output: no status line (the first line after the header)")
    K, M = _header(head, "K", int), _header(head, "M", int)
    g = re.search(r"g1=(?:g2=)?(\w+)", head)
    act = {"erf": "erf", "lin": "linear"}.get(g.group(1) if g else "")
    if act is None:
        raise Nn2ppError("nn2pp header: activation %r: scmode reads erf and lin"
                         % (g.group(1) if g else None))
    lr = _header(head, "lr", float)
    lr2 = _header(head, "lr2", float, lr)
    out = dict(K=K, M=M, activation=act, lr=lr, lr2=lr if lr2 < 0 else lr2,
               sigma=_header(head, "sigma", float, 0.0), wd=_header(head, "wd", float, 0.0),
               both=bool(re.search(r"^# training both layers", head, re.M)))
    vals = [x.strip() for x in data[0].split(",")]
    want = 6 + K * (K + 1) // 2 + K * M + M + K
    if len(vals) != want:
        raise Nn2ppError("nn2pp status line: %d values, K = %d and M = %d need %d (t, eg, et, "
                         "eg_frac, et_frac, diff, Q upper, R, A, v)" % (len(vals), K, M, want))
    x = np.array([float(v) for v in vals])
    out["alpha0"], out["eg"] = x[0], x[1]
    q, i = np.zeros((K, K)), 6
    for k in range(K):
        for l in range(k, K):
            q[k, l] = q[l, k] = x[i]
            i += 1
    out["Q"] = q
    out["R"] = x[i:i + K * M].reshape(K, M)
    i += K * M
    out["v_star"], out["v"] = x[i:i + M], x[i + M:i + M + K]
    return out


def config(run=None):
    """The scmode config of the nn2pp run (parse()'s dict; default NN2PP_OUTPUT)."""
    p = parse(NN2PP_OUTPUT) if run is None else run
    if p["wd"] != 0:
        raise Nn2ppError("nn2pp's weight decay wd = %g has no scmode equivalent" % p["wd"])
    params = {"eta": p["lr"], "noise": p["sigma"] ** 2,
              "lr_v_ratio": p["lr2"] / p["lr"] if p["both"] else 0.0}
    return {
        "model": {"K": p["K"], "M": p["M"], "activation": p["activation"],
                  "v": p["v"].tolist(), "v_star": p["v_star"].tolist()},
        "rule": "sgd", "rule_params": params,
        "init": {"type": "given", "Q": p["Q"].tolist(), "R": p["R"].tolist()},
        "integrator": {"t_max": p["lr"] * ALPHA_MAX, "t_first": 0.01, "n_out": 60},
    }


if __name__ == "__main__":
    run = parse(NN2PP_OUTPUT)
    cfg = config(run)
    m = scmode.Model(run["K"], run["M"], run["activation"], v=run["v"], v_star=run["v_star"])
    eg = m.loss(run["Q"], run["R"])
    print("nn2pp printed eg = %g at alpha = %g; scmode's loss of that state: %g"
          % (run["eg"], run["alpha0"], eg))
    out = sys.argv[1] if len(sys.argv) > 1 else "nn2pp_start.json"
    with open(out, "w") as f:
        json.dump(cfg, f, indent=1)
    tr = scmode.run(cfg)
    lr = run["lr"]
    print("wrote %s (the same run: scm run %s)" % (out, out))
    print("%12s %12s %14s" % ("alpha", "tau", "eps_g"))
    for t, e in list(zip(tr.t, tr.eps))[::6]:
        print("%12.5g %12.5g %14.8g" % (t / lr, t, e))
    print("stop: %s at alpha = %.6g" % (tr.stop, tr.t[-1] / lr))
