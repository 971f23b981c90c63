"""SevenNet models through pair_style fusednequip against sevenn's own outputs
(tests/fixtures/sevenn, generate.py there): 7net-0 (XPLOR envelope, 5 layers), 7net-mf-0 with
`modal PBE` (per-modality biases) and the seeded small_ompa_like with `modal mpa` (parity,
119 universal species, per-species self-connection, per-modality shift). Energy, per-atom
energies and forces, plus the virial and the summed per-atom virials on periodic cells; 1e-10
relative in float64, 1e-5 in float32 (1e-4 for the forces of two atoms 1 A apart). The
periodic float64 cases also run on 2 and 4 MPI ranks, compared with sevenn and with the
1-rank run (1e-12 relative; a hang fails at CTest's TIMEOUT): the ghost exchange of every layer
carries SevenNet's rows (both parities in small_ompa_like). A multi-modal model without
`modal` is refused, naming its modalities.

With FNQ_LAMMPS_DEVICE=cuda (CTest lammps_sevenn_fixtures_gpu; exits 77 without a usable GPU)
every case runs on one GPU, 1 rank, float64 and float32, and the periodic cases in float64 on
2 ranks sharing the GPU (comm ipc) and on 4 (comm staged), against sevenn and the 1-rank run.

The checkpoints come from the installed sevenn (never copied here: cliutil.sevenn_site) and
are converted by fusednequip-convert under a Python with torch; exits 77 when either is missing.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
from cliutil import python_with, sevenn_site  # noqa: E402
from fixture_cases import compare, in_box, read_xyz, rotated_reference  # noqa: E402
from lmputil import Checker, gpu_available, run_lammps, single_point  # noqa: E402
from structures import reduced_tilts, to_lammps_frame, write_data  # noqa: E402

FIXTURES = os.path.join(REPO, "tests", "fixtures", "sevenn")
TOL = {"float64": 1e-10, "float32": 1e-5}
MODELS = ["7net-0", "7net-mf-0.PBE", "small_ompa_like.mpa"]
RANKS_CASES = ("triclinic", "small_cell")  # float64 on 2 and 4 ranks too
RANKS_TOL = 1e-12  # 2 and 4 ranks against 1, float64
DEVICE = os.environ.get("FNQ_LAMMPS_DEVICE", "cpu")


def runs_of(case):
    """(dtype, ranks, comm keyword) of each run of one case"""
    runs = [(dtype, 1, "") for dtype in TOL]
    if case in RANKS_CASES:
        runs += [("float64", 2, ""), ("float64", 4, "")] if DEVICE == "cpu" else \
            [("float64", 2, "comm ipc"), ("float64", 4, "comm staged")]
    return runs


def case_of(xyz, want):
    """(structure, boundary, sevenn's values in LAMMPS' frame): periodic cells turned into
    LAMMPS' frame, the molecule (pbc F F F) into a box of its own (boundary f f f)"""
    s = read_xyz(xyz)
    if "pbc=\"F F F\"" in open(xyz).read().splitlines()[1]:
        s, rot, boundary = in_box(dict(s, cell=None)), [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "f f f"
    else:
        s, rot = to_lammps_frame(dict(s, pbc=(True, True, True)))
        s, boundary = reduced_tilts(s), "p p p"
    ref = {"energy": want["energy"], "energies": want["energies"], "forces": want["forces"]}
    if "atomic_virial" in want:  # Voigt xx yy zz yz xz xy, summed over atoms
        v = [sum(w[k] for w in want["atomic_virial"]) for k in range(6)]
        ref["virial"] = [[v[0], v[5], v[4]], [v[5], v[1], v[3]], [v[4], v[3], v[2]]]
    return s, boundary, rotated_reference(ref, rot)


def check_refusal(c, model, elements):
    """a multi-modal model without `modal` stops LAMMPS with its modalities named"""
    with tempfile.TemporaryDirectory() as tmp:
        s = read_xyz(os.path.join(FIXTURES, "sevenn.oxide.xyz"))
        s, _ = to_lammps_frame(dict(s, pbc=(True, True, True)))
        data = os.path.join(tmp, "data.test")
        write_data(data, s, elements)
        deck = (f"units metal\natom_style atomic\nboundary p p p\nread_data {data}\n"
                f"pair_style fusednequip\npair_coeff * * {model} {' '.join(elements)}\nrun 0\n")
        rc, out = run_lammps(tmp, deck, 1, check=False)
    c.check(rc != 0 and "multi-modal (modalities:" in out and "modal NAME" in out,
            f"{model} without modal: expected a refusal naming the modalities, got exit {rc}: "
            f"{out[-400:]}")


def main():
    c = Checker(f"LAMMPS vs sevenn fixtures ({DEVICE})")
    if DEVICE != "cpu" and not gpu_available():
        sys.exit(77)
    exe, site = python_with("torch", "numpy"), sevenn_site()
    if exe is None or site is None:
        print(f"SKIP: {'no Python with torch' if exe is None else 'no sevenn package'} "
              "(pip install --no-deps sevenn, or set FNQ_SEVENN_DIR)")
        sys.exit(77)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    tmp_models = tempfile.mkdtemp(prefix="fnq-sevenn-lammps-")
    for name in MODELS:
        ref = json.load(open(os.path.join(FIXTURES, name + ".json")))
        ckpt = ref["checkpoint"]
        ckpt = os.path.join(site, ckpt) if ckpt.startswith("sevenn/") else \
            os.path.join(FIXTURES, ckpt)
        if not os.path.exists(ckpt) and os.environ.get("FNQ_SEVENN_DIR"):
            print(f"{name}: {ckpt} is not in $FNQ_SEVENN_DIR, left out")
            continue
        model = os.path.join(tmp_models, name.split(".")[0] + ".fnqm")
        if not os.path.exists(model):
            p = subprocess.run([exe, "-m", "fusednequip.convert", ckpt, model],
                               capture_output=True, text=True, env=env)
            c.check(p.returncode == 0, f"{name}: conversion failed: {p.stderr.strip()}")
            if p.returncode != 0:
                continue
        modal = f"modal {ref['modal']}" if ref.get("modal") else ""
        for case, want in sorted(ref["cases"].items()):
            s, boundary, expect = case_of(os.path.join(FIXTURES, f"sevenn.{case}.xyz"),
                                          want["float64"])
            elements = sorted(set(s["symbols"]))
            if modal and case == "oxide":
                check_refusal(c, model, elements)
            one_rank = {}
            for dtype, ranks, comm in runs_of(case):
                tol = 1e-4 if dtype == "float32" and case == "close_pair" else TOL[dtype]
                with tempfile.TemporaryDirectory() as tmp:
                    got = single_point(tmp, s, elements, nprocs=ranks, model=model,
                                       style_args=f"dtype {dtype} device {DEVICE} {comm} {modal}",
                                       boundary=boundary)
                label = f"{name} {case} {dtype} {ranks} rank(s) {comm}".rstrip()
                compare(c, label, got, expect, tol, source="sevenn")
                if ranks == 1:
                    one_rank[dtype] = got
                else:  # the same sums in another order: to rounding of the 1-rank run
                    compare(c, label + " vs 1", got, one_rank[dtype], RANKS_TOL,
                            source="1 rank")
    c.finish()


main()
