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
