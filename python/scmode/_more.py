"""Fixed points, stability and sweeps of libscm (part of the scmode package)."""
import ctypes
import json

import numpy as np

_P = ctypes.POINTER(ctypes.c_double)
c_int, c_long, c_double = ctypes.c_int, ctypes.c_long, ctypes.c_double


# Mirrors of include/scm/fixedpoint.h, stability.h and sweep.h (keep in step).
class _FpOpts(ctypes.Structure):
    _fields_ = [("n_random", c_int), ("seed", ctypes.c_ulong), ("max_iter", c_int),
                ("tol", c_double), ("accept", c_double), ("dedup_tol", c_double),
                ("psd_tol", c_double), ("polish_max_K", c_int), ("full_max_K", c_int),
                ("polish_defer", c_int), ("polish_tol", c_double), ("deflate", c_int),
                ("threads", c_int)]


class _FpPoint(ctypes.Structure):
    _fields_ = [("ansatz", ctypes.c_char * 64), ("K", c_double), ("M", c_double),
                ("k1", c_double), ("nsc", c_int), ("x", _P)] + \
        [(n, c_double) for n in ("eps", "res_block", "jac_smin", "jac_smax", "gram_min")] + \
        [("full", c_int)] + \
        [(n, c_double) for n in ("res_full", "inv_dev", "block_vs_full", "eps_full")] + \
        [("polished", c_int), ("polish_status", c_int)] + \
        [(n, c_double) for n in ("res_polish", "eps_polish", "polish_shift")] + \
        [("Q", _P), ("R", _P), ("hits", c_int)]


class _FpSet(ctypes.Structure):
    _fields_ = [("n", c_int), ("cap", c_int), ("pt", ctypes.POINTER(_FpPoint))] + \
        [(n, c_int) for n in ("n_starts", "n_converged", "n_noprog", "n_maxiter", "n_domain",
                              "n_notpsd", "n_deflated", "n_deflated_new")]


_NSIG = 8    # SCM_STAB_MAX_SIGMA
_NSMALL = 8  # SCM_STAB_N_SMALL


class _StabOpts(ctypes.Structure):
    _fields_ = [("d", c_long), ("n_steps", c_int), ("eta", c_double), ("n_sigma", c_int),
                ("sigma", c_double * _NSIG), ("n_trials", c_int), ("seed", ctypes.c_ulong),
                ("run_flow", c_int)] + \
        [(n, c_double) for n in ("t_max", "same_tol", "global_tol", "near_tol",
                                 "verdict_sigma_max", "zero_rel_tol", "smooth_tol")] + \
        [("hessian", c_int), ("jacobian", c_int),
         ("progress", ctypes.c_void_p), ("progress_ctx", ctypes.c_void_p)]


class _Smooth(ctypes.Structure):
    _fields_ = [(n, c_int) for n in ("n_dead", "n_par_ss", "n_par_st", "smooth",
                                     "closed_form")] + [("what", ctypes.c_char * 256)]


class _ZeroModes(ctypes.Structure):
    _fields_ = [("p", c_int)] + [(n, c_long) for n in ("rotation", "homogeneity", "linear",
                                                        "total")]


class _Counts(ctypes.Structure):
    _fields_ = [(n, c_int) for n in ("n", "n_neg", "n_zero", "n_pos")] + \
        [("zero_tol", c_double), ("asym", c_double)]


class _StabRow(ctypes.Structure):
    _fields_ = [("sigma", c_double), ("n", c_int)] + \
        [(n, c_double) for n in ("dist0_med", "dist0_max", "dist_med", "dist_max", "deps_med",
                                 "deps_max")] + \
        [(n, c_int) for n in ("n_grew", "n_same", "n_global", "n_other", "n_failed",
                              "n_unsettled")] + \
        [(n, c_double) for n in ("other_eps_min", "other_eps_max", "flow_eps_med")] + \
        [("verdict", c_int)]


class _StabResult(ctypes.Structure):
    _fields_ = [("eps", c_double), ("residual", c_double), ("d", c_long),
                ("smooth", _Smooth), ("zm", _ZeroModes), ("hessian_done", c_int),
                ("hessian_closed", c_int), ("hessian_fd_diff", c_double), ("counts", _Counts),
                ("eval_small", c_double * _NSMALL), ("n_small", c_int), ("eval_max", c_double),
                ("hverdict", c_int), ("jacobian_done", c_int), ("jac_re_max", c_double),
                ("jac_re_min", c_double), ("n_rows", c_int), ("rows", _StabRow * _NSIG),
                ("verdict", c_int), ("agree", c_int)]


class _SweepOpts(ctypes.Structure):
    _fields_ = [(n, c_double) for n in ("match_rtol", "match_atol", "dead_q",
                                        "loose_grad_stop")] + \
        [("certify", c_int), ("certify_grad", c_double), ("certify_global", c_double),
         ("certify_rmax", c_double)]


class _Families(ctypes.Structure):
    _fields_ = [("n", c_int), ("f", ctypes.c_void_p), ("cache", ctypes.c_void_p)]


# Checked against scm_abi_sizeof when the library loads (__init__.py).
MIRRORS = {"scm_fp_opts": _FpOpts, "scm_fp_point": _FpPoint, "scm_fp_set": _FpSet,
           "scm_stab_opts": _StabOpts, "scm_stab_smooth": _Smooth,
           "scm_stab_zero_modes": _ZeroModes, "scm_stab_counts": _Counts,
           "scm_stab_row": _StabRow, "scm_stab_result": _StabResult,
           "scm_sweep_opts": _SweepOpts, "scm_sweep_families": _Families}


_EMIT = ctypes.CFUNCTYPE(c_int, ctypes.c_void_p, ctypes.c_void_p)


def signatures(E, Config):
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    PC = ctypes.POINTER(Config)
    return {
        "scm_ansatz_builtin_count": (c_int, []),
        "scm_ansatz_builtin_text": (cp, [c_int, ctypes.POINTER(cp)]),
        "scm_ansatz_parse": (vp, [cp, ctypes.c_size_t, cp, E]),
        "scm_ansatz_load": (vp, [cp, E]),
        "scm_ansatz_free": (None, [vp]),
        "scm_ansatz_name": (cp, [vp]),
        "scm_ansatz_applies": (c_int, [vp, c_int, c_int, ctypes.POINTER(c_int),
                                       ctypes.POINTER(c_int)]),
        "scm_ansatz_instantiate": (vp, [vp, c_double, c_double, c_double, E]),
        "scm_ansatz_inst_free": (None, [vp]),
        "scm_ansatz_inst_scalar_name": (cp, [vp, c_int]),
        "scm_fp_opts_default": (None, [ctypes.POINTER(_FpOpts)]),
        "scm_fp_set_init": (None, [ctypes.POINTER(_FpSet)]),
        "scm_fp_set_free": (None, [ctypes.POINTER(_FpSet)]),
        "scm_fp_enumerate": (c_int, [vp, vp, vp, ctypes.POINTER(_FpOpts), _P, c_int,
                                     ctypes.POINTER(_FpSet), E]),
        "scm_stab_opts_default": (None, [ctypes.POINTER(_StabOpts)]),
        "scm_stab_opts_three_sigma": (None, [ctypes.POINTER(_StabOpts)]),
        "scm_stab_analyse": (c_int, [vp, _P, _P, ctypes.POINTER(_StabOpts),
                                     ctypes.POINTER(_StabResult), E]),
        "scm_verdict_str": (cp, [c_int]),
        "scm_hverdict_str": (cp, [c_int]),
        "scm_sweep_families_parse": (c_int, [cp, cp, ctypes.POINTER(_Families), E]),
        "scm_sweep_families_free": (None, [ctypes.POINTER(_Families)]),
        "scm_sweep_opts_default": (None, [ctypes.POINTER(_SweepOpts)]),
        "scm_sweep_exec": (c_int, [PC, ctypes.c_uint64, ctypes.POINTER(c_long), c_long, c_int,
                                   ctypes.POINTER(_Families), ctypes.POINTER(_SweepOpts),
                                   _EMIT, vp, E]),
        "scm_sweep_record_json": (vp, [vp]),
        "scm_sweep_summary_alloc": (vp, [c_long]),
        "scm_sweep_summary_free": (None, [vp]),
        "scm_sweep_summary_add": (c_int, [vp, vp]),
        "scm_sweep_summary_json": (vp, [vp]),
    }


def _pkg():
    from . import _lib, _Error, _check, ScmError, _activation, _ptr, _arr, _parse_config
    return _lib, _Error, _check, ScmError, _activation, _ptr, _arr, _parse_config


def _int_in(name, x, lo, hi):
    from . import _int_in as check
    return check(name, x, lo, hi)


def _ansaetze(lib, files, Error, check):
    """Parsed ansätze: the files given, or the library's built-in ones."""
    out = []
    err = Error()
    try:
        if files:
            for f in files:
                a = lib.scm_ansatz_load(str(f).encode(), ctypes.byref(err))
                if not a:
                    check(err.code or 1, err)
                out.append(a)
        else:
            for i in range(lib.scm_ansatz_builtin_count()):
                name = ctypes.c_char_p()
                text = lib.scm_ansatz_builtin_text(i, ctypes.byref(name))
                a = lib.scm_ansatz_parse(text, len(text), name.value, ctypes.byref(err))
                if not a:
                    check(err.code or 1, err)
                out.append(a)
    except BaseException:
        for a in out:
            lib.scm_ansatz_free(a)
        raise
    return out


def _point(p, K, M, names):
    # "instance": the ansatz instance (the C struct's k1 label, the CLI JSON's
    # "instance"); k1 means the number of anti-aligned students everywhere
    d = {"ansatz": p.ansatz.decode(), "K": p.K, "M": p.M, "instance": int(p.k1), "eps": p.eps,
         "scalars": dict(zip(names, (p.x[i] for i in range(p.nsc)))),
         "res_block": p.res_block, "gram_min": p.gram_min, "hits": p.hits,
         "res_full": p.res_full if p.full else None}
    if p.Q and p.R:
        d["Q"] = np.ctypeslib.as_array(p.Q, (K * K,)).reshape(K, K).copy()
        d["R"] = np.ctypeslib.as_array(p.R, (K * M,)).reshape(K, M).copy()
    return d


def fixed_points(K, M, instance=None, activation="relu", ansatz=None, starts=200, seed=1,
                 deflate=0, threads=1):
    """Fixed points of the flow (T = I, v = v* = 1) in the block-symmetric ansätze,
    one enumeration per ansatz instance (only ``instance`` when given), without
    the CLI's merging (scmode.fixed_points is `scm fixed-points`): a list of
    dicts (ansatz, instance, eps, scalars, residuals, full Q and R), sorted by
    loss.  ``instance`` is the ansatz instance, not k1 (the number of
    anti-aligned students, the CLI's --k1).  ansatz:
    a list of ansatz files (default: the built-in ones).  deflate: rounds of deflated
    Newton per start (scm_fp_opts.deflate; the CLI's default is 2 and it seeds each
    instance with its neighbours' solutions, so it can list more points).  threads: as the
    CLI's --threads; the result does not depend on it."""
    lib, Error, check, ScmError, act_of, ptr, _, _ = _pkg()
    act = act_of(activation)
    # the limits of `scm fixed-points`
    K, M = _int_in("K", K, 1, 100000), _int_in("M", M, 1, 100000)
    if instance is not None:
        instance = _int_in("instance", instance, 0, 100000)
    o = _FpOpts()
    lib.scm_fp_opts_default(ctypes.byref(o))
    o.n_random, o.seed = _int_in("starts", starts, 0, 1000000), _int_in("seed", seed, 0, 2147483647)
    o.deflate, o.threads = _int_in("deflate", deflate, 0, 1000), _int_in("threads", threads, 1, 64)
    err = Error()
    pts, applied = [], 0
    ans = _ansaetze(lib, ansatz, Error, check)
    try:
        for a in ans:
            lo, hi = c_int(), c_int()
            ap = lib.scm_ansatz_applies(a, K, M, ctypes.byref(lo), ctypes.byref(hi))
            if ap < 0:
                raise ScmError("invalid argument", "ansatz '%s': cannot evaluate its conditions"
                               % lib.scm_ansatz_name(a).decode())
            for kk in range(lo.value, hi.value + 1) if ap else ():
                if instance is not None and kk != int(instance):
                    continue
                inst = lib.scm_ansatz_instantiate(a, K, M, kk, ctypes.byref(err))
                if not inst:
                    check(err.code or 1, err)
                applied += 1
                s = _FpSet()
                lib.scm_fp_set_init(ctypes.byref(s))
                try:
                    check(lib.scm_fp_enumerate(a, inst, act, ctypes.byref(o), None, 0,
                                               ctypes.byref(s), ctypes.byref(err)), err)
                    for i in range(s.n):
                        p = s.pt[i]
                        names = [lib.scm_ansatz_inst_scalar_name(inst, j).decode()
                                 for j in range(p.nsc)]
                        pts.append(_point(p, K, M, names))
                finally:
                    lib.scm_fp_set_free(ctypes.byref(s))
                    lib.scm_ansatz_inst_free(inst)
    finally:
        for a in ans:
            lib.scm_ansatz_free(a)
    if applied == 0:
        raise ScmError("invalid argument", "no ansatz applies at K = %d, M = %d%s"
                       % (K, M, "" if instance is None else ", instance %d" % int(instance)))
    return sorted(pts, key=lambda p: p["eps"])


def stability(model, Q, R, trials=3, sigmas=(1e-4, 1e-3, 1e-2), seed=1, run_flow=True):
    """Stability of the fixed point (Q, R) of model (a scmode.Model), as
    `scm stability`: the Hessian's verdict and smallest eigenvalues, the
    Jacobian's extreme real parts, and the perturbation test's verdict."""
    lib, Error, check, ScmError, _, ptr, arr, _ = _pkg()
    Q, R = model._state(Q, R)
    o = _StabOpts()
    lib.scm_stab_opts_three_sigma(ctypes.byref(o))
    if len(sigmas) > _NSIG:
        raise ScmError("invalid argument", "at most %d sigmas" % _NSIG)
    o.n_sigma = len(sigmas)
    for i, sg in enumerate(sigmas):
        o.sigma[i] = sg
    o.n_trials, o.seed = _int_in("trials", trials, 1, 100000), _int_in("seed", seed, 0, 2147483647)
    o.run_flow = int(bool(run_flow))
    res = _StabResult()
    err = Error()
    check(lib.scm_stab_analyse(model._m, ptr(Q), ptr(R), ctypes.byref(o), ctypes.byref(res),
                               ctypes.byref(err)), err)
    return {
        "eps": res.eps, "residual": res.residual,
        "hessian": lib.scm_hverdict_str(res.hverdict).decode(),
        "eigenvalues_smallest": np.array(res.eval_small[:res.n_small]),
        "n_negative": res.counts.n_neg if res.hessian_done else None,
        "n_zero": res.counts.n_zero if res.hessian_done else None,
        "zero_modes_predicted": res.zm.total,
        "jacobian_re_max": res.jac_re_max if res.jacobian_done else None,
        "verdict": lib.scm_verdict_str(res.verdict).decode(),
        "rows": [{"sigma": r.sigma, "same": r.n_same, "global": r.n_global, "other": r.n_other,
                  "failed": r.n_failed, "verdict": lib.scm_verdict_str(r.verdict).decode()}
                 for r in res.rows[:res.n_rows]],
    }


def _cjson():
    for name in ("libcjson.so.1", "libcjson.so"):
        try:
            cj = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        raise ImportError("scmode: libcjson not found")
    cj.cJSON_PrintUnformatted.restype = ctypes.c_void_p
    cj.cJSON_PrintUnformatted.argtypes = [ctypes.c_void_p]
    cj.cJSON_Delete.argtypes = [ctypes.c_void_p]
    cj.cJSON_free.argtypes = [ctypes.c_void_p]
    return cj


def sweep(config, runs, seed=None, threads=1, families=None, sets=(), certify=False):
    """Run runs random initialisations of config (init.type random) as `scm sweep`,
    on threads threads, and summarise them as `scm merge`: returns (records,
    summary) where records is the list of the runs' JSON records (dicts) and
    summary the summary's dict (classes with Wilson intervals, loss histogram,
    ...).  families: the `scm fixed-points` output (a dict or JSON text) to
    classify the final states against.  seed: the sweep's base seed (default:
    the config's init.seed).  certify: the early stop of `scm sweep --certify`
    (needs families; docs/sweeps.md)."""
    lib, Error, check, ScmError, _, ptr, _, parse = _pkg()
    # the limits of `scm sweep`
    runs, threads = _int_in("runs", runs, 1, 1000000000), _int_in("threads", threads, 1, 1024)
    if seed is not None:
        seed = _int_in("seed", seed, 0, 2**53 - 1)
    cj = _cjson()
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    cfg = parse(config, list(sets))
    fams = _Families()
    have_fams = False
    summ = lib.scm_sweep_summary_alloc(runs)
    records, failure = [], []
    try:
        err = Error()
        if families is not None:
            text = families if isinstance(families, str) else json.dumps(families)
            check(lib.scm_sweep_families_parse(text.encode(), b"families", ctypes.byref(fams),
                                               ctypes.byref(err)), err)
            have_fams = True
        o = _SweepOpts()
        lib.scm_sweep_opts_default(ctypes.byref(o))
        o.certify = 1 if certify else 0

        def emit(rec, _user):
            try:
                s = lib.scm_sweep_record_json(rec)
                records.append(json.loads(ctypes.string_at(s).decode()))
                libc.free(s)
                if lib.scm_sweep_summary_add(summ, rec) != 0:
                    raise MemoryError("scm_sweep_summary_add")
                return 0
            except BaseException as e:  # no exception may cross the C frames
                failure.append(e)
                return 1

        cb = _EMIT(emit)
        idx = (c_long * runs)(*range(runs))
        base = cfg.contents.seed if seed is None else int(seed)
        st = lib.scm_sweep_exec(cfg, base, idx, runs, threads,
                                ctypes.byref(fams) if have_fams else None, ctypes.byref(o), cb,
                                None, ctypes.byref(err))
        if failure:
            raise failure[0]
        check(st, err)
        js = lib.scm_sweep_summary_json(summ)
        txt = cj.cJSON_PrintUnformatted(js)
        summary = json.loads(ctypes.string_at(txt).decode())
        cj.cJSON_free(txt)
        cj.cJSON_Delete(js)
        return records, summary
    finally:
        lib.scm_sweep_summary_free(summ)
        if have_fams:
            lib.scm_sweep_families_free(ctypes.byref(fams))
        lib.scm_config_free(cfg)
