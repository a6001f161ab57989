"""Tests of the Python front (python/scmode) against independent computations:
numpy Monte Carlo of the kernels and the loss (5 standard errors), finite
differences of the loss against the gradient, the matrix form of the flow
recomputed in numpy, and the C CLI (`scm run`, `scm fixed-points`,
`scm sweep`) on the same input.  Usage:
    test_scmode.py SCM_EXE [--sanitized]
With --sanitized (an ASan build) it exits 77, which meson reports as SKIP:
an ASan-instrumented libscm.so cannot be loaded into a non-ASan python.
Prints "N passed, N failed"."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

if "--sanitized" in sys.argv:
    print("skipped: ctypes cannot load an ASan-instrumented libscm.so into python "
          "(docs/python.md); the release build runs these tests")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402

import scmode  # noqa: E402

SCM = os.path.abspath(sys.argv[1])
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def raises(fn, exc, pattern, what):
    try:
        fn()
    except exc as e:
        check(pattern in str(e), "%s: message '%s' lacks '%s'" % (what, e, pattern))
        return
    check(False, "%s: no %s raised" % (what, exc.__name__))


G = {"relu": lambda x: np.maximum(x, 0.0),
     "erf": lambda x: np.vectorize(__import__("math").erf)(x / np.sqrt(2.0)),
     "linear": lambda x: x}


def test_kernels_monte_carlo():
    rng = np.random.default_rng(12345)
    n = 200000
    for act in ("relu", "erf", "linear"):
        for (a, b, c) in ((1.0, 1.0, 0.3), (2.385, 0.7, -0.91), (0.5, 1.5, 0.85)):
            f = scmode.pair_kernel(act, a, b, c)[0]
            L = np.linalg.cholesky(np.array([[a, c], [c, b]]))
            uv = rng.standard_normal((n, 2)) @ L.T
            prod = G[act](uv[:, 0]) * G[act](uv[:, 1])
            se = prod.std() / np.sqrt(n)
            check(abs(prod.mean() - f) < 5 * se,
                  "%s f(%g,%g,%g) = %.6g, MC %.6g +- %.2g" % (act, a, b, c, f, prod.mean(), se))


def test_kernel_derivatives():
    h = 1e-6
    for act in ("relu", "erf"):
        a, b, c = np.array([1.3, 0.6]), np.array([0.8, 2.1]), np.array([0.4, -0.7])
        f, fa, fb, fc = scmode.pair_kernel(act, a, b, c)
        for name, d, (da, db, dc) in (("fa", fa, (h, 0, 0)), ("fb", fb, (0, h, 0)),
                                      ("fc", fc, (0, 0, h))):
            fd = (scmode.pair_kernel(act, a + da, b + db, c + dc)[0] -
                  scmode.pair_kernel(act, a - da, b - db, c - dc)[0]) / (2 * h)
            check(np.allclose(d, fd, rtol=1e-6, atol=1e-9), "%s %s %s vs FD %s" % (act, name, d, fd))


def state(K, M, seed):
    """A random valid (Q, R) with T = I: overlaps of explicit vectors."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((K, K + M)) / np.sqrt(K + M) * 1.3
    Ws = np.eye(M, K + M)
    return W @ W.T, W @ Ws.T


def test_loss_monte_carlo():
    rng = np.random.default_rng(7)
    K, M, n = 3, 2, 400000
    for act in ("relu", "erf"):
        Q, R = state(K, M, 3)
        v, vs = np.array([1.0, 0.5, -0.7]), np.array([1.0, 2.0])
        m = scmode.Model(K, M, act, v=v, v_star=vs)
        C = np.block([[Q, R], [R.T, np.eye(M)]])
        z = rng.standard_normal((n, K + M)) @ np.linalg.cholesky(C).T
        err2 = 0.5 * (G[act](z[:, :K]) @ v - G[act](z[:, K:]) @ vs) ** 2
        se = err2.std() / np.sqrt(n)
        eps = m.loss(Q, R)
        check(abs(err2.mean() - eps) < 5 * se, "%s loss %.6g vs MC %.6g +- %.2g"
              % (act, eps, err2.mean(), se))


def test_gradient_and_flow():
    K, M, h = 3, 2, 1e-6
    for act in ("relu", "erf", "linear"):
        Q, R = state(K, M, 11)
        T = np.array([[1.0, 0.3], [0.3, 0.8]])
        Q, R = state(K, M, 11)
        m = scmode.Model(K, M, act, T=T)
        eps, A, B = m.grad(Q, R)
        check(abs(eps - m.loss(Q, R)) < 1e-14, "%s grad's eps equals loss" % act)
        for k in range(K):
            for l in range(k, K):
                dQ = np.zeros((K, K))
                dQ[k, l] = dQ[l, k] = h
                fd = (m.loss(Q + dQ, R) - m.loss(Q - dQ, R)) / (2 * h)
                want = A[k, k] if k == l else A[k, l] + A[l, k]
                check(abs(fd - want) < 1e-7, "%s dEps/dQ[%d,%d] FD %.9g vs %.9g" % (act, k, l, fd, want))
            for j in range(M):
                dR = np.zeros((K, M))
                dR[k, j] = h
                fd = (m.loss(Q, R + dR) - m.loss(Q, R - dR)) / (2 * h)
                check(abs(fd - B[k, j]) < 1e-7, "%s dEps/dR[%d,%d] FD %.9g vs %.9g" % (act, k, j, fd, B[k, j]))
        S = A + A.T
        FQ, FR = m.rhs(Q, R)
        check(np.allclose(FQ, -(S @ Q + Q @ S + B @ R.T + R @ B.T), atol=1e-13), "%s F_Q" % act)
        check(np.allclose(FR, -(S @ R + B @ T), atol=1e-13), "%s F_R" % act)


def run_cli(args, cwd):
    return subprocess.run([SCM] + args, cwd=cwd, capture_output=True, text=True)


def test_trajectory_vs_cli(tmp):
    cfg = {"model": {"K": 3, "M": 2, "activation": "erf"}, "init": {"d": 200, "seed": 5},
           "integrator": {"t_max": 300, "n_out": 20}}
    path = os.path.join(tmp, "traj.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    r = run_cli(["run", path, "-o", "traj.result.json", "-q"], tmp)
    check(r.returncode == 0, "scm run: %s" % r.stderr)
    ref = json.load(open(os.path.join(tmp, "traj.result.json")))
    tr = scmode.run(cfg)
    pts = ref["trajectory"]
    check(len(pts) == len(tr.t), "points: CLI %d, python %d" % (len(pts), len(tr.t)))
    check(tr.stop == ref["stop_reason"], "stop %s vs %s" % (tr.stop, ref["stop_reason"]))
    n = min(len(pts), len(tr.t))
    check(np.allclose([p["t"] for p in pts[:n]], tr.t[:n], rtol=1e-15, atol=0), "times")
    check(np.allclose([p["eps"] for p in pts[:n]], tr.eps[:n], rtol=1e-12, atol=1e-300), "eps")
    check(np.allclose(np.array(ref["final"]["Q"]), tr.Q[-1], rtol=1e-12, atol=1e-15), "final Q")
    check(np.allclose(np.array(ref["final"]["R"]), tr.R[-1], rtol=1e-12, atol=1e-15), "final R")
    check(np.all(np.diff(tr.eps) <= 1e-12), "eps decreases along the flow")
    tr2 = scmode.run(cfg, sets=["model.activation=relu"])
    check(tr2.eps[0] != tr.eps[0], "--set override reaches the run")
    check(np.all(tr.v == 1.0), "gd keeps the second layer")
    # A rule with its own parameters and a trained second layer.
    cfg2 = dict(cfg, rule="two_layer", rule_params={"lr_v_ratio": 0.5})
    with open(path, "w") as f:
        json.dump(cfg2, f)
    r = run_cli(["run", path, "-o", "traj2.result.json", "-q"], tmp)
    check(r.returncode == 0, "scm run two_layer: %s" % r.stderr)
    ref = json.load(open(os.path.join(tmp, "traj2.result.json")))
    tr3 = scmode.run(cfg2)
    check(np.allclose(np.array(ref["final"]["v"]), tr3.v[-1], rtol=1e-12, atol=1e-15),
          "two_layer: final v as the CLI's")
    check(np.allclose([p["v"] for p in ref["trajectory"]], tr3.v, rtol=1e-12, atol=1e-15),
          "two_layer: v(t) as the CLI's")
    check(np.abs(tr3.v[-1] - 1.0).max() > 1e-3, "two_layer moves v")


def test_fixed_points_vs_cli(tmp):
    # fixed_points is `scm fixed-points` (test_parity.py compares the whole
    # result); here each (ansatz, k1) on its own starts (--sweep-passes 0)
    # with and without deflated Newton
    for deflate in (0, 2):
        r = run_cli(["fixed-points", "--K", "3", "--M", "3", "--sweep-passes", "0", "--deflate",
                     str(deflate), "-o", "fp.json"], tmp)
        check(r.returncode == 0, "scm fixed-points: %s" % r.stderr)
        ref = json.load(open(os.path.join(tmp, "fp.json")))["fixed_points"]
        pts2 = scmode.fixed_points(3, 3, deflate=deflate, sweep_passes=0)
        # The CLI merges a point found in several ansätze: compare the loss sets.
        mine = sorted(set(round(p["eps"], 9) + 0.0 for p in pts2))
        theirs = sorted(set(round(p["loss"], 9) + 0.0 for p in ref))
        check(mine == theirs, "deflate %d: fixed-point losses %s vs CLI %s"
              % (deflate, mine, theirs))
        # threads: the same points, bit for bit
        pts3 = scmode.fixed_points(3, 3, deflate=deflate, sweep_passes=0, threads=3)
        check(len(pts3) == len(pts2) and
              all(p["eps"] == q["eps"] and np.array_equal(p["Q"], q["Q"]) and
                  np.array_equal(p["R"], q["R"]) for p, q in zip(pts2, pts3)),
              "deflate %d: threads=3 gives the points of threads=1" % deflate)
    pts = scmode.fixed_points(3, 3)
    m = scmode.Model(3, 3)
    worst = max(np.abs(np.concatenate([x.ravel() for x in m.rhs(p["Q"], p["R"])])).max()
                for p in pts)
    check(worst < 1e-9, "the full flow vanishes at every point (max |F| %.2g)" % worst)
    check(all(abs(m.loss(p["Q"], p["R"]) - p["eps"]) < 1e-10 for p in pts), "losses of the points")
    return pts


def test_stability(pts):
    m = scmode.Model(3, 3)
    glob = min(pts, key=lambda p: p["eps"])
    s = scmode.stability(m, glob["Q"], glob["R"], trials=2)
    check(s["hessian"] == "min" and s["verdict"] == "stable", "global minimum: %s" % s)
    top = max(pts, key=lambda p: p["eps"])
    s = scmode.stability(m, top["Q"], top["R"], trials=2)
    check(s["hessian"] == "saddle" and s["n_negative"] > 0 and s["eigenvalues_smallest"][0] < 0,
          "highest fixed point is a saddle: %s" % s)
    check(s["verdict"] == "unstable", "perturbation test at a saddle: %s" % s["verdict"])


def test_sweep_vs_cli(tmp):
    cfg = {"model": {"K": 2, "M": 2}, "init": {"d": 100, "seed": 3}}
    path = os.path.join(tmp, "sweep.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    r = run_cli(["sweep", path, "--runs", "6", "-o", "runs.jsonl", "--quiet"], tmp)
    check(r.returncode == 0, "scm sweep: %s" % r.stderr)
    lines = open(os.path.join(tmp, "runs.jsonl")).read().splitlines()[1:]
    ref = [json.loads(x) for x in lines]
    recs, summ = scmode.sweep(cfg, 6, threads=2)
    check(recs == ref, "sweep records equal the CLI's:\n%s\n%s" % (recs, ref))
    check(summ["done"] == 6 and sum(c["count"] for c in summ["classes"]) == summ["converged"],
          "summary counts: %s" % summ)
    # the early stop (--certify) against the CLI's, and the same classes as without
    r = run_cli(["fixed-points", "--K", "2", "--M", "2", "-o", "f2.json"], tmp)
    check(r.returncode == 0, "scm fixed-points: %s" % r.stderr)
    fams = open(os.path.join(tmp, "f2.json")).read()
    r = run_cli(["sweep", path, "--runs", "6", "-o", "cert.jsonl", "--quiet", "--families",
                 "f2.json", "--certify"], tmp)
    check(r.returncode == 0, "scm sweep --certify: %s" % r.stderr)
    ref = [json.loads(x) for x in open(os.path.join(tmp, "cert.jsonl")).read().splitlines()[1:]]
    crecs, _ = scmode.sweep(cfg, 6, families=fams, certify=True)
    frecs, _ = scmode.sweep(cfg, 6, families=fams)
    check(crecs == ref, "certified sweep records equal the CLI's:\n%s\n%s" % (crecs, ref))
    check([x["class"] for x in crecs] == [x["class"] for x in frecs]
          and any(x["stop"] == "certified" for x in crecs),
          "certified classes: %s vs %s" % ([x["stop"] for x in crecs], [x["class"] for x in frecs]))


def test_layout_check():
    """A mirror of the wrong size is refused at load (the check is not vacuous)."""
    class Stale(ctypes.Structure):
        _fields_ = [("n_random", ctypes.c_int)]

    class More:
        MIRRORS = {"scm_fp_opts": Stale}
    try:
        scmode._check_layouts(scmode._lib, More)
        check(False, "a stale scm_fp_opts mirror was accepted")
    except ImportError as e:
        check("scm_fp_opts" in str(e), "the refusal names the struct: %s" % e)
    check(scmode._lib.scm_abi_sizeof(b"no_such_type") == 0, "unknown type: size 0")


def test_errors():
    raises(lambda: scmode.run({"model": {"K": 2}}), scmode.ScmError, "'model.K' and 'model.M' are required",
           "missing M")
    raises(lambda: scmode.run({"model": {"K": 2, "M": 2}}, sets=["integrator.rtol=5"]),
           scmode.ScmError, "rtol", "bad --set")
    raises(lambda: scmode.run({"model": {"K": 2, "M": 2}, "init": {"bogus": 1}}), scmode.ScmError,
           "bogus", "unknown key")
    raises(lambda: scmode.Model(2, 2, "tanh"), scmode.ScmError, "unknown activation 'tanh'", "activation")
    raises(lambda: scmode.Model(2, 2, T=[[1, 2], [2, 1]]), scmode.ScmError, "positive semi-definite",
           "T not PSD")
    m = scmode.Model(2, 2)
    raises(lambda: m.loss(np.eye(3), np.eye(2)), ValueError, "shape", "wrong shape")
    raises(lambda: m.loss(np.eye(2), 3 * np.eye(2)), scmode.ScmError, "not positive semi-definite", "state beyond Cauchy-Schwarz")
    raises(lambda: m.check_state(np.eye(2), 1.5 * np.eye(2)), scmode.ScmError, "positive semi-definite",
           "check_state")
    raises(lambda: scmode.pair_kernel("relu", 1.0, 1.0, 2.0), scmode.ScmError, "(1, 1, 2)", "kernel |rho| > 1")
    raises(lambda: scmode.fixed_points(2, 3, k1=7), scmode.ScmError, "no ansatz applies", "fixed points k1")
    raises(lambda: scmode.sweep({"model": {"K": 2, "M": 2}}, 2, families="[1"), scmode.ScmError,
           "families", "bad families")
    raises(lambda: scmode.load_library("/nonexistent/libscm.so"), ImportError, "SCMODE_LIB", "library path")
    # ranges checked before the ctypes call, with the CLI's limits (issue 26)
    cfg = {"model": {"K": 2, "M": 2}}
    for bad, what in [(lambda: scmode.Model(2**33 + 2, 2), "K wraps to 2"),
                      (lambda: scmode.Model(2**31, 2), "K wraps negative"),
                      (lambda: scmode.Model(2.5, 2), "K fractional"),
                      (lambda: scmode.fixed_points(10**6, 10**6), "fixed_points K unbounded"),
                      (lambda: scmode.fixed_points(3, 3, seed=-1), "fixed_points seed -1"),
                      (lambda: scmode.sweep(cfg, 2, seed=-1), "sweep seed -1"),
                      (lambda: scmode.sweep(cfg, 2, seed=2**64 + 5), "sweep seed wraps to 5"),
                      (lambda: scmode.sweep(cfg, 2, threads=True), "threads a bool"),
                      (lambda: scmode.stability(m, np.eye(2), np.eye(2), seed=2**40), "stability seed")]:
        raises(bad, scmode.ScmError, "must be an integer in", what)
    raises(lambda: m.check_state(np.eye(2), np.eye(2), tol=float("nan")), scmode.ScmError,
           "tol must be a finite number", "check_state tol NaN")
    check(scmode.Model(np.int64(3), 2.0).K == 3, "numpy and integral float K accepted")


with tempfile.TemporaryDirectory() as tmp:
    test_kernels_monte_carlo()
    test_kernel_derivatives()
    test_loss_monte_carlo()
    test_gradient_and_flow()
    test_trajectory_vs_cli(tmp)
    test_stability(test_fixed_points_vs_cli(tmp))
    test_sweep_vs_cli(tmp)
    test_layout_check()
    test_errors()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
