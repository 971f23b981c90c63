"""The numpy Allegro reference (python/fusednequip/allegro_reference.py) against
nequip-allegro's own float64 outputs (tests/fixtures/allegro): energy and per-atom energies
to 1e-12 relative, forces and stress (finite differences of the reference's energy) to 1e-10
(relative: max |ours - nequip| / max |nequip| per quantity). Needs numpy and ASE, not torch:
the weights are the committed `<model>.weights.npz`. Where nequip-allegro is installed, the
reader (fusednequip.convert.allegro.reader) extracts the same arrays from the committed
checkpoints.
"""
import glob
import importlib.util
import json
import os

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("ase.io")
from compare import check_allegro_cases  # noqa: E402 (after the skips: it needs numpy)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "tests", "fixtures", "allegro")
REFS = sorted(glob.glob(os.path.join(FIXTURES, "*.json")))


def _reference():
    # by path: importing the fusednequip package loads the C library, which this does not need
    spec = importlib.util.spec_from_file_location(
        "allegro_reference", os.path.join(HERE, "..", "fusednequip", "allegro_reference.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


R = _reference()


def test_fixtures_present():
    assert len(REFS) >= 3, f"Allegro fixture references missing in {FIXTURES}"


@pytest.mark.parametrize("ref_path", REFS, ids=[os.path.basename(p)[:-5] for p in REFS])
def test_reference_equals_nequip_allegro(ref_path):
    ref = json.load(open(ref_path))
    cfg, arrays = R.load_npz(os.path.join(FIXTURES, ref["model"] + ".weights.npz"))
    assert cfg["family"] == "allegro" and cfg["type_names"] == ref["type_names"]
    check_allegro_cases(R, cfg, arrays, ref, FIXTURES)


CKPTS = sorted(glob.glob(os.path.join(FIXTURES, "*.ckpt")))


@pytest.mark.parametrize("ckpt", CKPTS, ids=[os.path.basename(p)[:-5] for p in CKPTS])
def test_reader_gives_the_committed_weights(ckpt):
    pytest.importorskip("allegro")
    from fusednequip.convert.allegro.reader import read_allegro
    cfg, arrays = read_allegro(ckpt)
    want_cfg, want = R.load_npz(ckpt[:-5] + ".weights.npz")
    drop = ("made_by", "read_by")  # versions: only packages record the maker
    assert {k: v for k, v in cfg.items() if k not in drop} == \
        {k: v for k, v in want_cfg.items() if k not in drop}
    assert sorted(arrays) == sorted(want)
    for k in want:
        assert np.array_equal(arrays[k], want[k]), k


def test_neighbour_list_equals_ase():
    """The reference's edges (a skewed cell shorter than the cutoff, atoms outside it) are
    ASE's"""
    from ase import Atoms
    from ase.neighborlist import neighbor_list
    rng = np.random.default_rng(3)
    cell = np.array([[2.9, 0.0, 0.0], [2.1, 2.4, 0.0], [-1.3, 0.9, 2.7]])
    atoms = Atoms("H4", positions=rng.uniform(-3, 6, (4, 3)), cell=cell, pbc=True)
    i, j, r = R.edges(atoms.positions, cell, atoms.pbc, 4.3)
    ai, aj, ad = neighbor_list("ijd", atoms, 4.3)
    ours = sorted(zip(i, j, np.round(np.linalg.norm(r, axis=1), 9)))
    theirs = sorted(zip(ai, aj, np.round(ad, 9)))
    assert ours == theirs
