"""The calculator as ASE workflows use it: from several threads, copied, pickled, created and
dropped many times, closed; and messages a Python user can act on."""
import copy
import gc
import os
import pickle
import threading

import numpy as np
import pytest
from ase import Atoms
from ase.build import bulk, fcc111
from ase.calculators.calculator import PropertyNotImplementedError

from fusednequip import (Context, DeviceError, FusedNequIPCalculator, Model, ModelFileError,
                         StructureError, _lib)


def two_structures():
    si = bulk("Si", "diamond", a=5.43, cubic=True)
    nacl = bulk("NaCl", "rocksalt", a=5.64, cubic=True).repeat((2, 1, 1))
    return si, nacl


def rattled(atoms, seed):
    a = atoms.copy()
    a.rattle(0.01, seed=seed)
    return a


def reference_energies(model, rounds):
    """Each structure's energy per round, from a calculator of its own, one thread."""
    calc = FusedNequIPCalculator(model, device="cpu")
    out = []
    for base in two_structures():
        out.append([calc.get_potential_energy(rattled(base, i)) for i in range(rounds)])
    return out


def run_threads(work, n):
    start = threading.Barrier(n)
    errors = []

    def body(k):
        try:
            start.wait()
            work(k)
        except Exception as err:  # noqa: BLE001 - reported below, with the thread's index
            errors.append((k, err))

    threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


ROUNDS = 20


def test_one_calculator_two_threads(mp1):
    want = reference_energies(mp1, ROUNDS)
    calc = FusedNequIPCalculator(mp1, device="cpu")
    got = [[None] * ROUNDS, [None] * ROUNDS]

    def work(k):
        base = two_structures()[k]
        for i in range(ROUNDS):
            a = rattled(base, i)
            a.calc = calc
            got[k][i] = a.get_potential_energy()
            f = a.get_forces()
            assert f.shape == (len(a), 3)

    run_threads(work, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_one_context_two_threads(mp1):
    ctx = Context(mp1, device="cpu")
    bases = two_structures()
    want = reference_energies(mp1, ROUNDS)
    got = [[None] * ROUNDS, [None] * ROUNDS]

    def work(k):
        a = bases[k]
        species = mp1.species_indices(a.get_chemical_symbols())
        for i in range(ROUNDS):
            r = rattled(a, i)
            got[k][i] = ctx.compute(r.positions, species, r.cell.array, r.pbc)[0]

    run_threads(work, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def evaluate(calc, atoms):
    a = atoms.copy()
    a.calc = calc
    return a.get_potential_energy(), a.get_forces()


def test_copies_and_pickles_are_independent(model_dir):
    si = rattled(two_structures()[0], 3)
    calc = FusedNequIPCalculator("nequix-mp-1", device="cpu", max_neighbors=500)
    e0, f0 = evaluate(calc, si)
    shallow = copy.copy(calc)
    deep = copy.deepcopy(calc)
    atoms = si.copy()
    atoms.calc = calc
    atoms.get_potential_energy()
    unpickled_atoms = pickle.loads(pickle.dumps(atoms))
    unpickled = pickle.loads(pickle.dumps(calc))
    for name, other in (("copy", shallow), ("deepcopy", deep), ("pickle", unpickled),
                        ("pickled Atoms' calculator", unpickled_atoms.calc)):
        assert other.context is not calc.context, name
        assert other.context.max_neighbors == 500, name
        e, f = evaluate(other, si)
        assert e == e0, name
        np.testing.assert_array_equal(f, f0, err_msg=name)
    assert unpickled_atoms.get_potential_energy() == e0
    # closing a copy leaves the original working, and the other way round
    shallow.close()
    deep.close()
    assert evaluate(calc, si)[0] == e0
    calc.close()
    assert evaluate(unpickled, si)[0] == e0


def test_shared_model_survives_close(mp1):
    calc = FusedNequIPCalculator(mp1, device="cpu")
    other = FusedNequIPCalculator(mp1, device="cpu")
    si = two_structures()[0]
    e = evaluate(calc, si)[0]
    calc.close()
    assert not mp1.closed    # the calculator did not load it: not its to close
    assert evaluate(other, si)[0] == e


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_dropped_calculators_free_memory_without_gc(model_dir):
    si = two_structures()[0]
    gc.collect()
    gc.disable()    # as in a long loop between collections: only reference counts free
    try:
        calc = FusedNequIPCalculator("nequix-mp-1", device="cpu")
        evaluate(calc, si)
        context_alive, model_alive = calc.context._finalizer, calc.model._finalizer
        del calc
        assert not context_alive.alive, "the context outlived its calculator"
        assert not model_alive.alive, "the model outlived the calculator that loaded it"
        for _ in range(10):    # warm-up: allocator pools
            evaluate(FusedNequIPCalculator("nequix-mp-1", device="cpu"), si)
        before = rss_mb()
        for _ in range(60):
            evaluate(FusedNequIPCalculator("nequix-mp-1", device="cpu"), si)
        grown = rss_mb() - before
    finally:
        gc.enable()
    # each cycle kept ~1.7 MB before (a reference cycle held model and context)
    assert grown < 25, f"resident memory grew {grown:.1f} MB over 60 create/delete cycles"


def test_close_and_with_release_at_once(model_dir):
    si = two_structures()[0]
    with FusedNequIPCalculator("nequix-mp-1", device="cpu") as calc:
        evaluate(calc, si)
        ctx, model = calc.context, calc.model
    assert ctx.closed and model.closed
    assert not ctx._finalizer.alive and not model._finalizer.alive
    with pytest.raises(ValueError, match="closed"):
        evaluate(calc, rattled(si, 1))
    calc.close()    # idempotent
    with pytest.raises(ValueError, match="closed"):
        Context(model)
    # a model closed while a context uses it is freed when that context closes
    m = Model("nequix-mp-1")
    c = Context(m, device="cpu")
    m.close()
    assert m._finalizer.alive
    species = m.species_indices(si.get_chemical_symbols())
    assert np.isfinite(c.compute(si.positions, species, si.cell.array, si.pbc)[0])
    c.close()
    assert not m._finalizer.alive


def test_too_many_neighbours_says_how_to_raise_the_limit(mp1):
    si = two_structures()[0]
    with pytest.raises(StructureError) as err:
        evaluate(FusedNequIPCalculator(mp1, device="cpu", max_neighbors=10), si)
    text = str(err.value)
    assert "max_neighbors=" in text and "fnq_ctx_" not in text, text
    assert evaluate(FusedNequIPCalculator(mp1, device="cpu", max_neighbors=200), si)


def test_stress_needs_three_cell_vectors(mp1):
    slab = fcc111("Cu", size=(2, 2, 3), vacuum=None)
    slab.pbc = (True, True, False)
    slab.cell[2] = 0.0
    slab.calc = FusedNequIPCalculator(mp1, device="cpu")
    assert np.isfinite(slab.get_potential_energy())
    with pytest.raises(PropertyNotImplementedError, match="three non-zero") as err:
        slab.get_stress()
    assert "zero vectors: c" in str(err.value)


def test_slab_stress_is_divided_by_the_whole_cell(mp1):
    slab = fcc111("Cu", size=(2, 2, 3), vacuum=8.0)
    slab.rattle(0.05, seed=4)
    slab.calc = FusedNequIPCalculator(mp1, device="cpu")
    ctx = Context(mp1, device="cpu")
    species = mp1.species_indices(slab.get_chemical_symbols())
    virial = ctx.compute(slab.positions, species, slab.cell.array, slab.pbc)[3]
    np.testing.assert_allclose(slab.get_stress() * slab.get_volume(), -virial, rtol=1e-12,
                               atol=1e-12)


def test_directory_as_model(tmp_path):
    with pytest.raises(ModelFileError, match="is a directory, not a model file"):
        Model(str(tmp_path))


def test_cuda_without_gpu_says_so(mp1):
    lib = _lib.lib
    if "cuda" not in [lib.fnq_backend_name(k).decode() for k in range(lib.fnq_backend_count())]:
        pytest.skip("this library has no CUDA backend")
    if _lib.lib.fnq_cuda_device_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(DeviceError) as err:
        Context(mp1, device="cuda")
    text = str(err.value)
    assert "no usable GPU" in text and "insufficient" not in text, text
