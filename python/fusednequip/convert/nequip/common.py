"""What classic (0.6) and current (>= 0.7) NequIP have in common: given the pieces a reader
took out of a model file, lay the network out with e3nn's rules (e3nn_layout) and write the
.fnqm description, checking every weight count against the layout on the way."""
import math

import numpy as np

from ..e3nn_layout import conv_layer, format_irreps, linear_numel, linear_split_modal
from ..errors import ConversionError
from ..fnqm_writer import FnqmModel


def activation(name, scale=1.0):
    return {"name": name, "scale": float(scale)}


def _check_count(what, got, want):
    if got != want:
        raise ConversionError(f"{what} has {got} weights, the architecture needs {want}: the "
                              f"file does not match its own configuration")


def build_fnqm(d):
    """d: dict with keys
    family, notes, num_parameters, species, cutoff, bessel_freq, polynomial_p (or envelope:
    the header's radial_basis.envelope object), lmax,
    sh_parity ("natural"/"even"), irreps_sh, embedding_irreps, embedding [T, dim],
    layers: list of dicts {hidden, scalar_acts, gate_acts, linear_1, sender_scale [T],
        radial: [matrices with every scaling folded in] (or radial_for: f(layout, irreps_in)
        -> (matrices, the layout's paths in the matrices' column order)), radial_act, linear_2,
        self_connection (None, or f(irreps_in, irreps_gate_in) -> per-species linear weights
        [T, n]), resnet, expect_out (optional)},
    readout: list of (irreps_in or None for "last layer output", irreps_out, flat weights),
    energy_scale [T], energy_shift [T],
    pair_potential (optional): the header's "pair_potential" object (ZBL).
    """
    T = len(d["species"])
    f = FnqmModel()
    h = f.header
    h.update({"family": d["family"], "notes": d["notes"], "num_parameters": d["num_parameters"],
              "species": list(d["species"]), "cutoff": float(d["cutoff"])})
    bessel = np.asarray(d["bessel_freq"], dtype=np.float64).ravel()
    h["radial_basis"] = {"n_basis": int(bessel.size),
                         "bessel_freq": f.array("bessel_freq", bessel)}
    if d.get("envelope") is not None:  # e.g. {"kind": "xplor", "r_on": r}: format version 2
        h["radial_basis"]["envelope"] = dict(d["envelope"])
        h["version"] = 2
    else:
        h["radial_basis"]["polynomial_p"] = float(d["polynomial_p"])
    h["spherical_harmonics"] = {"lmax": int(d["lmax"]), "parity": d["sh_parity"]}
    if d.get("sh_normalize", True) is False:  # Y_l(r) = |r|^l Y_l(r/|r|): format version 3
        h["spherical_harmonics"]["normalize"] = False
        h["version"] = 3
    emb = np.asarray(d["embedding"], dtype=np.float64)
    h["embedding"] = {"irreps": format_irreps(d["embedding_irreps"]),
                      "weights": f.array("embedding", emb.reshape(T, -1))}

    prev = d["embedding_irreps"]
    layers = []
    for i, L in enumerate(d["layers"]):
        where = f"layer {i}"
        lay = conv_layer(prev, L["hidden"], d["irreps_sh"], L["scalar_acts"], L["gate_acts"],
                         where, sevenn=d["family"] == "sevenn")
        if L.get("expect_out") is not None and L["expect_out"] != lay["irreps_out"]:
            raise ConversionError(
                f"{where}: the file's output irreps {format_irreps(L['expect_out'])} differ from "
                f"the layout rules' {format_irreps(lay['irreps_out'])}")
        p = f"layers.{i}."
        j = {k: format_irreps(lay[k]) for k in
             ("irreps_in", "irreps_messages", "irreps_gate_in", "irreps_out")}
        modal = L.get("modal_inputs", ())  # linears with a modality one-hot as last input
        lin1 = np.asarray(L["linear_1"], dtype=np.float64).ravel()
        if "linear_1" in modal:
            lin1, bias = linear_split_modal(lin1, prev, prev, len(d["modalities"]))
            j["linear_1_bias"] = f.array(p + "linear_1_bias", bias)
        _check_count(f"{where} linear_1", lin1.size, linear_numel(prev, prev))
        j["linear_1"] = f.array(p + "linear_1", lin1)
        j["sender_scale"] = f.array(p + "sender_scale",
                                    np.broadcast_to(np.asarray(L["sender_scale"], float), (T,)))
        if "radial_for" in L:  # the reader orders the paths (sevenn: by its stored columns)
            radial, lay["paths"] = L["radial_for"](lay, prev)
        else:
            radial = L["radial"]
        mats = [np.asarray(w, dtype=np.float64) for w in radial]
        if mats[0].shape[0] != bessel.size or mats[-1].shape[1] != lay["n_radial_weights"] or \
                any(a.shape[1] != b.shape[0] for a, b in zip(mats, mats[1:])):
            raise ConversionError(
                f"{where}: radial MLP shapes {[m.shape for m in mats]} do not lead from "
                f"{bessel.size} basis functions to the {lay['n_radial_weights']} "
                f"tensor-product weights of the layout")
        j["radial_mlp"] = {"weights": [f.array(p + f"radial_mlp.{k}", m)
                                       for k, m in enumerate(mats)],
                           "activation": L["radial_act"]}
        j["tensor_product"] = lay["paths"]
        lin2 = np.asarray(L["linear_2"], dtype=np.float64).ravel()
        if "linear_2" in modal:
            lin2, bias = linear_split_modal(lin2, lay["irreps_messages"], lay["irreps_gate_in"],
                                            len(d["modalities"]))
            j["linear_2_bias"] = f.array(p + "linear_2_bias", bias)
        _check_count(f"{where} linear_2", lin2.size,
                     linear_numel(lay["irreps_messages"], lay["irreps_gate_in"]))
        j["linear_2"] = f.array(p + "linear_2", lin2)
        if L["self_connection"] is not None:
            # a callable lays the source's self-connection out as linear weights, which needs
            # this layer's input and gate-input irreps: per-species sets [T, n], or factored
            # (sets [K, n], species coefficients [T, K]; docs/model-format.md)
            sc = L["self_connection"](prev, lay["irreps_gate_in"])
            sets, coeffs = sc if isinstance(sc, tuple) else (sc, None)
            sets = np.asarray(sets, dtype=np.float64)
            _check_count(f"{where} self-connection", sets.shape[1],
                         linear_numel(prev, lay["irreps_gate_in"]))
            j["self_connection"] = f.array(p + "self_connection", sets)
            if coeffs is not None:
                name = "self_connection_coefficients"
                if not f.has(name):
                    f.array(name, coeffs)
                elif not np.array_equal(f.get(name), coeffs):
                    raise ConversionError(f"{where}: self-connection coefficients differ from "
                                          f"the other layers'")
                j["self_connection"] = {"weights": j["self_connection"],
                                        "species_coefficients": name}
        else:
            j["self_connection"] = None
        j["gate"] = lay["gate"]
        j["resnet"] = bool(L["resnet"]) and lay["irreps_out"] == prev
        layers.append(j)
        prev = lay["irreps_out"]
    h["layers"] = layers

    irreps, weights = [format_irreps(prev)], []
    for k, (r_in, r_out, w) in enumerate(d["readout"]):
        r_in = prev if r_in is None else r_in
        w = np.asarray(w, dtype=np.float64).ravel()
        _check_count(f"readout linear {k}", w.size, linear_numel(r_in, r_out))
        weights.append(f.array(f"readout.{k}", w))
        irreps.append(format_irreps(r_out))
        prev = r_out
    if irreps[-1] != "1x0e":
        raise ConversionError(f"the readout ends in {irreps[-1]}, not one scalar energy")
    h["readout"] = {"irreps": irreps, "weights": weights}
    if d.get("modalities"):  # names; energies [T] or [modalities, T]: format version 3
        h["modalities"] = list(d["modalities"])
        h["version"] = 3
    for key in ("energy_scale", "energy_shift"):
        v = np.asarray(d[key], dtype=np.float64)
        h[key] = f.array(key, v if v.ndim == 2 else np.broadcast_to(v, (T,)))
    if d.get("pair_potential") is not None:
        h["pair_potential"] = dict(d["pair_potential"])
    return f


def fold_scalar_linear_alpha(w, alpha, fan_in):
    """A linear layer y = x @ (w * alpha) written as an e3nn Linear, which applies
    1/sqrt(fan_in) itself: the stored weights carry alpha * sqrt(fan_in)."""
    return np.asarray(w, dtype=np.float64) * (float(alpha) * math.sqrt(fan_in))
