"""The benchmark workload shared by bench_ase.py and bench_peers.py: cubic diamond Si
supercells (a = 5.43 A) and an MD-like ASE step as matbench-speed times it (new positions,
then energy, forces and stress)."""
from ase.build import bulk


def si_crystal(rep):
    """rep x rep x rep repeats of the 8-atom cubic cell (4 -> 512 atoms, 20 -> 64,000)."""
    return bulk("Si", "diamond", a=5.43, cubic=True).repeat((rep, rep, rep))


def ase_step_fn(atoms, rng):
    """A callable doing one step: positions rattled around the start, energy, forces, stress."""
    base = atoms.positions.copy()

    def step():
        atoms.positions = base + rng.normal(0.0, 0.01, base.shape)
        atoms.get_potential_energy()
        atoms.get_forces()
        atoms.get_stress()
    return step
