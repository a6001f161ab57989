#!/usr/bin/python3
"""The classification at large width (issue 30) from
data/symmetric_stability/classification.csv (written by
build/bench/bench_symstab --classify, see scripts/symmetric_stability.sh):

  minima.csv      per (M, K - M): the k1 families with a strict minimum
                  (verdict strict_min or min_mod_rotations), their losses
  lmin_vs_M.csv   d times the smallest nonzero Hessian eigenvalue of the
                  lowest-loss minimum of k1 = 1, 2, 3 at K = M, against M
  lmin_fit.csv    the power law lambda_min d ~ C M^p fitted on M >= 100
  lmin_vs_M.png   the plot

--check only checks the files' consistency (exit 1 on a mismatch): every
verdict agrees with its counts, minima.csv and lmin_vs_M.csv are what
classification.csv implies."""
import csv
import math
import os
import sys

from script_args import parse

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data',
                    'symmetric_stability')
MIN = ('strict_min', 'min_mod_rotations')


def load():
    """The rows, without repeats of one point (the same M, K - M, k1 and loss
    to 1e-12 absolute + 1e-9 relative: the global minimum found in several
    instances)."""
    with open(os.path.join(HERE, 'classification.csv')) as f:
        rows = list(csv.DictReader(f))
    out, seen = [], {}
    for r in rows:
        e = float(r['loss'])
        key = (r['M'], r['K_minus_M'], r['k1'])
        if not any(abs(f - e) <= 1e-12 + 1e-9 * abs(e) for f in seen.get(key, [])):
            seen.setdefault(key, []).append(e)
            out.append(r)
    return out


def verdict_ok(r):
    neg, zero, rot = int(r['negative']), int(r['zero']), int(r['rotation_zeros'])
    want = ('saddle' if neg > 0 else 'strict_min' if zero == 0
            else 'min_mod_rotations' if zero == rot else 'degenerate')
    return r['verdict'] == want or r['verdict'] == 'refused'


def minima(rows):
    out = {}
    for r in rows:
        key = (int(r['M']), int(r['K_minus_M']))
        out.setdefault(key, [])
        if r['verdict'] in MIN:
            out[key].append((int(r['k1']), float(r['loss'])))
    return out


def lmin_curve(rows):
    best = {}
    for r in rows:
        if int(r['K_minus_M']) != 0 or r['verdict'] not in MIN:
            continue
        k1 = int(r['k1'])
        if k1 not in (1, 2, 3):
            continue
        key = (int(r['M']), k1)
        if key not in best or float(r['loss']) < best[key][0]:
            best[key] = (float(r['loss']), float(r['lambda_min_nonzero_times_d']))
    return best


def fit(curve, k1, mmin=100):
    pts = [(math.log(M), math.log(v[1])) for (M, k), v in curve.items()
           if k == k1 and M >= mmin and v[1] > 0]
    if len(pts) < 2:
        return None
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    p = sum((a - mx) * (b - my) for a, b in pts) / sxx
    return math.exp(my - p * mx), p, n


def write(rows):
    mins = minima(rows)
    with open(os.path.join(HERE, 'minima.csv'), 'w') as f:
        f.write('M,K_minus_M,n_minima,k1_of_minima,losses\n')
        for (M, dK) in sorted(mins):
            m = sorted(mins[(M, dK)])
            f.write('%d,%d,%d,%s,%s\n' % (M, dK, len(m), ' '.join(str(k) for k, _ in m),
                                          ' '.join('%.10g' % e for _, e in m)))
    curve = lmin_curve(rows)
    with open(os.path.join(HERE, 'lmin_vs_M.csv'), 'w') as f:
        f.write('M,k1,loss,lambda_min_nonzero_times_d\n')
        for (M, k1) in sorted(curve):
            f.write('%d,%d,%.12g,%.10g\n' % (M, k1, curve[(M, k1)][0], curve[(M, k1)][1]))
    with open(os.path.join(HERE, 'lmin_fit.csv'), 'w') as f:
        f.write('k1,C,exponent,points_M_ge_100\n')
        for k1 in (1, 2, 3):
            r = fit(curve, k1)
            if r:
                f.write('%d,%.6g,%.4f,%d\n' % (k1, r[0], r[1], r[2]))
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for k1 in (1, 2, 3):
        pts = sorted((M, v[1]) for (M, k), v in curve.items() if k == k1)
        if not pts:
            continue
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], 'o-', label='k1 = %d' % k1)
        r = fit(curve, k1)
        if r:
            xs = [100, max(p[0] for p in pts)]
            ax.loglog(xs, [r[0] * x ** r[1] for x in xs], 'k:', lw=1)
            ax.text(xs[-1], r[0] * xs[-1] ** r[1], ' M^%.2f' % r[1], fontsize=8)
    ax.set_xlabel('M (K = M)')
    ax.set_ylabel('d x smallest nonzero Hessian eigenvalue')
    ax.set_title('ReLU, T = I, K = M: the k1 = 1, 2, 3 minima')
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, 'lmin_vs_M.png'), dpi=120)


def check(rows):
    bad = [r for r in rows if not verdict_ok(r)]
    for r in bad[:10]:
        print('verdict does not match counts:', r)
    ok = not bad
    mins = minima(rows)
    with open(os.path.join(HERE, 'minima.csv')) as f:
        for r in csv.DictReader(f):
            m = sorted(mins.get((int(r['M']), int(r['K_minus_M'])), []))
            if int(r['n_minima']) != len(m) or r['k1_of_minima'] != ' '.join(str(k) for k, _ in m):
                print('minima.csv row differs from classification.csv:', r)
                ok = False
    curve = lmin_curve(rows)
    with open(os.path.join(HERE, 'lmin_vs_M.csv')) as f:
        for r in csv.DictReader(f):
            v = curve.get((int(r['M']), int(r['k1'])))
            if not v or abs(v[1] - float(r['lambda_min_nonzero_times_d'])) > 1e-8 * abs(v[1]):
                print('lmin_vs_M.csv row differs:', r)
                ok = False
    print('%d rows, %s' % (len(rows), 'consistent' if ok else 'INCONSISTENT'))
    return 0 if ok else 1


if __name__ == '__main__':
    _, flags = parse(__doc__, 0, 0, ("--check",))
    rows = load()
    if '--check' in flags:
        sys.exit(check(rows))
    write(rows)
    sys.exit(check(rows))
