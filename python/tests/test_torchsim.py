"""fusednequip.torchsim.FusedNequIPModel, TorchSim's model interface over the batched call:
TorchSim's own validation of a model passes (nequix-mp-1, when the model directory has it); a SimState of 8 structures (sizes 2-64 atoms,
one to three species, cubic and triclinic cells) gives each structure what our ASE calculator
gives it alone (float64, 1e-12 relative); TorchSim's batched FIRE (ASE's flavour) relaxes 8
rattled crystals to the minimum ASE's FIRE with our calculator reaches one structure at a
time (both under fmax 0.05 eV/A, where the two FIRE paths stop; 1e-3 eV/atom apart); TorchSim's batched NVE keeps each structure's total
energy (within 1e-4 eV/atom over 40 steps of 0.5 fs: H is among the atoms). Skipped without torch and torch-sim
(torch-sim-atomistic), which the library itself never needs.
"""
import os

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
ts = pytest.importorskip("torch_sim")
pytest.importorskip("ase")
from ase.build import bulk  # noqa: E402
from ase.filters import UnitCellFilter  # noqa: E402,F401 (ASE >= 3.23)
from ase.optimize import FIRE  # noqa: E402

from fusednequip import FusedNequIPCalculator  # noqa: E402
from fusednequip.torchsim import FusedNequIPModel  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "tests", "fixtures", "nequip", "fm_xl_like_l4_zbl_3sp.fnqm")
CPU = torch.device("cpu")


def crystals(seed=0):
    """8 periodic structures of H, Si, Pt: diamond Si supercells, fcc Pt, mixed, triclinic"""
    rng = np.random.default_rng(seed)
    out = [bulk("Si", "diamond", a=5.43, cubic=True),
           bulk("Si", "diamond", a=5.43, cubic=True).repeat((2, 2, 2)),
           bulk("Pt", "fcc", a=3.92, cubic=True),
           bulk("Pt", "fcc", a=3.92, cubic=True).repeat((2, 2, 1)),
           bulk("Si", "diamond", a=5.43),  # 2 atoms, triclinic primitive cell
           bulk("Pt", "fcc", a=3.92).repeat((2, 2, 2))]
    mixed = bulk("Si", "diamond", a=5.43, cubic=True).repeat((2, 1, 1))
    mixed.set_chemical_symbols(["Si", "Pt", "H", "Si"] * 4)
    out.append(mixed)
    tri = bulk("Si", "diamond", a=5.43, cubic=True)
    tri.set_cell(tri.cell.array + [[0, 0.3, 0.2], [0.1, 0, 0.4], [0.2, 0.1, 0]],
                 scale_atoms=True)
    out.append(tri)
    for a in out:
        a.positions += rng.normal(0.0, 0.05, a.positions.shape)
    return out


def with_our_calculator(images):
    """(index, first atom in the state, atoms count, a copy of the image on our ASE calculator)"""
    calc = FusedNequIPCalculator(MODEL, device="cpu", dtype="float64")
    start = 0
    for s, a in enumerate(images):
        a = a.copy()
        a.calc = calc
        yield s, start, len(a), a
        start += len(a)


@pytest.fixture(scope="module")
def model():
    return FusedNequIPModel(MODEL, device="cpu", precision="float64")


def test_torchsim_validates(mp1):
    """TorchSim's own checks (its structures hold Si and Fe: a universal model)"""
    from torch_sim.models.interface import validate_model_outputs
    validate_model_outputs(FusedNequIPModel(mp1, device="cpu", precision="float64"), CPU,
                           torch.float64)


def test_state_equals_ase_calls(model):
    images = crystals()
    state = ts.initialize_state(images, device=CPU, dtype=torch.float64)
    out = model(state)
    for s, start, n, a in with_our_calculator(images):
        e = a.get_potential_energy()
        assert abs(out["energy"][s].item() - e) <= 1e-12 * abs(e)
        f = a.get_forces()
        assert np.abs(out["forces"][start:start + n].numpy() - f).max() <= 1e-12 * np.abs(f).max()
        sig = a.get_stress(voigt=False)
        assert np.abs(out["stress"][s].numpy() - sig).max() <= 1e-12 * np.abs(sig).max()


def test_batched_fire_matches_ase_fire(model):
    images = crystals(seed=1)
    final = ts.optimize(system=images, model=model, optimizer=ts.optimizers.fire,
                        convergence_fn=ts.generate_force_convergence_fn(force_tol=0.05,
                                                                        include_cell_forces=False),
                        max_steps=500, md_flavor="ase_fire")
    got = model(final)
    for s, start, n, a in with_our_calculator(images):
        FIRE(a, logfile=None).run(fmax=0.05, steps=500)
        f = got["forces"][start:start + n].numpy()
        assert np.linalg.norm(f, axis=1).max() < 0.05, f"structure {s}: TorchSim not relaxed"
        assert np.linalg.norm(a.get_forces(), axis=1).max() < 0.05, f"structure {s}: ASE"
        de = abs(got["energy"][s].item() - a.get_potential_energy()) / n
        assert de < 1e-3, f"structure {s}: TorchSim's FIRE {got['energy'][s].item()} vs ASE's " \
                          f"{a.get_potential_energy()} eV ({de:.2e} eV/atom)"


def test_batched_nve_conserves_energy(model):
    images = crystals(seed=2)
    state = ts.initialize_state(images, device=CPU, dtype=torch.float64)
    energies = []

    def total(st):
        kinetic = 0.5 * torch.zeros(len(images), dtype=torch.float64).index_add_(
            0, st.system_idx, (st.momenta ** 2 / st.masses[:, None]).sum(dim=1))
        return (st.energy + kinetic).numpy()

    init, step = ts.nve(model=model, dt=torch.tensor(0.0005 * ts.units.MetalUnits.time),
                        kT=torch.tensor(300 * ts.units.MetalUnits.temperature), seed=3)
    st = init(state)
    energies.append(total(st))
    for _ in range(40):
        st = step(st, dt=torch.tensor(0.0005 * ts.units.MetalUnits.time))
    energies.append(total(st))
    drift = np.abs(energies[1] - energies[0]) / np.array([len(a) for a in images])
    assert drift.max() < 1e-4, f"NVE drift per structure (eV/atom): {drift}"
