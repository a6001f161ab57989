"""Every command of the CLI against its Python function (python/scmode/_commands.py):
the same arguments give the same result object, key for key and number for
number (the JSON both write is printed exactly), timings aside.

    test_parity.py SCM_EXE [--sanitized]

The CLI runs at run time, so that the comparison stays true whatever the
commands compute.  Prints "N passed, N failed"; exits 77 (SKIP) with
--sanitized (ctypes cannot load an ASan libscm into a non-ASan python)."""
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

if "--sanitized" in sys.argv:
    print("skipped: sanitizer build (docs/python.md)")
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402
import scmode  # noqa: E402

SCM = os.path.abspath(sys.argv[1])
passed = failed = 0
# Wall-clock fields: the only ones allowed to differ.
TIMING = {"seconds", "secs_sim", "secs_ode", "time_s", "elapsed", "wall_seconds",
          "enumeration_seconds", "runs_per_second"}


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what)


def plain(x):
    """numpy arrays back to lists, timings dropped: comparable with the CLI's JSON."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items() if k not in TIMING}
    if isinstance(x, list):
        return [plain(v) for v in x]
    return x


def first_diff(a, b, path="$"):
    """Where two JSON values first differ (for the message)."""
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s only in %s" % (path, k, "python" if k in a else "CLI")
            d = first_diff(a[k], b[k], path + "." + k)
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d vs %d entries" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)


def same(py, cli_json, what):
    a, b = plain(py), plain(cli_json)
    d = first_diff(a, b)
    check(d is None, "%s: Python differs from the CLI at %s" % (what, d))


def cli(args, cwd, codes=(0,)):
    r = subprocess.run([SCM] + args, cwd=cwd, capture_output=True, text=True)
    check(r.returncode in codes, "scm %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def load(tmp, name):
    with open(os.path.join(tmp, name)) as f:
        return json.load(f)


def test_fixed_points(tmp):
    cli(["fixed-points", "--K", "4", "--M", "4", "-o", "fp.json", "-q"], tmp)
    fp = scmode.fixed_points(4, 4)
    same(fp.result, load(tmp, "fp.json"), "fixed_points(4, 4)")
    check(isinstance(fp[0]["Q"], np.ndarray) and fp[0]["Q"].shape == (4, 4)
          and fp[0]["R"].shape == (4, 4), "Q, R as numpy arrays of their shapes")
    check(list(fp.loss) == sorted(fp.loss), "points sorted by loss")
    check(all(p["eps"] == p["loss"] for p in fp), "eps is loss")
    ref = load(tmp, "fp.json")
    fam = ref.get("families", ref.get("family_table"))
    check(fam is not None and plain(fp.families) == fam and
          all(f["k1"] == fp[f["index"]]["k1"] == fp[f["index"]]["structure"]["anti"]
              for f in fam if f.get("index") is not None),
          "the families table: as the CLI's, k1 = the anti-aligned count of its point")
    r = cli(["fixed-points", "--K", "3", "--M", "3", "--k1", "1", "--starts", "50",
             "--deflate", "0", "--stability", "--activation", "erf", "-o", "fp3.json"], tmp)
    fp3 = scmode.fixed_points(3, 3, k1=1, starts=50, deflate=0, stability=True, activation="erf")
    same(fp3.result, load(tmp, "fp3.json"), "fixed_points(3, 3, k1=1, erf, stability)")
    check(fp3.text == r.stdout, "the table text equals the CLI's stdout")
    cli(["fixed-points", "--K", "16", "--M", "16", "--grow-from", "8", "-o", "g.json", "-q"], tmp)
    g = scmode.grow_from(16, 16, 8)
    same(g.result, load(tmp, "g.json"), "grow_from(16, 16, 8)")
    return fp


def test_stability(tmp):
    cli(["stability", "--K", "3", "--M", "3", "--k1", "1", "--index", "0", "--trials", "2",
         "-o", "st.json", "-q"], tmp)
    s = scmode.stability(K=3, M=3, k1=1, index=0, trials=2)
    same(s, load(tmp, "st.json"), "stability(K=3, M=3, k1=1, index=0)")
    cli(["fixed-points", "--K", "3", "--M", "3", "-o", "fp33.json", "-q"], tmp)
    cli(["stability", "--point", "fp33.json", "--index", "2", "--trials", "2", "--sigma",
         "1e-3,1e-2", "-o", "st2.json", "-q"], tmp)
    here = os.getcwd()
    os.chdir(tmp)  # the result names the file as given
    try:
        s2 = scmode.stability(point="fp33.json", index=2, trials=2, sigma=[1e-3, 1e-2])
    finally:
        os.chdir(here)
    same(s2, load(tmp, "st2.json"), "stability(point=..., index=2)")


def test_crosscheck(tmp):
    cli(["crosscheck", "--K", "3", "--M", "3", "--runs", "6", "-o", "xc.json", "-q"], tmp,
        codes=(0, 3))
    x = scmode.crosscheck(3, 3, runs=6)
    same(x, load(tmp, "xc.json"), "crosscheck(3, 3, runs=6)")
    check(isinstance(x.text, str) and x.unmatched_count >= 0 and "ode" in x.text,
          "crosscheck text and unmatched count")


def test_sweep_merge(tmp):
    cfg = {"model": {"K": 3, "M": 2}, "init": {"d": 200, "seed": 5}}
    with open(os.path.join(tmp, "sw.json"), "w") as f:
        json.dump(cfg, f)
    cli(["sweep", "sw.json", "--runs", "5", "--threads", "2", "-o", "a.jsonl",
         "--summary", "a.summary.json", "-q", "--set", "integrator.rtol=1e-7"], tmp)
    recs, summ = scmode.sweep(cfg, 5, threads=1, sets=["integrator.rtol=1e-7"])
    lines = open(os.path.join(tmp, "a.jsonl")).read().splitlines()
    same(recs, [json.loads(x) for x in lines[1:]], "sweep records")
    same(summ, load(tmp, "a.summary.json"), "sweep summary")
    # shards and merge
    for i in (0, 1):
        cli(["sweep", "sw.json", "--runs", "5", "--shard", "%d/2" % i, "-o", "s%d.jsonl" % i,
             "-q"], tmp)
        scmode.sweep(cfg, 5, shard=(i, 2), out=os.path.join(tmp, "p%d.jsonl" % i))
        check(open(os.path.join(tmp, "s%d.jsonl" % i)).read() ==
              open(os.path.join(tmp, "p%d.jsonl" % i)).read(), "shard %d/2 runs file" % i)
    cli(["merge", "s0.jsonl", "s1.jsonl", "-o", "m.json", "-q"], tmp)
    m = scmode.merge([os.path.join(tmp, "p0.jsonl"), os.path.join(tmp, "p1.jsonl")])
    same(m, load(tmp, "m.json"), "merge")


def test_simulate(tmp):
    cfg = {"model": {"K": 2, "M": 2, "activation": "erf"}, "init": {"d": 100, "seed": 2},
           "integrator": {"t_max": 2, "n_out": 10}}
    with open(os.path.join(tmp, "sim.json"), "w") as f:
        json.dump(cfg, f)
    cli(["simulate", "sim.json", "--d", "100", "--seeds", "2", "--t-max", "2", "--no-plot", "-q",
         "-o", "simout"], tmp)
    s = scmode.simulate(os.path.join(tmp, "sim.json"), d=100, seeds=2, t_max=2)
    ref = load(tmp, "simout.json")
    same(s, ref, "simulate")
    check(s.csv == open(os.path.join(tmp, "simout.csv")).read(), "simulate csv")


def test_compare(tmp):
    os.mkdir(os.path.join(tmp, "cli"))
    os.mkdir(os.path.join(tmp, "py"))
    args = ["--M", "3", "--K", "3,4", "--runs", "12", "--threads", "2", "--no-stability",
            "--no-plots", "-q"]
    cli(["compare"] + args + ["-o", "cli/c"], tmp)
    rep = scmode.compare(3, [3, 4], 12, prefix=os.path.join(tmp, "py", "c"), threads=2,
                         no_stability=True)
    md, summaries = rep.pop("markdown"), rep.pop("summaries")
    ref = load(tmp, "cli/c.json")
    # the report names its files by prefix: the same names relative to it
    txt = json.dumps(plain(rep)).replace(os.path.join(tmp, "py", "c"), "cli/c")
    same(json.loads(txt), ref, "compare report")
    check(md.replace(os.path.join(tmp, "py", "c"), "cli/c") ==
          open(os.path.join(tmp, "cli", "c.md")).read(), "compare markdown")
    same(summaries[1], load(tmp, "cli/c.K4.summary.json"), "compare K = 4 summary")
    fr = rep["fractions"] if "fractions" in rep else None
    check(fr is not None, "the report has fractions (with Wilson intervals)")
    # the figures: scmode.plot_compare on Python's report draws byte for byte
    # what scm compare's script draws from the CLI's PREFIX.json
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("no matplotlib: plot_compare not checked")
        return
    paths = scmode.plot_compare(rep, os.path.join(tmp, "py", "c"))
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                          "plot_compare.py")
    r = subprocess.run([sys.executable, script, "cli/c.json"], cwd=tmp, capture_output=True,
                       text=True)
    check(r.returncode == 0, "plot_compare.py on the CLI's report: %s" % r.stderr)
    for p, k in zip(paths, ("hist", "fractions", "traces")):
        with open(p, "rb") as a, open(os.path.join(tmp, "cli", "c.%s.png" % k), "rb") as b:
            check(a.read() == b.read(), "plot_compare: %s differs from the script's" % p)
    try:
        scmode.plot_compare({k: v for k, v in rep.items() if k != "histograms"}, "x")
        check(False, "plot_compare without histograms raised nothing")
    except ValueError as e:
        check("key 'histograms' is missing" in str(e), "plot_compare's message: %s" % e)


def test_compare_ansatz(tmp):
    """ansatz=[FILE] is --ansatz FILE: the same report and families file."""
    ans = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "ansatz", "k1_shared.json")
    os.makedirs(os.path.join(tmp, "cli"), exist_ok=True)
    os.makedirs(os.path.join(tmp, "py"), exist_ok=True)
    cli(["compare", "--M", "3", "--K", "5", "--runs", "6", "--threads", "2", "--no-stability",
         "--no-plots", "-q", "--ansatz", ans, "-o", "cli/a"], tmp)
    rep = scmode.compare(3, [5], 6, prefix=os.path.join(tmp, "py", "a"), threads=2,
                         no_stability=True, ansatz=[ans])
    rep.pop("markdown"), rep.pop("summaries")
    txt = json.dumps(plain(rep)).replace(os.path.join(tmp, "py", "a"), "cli/a")
    same(json.loads(txt), load(tmp, "cli/a.json"), "compare report with ansatz")
    check(rep.get("ansatz") == [ans], "the report records the ansatz file: %s" % rep.get("ansatz"))
    fams = load(tmp, "cli/a.K5.families.json")
    check(any(p.get("ansatz") == "k1_shared" for p in fams["fixed_points"]),
          "the families of K = 5 list no k1_shared point")
    with open(os.path.join(tmp, "py", "a.K5.families.json")) as f:
        check(json.load(f) == fams, "the families files differ")


def test_symmetric(fp):
    # the exact spectrum from symmetry against the dense Hessian of stability()
    m = scmode.Model(4, 4)
    for p in fp[1:4]:
        s = scmode.symmetric_spectrum(4, 4, p["Q"], p["R"], p["ansatz"])
        check(s["total"] == 4 * 8 and s["mult"].sum() == 32, "symmetric spectrum: K d eigenvalues")
        dense = scmode.stability(m, p["Q"], p["R"], trials=1, sigmas=(1e-3,))
        check((dense["n_negative"] > 0) == (s["n_neg"] > 0),
              "symmetric vs dense Hessian: negative directions (%s vs %s)"
              % (s["n_neg"], dense["n_negative"]))
        # the point's own instance label, tried first, is the one analysed; the
        # spectrum is the point's whichever instance holds it
        si = scmode.symmetric_spectrum(4, 4, p["Q"], p["R"], p["ansatz"], instance=p["instance"])
        check(si["instance"] == p["instance"] and si["n_neg"] == s["n_neg"] and
              np.allclose(np.sort(np.repeat(si["values"], si["mult"])),
                          np.sort(np.repeat(s["values"], s["mult"])), rtol=1e-9, atol=1e-12),
              "symmetric spectrum with instance=%s: instance %s, %s negative against %s"
              % (p["instance"], si["instance"], si["n_neg"], s["n_neg"]))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            sk = scmode.symmetric_spectrum(4, 4, p["Q"], p["R"], p["ansatz"], k1=p["instance"])
        check(sk["instance"] == p["instance"] and
              any(issubclass(x.category, DeprecationWarning) for x in w),
              "symmetric_spectrum(k1=) is the deprecated name of instance=")


def test_lintarget(tmp):
    cli(["lintarget", "--alpha", "1e-2,1e-3", "--c", "-0.4,1.7", "--t-max", "60",
         "--n-out", "50", "-o", "lt", "-q"], tmp)
    r = scmode.lintarget(alpha=[1e-2, 1e-3], c=[-0.4, 1.7], t_max=60, n_out=50)
    same(r, load(tmp, "lt.json"), "lintarget")
    check(r.phases_csv == open(os.path.join(tmp, "lt.phases.csv")).read() and
          r.traces_csv == open(os.path.join(tmp, "lt.traces.csv")).read(), "lintarget csv files")


def test_staircase(tmp):
    cli(["staircase", "--K", "2", "--M", "2", "--alpha", "1e-2,1e-3", "--t-max", "300",
         "--n-out", "200", "--starts", "10", "-o", "sc.json", "-q"], tmp)
    r = scmode.staircase(2, 2, [1e-2, 1e-3], t_max=300, n_out=200, starts=10)
    same(r, load(tmp, "sc.json"), "staircase")


def test_split(tmp):
    cli(["split", "--K", "3", "--M", "2", "--k1", "0", "--neuron", "0", "--lambda-grid", "3",
         "--activation", "erf", "-o", "sp.json", "-q"], tmp)
    r = scmode.split(3, 2, k1=0, neuron=0, lambda_grid=3, activation="erf")
    same(r, load(tmp, "sp.json"), "split(3, 2, k1=0, neuron=0, lambda_grid=3, activation='erf')")
    # the default activation is relu, in the command and in Python (issue 25 item 6)
    cli(["split", "--K", "3", "--M", "3", "--index", "1", "--neuron", "0", "--lambda", "0.5",
         "-o", "spd.json", "-q"], tmp)
    rd = scmode.split(3, 3, index=1, neuron=0, lambdas=[0.5])
    same(rd, load(tmp, "spd.json"), "split(3, 3, index=1, neuron=0, lambdas=[0.5])")
    check(rd["activation"] == "relu", "split's default activation: %s" % rd["activation"])
    check(isinstance(r["Q"], np.ndarray) and r["Q"].shape == (3, 3) and len(r["points"]) == 3,
          "split: Q an array, one entry per lambda")
    cli(["fixed-points", "--K", "3", "--M", "3", "-o", "fpsp.json", "-q"], tmp)
    cli(["split", "--point", "fpsp.json", "--index", "1", "--neuron", "2", "--lambda",
         "0.25,1.5", "--activation", "relu", "-o", "sp2.json", "-q"], tmp)
    here = os.getcwd()
    os.chdir(tmp)  # the result names the file as given
    try:
        r2 = scmode.split(point="fpsp.json", index=1, neuron=2, lambdas=[0.25, 1.5],
                          activation="relu")
    finally:
        os.chdir(here)
    same(r2, load(tmp, "sp2.json"), "split(point=..., index=1, neuron=2, lambdas=...)")


def test_certify(tmp):
    # (the flags last: see the report of issue 25's session about --every)
    cli(["certify", "--K", "3", "--M", "3", "--k1", "1", "-o", "ce.json", "--every"], tmp)
    c = scmode.certify(3, 3, k1=1, every=True)
    same(c, load(tmp, "ce.json"), "certify(3, 3, k1=1, every=True)")
    check(c["n_certified"] >= 1 and all(p["loss_enclosure"][0] <= p["loss_enclosure"][1]
                                        for p in c["points"] if p["certified"]),
          "certify: a certified point with its loss enclosure")
    cli(["fixed-points", "--K", "3", "--M", "3", "-o", "fpce.json", "-q"], tmp)
    cli(["certify", "--point", "fpce.json", "--index", "1", "-o", "ce2.json"], tmp)
    here = os.getcwd()
    os.chdir(tmp)
    try:
        c2 = scmode.certify(point="fpce.json", index=1)
    finally:
        os.chdir(here)
    same(c2, load(tmp, "ce2.json"), "certify(point=..., index=1)")


def test_nn2pp_example(tmp):
    # examples/nn2pp_start.py reads nn2pp's printed output in its exact format
    # (github.com/sgoldt/nn2pp, libnn2pp.h status(): "t, eg, et, eg_frac,
    # et_frac, diff, Q upper triangle, R, A, v" with 6 significant digits, under
    # a header "# g1=.., M=.., K=.." and "# lr=.., lr2=.., sigma=.., wd=..");
    # its config (init.type given, rule sgd) through scm run and through
    # scmode.run give the same trajectory
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "examples"))
    import nn2pp_start
    run = nn2pp_start.parse(nn2pp_start.NN2PP_OUTPUT)
    m = scmode.Model(run["K"], run["M"], run["activation"], v=run["v"], v_star=run["v_star"])
    check("%g" % m.loss(run["Q"], run["R"]) == "%g" % run["eg"],
          "nn2pp sample: scmode's loss %r of the parsed state vs the printed eg %r"
          % (m.loss(run["Q"], run["R"]), run["eg"]))
    cfg = nn2pp_start.config()
    check(cfg["rule"] == "sgd" and cfg["rule_params"]["eta"] == run["lr"] == 0.5
          and cfg["rule_params"]["lr_v_ratio"] == 0 and cfg["init"]["type"] == "given"
          and cfg["model"]["v"] == [1.00731, 0.99264] and cfg["init"]["R"][1] == [-0.01602, 0.01214]
          and cfg["init"]["Q"][1][0] == cfg["init"]["Q"][0][1] == 0.01477,
          "nn2pp dictionary: sgd with eta = lr, v fixed, given init")
    # the simulator's header (nn2pp.cpp), both layers, K = 3, M = 2, noise
    sim = ("# This is scm++\n# g1=erf, g2=erf, N=784, M=2, K=3, steps/N=100, seed=3\n"
           "# lr=0.2, lr2=0.05, sigma=0.1, wd=0, mini-batch size=1\n# training both layers\n"
           "# steps / N, eg, et, eg_frac, et_frac, diff\n"
           "0, 0.41, 0.4, nan, nan, 0, 1.1, 0.01, -0.02, 0.9, 0.03, 1.2, 0.1, -0.2, 0.05, 0.3, "
           "-0.1, 0.02, 0.8, -1.3, 0.5, 0.6, 0.7\n10, 0.3")
    r = nn2pp_start.parse(sim)
    c = nn2pp_start.config(r)
    check(r["K"] == 3 and r["M"] == 2 and r["both"] and list(r["v_star"]) == [0.8, -1.3]
          and list(r["v"]) == [0.5, 0.6, 0.7] and r["Q"][2, 0] == -0.02 and r["R"][2, 1] == 0.02
          and abs(c["rule_params"]["lr_v_ratio"] - 0.25) < 1e-15
          and abs(c["rule_params"]["noise"] - 0.01) < 1e-15 and c["integrator"]["t_max"] == 400,
          "nn2pp simulator output: K, M, both, lr2/lr, sigma^2, A as v*, v, Q, R")
    for bad, text in [(sim.replace(", 0.7\n", "\n"), "22 values, K = 3 and M = 2 need 23"),
                      (sim.replace("wd=0", "wd=0.1"), "weight decay"),
                      (sim.replace("g1=erf, g2=erf", "g1=relu, g2=relu"), "activation 'relu'")]:
        try:
            nn2pp_start.config(nn2pp_start.parse(bad))
            check(False, "nn2pp parser accepted: %s" % text)
        except nn2pp_start.Nn2ppError as e:
            check(text in str(e), "nn2pp parser's message %r lacks %r" % (str(e), text))
    with open(os.path.join(tmp, "nn.json"), "w") as f:
        json.dump(cfg, f)
    cli(["run", "nn.json", "-o", "nn.result.json", "-q"], tmp)
    ref = load(tmp, "nn.result.json")
    tr = scmode.run(cfg)
    check([p["eps"] for p in ref["trajectory"]] == list(tr.eps), "nn2pp example: eps(t) as scm run")


def test_errors(tmp):
    for call, text in [
            (lambda: scmode.fixed_points(3, 3, starts=-1), "starts must be an integer in"),
            (lambda: scmode.fixed_points(3, 3, activation="tanh"), "unknown activation 'tanh'"),
            (lambda: scmode.stability(K=3, M=3), "--K, --M and --k1 are required"),
            (lambda: scmode.crosscheck(3, 3, method="sgd"), "method must be ode, gd or both"),
            (lambda: scmode.merge([os.path.join(tmp, "none.jsonl")]), "none.jsonl"),
            (lambda: scmode.simulate({"model": {"K": 2, "M": 2}}, mode="mini"), "mode must be"),
            (lambda: scmode.compare(3, [3], 0, prefix=os.path.join(tmp, "x")), "runs must be"),
            (lambda: scmode.split(3, 2, k1=0, index=1, neuron=0), "one of --k1, --index, --loss"),
            (lambda: scmode.certify(3, 3, k1=4), "k1 4 exceeds K = 3"),
            (lambda: scmode.certify(3, 3, max_radius=2.0), "max_radius must be"),
            (lambda: scmode.sweep({"model": {"K": 2, "M": 2}, "init": {"type": "given"}}, 2),
             "init")]:
        try:
            call()
            check(False, "no error for %s" % text)
        except scmode.ScmError as e:
            check(text in str(e), "message %r lacks %r" % (str(e), text))


t0 = time.time()
def timed(f, *a):
    t = time.time()
    r = f(*a)
    print("%-20s %.1f s" % (f.__name__, time.time() - t))
    return r


with tempfile.TemporaryDirectory() as tmp:
    fp = timed(test_fixed_points, tmp)
    timed(test_stability, tmp)
    timed(test_crosscheck, tmp)
    timed(test_sweep_merge, tmp)
    timed(test_simulate, tmp)
    timed(test_compare, tmp)
    timed(test_compare_ansatz, tmp)
    timed(test_symmetric, fp)
    timed(test_lintarget, tmp)
    timed(test_staircase, tmp)
    timed(test_split, tmp)
    timed(test_certify, tmp)
    timed(test_nn2pp_example, tmp)
    timed(test_errors, tmp)
print("all parity checks in %.1f s" % (time.time() - t0))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
