"""Every converted NequIP fixture model (tests/fixtures/nequip, made by nequip 0.6.2 and a
current nequip) run through pair_style fusednequip equals nequip's own float64 outputs on each
of its structures: energy, per-atom energies (compute pe/atom) and forces, plus the virial
(compute pressure) and the sum of the per-atom virials (compute stress/atom) on the periodic
cells; to 1e-10 relative in float64 and 1e-5 in float32.

Structures: the periodic triclinic multi-element cell, the cell smaller than twice the cutoff
(an atom's ghosts include its own images) and the molecule (boundary f f f in a box around
it); for the foundation-like models (fm_*) also a periodic cell with two atoms 0.6-1.0 A
apart, where the ZBL pair term dominates. The periodic float64 cases also run on 2 and 4 MPI
ranks, so the per-layer exchange carries NequIP's feature rows (several irreps, both parities,
resnet) between domains and the pair term's forces on ghosts go back to their owners.

With FNQ_LAMMPS_DEVICE=cuda (CTest lammps_nequip_fixtures_gpu; exits 77 without a usable GPU)
the foundation-like models (fm_*: ZBL, l = 4) run on one GPU: every case on 1 rank in float64
and float32, and the close pair on 2 ranks sharing the GPU (comm ipc) and on 4 (comm staged).

Relative: max |LAMMPS - nequip| over the components of a quantity divided by max |nequip|.
"""
import glob
import json
import os
import tempfile

import sys

from fixture_cases import compare, lammps_case
from lmputil import Checker, gpu_available, single_point

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.environ.get("FNQ_NEQUIP_FIXTURES",
                          os.path.join(HERE, "..", "fixtures", "nequip"))
TOL = {"float64": 1e-10, "float32": 1e-5}
DEVICE = os.environ.get("FNQ_LAMMPS_DEVICE", "cpu")


def runs_of(model, case, periodic):
    """(dtype, ranks, comm keyword) of each run of one case"""
    runs = [(dtype, 1, "") for dtype in TOL]
    if DEVICE == "cpu" and periodic:
        runs += [("float64", 2, ""), ("float64", 4, "")]
    if DEVICE != "cpu" and case == "close_pair":
        runs += [("float64", 2, "comm ipc"), ("float64", 4, "comm staged")]
    return runs


def main():
    c = Checker(f"LAMMPS vs nequip fixtures ({DEVICE})")
    if DEVICE != "cpu" and not gpu_available():
        sys.exit(77)
    refs = sorted(glob.glob(os.path.join(FIXTURES, "*.json")))
    c.check(len(refs) >= 13, f"expected at least 13 fixture models in {FIXTURES}, found "
                            f"{len(refs)}")
    if DEVICE != "cpu":
        refs = [r for r in refs if os.path.basename(r).startswith("fm_")]
    for ref_path in refs:
        ref = json.load(open(ref_path))
        model = os.path.abspath(os.path.join(FIXTURES, ref["model"] + ".fnqm"))
        elements = ref["type_names"]
        for case, want in sorted(ref["cases"].items()):
            s, boundary, expect = lammps_case(os.path.join(FIXTURES, want["xyz"]), want)
            for dtype, ranks, comm in runs_of(ref["model"], case, boundary == "p p p"):
                with tempfile.TemporaryDirectory() as tmp:
                    got = single_point(tmp, s, elements, nprocs=ranks, model=model,
                                       style_args=f"dtype {dtype} device {DEVICE} {comm}",
                                       boundary=boundary)
                compare(c, f"{ref['model']} {case} {dtype} {ranks} rank(s) {comm}", got,
                        expect, TOL[dtype])
    c.finish()


main()
