"""The library's Allegro engine (core/src/allegro_eval.inc) against nequip-allegro's own
float64 outputs (tests/fixtures/allegro, made by nequip-allegro itself): each fixture written
as .fnqm and evaluated through FusedNequIPCalculator on the CPU gives nequip-allegro's energy,
per-atom energies, forces and stress to 1e-10 relative in float64 and 1e-5 in float32
(relative: max |ours - nequip| / max |nequip| per quantity); the forces are the negative
gradient of the energy (finite differences), translation and rotation leave the energy alone,
ghost atoms without owners are taken as a LAMMPS rank passes them (a local model exchanges
nothing), and a CUDA context is refused by name (no GPU engine yet) while device auto runs on
the CPU.
"""
import glob
import json
import os

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("ase.io")
from ase.io import read  # noqa: E402

from compare import check_ase_case, rel  # noqa: E402
from fusednequip import FusedNequIPCalculator, Model  # noqa: E402
from fusednequip.convert.allegro_fnqm import to_fnqm  # noqa: E402

from fusednequip import allegro_reference as R  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "tests", "fixtures", "allegro")
WEIGHTS = sorted(glob.glob(os.path.join(FIXTURES, "*.weights.npz")))
TOL = {"float64": 1e-10, "float32": 1e-5}


def _name(p):
    return os.path.basename(p).split(".")[0]


def _model(npz, tmp_path):
    cfg, arrays = R.load_npz(npz)
    path = tmp_path / (_name(npz) + ".fnqm")
    to_fnqm(cfg, arrays).write(path)
    return Model(str(path))


def test_fixtures_present():
    assert len(WEIGHTS) >= 3, f"Allegro fixture weights missing in {FIXTURES}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("npz", WEIGHTS, ids=[_name(p) for p in WEIGHTS])
def test_engine_equals_nequip_allegro(npz, dtype, tmp_path):
    model = _model(npz, tmp_path)
    ref = json.load(open(os.path.join(FIXTURES, _name(npz) + ".json")))
    assert model.family == "allegro" and model.species == ref["type_names"]
    calc = FusedNequIPCalculator(model, device="cpu", dtype=dtype)
    tol = TOL[dtype]
    for case, want in ref["cases"].items():
        atoms = read(os.path.join(FIXTURES, want["xyz"]))
        atoms.calc = calc
        check_ase_case(atoms, want, tol, case)


@pytest.mark.parametrize("npz", WEIGHTS, ids=[_name(p) for p in WEIGHTS])
def test_forces_are_the_energy_gradient_and_invariant(npz, tmp_path):
    model = _model(npz, tmp_path)
    ref = json.load(open(os.path.join(FIXTURES, _name(npz) + ".json")))
    atoms = read(os.path.join(FIXTURES, ref["cases"]["molecule"]["xyz"]))
    atoms.calc = FusedNequIPCalculator(model, device="cpu", dtype="float64")
    e0, f = atoms.get_potential_energy(), atoms.get_forces()
    h = 1e-5
    for a in range(len(atoms)):
        for k in range(3):
            p = atoms.positions.copy()
            atoms.positions[a, k] += h
            ep = atoms.get_potential_energy()
            atoms.positions[a, k] -= 2 * h
            em = atoms.get_potential_energy()
            atoms.positions = p
            assert abs(-(ep - em) / (2 * h) - f[a, k]) < 1e-6 * max(1.0, abs(f).max()), (a, k)
    rot = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))[0]
    atoms.positions = atoms.positions @ rot.T + np.array([0.3, -1.1, 2.0])
    assert abs(atoms.get_potential_energy() - e0) < 1e-10 * max(1.0, abs(e0))
    assert rel(atoms.get_forces(), f @ rot.T) < 1e-10


@pytest.mark.parametrize("npz", WEIGHTS, ids=[_name(p) for p in WEIGHTS])
def test_ghosts_as_lammps_gives_them(npz, tmp_path):
    """A local model takes ghost atoms as they are (no owner map, no exchange), as a LAMMPS rank
    passes them: the periodic images within reach as ghosts, a full list of the owned atoms'
    pairs to them, no shifts. The owned atoms' energies, and the forces once each ghost's are
    added to its owner, equal the library's own periodic evaluation."""
    import ctypes

    from ase.neighborlist import neighbor_list

    from fusednequip import Context
    from fusednequip._lib import lib
    model = _model(npz, tmp_path)
    ref = json.load(open(os.path.join(FIXTURES, _name(npz) + ".json")))
    atoms = read(os.path.join(FIXTURES, ref["cases"]["triclinic"]["xyz"]))
    sp = np.array(model.species_indices(atoms.get_chemical_symbols()), dtype=np.int32)
    ctx = Context(model, device="cpu", dtype="float64")
    e0, ea0, f0, v0 = ctx.compute(atoms.positions, sp, atoms.cell.array, atoms.pbc)
    i, j, shift = neighbor_list("ijS", atoms, model.cutoff + 0.5)
    n = len(atoms)
    ghosts = {}  # (atom, image) -> ghost index
    send = np.array(j, dtype=np.int64)
    for e in range(len(i)):
        if shift[e].any():
            send[e] = ghosts.setdefault((int(j[e]), tuple(shift[e])), n + len(ghosts))
    owner = np.array([a for a, _ in ghosts], dtype=np.int64)
    images = np.array([img for _, img in ghosts], dtype=np.float64).reshape(-1, 3)
    pos = np.vstack([atoms.positions, atoms.positions[owner] + images @ atoms.cell.array])
    species = np.concatenate([sp, sp[owner]]).astype(np.int32)
    n_all, recv = len(pos), np.array(i, dtype=np.int64)
    energy = ctypes.c_double()
    energies = np.empty(n)
    forces = np.empty((n_all, 3))
    virial = np.empty(6)
    st = ctx._call(lib.fnq_ctx_compute_graph, n, n_all, pos.reshape(-1), species, len(recv), recv,
                   send, None, None, ctypes.byref(energy), energies, forces.reshape(-1), virial,
                   None)
    assert st == 0, "a local model's ghosts without owners were refused"
    folded = forces[:n].copy()
    np.add.at(folded, owner, forces[n:])
    assert len(ghosts) > 0 and abs(forces[n:]).max() > 0
    assert abs(energy.value - e0) <= 1e-12 * abs(e0)
    assert rel(energies, ea0) < 1e-12 and rel(folded, f0) < 1e-12 and rel(virial, v0) < 1e-12


def test_cuda_is_refused_by_name(tmp_path):
    from fusednequip import Context
    from fusednequip.errors import FusedNequipError
    model = _model(WEIGHTS[0], tmp_path)
    with pytest.raises(FusedNequipError, match="Allegro"):
        Context(model, device="cuda", dtype="float32")
    assert Context(model, device="auto").device == "cpu"


@pytest.mark.parametrize("edit, named", [
    (lambda h: h.update(num_tensor_features=h["num_tensor_features"] + 1), "tensor_embed"),
    (lambda h: h["layers"][0]["paths"].append([0, 9, 0]), "layers[0].paths"),
    (lambda h: h["layers"][-1].update(irreps_out="1x0e+1x1o"), "layers[%d].irreps_out"),
    (lambda h: h["edge_readout"].update(activation="swish"), "edge_readout.activation"),
    (lambda h: h.pop("env_sum_norm"), "env_sum_norm"),
])
def test_bad_header_is_refused_by_field(edit, named, tmp_path):
    """an Allegro header that does not fit its arrays or the math is refused, the field named"""
    from fusednequip.errors import FusedNequipError
    cfg, arrays = R.load_npz(WEIGHTS[-1])
    path = tmp_path / "model.fnqm"
    to_fnqm(cfg, arrays).write(path)
    first, rest = open(path, "rb").read().split(b"\n", 1)
    header = json.loads(first)
    edit(header)
    path.write_bytes(json.dumps(header).encode() + b"\n" + rest)
    if "%d" in named:
        named = named % (len(header["layers"]) - 1)
    with pytest.raises(FusedNequipError, match=named.replace("[", r"\[").replace("]", r"\]")):
        Model(str(path))
