"""Find and load a SevenNet checkpoint with torch alone: no sevenn class is pickled in it, so
sevenn need not be importable at run time (only installed, for the package keywords)."""
import importlib.util
import os
import re

from ..errors import ConversionError

# the keywords of sevenn.util.pretrained_name_to_path for the checkpoints inside the wheel
KEYWORDS = {
    "7net-0": "SevenNet_0__11Jul2024/checkpoint_sevennet_0.pth",
    "7net-0_11July2024": "SevenNet_0__11Jul2024/checkpoint_sevennet_0.pth",
    "7net-0_22May2024": "SevenNet_0__22May2024/checkpoint_sevennet_0.pth",
    "7net-l3i5": "SevenNet_l3i5/checkpoint_l3i5.pth",
    "7net-mf-0": "SevenNet_MF_0/checkpoint_sevennet_mf_0.pth",
}

# key names of checkpoints older than the current module names (7net-0_22May2024)
_OLD_NAMES = [
    (r"^EdgeEmbedding\.", "edge_embedding."),
    (r"^(\d+) self connection intro\.", r"\1_self_connection_intro."),
    (r"^(\d+) self interaction (\d)\.", r"\1_self_interaction_\2."),
    (r"^(\d+) convolution\.", r"\1_convolution."),
    (r"^(\d+) equivariant gate\.", r"\1_equivariant_gate."),
    (r"\.denumerator$", ".denominator"),
    (r"^reducing nn input to hidden\.", "reduce_input_to_hidden."),
    (r"^reducing nn hidden to energy\.", "reduce_hidden_to_energy."),
    (r"^rescale atomic energy\.", "rescale_atomic_energy."),
]


def keyword_path(name):
    """The checkpoint file of a package keyword (7net-0, ...), found in the installed sevenn
    without importing it; None if `name` is not a keyword."""
    if name not in KEYWORDS:
        return None
    spec = importlib.util.find_spec("sevenn")
    if spec is None or not spec.submodule_search_locations:
        raise ConversionError(f"{name}: a SevenNet keyword, but the sevenn package is not "
                              f"installed (pip install sevenn; --no-deps is enough)")
    path = os.path.join(list(spec.submodule_search_locations)[0], "pretrained_potentials",
                        KEYWORDS[name])
    if not os.path.isfile(path):
        raise ConversionError(f"{name}: the installed sevenn has no {KEYWORDS[name]}")
    return path


def is_sevenn_checkpoint(pickle_bytes):
    """A torch archive's data.pkl that holds a SevenNet training config."""
    return b"model_state_dict" in pickle_bytes and b"irreps_manual" in pickle_bytes


def load(path):
    """(config dict, state dict of float64 NumPy arrays under current key names)."""
    import torch
    try:
        ck = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - torch raises many kinds
        raise ConversionError(f"{path}: not a readable SevenNet checkpoint "
                              f"({str(err).strip()[:300]})") from err
    if not isinstance(ck, dict) or "config" not in ck or "model_state_dict" not in ck:
        raise ConversionError(f"{path}: not a SevenNet checkpoint (no config and "
                              f"model_state_dict)")
    sd = {}
    for key, value in ck["model_state_dict"].items():
        for pattern, repl in _OLD_NAMES:
            key = re.sub(pattern, repl, key)
        sd[key] = value.detach().to(torch.float64).numpy() if value.is_floating_point() \
            else value.numpy()
    return dict(ck["config"]), sd

