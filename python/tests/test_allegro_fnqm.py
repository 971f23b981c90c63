"""Allegro models in the .fnqm format (docs/model-format.md, "Allegro"): each fixture of
tests/fixtures/allegro written as .fnqm and read back gives the same arrays, bit for bit, and
the numpy reference evaluating what was read back gives nequip-allegro's own float64 outputs;
and the converter writes such a file from the committed checkpoints (where nequip-allegro is
installed). The library's engine on these files: test_allegro_engine.py.
"""
import glob
import json
import os

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("ase.io")
from compare import check_allegro_cases  # noqa: E402 (after the skips: it needs numpy)

from fusednequip import allegro_reference as R  # noqa: E402
from fusednequip.convert.allegro.fnqm import read_fnqm, to_fnqm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "tests", "fixtures", "allegro")
WEIGHTS = sorted(glob.glob(os.path.join(FIXTURES, "*.weights.npz")))


def _name(p):
    return os.path.basename(p).split(".")[0]


def test_fixtures_present():
    assert len(WEIGHTS) >= 3, f"Allegro fixture weights missing in {FIXTURES}"


@pytest.mark.parametrize("npz", WEIGHTS, ids=[_name(p) for p in WEIGHTS])
def test_round_trip_equals_nequip_allegro(npz, tmp_path):
    cfg, arrays = R.load_npz(npz)
    path = tmp_path / "model.fnqm"
    to_fnqm(cfg, arrays).write(path)
    cfg2, arrays2 = read_fnqm(path)
    assert sorted(arrays2) == sorted(arrays)
    for k in arrays:
        assert np.array_equal(arrays2[k], arrays[k]), k
    for k in ("type_names", "species", "r_max", "per_edge_type_cutoff", "polynomial_p", "l_max",
              "irreps_sh", "num_layers", "num_scalar_features", "num_tensor_features", "mlps",
              "tps", "pair_potential"):
        assert cfg2[k] == cfg[k], k
    ref = json.load(open(os.path.join(FIXTURES, _name(npz) + ".json")))
    check_allegro_cases(R, cfg2, arrays2, ref, FIXTURES)


CKPTS = sorted(glob.glob(os.path.join(FIXTURES, "*.ckpt")))


@pytest.mark.parametrize("ckpt", CKPTS, ids=[_name(p) for p in CKPTS])
def test_converter_writes_the_committed_weights(ckpt, tmp_path):
    pytest.importorskip("allegro")
    from fusednequip.convert import convert
    out = tmp_path / "model.fnqm"
    convert(ckpt, str(out))
    cfg, arrays = read_fnqm(out)
    want_cfg, want = R.load_npz(ckpt[:-5] + ".weights.npz")
    assert cfg["tps"] == want_cfg["tps"] and cfg["mlps"] == want_cfg["mlps"]
    assert sorted(arrays) == sorted(want)
    for k in want:
        assert np.array_equal(arrays[k], want[k]), k
    head = json.loads(open(out, "rb").readline())
    assert head["architecture"] == "allegro" and head["species"] == want_cfg["species"]


def test_coupling_check_takes_a_float32_models_rounding():
    """A float32 model stores its coupling tensors rounded to float32 (the published Allegro
    models are float32): the reader accepts that rounding and nothing more; a float64 model's
    must agree to 1e-12."""
    from fusednequip.convert.allegro.reader import same_coupling
    cfg, _ = R.load_npz(WEIGHTS[-1])
    ours = R._tp_tensor(cfg["tps"][0])
    rounded = ours.astype(np.float32).astype(np.float64)
    assert np.abs(rounded - ours).max() > 1e-12  # the check below is not vacuous
    assert same_coupling(ours, rounded, "torch.float32")
    assert not same_coupling(ours, rounded, "torch.float64")
    assert same_coupling(ours, ours, "torch.float64")
    wrong = rounded.copy()
    wrong.flat[np.argmax(np.abs(ours))] *= 1.001
    assert not same_coupling(ours, wrong, "torch.float32")
    assert not same_coupling(ours, rounded[:-1], "torch.float32")
