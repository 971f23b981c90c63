#!/usr/bin/env python3
"""How many of a domain's edges come from its ghosts: the work of the backward's ghost-sender
pass (kernels/layer_backward.cu, GHOST mode), which one rank with folded ghosts does not do.
A cube of N^3 diamond Si cells (a = 5.43 A) owned by one rank, every ghost within the ghost
cutoff around it (images of the cube: what LAMMPS gives a rank of a weak-scaling run, whose
neighbours hold the same lattice), pairs closer than the model cutoff counted brute force.
  bench/ghost_edges.py [--cells 20] [--cutoff 6.0] [--ghost-cutoff 7.0]    (numpy only)"""
import argparse
import itertools

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--cells", type=int, default=20)
ap.add_argument("--cutoff", type=float, default=6.0)
ap.add_argument("--ghost-cutoff", type=float, default=7.0, help="model cutoff + neighbour skin")
a = ap.parse_args()
basis = np.array([(0, 0, 0), (0, .5, .5), (.5, 0, .5), (.5, .5, 0), (.25, .25, .25),
                  (.25, .75, .75), (.75, .25, .75), (.75, .75, .25)])
n, lat, rc = a.cells, 5.43, a.cutoff
cells = np.array(list(itertools.product(range(n), repeat=3)), dtype=float)
owned = ((cells[:, None, :] + basis[None]) * lat).reshape(-1, 3)
side = n * lat
ghosts = np.concatenate([
    p[np.all((p > -a.ghost_cutoff) & (p < side + a.ghost_cutoff), axis=1)]
    for shift in itertools.product((-1, 0, 1), repeat=3) if shift != (0, 0, 0)
    for p in [owned + side * np.array(shift)]])
# owned atoms a ghost can reach lie within one cutoff of a face
near = owned[np.any((owned < rc) | (owned > side - rc), axis=1)]
from_ghosts = 0
for chunk in np.array_split(ghosts, max(1, len(ghosts) // 2000)):
    d2 = ((chunk[:, None, :] - near[None, :, :]) ** 2).sum(-1)
    from_ghosts += int((d2 < rc * rc).sum())
# every atom has the same neighbours in the periodic lattice: count them for the 8 sites of
# the middle cell (needs a cube wider than two cutoffs)
mid = 8 * (((n // 2) * n + n // 2) * n + n // 2)
per_atom = sum(int((((owned - owned[s]) ** 2).sum(-1) < rc * rc).sum()) - 1
               for s in range(mid, mid + 8)) / 8
edges = len(owned) * per_atom
print(f"{n}^3 cells: {len(owned)} owned atoms, {len(ghosts)} ghosts within {a.ghost_cutoff} A; "
      f"{edges:.0f} edges into owned atoms ({per_atom:.0f} each), {from_ghosts} of them from "
      f"ghosts ({100 * from_ghosts / edges:.2f} %)")
