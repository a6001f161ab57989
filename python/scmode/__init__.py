"""scmode: the soft committee machine library libscm from Python (ctypes).

numpy arrays in and out; every library failure raises ScmError carrying the
library's message.  See docs/python.md.

    import scmode
    k = scmode.pair_kernel("relu", 1.0, 2.0, 0.3)        # f, fa, fb, fc
    m = scmode.Model(K=2, M=2, activation="erf")
    eps, A, B = m.grad(Q, R)                             # loss and its derivatives
    FQ, FR = m.rhs(Q, R)                                 # the flow dQ/dtau, dR/dtau
    r = scmode.run({"model": {"K": 2, "M": 2}})          # a trajectory (as `scm run`)
"""
import ctypes
import ctypes.util
import glob
import json
import os

import numpy as np

__all__ = ["ScmError", "load_library", "pair_kernel", "Model", "run", "Trajectory",
           "fixed_points", "grow_from", "FixedPoints", "stability", "stability_of",
           "symmetric_spectrum", "crosscheck", "sweep", "merge", "simulate", "Simulation",
           "compare", "lintarget", "staircase", "split", "certify", "plot_compare"]

class ScmError(Exception):
    """A libscm failure: .status is the library's status name, the message its reason."""

    def __init__(self, status, message):
        self.status = status
        super().__init__(message)


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]


class _Pair(ctypes.Structure):
    _fields_ = [(n, ctypes.c_double) for n in ("f", "fa", "fb", "fc")]


class _Activation(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("pair", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_double, ctypes.c_double,
                                          ctypes.c_double, ctypes.POINTER(_Pair))),
                ("i3", ctypes.c_void_p), ("g", ctypes.c_void_p), ("dg", ctypes.c_void_p)]


# Mirrors of include/scm/rule.h, traj.h and config.h (keep in step; the
# python test checks the sizes against the library's).
class _RuleParams(ctypes.Structure):
    _fields_ = [("lr_v_ratio", ctypes.c_double), ("eta", ctypes.c_double),
                ("noise", ctypes.c_double)]


class _TrajOpts(ctypes.Structure):
    _fields_ = [("method", ctypes.c_int), ("linsol", ctypes.c_int),
                ("rtol", ctypes.c_double), ("atol", ctypes.c_double),
                ("t_max", ctypes.c_double), ("t_first", ctypes.c_double),
                ("n_out", ctypes.c_int), ("eps_stop", ctypes.c_double),
                ("grad_stop", ctypes.c_double), ("max_steps", ctypes.c_long),
                ("psd_tol", ctypes.c_double), ("dead_tol", ctypes.c_double),
                ("dead_fail", ctypes.c_int), ("record", ctypes.c_int),
                ("loose_rtol", ctypes.c_double), ("loose_atol", ctypes.c_double),
                ("loose_until", ctypes.c_double), ("rule_params", _RuleParams),
                ("v0", ctypes.c_void_p), ("analytic_jv", ctypes.c_int),
                ("krylov_dim", ctypes.c_int), ("eps_lin", ctypes.c_double),
                ("precond", ctypes.c_int), ("sundials_vec_ops", ctypes.c_int),
                ("certify", ctypes.c_void_p), ("certify_user", ctypes.c_void_p),
                ("certify_from", ctypes.c_double), ("tail_eps", ctypes.c_double),
                ("tail_rtol", ctypes.c_double)]


_P = ctypes.POINTER(ctypes.c_double)


class _Config(ctypes.Structure):
    _fields_ = [("K", ctypes.c_int), ("M", ctypes.c_int), ("act", ctypes.c_void_p),
                ("T", _P), ("v", _P), ("vs", _P), ("rule", ctypes.c_void_p),
                ("init", ctypes.c_int), ("d", ctypes.c_long), ("sigma", ctypes.c_double),
                ("seed", ctypes.c_ulong), ("scale", ctypes.c_double),
                ("law", ctypes.c_int),  # scm_init_law (init.h)
                ("Q0", _P), ("R0", _P), ("traj", _TrajOpts), ("used", ctypes.c_void_p)]


class _TrajResult(ctypes.Structure):
    _fields_ = [("stop", ctypes.c_int), ("err", _Error), ("t", ctypes.c_double),
                ("eps", ctypes.c_double), ("max_F", ctypes.c_double), ("Q", _P), ("R", _P),
                ("v", _P), ("n_out", ctypes.c_long), ("out_t", _P), ("out_eps", _P),
                ("out_Q", _P), ("out_R", _P), ("out_v", _P), ("dead", ctypes.POINTER(ctypes.c_int)),
                ("n_dead", ctypes.c_int), ("n_steps", ctypes.c_long), ("n_rhs", ctypes.c_long),
                ("n_jac_evals", ctypes.c_long), ("n_lin_iters", ctypes.c_long),
                ("eps_zeroed", ctypes.c_int), ("eps_proj", ctypes.c_double),
                ("max_proj", ctypes.c_double), ("tail_t", ctypes.c_double),
                ("tail_steps", ctypes.c_long), ("loose_failed", ctypes.c_int)]


def _candidates():
    """Where libscm may be: $SCMODE_LIB, the build tree next to this package, an install."""
    env = os.environ.get("SCMODE_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for build in ("build", "build-release"):
        yield os.path.join(here, "..", "..", build, "libscm.so")
    # pip install . (meson-python): beside the package, or in its libs folder.
    site = os.path.dirname(here)
    for sub in (here, os.path.join(site, ".scmode.mesonpy.libs")):
        for name in sorted(glob.glob(os.path.join(glob.escape(sub), "libscm.so*"))):
            yield name
    # Installed: the package sits in PREFIX/lib/python3/dist-packages or similar.
    for up in (3, 4):
        prefix = os.path.join(here, *([".."] * up))
        for sub in ("lib", "lib64", "lib/x86_64-linux-gnu"):
            yield os.path.join(prefix, sub, "libscm.so.0")
    found = ctypes.util.find_library("scm")
    if found:
        yield found


def load_library(path=None):
    """Load libscm (path, or the first of _candidates() that loads) and declare its API."""
    tried = []
    for p in ([path] if path else _candidates()):
        if os.sep in p and not os.path.exists(p):
            tried.append(p)
            continue
        try:
            lib = ctypes.CDLL(p)
        except OSError as e:
            tried.append("%s (%s)" % (p, e))
            continue
        _declare(lib)
        return lib
    raise ImportError("scmode: libscm not found; set SCMODE_LIB to the path of libscm.so "
                      "(tried: %s)" % "; ".join(tried))


def _declare(lib):
    c_int, c_void_p, c_char_p = ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
    E = ctypes.POINTER(_Error)
    sigs = {
        "scm_status_str": (c_char_p, [c_int]),
        "scm_activation_find": (c_void_p, [c_char_p]),
        "scm_model_alloc": (c_void_p, [c_int, c_int, c_void_p, _P, _P, _P, E]),
        "scm_model_free": (None, [c_void_p]),
        "scm_model_check_state": (c_int, [c_void_p, _P, _P, ctypes.c_double, E]),
        "scm_flow_alloc": (c_void_p, [c_void_p]),
        "scm_flow_free": (None, [c_void_p]),
        "scm_flow_loss": (c_int, [c_void_p, _P, _P, _P]),
        "scm_flow_grad": (c_int, [c_void_p, _P, _P, _P, _P, _P]),
        "scm_flow_rhs": (c_int, [c_void_p, _P, _P, _P, _P, _P]),
        "scm_config_parse": (c_int, [c_char_p, c_char_p, ctypes.POINTER(c_char_p), c_int,
                                     ctypes.POINTER(ctypes.POINTER(_Config)), E]),
        "scm_config_free": (None, [ctypes.POINTER(_Config)]),
        "scm_config_model": (c_void_p, [ctypes.POINTER(_Config), E]),
        "scm_config_initial_state": (c_int, [ctypes.POINTER(_Config), c_void_p, _P, _P, E]),
        "scm_traj_run": (c_int, [c_void_p, c_void_p, _P, _P, ctypes.POINTER(_TrajOpts),
                                 ctypes.POINTER(_TrajResult), E]),
        "scm_traj_result_free": (None, [ctypes.POINTER(_TrajResult)]),
        "scm_stop_reason_str": (c_char_p, [c_int]),
        "scm_abi_call": (c_int, [c_char_p, c_char_p, ctypes.POINTER(c_void_p), E]),
        "scm_abi_free": (None, [c_void_p]),
        "gsl_set_error_handler_off": (c_void_p, []),
    }
    from . import _more
    sigs.update(_more.signatures(E, _Config))
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    _check_layouts(lib, _more)
    # GSL's default error handler aborts the process; every libscm call
    # reports its failures as a status instead (as the CLI sets it up).
    lib.gsl_set_error_handler_off()


def _check_layouts(lib, more):
    """Refuse a libscm whose structs differ in size from the mirrors here: a
    stale mirror would read and write the wrong bytes (memory corruption)."""
    lib.scm_abi_sizeof.restype, lib.scm_abi_sizeof.argtypes = ctypes.c_size_t, [ctypes.c_char_p]
    mirrors = {"scm_error": _Error, "scm_pair": _Pair, "scm_activation": _Activation,
               "scm_rule_params": _RuleParams, "scm_traj_opts": _TrajOpts,
               "scm_config": _Config, "scm_traj_result": _TrajResult}
    mirrors.update(more.MIRRORS)
    bad = ["%s (C %d bytes, Python %d)" % (n, lib.scm_abi_sizeof(n.encode()), ctypes.sizeof(t))
           for n, t in mirrors.items() if lib.scm_abi_sizeof(n.encode()) != ctypes.sizeof(t)]
    if bad:
        raise ImportError("scmode: the ctypes mirrors do not match this libscm: " + ", ".join(bad))


_lib = load_library()


def _status_name(st):
    return _lib.scm_status_str(st).decode()


def _check(st, err=None, what=""):
    if st != 0:
        msg = err.msg.decode(errors="replace") if err is not None and err.msg else ""
        raise ScmError(_status_name(st), msg or "%s: %s" % (what, _status_name(st)))


def _int_in(name, x, lo, hi):
    """x as an int, checked to lie in [lo, hi] before it reaches a C int or
    long (ctypes would wrap it silently: 2**33 + 2 becomes 2); the CLI's
    limits.  A bool, a float with a fraction, NaN or a string are refused."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) and not (
            isinstance(x, (float, np.floating)) and float(x).is_integer()):
        raise ScmError("invalid argument", "%s must be an integer in [%d, %d], got %r"
                       % (name, lo, hi, x))
    v = int(x)
    if not lo <= v <= hi:
        raise ScmError("invalid argument", "%s must be an integer in [%d, %d], got %d"
                       % (name, lo, hi, v))
    return v


def _arr(x, shape, name):
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.shape != shape:
        raise ValueError("%s must have shape %s, not %s" % (name, shape, a.shape))
    return a


def _ptr(a):
    return a.ctypes.data_as(_P) if a is not None else None


def _activation(name):
    act = _lib.scm_activation_find(name.encode())
    if not act:
        raise ScmError("invalid argument", "unknown activation '%s' (relu, erf, linear)" % name)
    return act


def pair_kernel(activation, a, b, c):
    """f(a, b, c) = E[g(u) g(v)], (u, v) ~ N(0, [[a, c], [c, b]]), and df/da, df/db, df/dc.

    a, b, c broadcast as numpy arrays; returns four arrays (f, fa, fb, fc)."""
    pair_fn = ctypes.cast(_activation(activation), ctypes.POINTER(_Activation))[0].pair
    a, b, c = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, c)))
    out = np.empty((4,) + a.shape)
    p = _Pair()
    for i in np.ndindex(a.shape):
        st = pair_fn(a[i], b[i], c[i], ctypes.byref(p))
        if st != 0:
            raise ScmError(_status_name(st), "%s pair kernel at (a, b, c) = (%g, %g, %g): %s"
                           % (activation, a[i], b[i], c[i], _status_name(st)))
        out[(slice(None),) + i] = (p.f, p.fa, p.fb, p.fc)
    return tuple(out[j] if a.shape else float(out[j]) for j in range(4))


class Model:
    """A teacher-student pair (scm_model) with its flow (scm_flow).

    K students, M teachers; activation "relu", "erf" (erf(x/sqrt 2)) or
    "linear".  T: M x M teacher overlap T = W* W*^T / d (None: identity); v,
    v_star: second-layer weights (None: ones).  States: Q = W W^T / d (K x K),
    R = W W*^T / d (K x M).  The loss is eps = 1/2 E[(phi - phi*)^2] (with the
    1/2); the flow is in time tau = eta t / d (t SGD steps)."""

    def __init__(self, K, M, activation="relu", T=None, v=None, v_star=None):
        self._m = self._fl = None
        self.K, self.M = _int_in("K", K, 1, 100000), _int_in("M", M, 1, 100000)
        self.activation = activation
        Ta = _arr(T, (self.M, self.M), "T") if T is not None else None
        va = _arr(v, (self.K,), "v") if v is not None else None
        vsa = _arr(v_star, (self.M,), "v_star") if v_star is not None else None
        err = _Error()
        self._m = _lib.scm_model_alloc(self.K, self.M, _activation(activation), _ptr(Ta),
                                       _ptr(va), _ptr(vsa), ctypes.byref(err))
        if not self._m:
            _check(err.code or 1, err, "model")
        self._fl = _lib.scm_flow_alloc(self._m)
        if not self._fl:
            raise MemoryError("scm_flow_alloc")

    def __del__(self):
        if getattr(self, "_fl", None):
            _lib.scm_flow_free(self._fl)
        if getattr(self, "_m", None):
            _lib.scm_model_free(self._m)

    def _state(self, Q, R):
        return _arr(Q, (self.K, self.K), "Q"), _arr(R, (self.K, self.M), "R")

    def loss(self, Q, R):
        """The population loss eps(Q, R)."""
        Q, R = self._state(Q, R)
        eps = ctypes.c_double()
        _check(_lib.scm_flow_loss(self._fl, _ptr(Q), _ptr(R), ctypes.byref(eps)), None,
               "loss at the given (Q, R)")
        return eps.value

    def grad(self, Q, R):
        """(eps, A, B): the loss and A = d eps/dQ (K x K, entries independent), B = d eps/dR."""
        Q, R = self._state(Q, R)
        eps = ctypes.c_double()
        A, B = np.empty((self.K, self.K)), np.empty((self.K, self.M))
        _check(_lib.scm_flow_grad(self._fl, _ptr(Q), _ptr(R), ctypes.byref(eps), _ptr(A),
                                  _ptr(B)), None, "gradient at the given (Q, R)")
        return eps.value, A, B

    def rhs(self, Q, R):
        """(F_Q, F_R) = (dQ/dtau, dR/dtau) of the gradient flow."""
        Q, R = self._state(Q, R)
        FQ, FR = np.empty((self.K, self.K)), np.empty((self.K, self.M))
        _check(_lib.scm_flow_rhs(self._fl, _ptr(Q), _ptr(R), _ptr(FQ), _ptr(FR), None), None,
               "flow at the given (Q, R)")
        return FQ, FR

    def check_state(self, Q, R, tol=1e-6):
        """Raise ScmError unless [[T, R^T], [R, Q]] is PSD up to tol (relative)."""
        if not (isinstance(tol, (int, float, np.floating)) and 0 <= tol < float("inf")):
            raise ScmError("invalid argument", "tol must be a finite number >= 0, got %r" % (tol,))
        Q, R = self._state(Q, R)
        err = _Error()
        _check(_lib.scm_model_check_state(self._m, _ptr(Q), _ptr(R), tol, ctypes.byref(err)),
               err)


class Trajectory:
    """A run's result: t, eps (n,), Q (n, K, K), R (n, K, M), v (n, K) at the
    recorded times (v is the fixed second layer unless the rule trains it),
    and stop (the stop reason), error (None or the failure's reason), steps."""

    def __repr__(self):
        return "Trajectory(%d points, stop=%s, eps=%.6g at t=%g)" % (
            len(self.t), self.stop, self.eps[-1], self.t[-1])


def _parse_config(config, sets):
    text = config if isinstance(config, str) else json.dumps(config)
    csets = (ctypes.c_char_p * max(1, len(sets)))(*[s.encode() for s in sets])
    cfg = ctypes.POINTER(_Config)()
    err = _Error()
    _check(_lib.scm_config_parse(text.encode(), b"python", csets, len(sets), ctypes.byref(cfg),
                                 ctypes.byref(err)), err)
    return cfg


def run(config, sets=()):
    """Integrate the flow of a configuration, exactly as `scm run` does.

    Times tr.t are tau = eta t / d (nn2pp's alpha = tau / lr); tr.eps is the
    loss eps = 1/2 E[(phi - phi*)^2]; tr.Q (n, K, K), tr.R (n, K, M), tr.v (n, K).

    config: a dict (or JSON text) in the format of the README's config table;
    sets: "key.path=value" overrides.  Returns a Trajectory.  Bad input raises
    ScmError with the library's message; a numerical failure of the run is
    not an exception: stop == "failed" and error says why (as in the CLI's
    result file)."""
    cfg = _parse_config(config, list(sets))
    m = None
    res = _TrajResult()
    have_res = False
    try:
        c = cfg.contents
        K, M = c.K, c.M
        err = _Error()
        m = _lib.scm_config_model(cfg, ctypes.byref(err))
        if not m:
            _check(err.code or 1, err)
        Q0, R0 = np.empty((K, K)), np.empty((K, M))
        _check(_lib.scm_config_initial_state(cfg, m, _ptr(Q0), _ptr(R0), ctypes.byref(err)), err)
        opts = _TrajOpts.from_buffer_copy(c.traj)
        opts.record = 1
        _check(_lib.scm_traj_run(m, c.rule, _ptr(Q0), _ptr(R0), ctypes.byref(opts),
                                 ctypes.byref(res), ctypes.byref(err)), err)
        have_res = True
        n = res.n_out
        tr = Trajectory()
        tr.t = np.ctypeslib.as_array(res.out_t, (n,)).copy()
        tr.eps = np.ctypeslib.as_array(res.out_eps, (n,)).copy()
        tr.Q = np.ctypeslib.as_array(res.out_Q, (n * K * K,)).reshape(n, K, K).copy()
        tr.R = np.ctypeslib.as_array(res.out_R, (n * K * M,)).reshape(n, K, M).copy()
        tr.v = np.ctypeslib.as_array(res.out_v, (n * K,)).reshape(n, K).copy()
        tr.stop = _lib.scm_stop_reason_str(res.stop).decode()
        tr.error = res.err.msg.decode(errors="replace") if tr.stop == "failed" else None
        tr.steps = res.n_steps
        tr.dead = [k for k in range(K) if res.dead and res.dead[k]]
        return tr
    finally:
        if have_res:
            _lib.scm_traj_result_free(ctypes.byref(res))
        if m:
            _lib.scm_model_free(m)
        _lib.scm_config_free(cfg)


from ._more import stability as _stability_at  # noqa: E402  (needs _lib above)
from ._commands import (FixedPoints, Simulation, compare, crosscheck, fixed_points,  # noqa: E402
                        grow_from, lintarget, merge, simulate, stability_of, staircase,
                        sweep, symmetric_spectrum, split, certify)
from ._plots import plot_compare  # noqa: E402


def stability(model=None, Q=None, R=None, **kw):
    """Stability of a fixed point.

    stability(model, Q, R, trials=3, sigmas=(1e-4, 1e-3, 1e-2), seed=1): the
    point (Q, R) of a scmode.Model, with the three-sigma protocol of
    `scm fixed-points --stability` (scm_stab_analyse): a dict with the Hessian's
    verdict ("min", "saddle", ...), its smallest eigenvalues, the Jacobian's
    largest real part and the perturbation test's verdict.

    stability(K=, M=, k1=, ...) or stability(point=FILE, index=I, ...): exactly
    `scm stability` (stability_of): the result file's dict."""
    if isinstance(model, Model):
        return _stability_at(model, Q, R, **kw)
    if model is not None:
        raise TypeError("stability: the first argument is a scmode.Model; use K=, M=, k1= "
                        "or point=, index= for `scm stability`")
    return stability_of(**kw)
