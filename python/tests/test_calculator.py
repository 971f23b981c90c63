"""FusedNequIPCalculator: published Nequix values, agreement with `fusednequip eval`, periodic,
partly periodic and non-periodic atoms, buffer reuse, and the documented exceptions."""
import json
import os
import subprocess

import numpy as np
import pytest
from ase import Atoms
from ase.build import bulk, fcc111, molecule
from ase.io import read, write

from fusednequip import (FusedNequIPCalculator, ModelFileError, StructureError,
                         UnknownElementError)


def published():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.environ.get("FNQ_PUBLISHED_VALUES") or os.path.join(
        here, "..", "..", "..", "shared", "reference", "nequix_published_values.json")
    if not os.path.exists(path):
        pytest.skip(f"published values not found at {path}")
    return json.load(open(path))


@pytest.mark.parametrize("model", ["nequix-mp-1", "nequix-oam-1"])
@pytest.mark.parametrize("case", ["relaxed", "perturbed"])
def test_published_values(model_dir, model, case):
    ref = published()
    st = ref["structures"][case]
    atoms = Atoms(st["symbols"], positions=st["positions"], cell=st["cell"], pbc=st["pbc"])
    atoms.calc = FusedNequIPCalculator(model, device="cpu", dtype="float64")
    want = ref["values"][case][model]
    # the reference test's own criterion: numpy allclose, atol = rtol = 1e-5
    np.testing.assert_allclose(atoms.get_potential_energy(), want["energy"], atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(atoms.get_forces(), want["forces"], atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(atoms.get_stress(), want["stress"], atol=1e-5, rtol=1e-5)


def structures():
    rng = np.random.default_rng(7)
    tri = bulk("NaCl", "rocksalt", a=5.6).repeat((2, 2, 2))
    tri.set_cell(tri.cell.array @ np.array([[1, 0.05, 0], [0, 1, 0.08], [0.03, 0, 1]]),
                 scale_atoms=True)
    tri.rattle(0.1, seed=1)
    syms = tri.get_chemical_symbols()
    syms[3], syms[10] = "K", "Br"
    tri.set_chemical_symbols(syms)
    slab = fcc111("Cu", size=(3, 3, 3), vacuum=6.0)
    slab.rattle(0.05, seed=2)
    mol = molecule("CH3CH2OH")
    mol.positions += rng.normal(0, 0.02, mol.positions.shape)
    return {"triclinic": tri, "slab": slab, "molecule": mol}


@pytest.mark.parametrize("name", ["triclinic", "slab", "molecule"])
def test_equals_cli(model_dir, mp1, repo_root, tmp_path, name):
    # both sides read the same file, so both see the same (rounded) coordinates
    path = tmp_path / f"{name}.xyz"
    write(str(path), structures()[name], format="extxyz", write_results=False)
    atoms = read(str(path))
    calc = FusedNequIPCalculator(mp1, device="cpu", dtype="float64")
    atoms.calc = calc
    e = atoms.get_potential_energy()
    f = atoms.get_forces()
    ea = atoms.get_potential_energies()
    cli = os.environ.get("FNQ_CLI") or os.path.join(repo_root, "build", "cli", "fusednequip")
    out = subprocess.run([cli, "eval", "--device", "cpu", "--dtype", "float64", "nequix-mp-1",
                          str(path)], check=True, capture_output=True, text=True).stdout
    ref = json.loads(out)
    assert abs(e - ref["energy"]) <= 1e-12 * abs(ref["energy"])
    scale = max(1.0, np.abs(ref["forces"]).max())
    assert np.abs(f - np.array(ref["forces"])).max() <= 1e-12 * scale
    assert np.abs(ea - np.array(ref["energies"])).max() <= 1e-12 * abs(ref["energy"])
    if atoms.cell.rank == 3:
        s = atoms.get_stress()
        assert np.abs(s - np.array(ref["stress"])).max() <= 1e-12 * max(1e-3, np.abs(s).max())
    else:
        assert "stress" not in ref
    assert calc.results["free_energy"] == e


def test_no_stress_without_cell(mp1):
    from ase.calculators.calculator import PropertyNotImplementedError
    atoms = molecule("H2O")
    atoms.calc = FusedNequIPCalculator(mp1, device="cpu")
    atoms.get_potential_energy()
    with pytest.raises(PropertyNotImplementedError):
        atoms.get_stress()


def test_positions_only_changes_reuse_the_context(mp1):
    atoms = bulk("Si", "diamond", a=5.43, cubic=True)
    calc = FusedNequIPCalculator(mp1, device="cpu")
    atoms.calc = calc
    ctx = calc.context
    e0 = atoms.get_potential_energy()
    atoms.positions[0] += [0.05, 0.0, -0.02]
    e1 = atoms.get_potential_energy()
    assert calc.context is ctx and e1 != e0
    atoms.positions[0] -= [0.05, 0.0, -0.02]
    assert atoms.get_potential_energy() == e0  # bitwise, same buffers


def test_state_check_recomputes_on_what_the_model_reads(mp1):
    """check_state (ours, not ASE's np.allclose) sees every change of positions, numbers, cell
    and pbc, even one ulp, and nothing else (momenta, magnetic moments: no new evaluation)"""
    atoms = bulk("Si", "diamond", a=5.43, cubic=True)
    calc = FusedNequIPCalculator(mp1, device="cpu")
    atoms.calc = calc
    calls = []
    compute = calc.context.compute
    calc.context.compute = lambda *a: calls.append(1) or compute(*a)
    atoms.get_forces()
    atoms.set_momenta(np.ones((len(atoms), 3)))
    atoms.set_initial_magnetic_moments(np.ones(len(atoms)))
    atoms.get_forces()
    atoms.get_potential_energy()
    assert len(calls) == 1
    atoms.positions[3, 1] = np.nextafter(atoms.positions[3, 1], 1.0)
    atoms.get_forces()
    assert len(calls) == 2
    atoms.set_cell(atoms.cell.array * 1.001, scale_atoms=False)
    atoms.get_forces()
    atoms.set_atomic_numbers([14] * (len(atoms) - 1) + [8])
    atoms.get_forces()
    atoms.pbc = [True, True, False]
    atoms.get_potential_energy()
    assert len(calls) == 5
    assert calc.check_state(atoms) == []
    assert sorted(calc.check_state(atoms[:-1])) == sorted(
        ["positions", "numbers", "cell", "pbc", "initial_charges", "initial_magmoms"])


def test_caller_neighbour_list_equals_library_list(mp1):
    """Context.compute_graph with ASE's neighbour list (a list we did not build) gives the
    results of the library's own cell list, on a triclinic cell smaller than twice the cutoff."""
    from ase.neighborlist import neighbor_list
    from fusednequip import Context
    atoms = bulk("Si", "diamond", a=5.43).repeat((2, 1, 1))
    atoms.rattle(0.05, seed=3)
    ctx = Context(mp1, device="cpu", dtype="float64")
    sp = mp1.species_indices(atoms.get_chemical_symbols())
    ref = ctx.compute(atoms.positions, sp, atoms.cell.array, atoms.pbc)
    i, j, shift = neighbor_list("ijS", atoms, mp1.cutoff)
    got = ctx.compute_graph(atoms.positions, sp, receivers=i, senders=j,
                            shifts=shift @ atoms.cell.array)
    assert ctx.last_num_edges == len(i)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=0)
    for a, b in zip(got[1:], ref[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_unknown_element(mp1):
    atoms = bulk("Si", "diamond", a=5.43)
    atoms.set_chemical_symbols(["Si", "Po"])
    atoms.calc = FusedNequIPCalculator(mp1, device="cpu")
    with pytest.raises(UnknownElementError, match=r"atom 1 is element 'Po'") as err:
        atoms.get_potential_energy()
    assert err.value.atoms == (1,)


def test_missing_model(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        FusedNequIPCalculator(str(tmp_path / "missing.nqx"))


def test_bad_model_file(model_dir, mp1, tmp_path):
    data = open(mp1.path, "rb").read()
    bad = tmp_path / "truncated.nqx"
    bad.write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelFileError, match="truncated"):
        FusedNequIPCalculator(str(bad))
    bad = tmp_path / "garbage.nqx"
    bad.write_bytes(b"\x00\x01not a model\n")
    with pytest.raises(ModelFileError, match="not a model file"):
        FusedNequIPCalculator(str(bad))


def test_bad_structures(mp1):
    calc = FusedNequIPCalculator(mp1, device="cpu")
    atoms = bulk("Si", "diamond", a=5.43)
    atoms.positions[1, 2] = np.nan
    atoms.calc = calc
    with pytest.raises(StructureError, match="atom 1 has a non-finite coordinate") as err:
        atoms.get_potential_energy()
    assert err.value.atoms == (1,)
    atoms = bulk("Si", "diamond", a=5.43)
    atoms.positions[1] = atoms.positions[0] + 0.01
    atoms.calc = calc
    with pytest.raises(StructureError, match="atoms 0 and 1 are .* closer than") as err:
        atoms.get_forces()
    assert err.value.atoms == (0, 1)  # receiver, sender
    # an atom so far outside the cell that wrapping it back has no digits left: refused, named
    atoms = bulk("Si", "diamond", a=5.43)
    atoms.positions[1, 0] = 1e200
    atoms.calc = calc
    with pytest.raises(StructureError, match="atom 1 lies .* cell lengths outside") as err:
        atoms.get_potential_energy()
    assert err.value.atoms == (1,)


def test_structure_error_names_the_atom_with_too_many_neighbours(mp1):
    from fusednequip import Context
    from ase.neighborlist import neighbor_list
    atoms = bulk("Si", "diamond", a=5.43, cubic=True).repeat((2, 2, 2))
    atoms.pbc = False  # a cluster: inner atoms have more neighbours than outer ones
    atoms.rattle(0.01, seed=1)
    counts = np.bincount(neighbor_list("i", atoms, mp1.cutoff), minlength=len(atoms))
    limit = counts.max() - 1
    first = int(np.flatnonzero(counts > limit)[0])
    assert first > 0
    ctx = Context(mp1, device="cpu")
    ctx.set_max_neighbors(limit)
    sp = mp1.species_indices(atoms.get_chemical_symbols())
    with pytest.raises(StructureError, match=f"atom {first} has {limit + 1} neighbours") as err:
        ctx.compute(atoms.positions, sp)
    assert err.value.atoms == (first,)


def test_bad_arguments(mp1):
    with pytest.raises(ValueError, match="device"):
        FusedNequIPCalculator(mp1, device="tpu")
    with pytest.raises(ValueError, match="dtype"):
        FusedNequIPCalculator(mp1, dtype="float16")
