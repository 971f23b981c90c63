"""The 5-species workload of bench_nequip_peers.py and make_nequip_peer_model.py: a diamond
lattice (a = 5.43 A, as bench/si_workload.py) whose sites are given random elements (the same
number of each of the model's species, shuffled with a fixed seed) and random displacements
(each coordinate moved by up to `rattle` A, uniform, fixed seed), so MD-like distances rather
than a perfect lattice's five. Nearest neighbours stay near 2.35 A (>= 2.35 - 2 sqrt(3) rattle,
2.0 A at the default 0.1), at a solid's density (8 atoms per 160 A^3)."""
import numpy as np
from ase.build import bulk

SPECIES = ("Si", "O", "C", "H", "N")


def mixed_crystal(rep, species=SPECIES, seed=0, rattle=0.1):
    """rep x rep x rep repeats of the 8-atom cubic cell (8 -> 4,096 atoms, 20 -> 64,000)."""
    atoms = bulk("Si", "diamond", a=5.43, cubic=True).repeat((rep, rep, rep))
    rng = np.random.default_rng(seed)
    n = len(atoms)
    symbols = np.array([species[k % len(species)] for k in range(n)])
    rng.shuffle(symbols)
    atoms.set_chemical_symbols(list(symbols))
    atoms.positions = atoms.positions + rng.uniform(-rattle, rattle, (n, 3))
    atoms.wrap()
    return atoms


def atoms_of(rep):
    return 8 * rep ** 3
