"""Batched evaluation (fnq_ctx_compute_batch through Context.compute_batch and
FusedNequIPCalculator.calculate_batch): a mixed batch (triclinic periodic cell, slab periodic in
two directions, molecule without a cell, a cell smaller than the cutoff, structures of other
sizes and species, one with no atoms) gives each structure what a call of its own gives, in
float64 to 1e-12 relative (max |batch - single| over a quantity's components / max |single|),
for every model family the repository has weights for without torch: a NequIP fixture
(ZBL and l = 4), an Allegro fixture, and nequix-mp-1 when the model directory has it. A batch
repeats to the bit; reordered, each structure's results move with it (1e-12). A bad structure
raises naming it; an empty batch gives []. The GPU cases skip without a GPU (tests/gpu_pytest.py
runs them as the CTest gpu_batch, where nothing may skip).
"""
import os

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("ase")
from ase import Atoms  # noqa: E402
from ase.build import bulk, molecule  # noqa: E402

from fusednequip import Context, FusedNequIPCalculator, Model  # noqa: E402
from fusednequip.errors import StructureError  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
NEQUIP = os.path.join(REPO, "tests", "fixtures", "nequip", "fm_xl_like_l4_zbl_3sp.fnqm")
ALLEGRO = os.path.join(REPO, "tests", "fixtures", "allegro", "allegro_l2_parity_3sp.weights.npz")
TOL = 1e-12


def _gpu_present():
    from fusednequip._lib import lib
    names = [lib.fnq_backend_name(k).decode() for k in range(lib.fnq_backend_count())]
    return "cuda" in names and lib.fnq_cuda_device_count() > 0


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not _gpu_present(), reason="no CUDA backend or no GPU"))]


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = np.abs(b).max() if b.size else 0.0
    return float(np.abs(a - b).max() / scale) if scale > 0 else float(np.abs(a - b).max())


def mixed_batch(elements, seed=0):
    """structures of the model's elements: triclinic periodic, slab, molecule, small cell, and
    a larger crystal, each rattled; plus a structure with no atoms"""
    rng = np.random.default_rng(seed)
    a, b, c = (elements * 3)[:3]

    def rattled(atoms, amount=0.05):
        atoms.positions += rng.normal(0.0, amount, atoms.positions.shape)
        return atoms

    tri = Atoms(f"{a}{b}{c}{a}", cell=[[3.9, 0.0, 0.0], [0.8, 3.7, 0.0], [0.5, 0.6, 4.1]],
                scaled_positions=[[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0.1, 0.6, 0.6]],
                pbc=True)
    slab = Atoms(f"{a}{b}" * 4, cell=[5.0, 5.0, 20.0], pbc=[True, True, False],
                 positions=[[x, y, 8.0 + 1.3 * ((x + y) % 2)] for x in (0.0, 2.5)
                            for y in (0.0, 2.5) for _ in (0, 1)])
    slab.positions[1::2, 2] += 1.6
    mol = Atoms(f"{b}{a}{c}{a}", positions=[[0, 0, 0], [1.5, 0, 0], [0, 1.6, 0], [0, 0, 1.7]])
    small = Atoms(f"{a}{b}", cell=[[2.6, 0.2, 0.0], [0.0, 2.7, 0.1], [0.3, 0.0, 2.5]],
                  scaled_positions=[[0, 0, 0], [0.5, 0.5, 0.5]], pbc=True)
    big = bulk("Cu", "fcc", a=3.8, cubic=True).repeat((2, 2, 2))
    big.set_chemical_symbols([(a, b, c)[k % 3] for k in range(len(big))])
    empty = Atoms(cell=[4.0, 4.0, 4.0], pbc=True)
    return [rattled(tri), rattled(slab), rattled(mol), rattled(small), rattled(big), empty]


def models(tmp_path_factory):
    out = [("nequip", Model(NEQUIP))]
    from fusednequip import allegro_reference as R
    from fusednequip.convert.allegro.fnqm import to_fnqm
    cfg, arrays = R.load_npz(ALLEGRO)
    path = tmp_path_factory.mktemp("allegro") / "allegro.fnqm"
    to_fnqm(cfg, arrays).write(path)
    out.append(("allegro", Model(str(path))))
    try:
        out.append(("nequix", Model("nequix-mp-1")))
    except Exception:  # noqa: BLE001 - the model directory is optional
        pass
    return out


@pytest.fixture(scope="module")
def family_models(tmp_path_factory):
    return models(tmp_path_factory)


def single(ctx, model, atoms):
    species = model.species_indices(atoms.get_chemical_symbols())
    cell = atoms.cell.array if atoms.cell.rank > 0 or atoms.pbc.any() else None
    if len(atoms) == 0:
        return 0.0, np.zeros(0), np.zeros((0, 3)), np.zeros(6)
    return ctx.compute(atoms.positions, species, cell, atoms.pbc)


def as_structures(model, images):
    return [(a.positions, model.species_indices(a.get_chemical_symbols()),
             a.cell.array if a.cell.rank > 0 or a.pbc.any() else None, a.pbc) for a in images]


@pytest.mark.parametrize("device", DEVICES)
def test_batch_equals_single_calls(family_models, device):
    for family, model in family_models:
        ctx = Context(model, device=device, dtype="float64")
        images = mixed_batch(list(model.species))
        got = ctx.compute_batch(as_structures(model, images))
        assert len(got) == len(images)
        for s, (a, (e, ea, f, v)) in enumerate(zip(images, got)):
            e1, ea1, f1, v1 = single(ctx, model, a)
            label = f"{family} {device} structure {s} ({len(a)} atoms)"
            assert abs(e - e1) <= TOL * max(abs(e1), 1e-300), f"{label}: energy {e} vs {e1}"
            assert ea.shape == (len(a),) and f.shape == (len(a), 3), label
            if len(a):
                assert rel(ea, ea1) <= TOL, f"{label}: per-atom energies {rel(ea, ea1):.2e}"
                assert rel(f, f1) <= TOL, f"{label}: forces {rel(f, f1):.2e}"
                assert rel(v, v1) <= TOL, f"{label}: virial {rel(v, v1):.2e}"
            else:
                assert e == 0.0 and not np.any(v), label


@pytest.mark.parametrize("device", DEVICES)
def test_flat_arrays_are_the_structures_results(family_models, device):
    """compute_batch_arrays (TorchSim's path: flat arrays, no Python per structure) gives the
    per-structure call's numbers bit for bit; its offsets are checked; an empty batch is empty"""
    family, model = family_models[0]
    ctx = Context(model, device=device, dtype="float64")
    images = mixed_batch(list(model.species), seed=5)
    structures = as_structures(model, images)
    listed = ctx.compute_batch(structures)
    offsets = np.concatenate([[0], np.cumsum([len(a) for a in images])])
    cells = np.stack([np.zeros((3, 3)) if c is None else c for _, _, c, _ in structures])
    pbcs = np.stack([np.broadcast_to(p, 3) for _, _, _, p in structures])
    e, ea, f, v = ctx.compute_batch_arrays(np.concatenate([p for p, _, _, _ in structures]),
                                           np.concatenate([z for _, z, _, _ in structures]),
                                           offsets, cells, pbcs)
    for s, (e1, ea1, f1, v1) in enumerate(listed):
        a, b = offsets[s], offsets[s + 1]
        assert e[s] == e1 and np.array_equal(v[s], v1), f"structure {s}"
        assert np.array_equal(ea[a:b], ea1) and np.array_equal(f[a:b], f1), f"structure {s}"
    with pytest.raises(ValueError, match="offsets"):
        ctx.compute_batch_arrays(np.zeros((4, 3)), np.zeros(4), [0, 3, 2])
    with pytest.raises(ValueError, match="offsets"):
        ctx.compute_batch_arrays(np.zeros((4, 3)), np.zeros(4), [0, 2, 3])
    e, ea, f, v = ctx.compute_batch_arrays(np.zeros((0, 3)), np.zeros(0), [0])
    assert e.shape == (0,) and f.shape == (0, 3) and v.shape == (0, 6)


@pytest.mark.parametrize("device", DEVICES)
def test_batch_repeats_and_order(family_models, device):
    family, model = family_models[0]
    ctx = Context(model, device=device, dtype="float64")
    images = mixed_batch(list(model.species), seed=3)
    structures = as_structures(model, images)
    first = ctx.compute_batch(structures)
    again = ctx.compute_batch(structures)
    for (e, ea, f, v), (e2, ea2, f2, v2) in zip(first, again):
        assert e == e2 and np.array_equal(f, f2) and np.array_equal(v, v2)
        assert np.array_equal(ea, ea2)
    order = [4, 2, 0, 5, 3, 1]
    moved = ctx.compute_batch([structures[k] for k in order])
    for k, (e, ea, f, v) in zip(order, moved):
        e0, _, f0, v0 = first[k]
        assert abs(e - e0) <= TOL * max(abs(e0), 1e-300)
        if len(f0):
            assert rel(f, f0) <= TOL and rel(v, v0) <= TOL


@pytest.mark.parametrize("device", DEVICES)
def test_calculator_batch_is_ase_results(family_models, device):
    family, model = family_models[0]
    calc = FusedNequIPCalculator(model, device=device, dtype="float64")
    images = [a for a in mixed_batch(list(model.species), seed=5) if len(a)]
    results = calc.calculate_batch(images)
    for a, r in zip(images, results):
        a = a.copy()
        a.calc = FusedNequIPCalculator(model, device=device, dtype="float64")
        assert abs(r["energy"] - a.get_potential_energy()) <= TOL * abs(r["energy"])
        assert rel(r["forces"], a.get_forces()) <= TOL
        if a.cell.rank == 3:
            assert rel(r["stress"], a.get_stress()) <= TOL
        else:
            assert "stress" not in r


@pytest.mark.parametrize("device", DEVICES)
def test_bad_structure_is_named(family_models, device):
    family, model = family_models[0]
    ctx = Context(model, device=device, dtype="float64")
    images = mixed_batch(list(model.species))
    structures = as_structures(model, images)
    pos = np.array(structures[2][0], dtype=float)
    pos[1] = np.nan
    bad = list(structures)
    bad[2] = (pos,) + tuple(structures[2][1:])
    with pytest.raises(StructureError, match=r"structure 2: atom 1 has a non-finite"):
        ctx.compute_batch(bad)
    close = images[4].copy()
    close.positions[3] = close.positions[0] + [0.05, 0.0, 0.0]
    bad[2] = structures[2]
    bad[4] = as_structures(model, [close])[0]
    with pytest.raises(StructureError, match=r"structure 4: atoms (0 and 3|3 and 0) are") as err:
        ctx.compute_batch(bad)
    start = sum(len(a) for a in images[:4])
    assert sorted(err.value.atoms) == [start, start + 3]  # batch indices
    assert ctx.compute_batch([]) == []
    assert len(ctx.compute_batch(structures)) == len(images)  # the context still works


def test_first_bad_structure_is_named_whatever_the_threads(family_models):
    """many structures are listed side by side (a run of them per thread): with bad ones in
    different runs, the first in batch order is the one named"""
    family, model = family_models[0]
    ctx = Context(model, device="cpu", dtype="float64")
    images = [a for a in mixed_batch(list(model.species)) if len(a)] * 8
    structures = as_structures(model, images)
    for k in (33, 7):
        pos = np.array(structures[k][0], dtype=float)
        pos[0] = np.inf
        structures[k] = (pos,) + tuple(structures[k][1:])
    with pytest.raises(StructureError, match=r"structure 7: atom 0 has a non-finite"):
        ctx.compute_batch(structures)


THREADS_SCRIPT = """
import hashlib, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import test_batch as T
model = T.Model(T.NEQUIP)
images = [a for a in T.mixed_batch(list(model.species), seed=4) if len(a)] * 5
out = T.Context(model, device="cpu", dtype="float64").compute_batch(T.as_structures(model, images))
h = hashlib.sha256()
for e, ea, f, v in out:
    h.update(np.float64(e).tobytes() + ea.tobytes() + f.tobytes() + v.tobytes())
print(h.hexdigest())
"""


def test_batch_does_not_depend_on_the_thread_count():
    import subprocess
    import sys
    digests = set()
    for threads in ("1", "2", "3"):
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        p = subprocess.run([sys.executable, "-c", THREADS_SCRIPT, HERE], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        digests.add(p.stdout.strip())
    assert len(digests) == 1, f"results differ between 1, 2 and 3 threads: {digests}"


def test_bad_arguments_are_refused(family_models):
    """the C entry point's own checks, called directly: offsets that do not start at 0 or go
    back, a species index the model lacks (named with its structure), an empty batch"""
    from fusednequip._lib import Status, lib, last_error
    family, model = family_models[0]
    ctx = Context(model, device="cpu", dtype="float64")
    pos = np.zeros(3 * 4)
    pos[3:6] = [1.5, 0, 0]
    pos[9:12] = [0, 1.5, 0]
    species = np.zeros(4, np.int32)
    cells = np.zeros(18)
    pbc = np.zeros(6, np.int32)
    energies = np.full(2, 7.0)

    def call(offsets, sp=species):
        return lib.fnq_ctx_compute_batch(ctx._handle, 2, np.asarray(offsets, np.int64), pos, sp,
                                         cells, pbc, energies, None, None, None)
    assert call([1, 2, 4]) == Status.INVALID_ARG and "atom_offsets[0] is 1" in last_error()
    assert call([0, 3, 2]) == Status.INVALID_ARG and "structure 1 ends" in last_error()
    bad = species.copy()
    bad[3] = 99
    assert call([0, 2, 4], bad) == Status.INVALID_ARG
    assert last_error().startswith("structure 1: atom 1 has species index 99"), last_error()
    assert np.all(energies == 7.0)  # nothing written on a refusal
    assert call([0, 2, 4]) == Status.OK and np.all(energies != 7.0)
    assert lib.fnq_ctx_compute_batch(ctx._handle, 0, np.zeros(1, np.int64), pos, species,
                                     None, None, None, None, None, None) == Status.OK
