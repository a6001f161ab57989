"""plot_common.py: what plot_compare.py and plot_fixed_points.py share (it is
imported from their directory, the source tree's scripts/ or the installed
share/scmode/): the input error, matplotlib's import with the message that
says how to get it, and the atomic PNG writer.  docs/plots.md."""
import json
import os
import sys


class InputError(Exception):
    """Bad input; the message names the file and the key (or line, column)."""


def load_json_object(path):
    """The JSON object in path; InputError naming the file otherwise."""
    try:
        with open(path) as f:
            obj = json.load(f)
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    except ValueError as e:
        raise InputError("%s: not JSON: %s" % (path, e))
    if not isinstance(obj, dict):
        raise InputError("%s: not a JSON object" % path)
    return obj


def import_pyplot(me, argv):
    """matplotlib.pyplot on the Agg backend, or None after saying how to get
    it (the caller exits 3)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError as e:
        sys.stderr.write("%s: matplotlib is missing (%s): apt-get install python3-matplotlib, "
                         "then run /usr/bin/python3 %s\n" % (me, e, " ".join(argv)))
        return None


def save(fig, path):
    """The PNG written atomically (temp file + rename), as the C side writes."""
    tmp = path + ".tmp"
    fig.savefig(tmp, dpi=120, format="png")
    os.replace(tmp, path)
