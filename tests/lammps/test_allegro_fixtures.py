"""Every Allegro fixture model (tests/fixtures/allegro, made by nequip-allegro itself), written
as .fnqm from its weights and run through pair_style fusednequip, equals nequip-allegro's own
float64 outputs on each of its structures: energy, per-atom energies (compute pe/atom) and
forces, plus the virial (compute pressure) and the sum of the per-atom virials (compute
stress/atom) on the periodic cells; to 1e-10 relative in float64 and 1e-5 in float32, on the
CPU. The periodic float64 cases also run on 2 and 4 MPI ranks, compared with nequip-allegro and
with the one-rank run (1e-12): Allegro is strictly local, so LAMMPS' own ghost atoms are all it
needs (no per-layer exchange, no folding of ghosts onto their owners: the log says so), and the
forces on ghosts go back to their owners through LAMMPS' reverse communication.

With FNQ_LAMMPS_DEVICE=cuda (CTest lammps_allegro_fixtures_gpu; exits 77 without a usable
GPU) the same on one GPU (kernels/allegro/allegro_engine.cu), the periodic cases also on 2 ranks sharing
it.

Structures: a periodic triclinic cell, a cell shorter than the cutoff, a molecule (boundary
f f f in a box around it) and a periodic cell with two atoms 0.6-1.0 A apart (ZBL in one model).
Relative: max |LAMMPS - nequip-allegro| over the components divided by max |nequip-allegro|.
"""
import glob
import json
import os
import sys
import tempfile

from fixture_cases import compare, lammps_case
from lmputil import Checker, gpu_available, single_point

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "allegro")
TOL = {"float64": 1e-10, "float32": 1e-5}
DEVICE = os.environ.get("FNQ_LAMMPS_DEVICE", "cpu")


def write_fnqm(npz, path):
    """the fixture's weights as a .fnqm file (numpy, through the package's converter)"""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    try:
        from fusednequip.allegro_reference import load_npz
        from fusednequip.convert.allegro.fnqm import to_fnqm
    except ImportError as e:  # numpy or the library missing: nothing to compare
        print(f"SKIP: cannot write the Allegro fixtures as .fnqm ({e})")
        sys.exit(77)
    to_fnqm(*load_npz(npz)).write(path)


def main():
    c = Checker(f"LAMMPS vs nequip-allegro fixtures ({DEVICE})")
    if DEVICE != "cpu" and not gpu_available():
        sys.exit(77)
    weights = sorted(glob.glob(os.path.join(FIXTURES, "*.weights.npz")))
    c.check(len(weights) >= 3, f"expected 3 Allegro fixture models in {FIXTURES}, found "
                               f"{len(weights)}")
    with tempfile.TemporaryDirectory() as models:
        for npz in weights:
            name = os.path.basename(npz).split(".")[0]
            model = os.path.join(models, name + ".fnqm")
            write_fnqm(npz, model)
            ref = json.load(open(os.path.join(FIXTURES, name + ".json")))
            for case, want in sorted(ref["cases"].items()):
                s, boundary, expect = lammps_case(os.path.join(FIXTURES, want["xyz"]), want)
                runs = [(dtype, 1) for dtype in TOL]
                if boundary == "p p p":
                    runs += [("float64", 2)] + ([("float64", 4)] if DEVICE == "cpu" else [])
                one_rank = None  # float64 on one rank, which more ranks must give again
                for dtype, ranks in runs:
                    with tempfile.TemporaryDirectory() as tmp:
                        got = single_point(tmp, s, ref["type_names"], nprocs=ranks, model=model,
                                           style_args=f"dtype {dtype} device {DEVICE}",
                                           boundary=boundary)
                    compare(c, f"{name} {case} {dtype} {ranks} rank(s)", got, expect,
                            TOL[dtype], source="nequip-allegro")
                    if dtype == "float64" and ranks == 1:
                        one_rank = got
                    if ranks > 1:  # LAMMPS' ghosts as they are: no exchange, no folding
                        compare(c, f"{name} {case} {ranks} ranks vs 1 rank", got, one_rank,
                                1e-12, source="one rank")
                        c.check("ghost exchange 'none': a local model" in got["output"],
                                f"{name} {case} on {ranks} ranks: the style did not say it "
                                f"exchanges nothing for a local model")
    c.finish()


main()
