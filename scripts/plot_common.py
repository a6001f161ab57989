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


def drawn_texts(fig):
    """The texts a figure draws, as (text, display box): every visible
    non-empty text of the figure and its axes (titles, axis labels, the tick
    labels of ticks inside the view, annotations, legend entries)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = []
    for ax in fig.axes:
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = sorted(lim)
            for tick in axis.get_major_ticks():
                if lo <= tick.get_loc() <= hi:
                    texts.append(tick.label1)
        texts += list(ax.texts) + [ax.title, ax._left_title, ax._right_title, ax.xaxis.label,
                                   ax.yaxis.label]
        if ax.get_legend():
            texts += ax.get_legend().get_texts()
    texts += list(fig.texts)  # the suptitle too
    for lg in fig.legends:
        texts += lg.get_texts()
    return [(t.get_text(), t.get_window_extent(r)) for t in texts
            if t.get_visible() and t.get_text().strip()]


def text_overlaps(fig, pad=0.5):
    """The pairs of drawn texts (drawn_texts) whose boxes overlap by more
    than pad pixels: [(text a, text b), ...]."""
    t = drawn_texts(fig)
    out = []
    for i in range(len(t)):
        for j in range(i):
            a, b = t[i][1], t[j][1]
            if a.x0 < b.x1 - pad and b.x0 < a.x1 - pad and a.y0 < b.y1 - pad and b.y0 < a.y1 - pad:
                out.append((t[i][0], t[j][0]))
    return out
