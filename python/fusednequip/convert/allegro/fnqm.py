"""Allegro models in the .fnqm format (docs/model-format.md, "Allegro"): the reader's output
(reader.py: a config and float64 arrays, docs/allegro.md) written as a .fnqm file with
`"architecture": "allegro"`, and read back into the same config and arrays (what the numpy
reference, fusednequip.allegro_reference, evaluates). numpy only: no torch, no nequip.
"""
import json

import numpy as np

from ..fnqm_writer import FORMAT, VERSION, FnqmModel
from ..errors import ConversionError

ARCHITECTURE = "allegro"


def _mlp_out(model, cfg, arrays, name):
    """The MLP `name` (arrays name.0 .. name.K-1) as a header object"""
    spec = cfg["mlps"][name]
    return {"weights": [model.array(f"{name}.{k}", arrays[f"{name}.{k}"])
                        for k in range(spec["n_layers"])],
            "activation": spec["activation"]}


def to_fnqm(cfg, arrays):
    """FnqmModel of an Allegro model as reader.read_graph_model returns it"""
    m = FnqmModel()
    h = m.header
    a = lambda name: m.array(name, arrays[name])  # noqa: E731 - same name in file and arrays
    h["architecture"] = ARCHITECTURE
    h["family"] = "allegro"
    h["notes"] = f"converted from {cfg.get('made_by') or 'a nequip-allegro checkpoint'}"
    h["num_parameters"] = cfg.get("num_parameters")
    h["species"] = list(cfg["species"])
    h["type_names"] = list(cfg["type_names"])
    h["cutoff"] = cfg["r_max"]
    cut = cfg.get("per_edge_type_cutoff")
    h["per_edge_type_cutoff"] = None if cut is None else m.array(
        "per_edge_type_cutoff", np.asarray(cut, dtype=np.float64))
    h["radial_basis"] = {"n_basis": int(arrays["bessel_weights"].size),
                         "bessel_weights": a("bessel_weights"),
                         "polynomial_p": cfg["polynomial_p"]}
    h["spherical_harmonics"] = {"lmax": cfg["l_max"], "parity": "natural"}
    h["num_scalar_features"] = cfg["num_scalar_features"]
    h["num_tensor_features"] = cfg["num_tensor_features"]
    h["two_body"] = {"center_embed": a("center_embed"), "neighbor_embed": a("neighbor_embed"),
                     "basis_linear": _mlp_out(m, cfg, arrays, "basis_linear"),
                     "mlp": _mlp_out(m, cfg, arrays, "scalar_embed_mlp")}
    h["tensor_embed"] = _mlp_out(m, cfg, arrays, "env_embed_linear")
    h["first_projection"] = _mlp_out(m, cfg, arrays, "first_layer_env_embed_projection")
    h["env_sum_norm"] = a("env_sum_norm")
    h["layers"] = []
    for k, tp in enumerate(cfg["tps"]):
        if tp["irreps_in2"] != cfg["irreps_sh"]:
            raise ConversionError(f"layer {k}: tensor product with {tp['irreps_in2']}, not the "
                                  f"spherical harmonics {cfg['irreps_sh']}")
        h["layers"].append({"irreps_in": tp["irreps_in1"], "irreps_out": tp["irreps_out"],
                            "paths": [list(p) for p in tp["paths"]],
                            "path_channel_coupling": bool(tp["path_channel_coupling"]),
                            "path_weights": a(f"tps.{k}.weights"),
                            "latent_mlp": _mlp_out(m, cfg, arrays, f"latents.{k}")})
    h["edge_readout"] = _mlp_out(m, cfg, arrays, "edge_readout")
    h["edge_sum_norm"] = a("edge_sum_norm")
    h["energy_scale"] = a("energy_scale")
    h["energy_shift"] = a("energy_shift")
    h["pair_potential"] = cfg.get("pair_potential")
    return m


def _records(f, listed):
    """The .npy records after the header line, checked against the header's list"""
    out = {}
    for entry in listed:
        v = np.load(f, allow_pickle=False)
        if list(v.shape) != list(entry["shape"]):
            raise ValueError(f"array {entry['name']}: shape {list(v.shape)}, the header lists "
                             f"{entry['shape']}")
        out[entry["name"]] = np.asarray(v, dtype=np.float64)
    if f.read(1):
        raise ValueError("data after the last array")
    return out


def read_fnqm(path):
    """(config, arrays) of an Allegro .fnqm file, in reader.py's form"""
    with open(path, "rb") as f:
        h = json.loads(f.readline())
        if h.get("format") != FORMAT or h.get("version") != VERSION:
            raise ValueError(f"{path}: not a version {VERSION} .fnqm file")
        if h.get("architecture") != ARCHITECTURE:
            raise ValueError(f"{path}: architecture {h.get('architecture')!r}, not Allegro")
        stored = _records(f, h["arrays"])
    arrays, mlps = {}, {}

    def take(name, key=None):
        arrays[key or name] = stored[name]

    def mlp(obj, name):
        for k, w in enumerate(obj["weights"]):
            arrays[f"{name}.{k}"] = stored[w]
        mlps[name] = {"n_layers": len(obj["weights"]), "activation": obj["activation"]}

    rb, tb = h["radial_basis"], h["two_body"]
    take(rb["bessel_weights"], "bessel_weights")
    take(tb["center_embed"], "center_embed")
    take(tb["neighbor_embed"], "neighbor_embed")
    mlp(tb["basis_linear"], "basis_linear")
    mlp(tb["mlp"], "scalar_embed_mlp")
    mlp(h["tensor_embed"], "env_embed_linear")
    mlp(h["first_projection"], "first_layer_env_embed_projection")
    take(h["env_sum_norm"], "env_sum_norm")
    lmax = h["spherical_harmonics"]["lmax"]
    irreps_sh = "+".join(f"1x{l}{'e' if l % 2 == 0 else 'o'}" for l in range(lmax + 1))
    tps = []
    for k, layer in enumerate(h["layers"]):
        take(layer["path_weights"], f"tps.{k}.weights")
        mlp(layer["latent_mlp"], f"latents.{k}")
        tps.append({"irreps_in1": layer["irreps_in"], "irreps_in2": irreps_sh,
                    "irreps_out": layer["irreps_out"], "paths": layer["paths"],
                    "path_channel_coupling": layer["path_channel_coupling"]})
    mlp(h["edge_readout"], "edge_readout")
    for name in ("edge_sum_norm", "energy_scale", "energy_shift"):
        take(h[name], name)
    cut = h["per_edge_type_cutoff"]
    cfg = {"family": "allegro", "type_names": h["type_names"], "species": h["species"],
           "r_max": h["cutoff"],
           "per_edge_type_cutoff": None if cut is None else stored[cut].tolist(),
           "polynomial_p": rb["polynomial_p"], "l_max": lmax, "irreps_sh": irreps_sh,
           "num_layers": len(tps), "num_scalar_features": h["num_scalar_features"],
           "num_tensor_features": h["num_tensor_features"], "mlps": mlps, "tps": tps,
           "pair_potential": h["pair_potential"], "num_parameters": h.get("num_parameters")}
    return cfg, arrays
