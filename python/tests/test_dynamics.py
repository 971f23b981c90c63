"""ASE dynamics and optimisers driven by the calculator: NVE energy conservation (float64),
BFGS relaxation of positions, and a cell relaxation with our stress."""
import numpy as np
import pytest
from ase import units
from ase.build import bulk
from ase.md.velocitydistribution import MaxwellBoltzmannDistribution, Stationary
from ase.md.verlet import VelocityVerlet
from ase.optimize import BFGS

from fusednequip import FusedNequIPCalculator


def cell_filter(atoms):
    try:
        from ase.filters import FrechetCellFilter
        return FrechetCellFilter(atoms)
    except ImportError:  # ASE < 3.23
        from ase.constraints import ExpCellFilter
        return ExpCellFilter(atoms)


def test_nve_energy_drift(mp1):
    atoms = bulk("Si", "diamond", a=5.43, cubic=True).repeat((2, 2, 2))  # 64 atoms
    atoms.calc = FusedNequIPCalculator(mp1, device="cpu", dtype="float64")
    MaxwellBoltzmannDistribution(atoms, temperature_K=600, rng=np.random.default_rng(3))
    Stationary(atoms)
    dyn = VelocityVerlet(atoms, timestep=1.0 * units.fs)
    energies = []
    dyn.attach(lambda: energies.append(atoms.get_total_energy()), interval=10)
    dyn.run(500)
    e = np.array(energies)
    drift = (e.max() - e.min()) / len(atoms)
    print(f"NVE 500 x 1 fs, 64 Si at 600 K: total energy range {drift:.2e} eV/atom")
    assert drift < 1e-4


def test_bfgs_relaxation(mp1):
    atoms = bulk("Si", "diamond", a=5.43, cubic=True)
    atoms.rattle(0.08, seed=11)
    atoms.calc = FusedNequIPCalculator(mp1, device="cpu")
    f0 = np.abs(atoms.get_forces()).max()
    opt = BFGS(atoms, logfile=None)
    assert opt.run(fmax=0.01, steps=200)
    assert np.linalg.norm(atoms.get_forces(), axis=1).max() < 0.01 < f0


def test_cell_relaxation(mp1):
    atoms = bulk("Si", "diamond", a=5.60, cubic=True)  # strained by 3 %
    atoms.rattle(0.02, seed=5)
    atoms.calc = FusedNequIPCalculator(mp1, device="cpu")
    s0 = np.abs(atoms.get_stress()).max()
    opt = BFGS(cell_filter(atoms), logfile=None)
    assert opt.run(fmax=0.01, steps=300)
    a = atoms.cell.lengths().mean()
    print(f"relaxed cubic cell {a:.4f} A, max |stress| {np.abs(atoms.get_stress()).max():.2e}")
    assert np.abs(atoms.get_stress()).max() < 1e-3 < s0
    assert 5.35 < a < 5.55
