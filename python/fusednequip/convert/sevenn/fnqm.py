"""A SevenNet checkpoint's network as .fnqm (../shared/reference/sevenn.md sections 2-4).

SevenNet's interaction layer is NequIP 0.6's, laid out by the same e3nn rules
(e3nn_layout.conv_layer with the next entry of `irreps_manual` as the hidden irreps); what
differs is data: species in the config's (alphabetical) order, a self-connection shared by
all species, messages divided by the stored denominator, trained Bessel frequencies over r_c,
the XPLOR envelope, and for checkpoints before sevenn 0.11 radial weights in creation order
with the sign of some paths' Clebsch-Gordan coefficients flipped (decided per path against
the exact coefficients, as sevenn's own patch does).
"""
import math

import numpy as np

from ..cg import wigner_3j
from ..e3nn_layout import parse_irreps
from ..elements import is_element
from ..errors import ConversionError
from ..nequip.common import activation, build_fnqm
from . import reader

# e3nn's normalize2mom constants (e3nn 0.5-0.6: float64 samples of torch's generator, seed 0)
NORMALIZE2MOM = {"silu": 1.6791767923989418, "tanh": 1.5937334472592695}
SUPPORTED = {"interaction_type": {"nequip"}, "self_connection_type": {"linear", "nequip"},
             "radial_basis_name": {"bessel"}, "cutoff_function_name": {"poly_cut", "XPLOR"}}


def _version(cfg, path):
    try:
        return tuple(int(x) for x in str(cfg["version"]).split(".")[:3])
    except (KeyError, ValueError) as err:
        raise ConversionError(f"{path}: config has no readable version "
                              f"({cfg.get('version')!r})") from err


def _act(name, where):
    if name not in NORMALIZE2MOM:
        raise ConversionError(f"{where}: activation '{name}' is not supported "
                              f"(supported: {sorted(NORMALIZE2MOM)})")
    return activation(name, NORMALIZE2MOM[name])


def _need(sd, key, path):
    if key not in sd:
        raise ConversionError(f"{path}: state dict entry {key} is missing")
    return sd[key]


def _refuse_unsupported(cfg, path):
    for key in ("interaction_type", "self_connection_type"):
        values = cfg.get(key, "nequip" if key == "interaction_type" else "linear")
        for v in values if isinstance(values, list) else [values]:
            if v not in SUPPORTED[key]:
                raise ConversionError(f"{path}: config {key} '{v}' is not supported "
                                      f"(supported: {sorted(SUPPORTED[key])})")
    name = cfg.get("radial_basis", {}).get("radial_basis_name", "bessel")
    if name not in SUPPORTED["radial_basis_name"]:
        raise ConversionError(f"{path}: config radial_basis.radial_basis_name '{name}' is not "
                              f"supported (bessel only)")
    name = cfg.get("cutoff_function", {}).get("cutoff_function_name", "poly_cut")
    if name not in SUPPORTED["cutoff_function_name"]:
        raise ConversionError(f"{path}: config cutoff_function.cutoff_function_name '{name}' "
                              f"is not supported (poly_cut, XPLOR)")
    for key in ("use_bias_in_linear", "readout_as_fcn", "use_modal_node_embedding",
                "use_modal_wise_scale"):
        if cfg.get(key):
            raise ConversionError(f"{path}: config {key} true is not supported")
    if cfg.get("use_modality"):
        raise ConversionError(f"{path}: a multi-modal model (config use_modality, modalities "
                              f"{sorted(cfg.get('_modal_map', {}))}) is not supported yet")


def _species(cfg, path):
    species = list(cfg.get("chemical_species") or [])
    if species == ["univ"] or cfg.get("chemical_species") == "univ":
        raise ConversionError(f"{path}: universal species (config chemical_species 'univ', "
                              f"119 classes) are not supported yet")
    for s in species:
        if not is_element(s):
            raise ConversionError(f"{path}: config chemical_species has '{s}', not an element")
    if len(species) != cfg.get("_number_of_species", len(species)):
        raise ConversionError(f"{path}: config chemical_species lists {len(species)} elements, "
                              f"_number_of_species is {cfg['_number_of_species']}")
    return species


def _radial_columns(sd, t, lay, irreps_in, sorted_weights, path):
    """Layer t's radial MLP matrices (e3nn FullyConnectedNet: W / sqrt(fan-in)) and its paths
    in the order of the last matrix's columns, with flipped Clebsch-Gordan signs undone."""
    q = f"{t}_convolution.weight_nn.layer"
    keys = sorted((k for k in sd if k.startswith(q) and k.endswith(".weight")),
                  key=lambda k: int(k[len(q):].split(".")[0]))
    if not keys:
        raise ConversionError(f"{path}: layer {t} has no radial MLP ({q}0.weight)")
    mats = [sd[k] / math.sqrt(sd[k].shape[0]) for k in keys]
    paths = [list(p) for p in lay["paths"]]
    n_weights = sum(irreps_in[a][0] for a, _, _ in paths)
    if mats[-1].shape[1] != n_weights:
        raise ConversionError(f"{path}: layer {t} radial MLP gives {mats[-1].shape[1]} weights, "
                              f"the layout needs {n_weights}")
    order = list(range(len(paths)))  # the paths in the order of the stored columns
    if sorted_weights:  # sevenn >= 0.11: sorted by message irrep, stable
        order = sorted(order, key=lambda k: paths[k][2])
    mats[-1] = mats[-1].copy()
    start = 0
    for k in order:
        a, l2, b = paths[k]
        n, l1, l3 = irreps_in[a][0], irreps_in[a][1], lay["irreps_messages"][b][1]
        key = f"{t}_convolution.convolution._compiled_main_left_right._w3j_{l1}_{l2}_{l3}"
        if key in sd:  # stored only for l1, l2, l3 > 0
            exact, stored = wigner_3j(l1, l2, l3), sd[key]
            if np.abs(stored + exact).max() < 1e-6:
                mats[-1][:, start:start + n] *= -1.0
            elif np.abs(stored - exact).max() >= 1e-6:
                raise ConversionError(f"{path}: {key} matches neither sign of the exact "
                                      f"Clebsch-Gordan coefficients")
        start += n
    return mats, [paths[k] for k in order]


def convert_sevenn(path):
    cfg, sd = reader.load(path)
    version = _version(cfg, path)
    _refuse_unsupported(cfg, path)
    species = _species(cfg, path)
    T = len(species)
    if cfg.get("is_parity", False):
        raise ConversionError(f"{path}: config is_parity true is not supported yet")
    irreps = [parse_irreps(s) for s in cfg["irreps_manual"]]
    n_layers = int(cfg["num_convolution_layer"])
    if len(irreps) != n_layers + 1:
        raise ConversionError(f"{path}: config irreps_manual has {len(irreps)} entries for "
                              f"{n_layers} layers (needs {n_layers + 1})")
    lmax = int(cfg["lmax"])
    irreps_sh = [(1, l, 1) for l in range(lmax + 1)]  # parity off: every Y_l labelled e
    cut = cfg.get("cutoff_function", {})
    normalize_sph = bool(cfg.get("_normalize_sph", False))  # absent: False (sevenn <= 0.9)
    envelope = None
    if cut.get("cutoff_function_name") == "XPLOR":
        envelope = {"kind": "xplor", "r_on": float(cut["cutoff_on"])}
    rc = float(cfg["cutoff"])
    coeffs = _need(sd, "edge_embedding.basis_function.coeffs", path).ravel()

    w = _need(sd, "onehot_to_feature_x.linear.weight", path)
    F0 = irreps[0][0][0]
    if len(irreps[0]) != 1 or irreps[0][0][1] != 0 or w.size != T * F0:
        raise ConversionError(f"{path}: node embedding onehot_to_feature_x ({w.size} weights) "
                              f"does not map {T} species onto {cfg['irreps_manual'][0]}")
    embedding = w.reshape(T, F0) / math.sqrt(T)  # e3nn Linear of a one-hot

    sc_types = cfg.get("self_connection_type", "linear")
    acts_scalar, acts_gate = cfg.get("act_scalar", {}), cfg.get("act_gate", {})
    radial_act = _act(cfg.get("act_radial", "silu"), f"{path}: config act_radial")
    layers = []
    for t in range(n_layers):
        where = f"{path}: layer {t}"
        sc_type = sc_types[t] if isinstance(sc_types, list) else sc_types
        p = f"{t}_"
        L = {
            "hidden": irreps[t + 1], "expect_out": irreps[t + 1],
            "scalar_acts": lambda l, par, k, w=where: _act(acts_scalar["e" if par > 0 else "o"],
                                                          f"{w}: config act_scalar"),
            "gate_acts": lambda l, par, k, w=where: _act(acts_gate["e" if par > 0 else "o"],
                                                        f"{w}: config act_gate"),
            "linear_1": _need(sd, p + "self_interaction_1.linear.weight", path),
            "sender_scale": 1.0 / float(_need(sd, p + "convolution.denominator", path).ravel()[0]),
            "radial_act": radial_act,
            "linear_2": _need(sd, p + "self_interaction_2.linear.weight", path),
            "resnet": False,
        }
        if sc_type == "linear":
            wsc = _need(sd, p + "self_connection_intro.linear.weight", path)
            L["self_connection"] = lambda i, g, w=wsc: (w.reshape(1, -1), np.ones((T, 1)))
        else:
            from ..e3nn_layout import self_connection_per_species
            wsc = _need(sd, p + "self_connection_intro.fc_tensor_product.weight", path)
            L["self_connection"] = lambda i, g, w=wsc: self_connection_per_species(
                w, i, g, np.eye(T))
        L["radial_for"] = lambda lay, irreps_in, t=t: _radial_columns(
            sd, t, lay, irreps_in, version >= (0, 11, 0), path)
        layers.append(L)

    hidden_r = _need(sd, "reduce_input_to_hidden.linear.weight", path)
    F_last = irreps[-1][0][0]
    n_hidden = hidden_r.size // F_last
    readout = [(None, [(n_hidden, 0, 1)], hidden_r),
               ([(n_hidden, 0, 1)], [(1, 0, 1)],
                _need(sd, "reduce_hidden_to_energy.linear.weight", path))]
    shift = _need(sd, "rescale_atomic_energy.shift", path).ravel()
    scale = _need(sd, "rescale_atomic_energy.scale", path).ravel()
    shift = np.broadcast_to(shift, (T,)) if shift.size in (1, T) else None
    scale = np.broadcast_to(scale, (T,)) if scale.size in (1, T) else None
    if shift is None or scale is None:
        raise ConversionError(f"{path}: rescale_atomic_energy shift/scale do not have one "
                              f"value per species ({T})")
    name = path.rsplit("/", 1)[-1]
    return build_fnqm({
        "family": "sevenn",
        "notes": f"converted from SevenNet checkpoint {name} (sevenn {cfg['version']})",
        "num_parameters": int(sum(v.size for k, v in sd.items()
                                  if k.endswith(".weight") or k.endswith("coeffs")
                                  )),
        "species": species, "cutoff": rc, "bessel_freq": coeffs * rc,
        "polynomial_p": float(cut.get("poly_cut_p_value", 6)), "envelope": envelope,
        "lmax": lmax,
        "sh_parity": "even", "sh_normalize": normalize_sph, "irreps_sh": irreps_sh, "embedding_irreps": irreps[0],
        "embedding": embedding, "layers": layers, "readout": readout,
        "energy_scale": scale, "energy_shift": shift,
    })
