"""The figures of the CLI from Python: the very code of the plotting scripts
(scripts/plot_compare.py, with scripts/plot_common.py), loaded from where the
package finds them, so that a figure drawn here is the one `scm compare`
writes (docs/plots.md, docs/python.md)."""
import importlib.util
import os
import sys
from typing import Any, Dict, List, Optional, Union

_HERE = os.path.dirname(os.path.abspath(__file__))


def _scripts_dirs() -> List[str]:
    """Where the scripts are looked for, in order: $SCM_SCRIPTS_DIR (only
    there when set, as `scm compare`); the package's own copy (pip install,
    meson install: scmode/_scripts); the source tree (python/../scripts); an
    install prefix's share/scmode."""
    env = os.environ.get("SCM_SCRIPTS_DIR")
    if env:
        return [env]
    return [os.path.join(_HERE, "_scripts"),
            os.path.normpath(os.path.join(_HERE, "..", "..", "scripts")),
            os.path.join(sys.prefix, "share", "scmode")]


def _script(name: str):
    """The module of scripts/<name>.py (its folder on sys.path while it is
    imported, for plot_common)."""
    tried = []
    for d in _scripts_dirs():
        path = os.path.join(d, name + ".py")
        tried.append(path)
        if not os.path.isfile(path):
            continue
        key = "scmode._script_" + name
        if key in sys.modules and getattr(sys.modules[key], "__file__", None) == path:
            return sys.modules[key]
        sys.path.insert(0, d)
        try:
            sys.modules.pop("plot_common", None)  # the one beside this script
            spec = importlib.util.spec_from_file_location(key, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        finally:
            sys.path.remove(d)
        sys.modules[key] = mod
        return mod
    raise FileNotFoundError("scmode: %s.py not found; tried %s" % (name, ", ".join(tried)))


def _pyplot():
    # the backend is left as it is (a notebook's inline one keeps showing
    # the user's figures); the figures here are saved and closed, never shown,
    # and matplotlib falls back to Agg without a display
    try:
        import matplotlib.pyplot as plt
        import matplotlib.ticker as ticker
    except ImportError as e:
        raise ImportError("scmode.plot_compare needs matplotlib (%s): apt-get install "
                          "python3-matplotlib, and Debian's /usr/bin/python3" % e) from None
    return plt, ticker


def plot_compare(report: Union[Dict[str, Any], str, "os.PathLike[str]"],
                 prefix: Optional[Union[str, "os.PathLike[str]"]] = None) -> List[str]:
    """The figures of a comparison, exactly as `scm compare` draws them
    (scripts/plot_compare.py's code): PREFIX.hist.png (where the runs end:
    final loss eps, with the 1/2, per K on a log axis, a bar per class, the
    global minimum at a floor value, the lowest analytic plateau loss of
    each k1 >= 1 as a dashed line labelled k1 = the number of anti-aligned
    students), PREFIX.fractions.png (the fractions per k1 with 95% Wilson
    intervals) and PREFIX.traces.png (loss against time tau of the traced
    runs).

    report: scmode.compare's result (a dict; its extra keys ``markdown``
    and ``summaries`` are ignored) or the path of a PREFIX.json; prefix: the
    figures' path prefix (default: the report's path without .json; required
    for a dict).  A report missing a key the figures need raises ValueError
    naming it.  Returns the three paths written."""
    pc = _script("plot_compare")
    if isinstance(report, dict):
        if prefix is None:
            raise ValueError("plot_compare: prefix is required with a report dict")
        rep, where = report, "report"
    else:
        where = os.fspath(report)
        try:
            rep = pc.load_json_object(where)
        except pc.InputError as e:
            raise ValueError(str(e)) from None
        if prefix is None:
            prefix = where[:-5] if where.endswith(".json") else where
    try:
        rep = pc.check_report(rep, where)
    except pc.InputError as e:
        raise ValueError("plot_compare: %s" % e) from None
    plt, ticker = _pyplot()
    return pc.plot_all(plt, ticker, rep, os.fspath(prefix))
