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
from ..e3nn_layout import format_irreps, linear_split_modal, parse_irreps, products
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
    for key in ("use_bias_in_linear", "readout_as_fcn"):
        if cfg.get(key):
            raise ConversionError(f"{path}: config {key} true is not supported")
    if cfg.get("use_modality") and cfg.get("use_modal_node_embedding"):
        raise ConversionError(f"{path}: config use_modal_node_embedding true (a modality input "
                              f"to the node embedding) is not supported")


def _modalities(cfg, path):
    """The modality names in one-hot order ([] for a model without modalities)."""
    if not cfg.get("use_modality"):
        return []
    mm = cfg.get("_modal_map") or {}
    names = sorted(mm, key=lambda k: mm[k])
    if sorted(mm.values()) != list(range(len(names))) or \
            len(names) != cfg.get("_number_of_modalities", len(names)) or len(names) < 2:
        raise ConversionError(f"{path}: config _modal_map {mm} does not number the "
                              f"{cfg.get('_number_of_modalities')} modalities 0, 1, ...")
    return names


def _energy(sd, key, T, M, path):
    """rescale_atomic_energy.shift / .scale as [T], or [M, T] when per modality"""
    v = _need(sd, f"rescale_atomic_energy.{key}", path)
    if M and v.ndim == 2 and v.shape == (M, T):
        return v
    v = v.ravel()
    if v.size not in (1, T):
        raise ConversionError(f"{path}: rescale_atomic_energy.{key} has shape {v.shape}: not "
                              f"one value per species ({T})" + (f" or per modality and species "
                                                                f"({M}, {T})" if M else ""))
    return np.broadcast_to(v, (T,))


def _species(cfg, path):
    """(element symbols, their rows among the model's one-hot classes). Universal models
    (chemical_species 'univ') have 119 classes, class = Z, class 0 ('X') no element: it is
    left out, and the normalisations keep the 119."""
    species = list(cfg.get("chemical_species") or [])
    n = cfg.get("_number_of_species", len(species))
    if len(species) != n:
        raise ConversionError(f"{path}: config chemical_species lists {len(species)} elements, "
                              f"_number_of_species is {n}")
    rows = list(range(len(species)))
    if len(species) == 119 and species[0] == "X":
        species, rows = species[1:], rows[1:]
    for s in species:
        if not is_element(s):
            raise ConversionError(f"{path}: config chemical_species has '{s}', not an element")
    return species, rows


def _irreps(cfg, irreps_sh, n_layers, path):
    """Every layer's input irreps, then the last one's output: config irreps_manual, or as
    sevenn infers them from channel and lmax_node (all products of the input with the
    harmonics up to lmax_node, each with `channel` copies; the last layer 0e only)."""
    manual = cfg.get("irreps_manual", False)
    if manual is not False and manual is not None:
        irreps = [parse_irreps(s) for s in manual]
        if len(irreps) != n_layers + 1:
            raise ConversionError(f"{path}: config irreps_manual has {len(irreps)} entries for "
                                  f"{n_layers} layers (needs {n_layers + 1})")
        return irreps
    F = int(cfg["channel"])
    lmax_node = int(cfg["lmax_node"]) if int(cfg.get("lmax_node", -1)) > 0 else int(cfg["lmax"])
    x, irreps = [(F, 0, 1)], [[(F, 0, 1)]]
    for t in range(n_layers):
        last = t == n_layers - 1
        out = {ir for _, l1, p1 in x for _, l2, p2 in irreps_sh
               for ir in products(l1, p1, l2, p2)}
        x = [(F, l, p) for l, p in sorted(out)
             if l <= (0 if last else lmax_node) and not (last and p < 0)]
        irreps.append(x)
    return irreps


def _radial_columns(sd, t, lay, irreps_in, sorted_weights, path):
    """Layer t's radial MLP matrices (e3nn FullyConnectedNet: W / sqrt(fan-in)) and its live
    paths in the order of the last matrix's columns, with flipped Clebsch-Gordan signs undone
    and the columns of paths whose output the next layer lacks dropped (trap 15)."""
    q = f"{t}_convolution.weight_nn.layer"
    keys = sorted((k for k in sd if k.startswith(q) and k.endswith(".weight")),
                  key=lambda k: int(k[len(q):].split(".")[0]))
    if not keys:
        raise ConversionError(f"{path}: layer {t} has no radial MLP ({q}0.weight)")
    mats = [sd[k] / math.sqrt(sd[k].shape[0]) for k in keys]
    every = lay["paths_all"]  # [input block, l of Y, (l, p) out, message block or None]
    n_weights = sum(irreps_in[a][0] for a, _, _, _ in every)
    if mats[-1].shape[1] != n_weights:
        raise ConversionError(f"{path}: layer {t} radial MLP gives {mats[-1].shape[1]} weights, "
                              f"the layout needs {n_weights}")
    order = list(range(len(every)))  # the paths in the order of the stored columns
    if sorted_weights:  # sevenn >= 0.11: sorted by output irrep (l, p), stable
        order = sorted(order, key=lambda k: every[k][2])
    last, cols, live = mats[-1], [], []
    start = 0
    for k in order:
        a, l2, (l3, _), block = every[k]
        n, l1 = irreps_in[a][0], irreps_in[a][1]
        key = f"{t}_convolution.convolution._compiled_main_left_right._w3j_{l1}_{l2}_{l3}"
        sign = 1.0
        if key in sd:  # stored only for l1, l2, l3 > 0
            exact, stored = wigner_3j(l1, l2, l3), sd[key]
            if np.abs(stored + exact).max() < 1e-6:
                sign = -1.0
            elif np.abs(stored - exact).max() >= 1e-6:
                raise ConversionError(f"{path}: {key} matches neither sign of the exact "
                                      f"Clebsch-Gordan coefficients")
        if block is not None:
            cols.append(sign * last[:, start:start + n])
            live.append([a, l2, block])
        start += n
    mats[-1] = np.concatenate(cols, axis=1)
    return mats, live


def convert_sevenn(path):
    cfg, sd = reader.load(path)
    version = _version(cfg, path)
    _refuse_unsupported(cfg, path)
    species, rows = _species(cfg, path)
    T, n_classes = len(species), len(rows) if rows[0] == 0 else len(rows) + 1
    n_layers = int(cfg["num_convolution_layer"])
    lmax = int(cfg["lmax"])
    lmax_sh = int(cfg["lmax_edge"]) if int(cfg.get("lmax_edge", -1)) > 0 else lmax
    parity = bool(cfg.get("is_parity", False))
    # parity off: every Y_l labelled e (SO(3) only); on: Y_l has parity (-1)^l
    irreps_sh = [(1, l, (-1) ** l if parity else 1) for l in range(lmax_sh + 1)]
    irreps = _irreps(cfg, irreps_sh, n_layers, path)
    cut = cfg.get("cutoff_function", {})
    normalize_sph = bool(cfg.get("_normalize_sph", False))  # absent: False (sevenn <= 0.9)
    envelope = None
    if cut.get("cutoff_function_name") == "XPLOR":
        envelope = {"kind": "xplor", "r_on": float(cut["cutoff_on"])}
    rc = float(cfg["cutoff"])
    coeffs = _need(sd, "edge_embedding.basis_function.coeffs", path).ravel()

    w = _need(sd, "onehot_to_feature_x.linear.weight", path)
    F0 = irreps[0][0][0]
    if len(irreps[0]) != 1 or irreps[0][0][1:] != (0, 1) or w.size != n_classes * F0:
        raise ConversionError(f"{path}: node embedding onehot_to_feature_x ({w.size} weights) "
                              f"does not map {n_classes} species classes onto {F0}x0e")
    # e3nn Linear of a one-hot over all classes
    embedding = w.reshape(n_classes, F0)[rows] / math.sqrt(n_classes)

    modalities = _modalities(cfg, path)
    M = len(modalities)
    modal = [name for key, name in (("use_modal_self_inter_intro", "linear_1"),
                                     ("use_modal_self_inter_outro", "linear_2"))
             if M and cfg.get(key)]
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
            "resnet": False, "modal_inputs": modal,
        }
        if sc_type == "linear":
            wsc = _need(sd, p + "self_connection_intro.linear.weight", path)
            L["self_connection"] = lambda i, g, w=wsc: (w.reshape(1, -1), np.ones((T, 1)))
        else:
            from ..e3nn_layout import self_connection_per_species
            wsc = _need(sd, p + "self_connection_intro.fc_tensor_product.weight", path)
            L["self_connection"] = lambda i, g, w=wsc: self_connection_per_species(
                w, i, g, np.eye(n_classes))[rows]
        L["radial_for"] = lambda lay, irreps_in, t=t: _radial_columns(
            sd, t, lay, irreps_in, version >= (0, 11, 0), path)
        layers.append(L)

    hidden_r = _need(sd, "reduce_input_to_hidden.linear.weight", path)
    out_w = _need(sd, "reduce_hidden_to_energy.linear.weight", path).ravel()
    F_last = irreps[-1][0][0]
    if len(irreps[-1]) != 1 or irreps[-1][0][1] != 0:
        raise ConversionError(f"{path}: the last layer's output {format_irreps(irreps[-1])} is "
                              f"not scalars only")
    n_hidden = out_w.size  # reduce_hidden_to_energy: n_hidden x 0e -> 1 x 0e
    shift, scale = (_energy(sd, k, n_classes, M, path)[..., rows] for k in ("shift", "scale"))
    if M and cfg.get("use_modal_output_block"):
        # the modality's bias on the hidden scalars goes through the last (linear) readout
        # into a constant per-atom energy: folded into the shift, scale * e_bias[m] + shift
        hidden_r, bias = linear_split_modal(hidden_r, irreps[-1], [(n_hidden, 0, 1)], M)
        e_bias = bias @ out_w / math.sqrt(n_hidden)  # [M]
        scale2 = np.broadcast_to(scale, (M, T))
        shift = np.broadcast_to(shift, (M, T)) + scale2 * e_bias[:, None]
    if hidden_r.size != F_last * n_hidden:
        raise ConversionError(f"{path}: reduce_input_to_hidden has {hidden_r.size} weights for "
                              f"{F_last} x {n_hidden}")
    readout = [(None, [(n_hidden, 0, 1)], hidden_r),
               ([(n_hidden, 0, 1)], [(1, 0, 1)], out_w)]
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
        "sh_parity": "natural" if parity else "even", "sh_normalize": normalize_sph, "irreps_sh": irreps_sh, "embedding_irreps": irreps[0],
        "embedding": embedding, "layers": layers, "readout": readout,
        "energy_scale": scale, "energy_shift": shift, "modalities": modalities,
    })
