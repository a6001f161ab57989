"""python_demo.py: scmode from Python, notebook style (docs/python.md).

Run from the top of the repository after building (ninja -C build):
    python3 examples/python_demo.py [OUT.png]
It integrates the flow of a ReLU committee (K = M = 4) from a small random
initialisation, enumerates the fixed points of the same network, and plots
the loss along the trajectory with the fixed points' losses as lines: the
plateaus of the run sit at fixed-point losses."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import scmode  # noqa: E402

# %% A trajectory, as `scm run` would integrate it
K = M = 4
config = {"model": {"K": K, "M": M, "activation": "relu"},
          "init": {"d": 1000, "seed": 2, "scale": 0.1},
          "integrator": {"t_max": 1e4, "n_out": 400}}
traj = scmode.run(config)
print(traj)

# %% The fixed points of the same network (block-symmetric ansätze)
points = scmode.fixed_points(K, M)
levels = sorted(set(round(p["eps"], 10) for p in points if p["eps"] > 1e-12))
print("%d fixed points, %d distinct positive losses" % (len(points), len(levels)))

# %% Where did the run end? Its final state against the teacher
model = scmode.Model(K, M)
print("final R =\n", np.round(traj.R[-1], 4))
print("final loss %.3g, |flow| %.2g" % (traj.eps[-1], max(np.abs(f).max() for f in
                                                               model.rhs(traj.Q[-1], traj.R[-1]))))

# %% Plot
fig, ax = plt.subplots(figsize=(7, 4.5))
# Linear loss axis: below ~1e-10 the loss is integration error (see README).
for L in levels:
    ax.axhline(L, color="0.8", lw=0.8, zorder=0)
ax.semilogx(traj.t[1:], traj.eps[1:], color="C0", lw=2, label="eps(t), scmode.run")
ax.set_ylim(0, 1.1 * traj.eps[0])
ax.set_xlabel("tau = eta t / d")
ax.set_ylabel("population loss eps")
ax.set_title("ReLU K = M = %d, small initialisation; grey: losses of the fixed points" % K,
             fontsize=9)
ax.legend(loc="upper right")
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("out", "python_demo.png")
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
fig.tight_layout()
fig.savefig(out, dpi=110)
print("wrote", out)
