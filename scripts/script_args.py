"""script_args.py: the command lines of the scripts in scripts/, checked one
way (imported from the script's own directory).  -h or --help prints the
script's docstring, its usage, and exits 0; an unknown option, a count of
arguments out of range or an input that does not exist gets one line on
stderr naming it, and exit 2: never a traceback."""
import os
import sys


def refuse(message):
    """One line naming the problem, exit 2."""
    me = os.path.basename(sys.argv[0])
    sys.stderr.write("%s: %s (see --help)\n" % (me, message))
    sys.exit(2)


def parse(doc, nmin, nmax=None, flags=(), inputs=slice(0, 0), argv=None):
    """The arguments of argv (default sys.argv[1:]) that are not flags, and
    the set of flags given.  Between nmin and nmax of them (nmax None: no
    bound); every argument starting with '-' one of flags; those in
    positional[inputs] (a slice, or a tuple of slices) existing files or
    folders."""
    argv = sys.argv[1:] if argv is None else argv
    if "-h" in argv or "--help" in argv:
        print(doc.strip())
        sys.exit(0)
    given, pos = set(), []
    for a in argv:
        if a.startswith("-") and len(a) > 1:
            if a not in flags:
                refuse("unknown option %s" % a)
            given.add(a)
        else:
            pos.append(a)
    if len(pos) < nmin or (nmax is not None and len(pos) > nmax):
        want = ("%d" % nmin if nmax == nmin else
                "%d or more" % nmin if nmax is None else "%d to %d" % (nmin, nmax))
        refuse("%s arguments, not %d" % (want, len(pos)))
    for sl in inputs if isinstance(inputs, tuple) else (inputs,):
        for p in pos[sl]:
            if not os.path.exists(p):
                refuse("%s: no such file or folder" % p)
    return pos, given
