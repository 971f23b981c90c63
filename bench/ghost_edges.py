#!/usr/bin/env python3
"""How many of a domain's edges come from its ghosts: the work of the backward's ghost-sender
pass (kernels/nequip/layer_backward.cu, GHOST mode), which one rank with folded ghosts does not do.
A cube of N^3 diamond Si cells (a = 5.43 A) owned by one rank, every ghost within the ghost
cutoff around it (images of the cube: what LAMMPS gives a rank of a weak-scaling run, whose
neighbours hold the same lattice), pairs closer than the model cutoff counted brute force.
With --split (the axes along which the box is cut into ranks, e.g. x for 2 GPUs of a 40x20x20
box, xy for 4 of 40x40x20) the ghosts that image the domain's own atoms across an uncut axis
(periodic self-images) are counted apart from those that other ranks own.
  bench/ghost_edges.py [--cells 20] [--cutoff 6.0] [--ghost-cutoff 7.0] [--split xy]
(numpy only)"""
import argparse
import itertools

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--cells", type=int, default=20)
ap.add_argument("--cutoff", type=float, default=6.0)
ap.add_argument("--ghost-cutoff", type=float, default=7.0, help="model cutoff + neighbour skin")
ap.add_argument("--split", default="xyz", help="axes cut between ranks (the rest periodic in one)")
a = ap.parse_args()
basis = np.array([(0, 0, 0), (0, .5, .5), (.5, 0, .5), (.5, .5, 0), (.25, .25, .25),
                  (.25, .75, .75), (.75, .25, .75), (.75, .75, .25)])
n, lat, rc = a.cells, 5.43, a.cutoff
cells = np.array(list(itertools.product(range(n), repeat=3)), dtype=float)
owned = ((cells[:, None, :] + basis[None]) * lat).reshape(-1, 3)
side = n * lat
cut = ["xyz".index(c) for c in a.split]


# the owned atoms a ghost can reach lie within one cutoff of a face
near = owned[np.any((owned < rc) | (owned > side - rc), axis=1)]


def edges_from(ghosts):
    """pairs closer than the cutoff from these ghosts to owned atoms"""
    count = 0
    for chunk in np.array_split(ghosts, max(1, len(ghosts) // 2000)):
        count += int((((chunk[:, None, :] - near[None, :, :]) ** 2).sum(-1) < rc * rc).sum())
    return count


remote, own_images = [], []
for shift in itertools.product((-1, 0, 1), repeat=3):
    if shift == (0, 0, 0):
        continue
    p = owned + side * np.array(shift)
    p = p[np.all((p > -a.ghost_cutoff) & (p < side + a.ghost_cutoff), axis=1)]
    (remote if any(shift[k] for k in cut) else own_images).append(p)
remote = np.concatenate(remote) if remote else np.zeros((0, 3))
own_images = np.concatenate(own_images) if own_images else np.zeros((0, 3))
from_remote, from_own = edges_from(remote), edges_from(own_images)
# every atom has the same neighbours in the periodic lattice: count them for the 8 sites of
# the middle cell (needs a cube wider than two cutoffs)
mid = 8 * (((n // 2) * n + n // 2) * n + n // 2)
per_atom = sum(int((((owned - owned[s]) ** 2).sum(-1) < rc * rc).sum()) - 1
               for s in range(mid, mid + 8)) / 8
edges = len(owned) * per_atom
ghosts, from_ghosts = len(remote) + len(own_images), from_remote + from_own
print(f"{n}^3 cells: {len(owned)} owned atoms, {ghosts} ghosts within {a.ghost_cutoff} A; "
      f"{edges:.0f} edges into owned atoms ({per_atom:.0f} each), {from_ghosts} of them from "
      f"ghosts ({100 * from_ghosts / edges:.2f} %)")
print(f"cut along {a.split}: {len(remote)} ghosts from other ranks send {from_remote} edges "
      f"({100 * from_remote / edges:.2f} %); {len(own_images)} periodic images of the domain's "
      f"own atoms send {from_own} ({100 * from_own / edges:.2f} %)")
