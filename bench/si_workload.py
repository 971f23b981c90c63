"""The benchmark workloads shared by bench_ase.py, bench_peers.py, bench_sevenn.py,
bench_batch.py and bench_torchsim.py: cubic diamond Si supercells (a = 5.43 A), a mixed
rock-salt oxide, rattled copies, and an MD-like ASE step as matbench-speed times it (new
positions, then energy, forces and stress)."""
import numpy as np
from ase.build import bulk


def si_crystal(rep):
    """rep x rep x rep repeats of the 8-atom cubic cell (4 -> 512 atoms, 20 -> 64,000)."""
    return bulk("Si", "diamond", a=5.43, cubic=True).repeat((rep, rep, rep))


def oxide_crystal(rep, seed=7):
    """rock-salt (Mg,Ni)O, rep^3 cubic cells of 8 atoms (a = 4.21 A), half the cations Ni, chosen
    with `seed`: about twice Si's neighbours within 5 A"""
    atoms = bulk("MgO", "rocksalt", a=4.21, cubic=True).repeat((rep, rep, rep))
    symbols = atoms.get_chemical_symbols()
    cations = [i for i, s in enumerate(symbols) if s == "Mg"]
    for i in np.random.default_rng(seed).permutation(cations)[: len(cations) // 2]:
        symbols[i] = "Ni"
    atoms.set_chemical_symbols(symbols)
    return atoms


def rattled(atoms, seed, amount=0.03):
    """atoms with every position moved by a normal deviate of `amount` A (seeded), in place"""
    atoms.positions += np.random.default_rng(seed).normal(0.0, amount, atoms.positions.shape)
    return atoms


def ase_step_fn(atoms, rng):
    """A callable doing one step: positions rattled around the start, energy, forces, stress."""
    base = atoms.positions.copy()

    def step():
        atoms.positions = base + rng.normal(0.0, 0.01, base.shape)
        atoms.get_potential_energy()
        atoms.get_forces()
        atoms.get_stress()
    return step
