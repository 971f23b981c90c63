"""FusedNequIPCalculator with converted NequIP models (tests/fixtures/nequip, made by nequip
0.6.2 and a current nequip): energy, per-atom energies, forces and stress through ASE equal
nequip's own float64 outputs, to 1e-10 relative in float64 and 1e-5 relative in float32
(relative: max |ours - nequip| / max |nequip| per quantity). The structures are read from the
same extended-XYZ files nequip was evaluated on.
"""
import glob
import json
import os

import pytest
from ase.io import read

from compare import check_ase_case
from fusednequip import FusedNequIPCalculator, Model

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                        "fixtures", "nequip")
REFS = sorted(glob.glob(os.path.join(FIXTURES, "*.json")))
TOL = {"float64": 1e-10, "float32": 1e-5}


def test_fixtures_present():
    assert len(REFS) >= 13, f"fixture references missing in {FIXTURES}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("ref_path", REFS, ids=[os.path.basename(p)[:-5] for p in REFS])
def test_ase_equals_nequip(ref_path, dtype):
    ref = json.load(open(ref_path))
    model = Model(os.path.join(FIXTURES, ref["model"] + ".fnqm"))
    assert model.family == "nequip" and model.species == ref["type_names"]
    calc = FusedNequIPCalculator(model, device="cpu", dtype=dtype)
    for case, want in ref["cases"].items():
        atoms = read(os.path.join(FIXTURES, want["xyz"]))
        atoms.calc = calc
        check_ase_case(atoms, want, TOL[dtype], case)
