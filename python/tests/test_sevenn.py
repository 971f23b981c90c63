"""FusedNequIPCalculator with SevenNet models: the seeded small_ompa_like checkpoint
(tests/fixtures/sevenn, made with sevenn: parity, 119 universal species, per-species
self-connection, modalities mpa and omat24 with a shift per modality) and
small_parity_l2_univ, converted here, against sevenn's own outputs on the fixture structures
(float64 1e-10, float32 1e-5 relative), the modality chosen as SevenNetCalculator's `modal`;
the calculator against `fusednequip eval` on the same model; a multi-modal model refused
without a modality or with an unknown one, and a modality refused for a model without any.
The converter needs torch: the test skips when no Python here has it.
"""
import json
import os
import pickle
import shutil
import subprocess
import sys

import numpy as np
import pytest
from ase.io import read

from compare import rel
from fusednequip import FusedNequIPCalculator, ModalityError

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "sevenn")
TOL = {"float64": 1e-10, "float32": 1e-5}


def _python_with_torch():
    for exe in (os.environ.get("FNQ_CONVERT_PYTHON"), sys.executable, "/usr/bin/python3"):
        if exe and subprocess.run([exe, "-c", "import torch, numpy"],
                                  capture_output=True).returncode == 0:
            return exe
    return None


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    exe = _python_with_torch()
    if exe is None:
        pytest.skip("no Python with torch to run fusednequip-convert on a SevenNet checkpoint")
    out = tmp_path_factory.mktemp("sevenn")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    paths = {}
    for name in ("small_ompa_like", "small_parity_l2_univ"):
        paths[name] = str(out / f"{name}.fnqm")
        subprocess.run([exe, "-m", "fusednequip.convert",
                        os.path.join(FIXTURES, f"{name}.pth"), paths[name]],
                       check=True, capture_output=True, env=env)
    return paths


def _check(atoms, want, tol, label):
    assert rel(atoms.get_potential_energy(), want["energy"]) <= tol, label
    assert rel(atoms.get_potential_energies(), want["energies"]) <= tol, label
    assert rel(atoms.get_forces(), want["forces"]) <= tol, label
    if "stress" in want:  # sevenn's calculator: Voigt, ASE's order and sign
        assert rel(atoms.get_stress(), want["stress"]) <= tol, label


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("modal", ["mpa", "omat24"])
def test_modalities_equal_sevenn(converted, modal, dtype):
    ref = json.load(open(os.path.join(FIXTURES, f"small_ompa_like.{modal}.json")))
    calc = FusedNequIPCalculator(converted["small_ompa_like"], device="cpu", dtype=dtype,
                                 modal=modal)
    assert calc.model.modalities == ["mpa", "omat24"] and calc.model.modal == modal
    for case, want in ref["cases"].items():
        atoms = read(os.path.join(FIXTURES, f"sevenn.{case}.xyz"))
        atoms.calc = calc
        tol = 1e-4 if dtype == "float32" and case == "close_pair" else TOL[dtype]
        _check(atoms, want["float64"], tol, f"{modal} {case} {dtype}")


def test_universal_species_equal_sevenn(converted):
    ref = json.load(open(os.path.join(FIXTURES, "small_parity_l2_univ.json")))
    calc = FusedNequIPCalculator(converted["small_parity_l2_univ"], device="cpu",
                                 dtype="float64")
    assert len(calc.model.species) == 118 and calc.model.modalities == []
    for case, want in ref["cases"].items():
        atoms = read(os.path.join(FIXTURES, f"sevenn.{case}.xyz"))
        atoms.calc = calc
        _check(atoms, want["float64"], TOL["float64"], case)


def test_calculator_equals_cli(converted):
    cli = shutil.which("fusednequip") or os.path.join(REPO, "build", "cli", "fusednequip")
    if not os.path.exists(cli):
        pytest.skip("no fusednequip command to compare with")
    xyz = os.path.join(FIXTURES, "sevenn.triclinic.xyz")
    p = subprocess.run([cli, "eval", "--device", "cpu", "--dtype", "float64", "--modal",
                        "omat24", converted["small_ompa_like"], xyz],
                       check=True, capture_output=True, text=True)
    got = json.loads(p.stdout.splitlines()[0])
    atoms = read(xyz)
    atoms.calc = FusedNequIPCalculator(converted["small_ompa_like"], device="cpu",
                                       dtype="float64", modal="omat24")
    assert rel(atoms.get_potential_energy(), got["energy"]) <= 1e-15
    assert rel(atoms.get_forces(), got["forces"]) <= 1e-15
    assert rel(atoms.get_stress(), got["stress"]) <= 1e-15


def test_modality_refusals(converted):
    with pytest.raises(ModalityError, match=r"modalities: mpa, omat24"):
        FusedNequIPCalculator(converted["small_ompa_like"], device="cpu")
    with pytest.raises(ModalityError, match=r"no modality 'PBE' \(modalities: mpa, omat24\)"):
        FusedNequIPCalculator(converted["small_ompa_like"], device="cpu", modal="PBE")
    with pytest.raises(ModalityError, match="has no modalities"):
        FusedNequIPCalculator(converted["small_parity_l2_univ"], device="cpu", modal="mpa")


def test_pickle_keeps_the_modality(converted):
    atoms = read(os.path.join(FIXTURES, "sevenn.oxide.xyz"))
    atoms.calc = FusedNequIPCalculator(converted["small_ompa_like"], device="cpu",
                                       modal="omat24")
    e = atoms.get_potential_energy()
    again = pickle.loads(pickle.dumps(atoms.calc))
    assert again.model.modal == "omat24"
    atoms.calc = again
    assert np.isclose(atoms.get_potential_energy(), e, rtol=1e-15, atol=0)
