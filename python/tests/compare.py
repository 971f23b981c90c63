"""Comparison helpers shared by the tests against reference outputs."""
import os

import numpy as np

# nequip-allegro's float64 outputs against the numpy reference: energies exact to rounding,
# forces and stress by the reference's finite differences
ALLEGRO_TOL = {"energy": 1e-12, "energies": 1e-12, "forces": 1e-10, "stress": 1e-10}


def rel(ours, ref):
    """largest absolute difference over the largest reference value"""
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    assert ours.shape == ref.shape
    return np.abs(ours - ref).max() / np.abs(ref).max()


def check_ase_case(atoms, want, tol, case):
    """an ASE calculation of `atoms` against a reference case's energy, per-atom energies,
    forces and (nequip's 3x3, the sign of ASE's) stress, each within `tol` relative"""
    assert rel(atoms.get_potential_energy(), want["energy"]) <= tol, case
    assert rel(atoms.get_potential_energies(), want["energies"]) <= tol, case
    assert rel(atoms.get_forces(), want["forces"]) <= tol, case
    if "stress" in want:
        s = np.array(want["stress"])
        voigt = [s[0, 0], s[1, 1], s[2, 2], s[1, 2], s[0, 2], s[0, 1]]
        assert rel(atoms.get_stress(), voigt) <= tol, case


def check_allegro_cases(reference, cfg, arrays, ref, fixtures):
    """The numpy Allegro reference on (cfg, arrays) against every case of a fixture's JSON
    `ref` (its structures in `fixtures`), within ALLEGRO_TOL"""
    from ase.io import read
    for case, want in ref["cases"].items():
        atoms = read(os.path.join(fixtures, want["xyz"]))
        types = [cfg["type_names"].index(s) for s in atoms.get_chemical_symbols()]
        out = reference.evaluate(cfg, arrays, atoms.positions, atoms.cell.array, atoms.pbc,
                                 types)
        for key, tol in ALLEGRO_TOL.items():
            if key in want:
                err = rel(out[key], want[key])
                assert err < tol, f"{case} {key}: {err:.2e} relative (tolerance {tol})"
