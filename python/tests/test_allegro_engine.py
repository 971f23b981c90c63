"""The library's Allegro engines, on the CPU (core/src/allegro/allegro_eval.inc) and on the GPU
(kernels/allegro/allegro_engine.cu), against nequip-allegro's own float64 outputs
(tests/fixtures/allegro, made by nequip-allegro itself): each fixture written as .fnqm and
evaluated through FusedNequIPCalculator gives nequip-allegro's energy, per-atom energies, forces
and stress to 1e-10 relative in float64 and 1e-5 in float32 (relative: max |ours - nequip| /
max |nequip| per quantity); the forces are the negative gradient of the energy (finite
differences), translation and rotation leave the energy alone, ghost atoms without owners are
taken as a LAMMPS rank passes them (a local model exchanges nothing). On the GPU also: a
structure cut into many chunks (FNQ_ALLEGRO_CHUNK) gives the CPU's float64 results and the
same bits on every call. The GPU cases skip without a GPU (tests/gpu_pytest.py runs them as the
CTest gpu_allegro, where nothing may skip).
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
from fusednequip.convert.allegro.fnqm import to_fnqm  # noqa: E402

from fusednequip import allegro_reference as R  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "tests", "fixtures", "allegro")
WEIGHTS = sorted(glob.glob(os.path.join(FIXTURES, "*.weights.npz")))
TOL = {"float64": 1e-10, "float32": 1e-5}


def _gpu_present():
    from fusednequip._lib import lib
    names = [lib.fnq_backend_name(k).decode() for k in range(lib.fnq_backend_count())]
    return "cuda" in names and lib.fnq_cuda_device_count() > 0


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not _gpu_present(), reason="no CUDA backend or no GPU"))]


def _name(p):
    return os.path.basename(p).split(".")[0]


def _model(npz, tmp_path):
    cfg, arrays = R.load_npz(npz)
    path = tmp_path / (_name(npz) + ".fnqm")
    to_fnqm(cfg, arrays).write(path)
    return Model(str(path))


def test_fixtures_present():
    assert len(WEIGHTS) >= 3, f"Allegro fixture weights missing in {FIXTURES}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("npz", WEIGHTS, ids=[_name(p) for p in WEIGHTS])
def test_engine_equals_nequip_allegro(npz, dtype, device, tmp_path):
    model = _model(npz, tmp_path)
    ref = json.load(open(os.path.join(FIXTURES, _name(npz) + ".json")))
    assert model.family == "allegro" and model.species == ref["type_names"]
    calc = FusedNequIPCalculator(model, device=device, dtype=dtype)
    assert calc.context.device == device
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


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("npz", WEIGHTS, ids=[_name(p) for p in WEIGHTS])
def test_ghosts_as_lammps_gives_them(npz, device, tmp_path):
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
    ctx = Context(model, device=device, dtype="float64")
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


def test_device_auto(tmp_path):
    """device auto runs an Allegro model on the GPU when there is one"""
    from fusednequip import Context
    model = _model(WEIGHTS[0], tmp_path)
    assert Context(model, device="auto").device == ("cuda" if _gpu_present() else "cpu")


def _supercell(npz, tmp_path, seed):
    """the fixture's model, its small cell repeated 2x2x2 and rattled (compute's arguments),
    and the CPU's float64 results there"""
    from fusednequip import Context
    model = _model(npz, tmp_path)
    ref = json.load(open(os.path.join(FIXTURES, _name(npz) + ".json")))
    atoms = read(os.path.join(FIXTURES, ref["cases"]["small_cell"]["xyz"])).repeat((2, 2, 2))
    atoms.rattle(0.02, seed=seed)
    sp = np.array(model.species_indices(atoms.get_chemical_symbols()), dtype=np.int32)
    args = (atoms.positions, sp, atoms.cell.array, atoms.pbc)
    return model, args, Context(model, device="cpu", dtype="float64").compute(*args)


def _check_repeatable(model, args, want, dtype, label, device="cuda"):
    """a context made now (the FNQ_ variables set now) gives `want` within dtype's bar, and the
    same bits on a second call"""
    from fusednequip import Context
    ctx = Context(model, device=device, dtype=dtype)
    first = ctx.compute(*args)
    for got, exp, what in zip(first, want, ["energy", "energies", "forces", "virial"]):
        assert rel(got, exp) <= TOL[dtype], f"{label} {what}: {rel(got, exp):.2e}"
    again = ctx.compute(*args)
    for a, b in zip(first, again):
        assert np.array_equal(np.asarray(a), np.asarray(b)), f"{label}: not bitwise repeatable"


@pytest.mark.skipif(not _gpu_present(), reason="no CUDA backend or no GPU")
@pytest.mark.parametrize("npz", WEIGHTS, ids=[_name(p) for p in WEIGHTS])
def test_gpu_chunks_and_repeats(npz, tmp_path, monkeypatch):
    """the GPU engine cuts a structure into chunks of whole centres: with chunks of ~60 edges
    (one to a few atoms each) a 2x2x2 supercell gives the CPU's float64 results, and every
    call the same bits in both precisions"""
    model, args, want = _supercell(npz, tmp_path, seed=5)
    monkeypatch.setenv("FNQ_ALLEGRO_CHUNK", "60")
    for dtype in TOL:
        _check_repeatable(model, args, want, dtype, dtype)


@pytest.mark.skipif(not _gpu_present(), reason="no CUDA backend or no GPU")
@pytest.mark.parametrize("npz", WEIGHTS, ids=[_name(p) for p in WEIGHTS])
def test_gpu_tf32(npz, tmp_path, monkeypatch):
    """FNQ_TF32=1 (float32): the MLPs' GEMMs on tensor cores with the 3xTF32 split give the
    CPU's float64 results within the float32 bar at the fixtures' widths (at Allegro-OAM-L's,
    ~5e-6: docs/allegro.md) and the same bits on a repeated call, in chunks too"""
    model, args, want = _supercell(npz, tmp_path, seed=7)
    monkeypatch.setenv("FNQ_TF32", "1")
    for chunk in ("0", "60"):
        monkeypatch.setenv("FNQ_ALLEGRO_CHUNK", chunk)
        _check_repeatable(model, args, want, "float32", f"chunk {chunk}")


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
