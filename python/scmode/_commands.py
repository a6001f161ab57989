"""Every command of the scm CLI from Python, through the same library calls.

Each function here fills the arguments of one command (the CLI's long options,
'-' written '_', with the CLI's defaults and ranges), calls ``scm_abi_call``
(include/scm/abi.h), which runs the library entry point the command runs
(``scm_fp_table_run``, ``scm_stabpoint_*`` + ``scm_stab_analyse``,
``scm_xc_check_*``, ``scm_sweep_file_*``, ``scm_sweep_merge``,
``scm_simulate_study_*``, ``scm_compare_run``), and returns the object the
command writes with ``-o``: plain dicts and lists as in the JSON file, with the
matrices Q and R (and the trajectories) turned into numpy arrays.  The JSON
keys are documented in docs/python.md and the command's page in docs/.

Conventions (../shared/MATH.md, README.md):
  - time ``tau = eta t / d`` (t the SGD step count), the flow's time; nn2pp's
    alpha = steps / N is tau / lr (docs/nn2pp.md);
  - loss ``eps = 1/2 E[(phi - phi*)^2]`` (with the 1/2);
  - ``T`` (M x M) the teacher overlaps, ``v``, ``v*`` the second layers
    (fixed points, stability, crosscheck, compare: T = I, v = v* = 1);
  - ``Q = W W^T / d`` (K x K), ``R = W W*^T / d`` (K x M);
  - ``k1``: the number of anti-aligned students (R_km < 0 with its teacher) of a
    fixed point; the option ``k1`` of fixed_points and stability selects it.
"""
import ctypes
import json
import os
import tempfile
import warnings
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]
Config = Union[Dict[str, Any], str]


def _lib():
    from . import _lib as lib
    return lib


def _call(cmd: str, args: Dict[str, Any]) -> Dict[str, Any]:
    """scm_abi_call(cmd, args) -> the reply's dict; ScmError on failure."""
    from . import ScmError, _Error, _status_name
    lib = _lib()
    args = {k: v for k, v in args.items() if v is not None}
    try:
        text = json.dumps(args, allow_nan=False, default=_jsonable)
    except ValueError as e:
        raise ScmError("invalid argument", "%s: %s" % (cmd, e)) from None
    out = ctypes.c_void_p()
    err = _Error()
    st = lib.scm_abi_call(cmd.encode(), text.encode(), ctypes.byref(out), ctypes.byref(err))
    if st != 0:
        raise ScmError(_status_name(st), err.msg.decode(errors="replace") or cmd)
    try:
        return json.loads(ctypes.string_at(out).decode())
    finally:
        lib.scm_abi_free(out)


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, os.PathLike):
        return os.fspath(x)
    raise TypeError("%r is not JSON serialisable" % (x,))


def _config_text(config: Config) -> str:
    """A config dict, JSON text, or the path of a config file, as JSON text."""
    if isinstance(config, dict):
        return json.dumps(config)
    s = os.fspath(config)
    if s.lstrip().startswith("{"):
        return s
    with open(s) as f:
        return f.read()


def _config_name(config: Config) -> str:
    if isinstance(config, dict):
        return "python"
    s = os.fspath(config)
    return "python" if s.lstrip().startswith("{") else s


def _arrays(obj):
    """Q, R (and other lists of lists of numbers) as numpy arrays, recursively."""
    if isinstance(obj, dict):
        return {k: _arrays(v) for k, v in obj.items()}
    if isinstance(obj, list):
        if obj and all(isinstance(r, list) and r and all(isinstance(x, (int, float))
                                                          and not isinstance(x, bool) for x in r)
                       for r in obj) and len({len(r) for r in obj}) == 1:
            return np.array(obj, dtype=float)
        return [_arrays(x) for x in obj]
    return obj


def _files(x) -> Optional[List[str]]:
    if x is None:
        return None
    if isinstance(x, (str, os.PathLike)):
        return [os.fspath(x)]
    return [os.fspath(f) for f in x]


class Result(dict):
    """A command's result dict, with attributes for what the CLI prints."""


class FixedPoints(list):
    """The fixed points of `scm fixed-points`: a list of dicts, one per listed
    point (families merged across ansätze, sorted by loss), with the keys of
    the result file's ``fixed_points`` entries (``k1`` = the number of
    anti-aligned students, its family; ``ansatz`` and ``instance``, the ansatz
    instance it was found in; ``structure`` = {anti, aligned, other}, ``class``,
    ``loss`` (eps, with the 1/2), residuals, ``scalars``, ``hits``,
    ``also_found_in_other_ansatze``, ``stability`` when asked, ...), Q (K x K)
    and R (K x M) as numpy arrays (None at block level), and ``eps`` =
    ``loss``.  Attributes: ``result`` (the whole result dict, as the file),
    ``text`` (the table the CLI prints), ``residual_ok`` (the CLI would exit 0),
    ``solutions`` (before merging), ``loss``/``anti`` (numpy arrays over the
    points), ``families`` (the families table, printed first by the CLI)."""

    result: Dict[str, Any]
    text: str
    residual_ok: bool
    solutions: int

    @property
    def loss(self) -> np.ndarray:
        return np.array([p["loss"] for p in self], dtype=float)

    @property
    def anti(self) -> np.ndarray:
        """Anti-aligned students of each point (its structure's "anti")."""
        return np.array([p.get("structure", {}).get("anti", -1) for p in self])

    @property
    def families(self) -> List[Dict[str, Any]]:
        """The families table (the result's ``families``; ``family_table`` in
        files of earlier versions): per k1 = the number of anti-aligned
        students (and per pattern of the extra students when K > M) its
        lowest-loss strict minimum (``loss``, ``hessian_min``, ``index`` into
        the point list, ``ansatz``, ``instance``, Q, R as arrays) and the
        counts of ``points``, ``minima`` and ``saddles``; ``loss`` None for a
        family with no minimum."""
        fam = self.result.get("families", self.result.get("family_table"))
        return _arrays(fam) if fam is not None else []

    def table(self) -> Dict[str, Any]:
        """The rest of the result file (everything but the point list)."""
        return {k: v for k, v in self.result.items() if k != "fixed_points"}


def fixed_points(K: int, M: int, k1: Optional[int] = None, *, activation: str = "relu",
                 ansatz: Optional[Sequence[PathLike]] = None, starts: int = 200, seed: int = 1,
                 sweep_passes: Optional[int] = None, deflate: Optional[int] = None,
                 polish_max_K: Optional[int] = None, chain_from: Optional[int] = None,
                 continue_to: Optional[int] = None, grow_from: Optional[int] = None,
                 probes: Optional[int] = None, fixed_k1: Optional[int] = None,
                 all: bool = False, stability: bool = False,
                 max_residual: Optional[float] = None, threads: Optional[int] = None,
                 seed_from: Optional[Sequence[PathLike]] = None) -> FixedPoints:
    """`scm fixed-points --K K --M M ...`: the fixed points of the population
    gradient flow (T = I, v = v* = 1) inside the block-symmetric ansätze,
    exactly as the CLI lists them (scm_fp_table_run, same defaults: deflate 2,
    sweep_passes 8, threads = the processors online; the result does not depend
    on threads).  k1: only the ansatz instances with this k1.  ansatz: ansatz
    files (default: the built-in ones).  grow_from=M0: block level by
    continuation in M from M0 (large K; no Q, R).  stability: the verdict of
    each point (K <= 20).  Returns a FixedPoints (a list of point dicts)."""
    r = _call("fixed_points", dict(
        K=K, M=M, k1=k1, activation=activation, ansatz=_files(ansatz), starts=starts, seed=seed,
        sweep_passes=sweep_passes, deflate=deflate, polish_max_K=polish_max_K,
        chain_from=chain_from, continue_to=continue_to, grow_from=grow_from, probes=probes,
        fixed_k1=fixed_k1, all=all, stability=stability, max_residual=max_residual,
        threads=threads, seed_from=_files(seed_from)))
    res = r["result"]
    out = FixedPoints()
    for p in res.get("fixed_points", []):
        q = _arrays(p)
        q["eps"] = q.get("loss")
        for key in ("Q", "R"):
            if key in q and not isinstance(q[key], np.ndarray) and q[key] is not None:
                q[key] = np.array(q[key], dtype=float)
        out.append(q)
    out.result, out.text = res, r.get("text", "")
    out.residual_ok, out.solutions = r["residual_ok"], r["solutions"]
    out.deferred_error = r.get("deferred_error")
    return out


def grow_from(K: int, M: int, M0: int, **kw) -> FixedPoints:
    """`scm fixed-points --K K --M M --grow-from M0`: every k1 at block level by
    continuation in M from M0 (K = M = 1000 in about a second); the points have
    loss, scalars and block residual, no Q, R.  kw: as fixed_points (probes,
    fixed_k1, ansatz, ...)."""
    return fixed_points(K, M, grow_from=M0, **kw)


def stability_of(K: Optional[int] = None, M: Optional[int] = None, k1: Optional[int] = None, *,
                 point: Optional[PathLike] = None, index: Optional[int] = None,
                 loss: Optional[float] = None, ansatz: Optional[PathLike] = None,
                 activation: Optional[str] = None, starts: int = 100,
                 threads: Optional[int] = None, d: Optional[int] = None, steps: int = 1000,
                 trials: int = 10, seed: int = 1, eta: Optional[float] = None,
                 t_max: Optional[float] = None, verdict_sigma_max: Optional[float] = None,
                 sigma: Optional[Sequence[float]] = None, flow: bool = True,
                 hessian: bool = True, dense: bool = False,
                 perturb: str = "auto") -> Dict[str, Any]:
    """`scm stability`: the stability of one fixed point, the k1 family
    (K, M, k1: its lowest-loss minimum candidate, or index / loss within the
    family) or entry index of a `scm fixed-points -o` file (point).  Returns the
    result file's dict (the point with Q, R as arrays, the family, the Hessian's
    spectrum and verdict, the Jacobian, the perturbation test's rows and
    verdict); the same defaults as the CLI (d: K + M... as scm_stab_opts_default,
    steps 1000 of GD at eta, trials 10, seed 1).  dense=False: the exact
    symmetric spectra when the point's ansatz is known (symstab.h), else the
    dense ones; perturb: "auto", "weights", "qr" or "none" (the perturbation
    test), as `scm stability --dense --perturb`."""
    r = _call("stability", dict(
        K=K, M=M, k1=k1, point=None if point is None else os.fspath(point), index=index,
        loss=loss, ansatz=None if ansatz is None else os.fspath(ansatz), activation=activation,
        starts=starts, threads=threads, d=d, steps=steps, trials=trials, seed=seed, eta=eta,
        t_max=t_max, verdict_sigma_max=verdict_sigma_max,
        sigma=None if sigma is None else [float(s) for s in sigma], flow=flow, hessian=hessian,
        dense=dense, perturb=perturb))
    return _arrays(r["result"])


def symmetric_spectrum(K: int, M: int, Q, R, ansatz: str, *, instance: Optional[int] = None,
                       ansatz_file: Optional[PathLike] = None, activation: str = "relu",
                       d: Optional[int] = None, jacobian: bool = False,
                       k1: Optional[int] = None) -> Dict[str, Any]:
    """The exact spectrum of the weight-space Hessian (jacobian=False; in
    dimension d, default K + M) or of the (Q, R) flow's Jacobian at a
    block-symmetric point, from its symmetry (symstab.h; cost independent of
    K): ``eigenvalues`` (value, imag, mult, part, unit, zero, cause), and
    ``n_neg``, ``n_zero``, ``n_pos`` counted with multiplicity (``total`` of
    them).  ansatz: the name of the point's ansatz (a fixed point's
    ``"ansatz"``); the point is found in the ansatz's instances by
    projection, the instance label ``instance`` (a fixed point's
    ``"instance"``, not its k1) tried first.  ``k1=`` is the old name of
    ``instance`` (DeprecationWarning)."""
    if k1 is not None:
        warnings.warn("symmetric_spectrum(k1=...) names the ansatz instance, not the point's k1: "
                      "pass instance=", DeprecationWarning, stacklevel=2)
        if instance is not None and instance != k1:
            raise ValueError("symmetric_spectrum: instance=%r and its old name k1=%r differ"
                             % (instance, k1))
        instance = k1
    r = _call("symstab", dict(K=K, M=M, Q=np.asarray(Q, dtype=float), R=np.asarray(R, dtype=float),
                              ansatz=ansatz, instance=instance, activation=activation, d=d,
                              jacobian=jacobian,
                              ansatz_file=None if ansatz_file is None else os.fspath(ansatz_file)))
    res = r["result"]
    ev = res["eigenvalues"]
    res["values"] = np.array([e["value"] for e in ev])
    res["mult"] = np.array([e["mult"] for e in ev], dtype=int)
    return res


def crosscheck(K: int, M: int, *, runs: int = 200, method: str = "both", seed: int = 1,
               first: int = 0, starts: int = 200, fp_seed: int = 1, deflate: int = 2,
               sweep_passes: int = 8, gd_max_iter: Optional[int] = None,
               threads: Optional[int] = None, activation: str = "relu",
               ansatz: Optional[Sequence[PathLike]] = None) -> Dict[str, Any]:
    """`scm crosscheck`: runs random starts (method "ode": the flow by CVODE;
    "gd": gradient descent in weight space, d = M; "both") and classifies each
    end point against the fixed-point enumeration (the options of `scm
    fixed-points`).  Returns the result file's dict (per method its counts, the
    matched fixed points, every unmatched and non-converged end point), with
    attributes ``text`` (the CLI's summary) and ``unmatched_count`` (converged
    end points that matched nothing: the CLI exits 3 when > 0)."""
    r = _call("crosscheck", dict(K=K, M=M, runs=runs, method=method, seed=seed, first=first,
                                 starts=starts, fp_seed=fp_seed, deflate=deflate,
                                 sweep_passes=sweep_passes, gd_max_iter=gd_max_iter,
                                 threads=threads, activation=activation, ansatz=_files(ansatz)))
    res = Result(_arrays(r["result"]))
    res.text, res.unmatched_count = r["text"], r["unmatched"]
    return res


def _families_path(families, tmpdir: str) -> Optional[str]:
    """A families argument (a path, a dict, JSON text, a FixedPoints) as a file."""
    if families is None:
        return None
    if isinstance(families, FixedPoints):
        families = families.result
    if isinstance(families, os.PathLike) or (isinstance(families, str) and
                                             not families.lstrip().startswith(("{", "["))):
        return os.fspath(families)
    text = families if isinstance(families, str) else json.dumps(families, default=_jsonable)
    path = os.path.join(tmpdir, "families.json")
    with open(path, "w") as f:
        f.write(text)
    return path


def sweep(config: Config, runs: int, *, seed: Optional[int] = None, threads: int = 1,
          families=None, sets: Iterable[str] = (), certify: Union[bool, int] = False,
          out: Optional[PathLike] = None, resume: bool = False, shard: Tuple[int, int] = (0, 1),
          loose_grad_stop: Optional[float] = None, dead_q: Optional[float] = None,
          match_rtol: Optional[float] = None
          ) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """`scm sweep CONFIG --runs N`: runs random initialisations (init.type
    random; run i seeded by scm_sweep_seed(seed, i), seed default init.seed) on
    threads threads, each integrated to its end and classified against the
    families (a `scm fixed-points` result: a path, dict, JSON text or
    FixedPoints).  certify: True or 1 (--certify), 2 (--certify-global).
    out: the runs file (default: a temporary one; resume continues it).
    Returns (records, summary): the runs' records (the JSON lines after the
    header, as dicts, in index order whatever threads) and the summary (classes
    with 95% Wilson intervals, loss histogram, ... as `scm merge`)."""
    with tempfile.TemporaryDirectory(prefix="scmode-sweep-") as tmp:
        path = os.fspath(out) if out is not None else os.path.join(tmp, "runs.jsonl")
        r = _call("sweep", dict(
            config=_config_text(config), config_name=_config_name(config), sets=list(sets),
            runs=runs, seed=seed, threads=threads, shard_i=shard[0], shard_n=shard[1],
            families=_families_path(families, tmp), out=path, resume=resume,
            certify=int(certify) if not isinstance(certify, bool) else (1 if certify else 0),
            loose_grad_stop=loose_grad_stop, dead_q=dead_q, match_rtol=match_rtol))
        with open(path) as f:
            records = [json.loads(x) for x in f.read().splitlines()[1:]]
    return records, r["summary"]


def merge(files: Sequence[PathLike]) -> Dict[str, Any]:
    """`scm merge A.jsonl B.jsonl ...`: the runs files of one sweep (shards)
    merged into one summary: {"command", "sweep", "summary": {..., "missing"}}."""
    return _call("merge", dict(files=_files(files)))["result"]


class Simulation(dict):
    """The result of `scm simulate` (PREFIX.json as a dict), with per seed
    numpy arrays: ``seeds[s]`` has t, eps_sim, eps_ode (n,), Q_sim, Q_ode
    (n, K, K), R_sim, R_ode (n, K, M), v_sim, v_ode (n, K); and ``csv`` (the
    text of PREFIX.csv)."""


def simulate(config: Config, *, d: Optional[int] = None, seeds: Optional[int] = None,
             mode: Optional[str] = None, n: Optional[int] = None, eta: Optional[float] = None,
             t_max: Optional[float] = None, threads: int = 1,
             sets: Iterable[str] = ()) -> Simulation:
    """`scm simulate CONFIG`: a real network of dimension d trained by online
    SGD (mode "online": one fresh sample per step, learning rate eta) or
    full-batch GD on n samples (mode "batch"), beside the ODE of the config's
    rule from the same initial overlaps, seeds independent initialisations.
    Time tau = eta t / d (t steps).  Options given here override the config's
    "simulate" section, as on the command line.  Returns a Simulation."""
    r = _call("simulate", dict(config=_config_text(config), config_name=_config_name(config),
                               sets=list(sets), d=d, seeds=seeds, mode=mode, n=n, eta=eta,
                               t_max=t_max, threads=threads))
    res = Simulation(_arrays(r["result"]))
    res.csv = r["csv"]
    return res


def compare(M: int, K: Sequence[int], runs: int, *, prefix: PathLike,
            config: Optional[Config] = None, sets: Iterable[str] = (),
            families: Optional[Dict[int, PathLike]] = None, ansatz: Iterable[PathLike] = (),
            seed: Optional[int] = None, threads: int = 1, traces: int = 4,
            no_stability: bool = False, certify: Union[bool, int] = False) -> Dict[str, Any]:
    """`scm compare --M M --K K1,K2,.. --runs N -o PREFIX`: for each K a sweep of
    runs random starts, classified against the enumerated families (by k1, the
    number of anti-aligned students), with their stability; writes the per-K
    files PREFIX.K<K>.* as the CLI does.  Returns the report (PREFIX.json's
    dict: ``fractions`` per K and k1 with 95% Wilson intervals, families,
    histograms, traces), plus ``markdown`` (PREFIX.md's text) and
    ``summaries`` (per K the sweep summary).  ansatz: ansatz files the
    enumeration takes besides the built-in ones where they apply (``--ansatz``,
    e.g. examples/ansatz/k1_shared.json)."""
    if isinstance(K, (int, np.integer)):
        K = [K]
    r = _call("compare", dict(
        M=M, K=[int(k) for k in K], runs=runs, prefix=os.fspath(prefix),
        config=None if config is None else _config_text(config),
        config_name=None if config is None else _config_name(config), sets=list(sets),
        families=None if families is None else {str(k): os.fspath(v)
                                                for k, v in families.items()},
        ansatz=[os.fspath(f) for f in ansatz], seed=seed, threads=threads, traces=traces, no_stability=no_stability,
        certify=int(certify) if not isinstance(certify, bool) else (1 if certify else 0)))
    rep = r["report"]
    rep["markdown"], rep["summaries"] = r["markdown"], r["summaries"]
    return rep


def lintarget(*, alpha: Optional[Sequence[float]] = None, c: Optional[Sequence[float]] = None,
              t: Optional[float] = None, t_max: Optional[float] = None, d: Optional[int] = None,
              seed: Optional[int] = None, n_out: Optional[int] = None) -> Result:
    """`scm lintarget`: the linear target t |a|^2 as a +-ReLU pair from small
    initialisations alpha (each in (0, 1)): the three phases of two-layer
    training and their times against log(1/alpha) (time tau, loss with the
    1/2), and the saddle manifold's check at each c (docs/lintarget.md).
    Defaults those of the command.  Returns PREFIX.json's dict; attributes
    ``phases_csv`` and ``traces_csv`` (the texts of PREFIX.phases.csv and
    PREFIX.traces.csv)."""
    r = _call("lintarget", dict(alpha=None if alpha is None else [float(x) for x in alpha],
                                c=None if c is None else [float(x) for x in c], t=t, t_max=t_max,
                                d=d, seed=seed, n_out=n_out))
    res = Result(_arrays(r["result"]))
    res.phases_csv, res.traces_csv = r["phases_csv"], r["traces_csv"]
    return res


def staircase(K: int, M: int, alpha: Sequence[float], *, d: Optional[int] = None,
              seed: Optional[int] = None, n_out: Optional[int] = None,
              starts: Optional[int] = None, t_max: Optional[float] = None,
              rate_tol: Optional[float] = None, min_dur: Optional[float] = None,
              match_tol: Optional[float] = None, activation: str = "relu", rule: str = "gd",
              lr_v_ratio: Optional[float] = None, T_diag: Optional[Sequence[float]] = None,
              vstar: Optional[Sequence[float]] = None,
              threads: Optional[int] = None) -> Dict[str, Any]:
    """`scm staircase --K K --M M --alpha a1,a2,...`: runs from small
    initialisations alpha, their loss curves (time tau, loss with the 1/2) cut
    into plateaus, each matched to an enumerated fixed point, and the escape
    times fitted against log(1/alpha) (docs/staircase.md).  rule "gd" or
    "two_layer" (lr_v_ratio); T_diag, vstar: the teacher's diagonal T and v*
    (M numbers each).  Returns the result file's dict."""
    fl = (lambda x: None if x is None else [float(v) for v in x])
    return _arrays(_call("staircase", dict(
        K=K, M=M, alpha=fl(alpha), d=d, seed=seed, n_out=n_out, starts=starts, t_max=t_max,
        rate_tol=rate_tol, min_dur=min_dur, match_tol=match_tol, activation=activation,
        rule=rule, lr_v_ratio=lr_v_ratio, T_diag=fl(T_diag), vstar=fl(vstar),
        threads=threads))["result"])


def split(K: Optional[int] = None, M: Optional[int] = None, *, neuron: int,
          k1: Optional[int] = None, index: Optional[int] = None, loss: Optional[float] = None,
          point: Optional[PathLike] = None, lambdas: Optional[Sequence[float]] = None,
          lambda_grid: Optional[int] = None, weights: Optional[Sequence[float]] = None,
          d: Optional[int] = None, starts: int = 100, polish: bool = False,
          perturb: bool = False, activation: Optional[str] = None,
          threads: Optional[int] = None) -> Dict[str, Any]:
    """`scm split --K K --M M (--k1 N | --index I | --loss L) --neuron r`: split
    student r (0-based) of a fixed point (T = I, v = v* = 1) into daughters
    with output weights mu_j v_r, sum mu_j = 1 (two daughters: lambda and
    1 - lambda), and classify each split point of the larger network by its
    weight-space Hessian (docs/split.md).

    The parent is enumerated (built-in ansätze, ``starts`` Newton starts,
    activation relu by default as the command) and chosen by ``k1`` (the
    lowest-loss point with k1 anti-aligned students), ``index`` (in the list
    sorted by loss) or ``loss`` (the nearest loss eps, with the 1/2); or read
    from ``point`` (a `scm fixed-points -o` file with ``index``, or an object
    with Q, R and optionally v, vs, T, activation).  Samples: ``lambdas`` (the
    CLI's --lambda), ``lambda_grid`` N (evenly in [-0.5, 1.5], default 9), or
    ``weights`` (one split into several daughters).  d: the dimension of the
    realisation (default K + M + 1); the Hessian is of the loss eps in weight
    space at that d.  polish: Newton-polish a point read from a file first;
    perturb: the perturbation test at each sample.  threads only speeds up the
    enumeration.  Returns the result file's dict (parent, its Hessian counts,
    the inner Hessian and its class, one entry per sample) with Q, R as arrays."""
    fl = (lambda x: None if x is None else [float(v) for v in x])
    return _arrays(_call("split", dict(
        K=K, M=M, k1=k1, index=index, loss=loss,
        point=None if point is None else os.fspath(point), neuron=neuron, **{"lambda": fl(lambdas)},
        lambda_grid=lambda_grid, weights=fl(weights), d=d, starts=starts, polish=polish,
        perturb=perturb, activation=activation, threads=threads))["result"])


def certify(K: Optional[int] = None, M: Optional[int] = None, k1: Optional[int] = None, *,
            all: bool = False, every: bool = False, point: Optional[PathLike] = None,
            index: Optional[int] = None, starts: int = 40,
            max_radius: Optional[float] = None) -> Dict[str, Any]:
    """`scm certify --K K --M M [--k1 N | --all] [--every]` or `--point FILE
    --index I`: computer-assisted existence proofs (ball arithmetic, Arb) of
    fixed points of the population gradient flow (ReLU, T = I, v = v* = 1,
    the built-in ansätze; docs/certify.md).  k1 = the number of anti-aligned
    students (default 1): the family's minimum candidates (``every``: all its
    points); ``all``: every k1 = 0 .. K.  Each entry says whether a unique true
    zero of the flow lies within ``radius`` (max norm of the ansatz scalars,
    at most ``max_radius``, default 1e-8) of the listed point, and encloses its
    loss eps (with the 1/2) in [loss_lo, loss_hi].  Strictness (a minimum) is
    not proved.  Returns the result file's dict."""
    return _call("certify", dict(K=K, M=M, k1=k1, all=all, every=every,
                                 point=None if point is None else os.fspath(point),
                                 index=index, starts=starts, max_radius=max_radius))["result"]
