"""Classic NequIP (0.5 / 0.6): read a `nequip-deploy build` TorchScript file with torch alone.

Weights come from the module's state_dict, hyperparameters (irreps) from the YAML config in
the file's extra files, and the normalisation constants of the activations (e3nn's
normalize2mom) from the TorchScript code's constants, so nothing is recomputed that the
file already holds. ../shared/reference/nequip.md section 2 has the math.
"""
import math
import re

import numpy as np

from ..e3nn_layout import parse_irreps, self_connection_per_species
from ..elements import is_element
from ..errors import ConversionError
from .common import activation, build_fnqm

EXTRA_KEYS = ["config", "nequip_version", "r_max", "n_species", "type_names", "model_dtype",
              "default_dtype"]

SUPPORTED_BUILDERS = {"SimpleIrrepsConfig", "EnergyModel", "PerSpeciesRescale",
                      "StressForceOutput", "ForceOutput", "RescaleEnergyEtc"}
FUNC_CHILDREN = ("one_hot", "spharm_edges", "radial_basis", "chemical_embedding",
                 "conv_to_output_hidden", "output_hidden_to_scalar", "per_species_rescale",
                 "total_energy_sum")


def _yaml_config(text):
    """The deployed config is `yaml.dump` output, which may carry python tags (tuples)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def python_tag(loader, suffix, node):
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", python_tag)
    return yaml.load(text, Loader=Loader)


def _activation_of(module, where):
    """(name, scale) of an e3nn normalize2mom-wrapped activation from its TorchScript code."""
    try:
        code, consts = module.code_with_constants
        mapping = dict(consts.const_mapping)
    except Exception as err:  # noqa: BLE001 - any failure means we cannot read it
        raise ConversionError(f"{where}: cannot read the activation's code ({err})") from err
    kinds = [("silu", r"torch\.silu\("), ("tanh", r"torch\.tanh\("), ("abs", r"torch\.abs\("),
             ("ssp", r"ShiftedSoftPlus"), ("sigmoid", r"torch\.sigmoid\(")]
    found = [name for name, pattern in kinds if re.search(pattern, code)]
    if len(found) != 1:
        raise ConversionError(f"{where}: unsupported activation (TorchScript code: "
                              f"{code.strip()!r})")
    scale = 1.0
    if mapping:
        if len(mapping) != 1:
            raise ConversionError(f"{where}: activation has several constants {mapping}")
        scale = float(next(iter(mapping.values())))
    return activation(found[0], scale)


def _find(module, original_name):
    for name, child in module.named_children():
        if child.original_name == original_name:
            return child
    return None


def convert_classic(path, species=None):
    import torch

    extra = {k: "" for k in EXTRA_KEYS}
    try:
        m = torch.jit.load(path, map_location="cpu", _extra_files=extra)
    except Exception as err:  # noqa: BLE001 - torch raises RuntimeError/ValueError variants
        raise ConversionError(f"{path}: not a readable TorchScript file ({str(err).strip()[:300]})")
    extra = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in extra.items()}
    if not extra["config"]:
        raise ConversionError(f"{path}: a TorchScript file without the 'config' metadata: not a "
                              f"nequip 0.5/0.6 deployed model (nequip >= 0.7 .nequip.pth files "
                              f"carry no config: convert the .nequip.zip package or checkpoint)")
    version = extra["nequip_version"]
    if not re.match(r"0\.[56]\.", version):
        raise ConversionError(f"{path}: deployed by nequip {version or '(unknown)'}; this reader "
                              f"handles nequip 0.5 and 0.6 deployed files")
    cfg = _yaml_config(extra["config"])
    sd = {k: v.detach().to(torch.float64).numpy() if v.is_floating_point() else v.numpy()
          for k, v in m.state_dict().items()}

    for k, v in sd.items():
        if k.endswith(".bias") and v.size:
            raise ConversionError(f"{path}: biases ({k}) are not supported")
    builders = [b if isinstance(b, str) else repr(b) for b in cfg.get("model_builders", [])]
    for b in builders:
        if b in ("PairPotentialTerm", "PairPotential"):
            raise ConversionError(f"{path}: pair potential (model builder {b}, pair_style "
                                  f"{cfg.get('pair_style')}) is not supported")
        if b not in SUPPORTED_BUILDERS:
            raise ConversionError(f"{path}: model builder '{b}' (config option model_builders) "
                                  f"is not supported; supported: {sorted(SUPPORTED_BUILDERS)}")

    # module tree: GraphModel -> RescaleOutput -> Stress/ForceOutput -> SequentialGraphNetwork
    rescale = m.model if m.model.original_name == "RescaleOutput" else None
    if rescale is None:
        raise ConversionError(f"{path}: expected a RescaleOutput module under the GraphModel "
                              f"(found {m.model.original_name})")
    grad = rescale.model
    func = getattr(grad, "func", None)
    if func is None or func.original_name != "SequentialGraphNetwork":
        raise ConversionError(f"{path}: unexpected module tree ({grad.original_name})")
    children = [n for n, _ in func.named_children()]
    layer_names = [n for n in children if re.fullmatch(r"layer\d+_convnet", n)]
    for n in children:
        if n not in FUNC_CHILDREN and n not in layer_names:
            raise ConversionError(f"{path}: model part '{n}' "
                                  f"({getattr(func, n).original_name}) is not supported")
    for n in FUNC_CHILDREN[:6]:
        if n not in children:
            raise ConversionError(f"{path}: model part '{n}' is missing")
    if cfg.get("nonlinearity_type", "gate") != "gate":
        raise ConversionError(f"{path}: nonlinearity_type '{cfg['nonlinearity_type']}' is not "
                              f"supported (only 'gate')")

    P = "model.model.func."
    type_names = list(cfg.get("type_names") or extra["type_names"].split())
    if species is not None and len(species) != len(type_names):
        raise ConversionError(f"{path}: --species gives {len(species)} symbols for "
                              f"{len(type_names)} model types {type_names}")
    species = species or [_element(k, t, cfg, path) for k, t in enumerate(type_names)]
    for sym in species:
        if not is_element(sym):
            raise ConversionError(f"{path}: --species: '{sym}' is not an element symbol")
    T = len(type_names)

    rb = func.radial_basis
    if rb.basis.original_name != "BesselBasis" or rb.cutoff.original_name != "PolynomialCutoff":
        raise ConversionError(f"{path}: radial basis {rb.basis.original_name} with "
                              f"{rb.cutoff.original_name} is not supported (BesselBasis with "
                              f"PolynomialCutoff only)")
    r_max = float(rb.basis.r_max)
    bessel = sd[P + "radial_basis.basis.bessel_weights"]
    sh = func.spharm_edges.sh
    if not bool(sh.normalize) or sh.normalization != "component":
        raise ConversionError(f"{path}: spherical harmonics with normalize={sh.normalize}, "
                              f"normalization={sh.normalization} are not supported "
                              f"(edge_sh_normalize true, 'component' only)")
    irreps_sh = parse_irreps(cfg["irreps_edge_sh"])
    lmax = max(l for _, l, _ in irreps_sh)
    if [(l, p) for _, l, p in irreps_sh] != [(l, 1 if l % 2 == 0 else -1) for l in
                                              range(lmax + 1)] and \
            [(l, p) for _, l, p in irreps_sh] != [(l, 1) for l in range(lmax + 1)]:
        raise ConversionError(f"{path}: irreps_edge_sh '{cfg['irreps_edge_sh']}' is not "
                              f"1x0e+1x1o+... or 1x0e+1x1e+...")
    sh_parity = "natural" if lmax == 0 or irreps_sh[1][2] == -1 else "even"

    emb_irreps = parse_irreps(cfg["chemical_embedding_irreps_out"])
    if len(emb_irreps) != 1 or emb_irreps[0][1:] != (0, 1):
        raise ConversionError(f"{path}: chemical_embedding_irreps_out "
                              f"'{cfg['chemical_embedding_irreps_out']}' must be scalars (Fx0e)")
    F0 = emb_irreps[0][0]
    w = sd[P + "chemical_embedding.linear.weight"].reshape(T, F0)
    embedding = w / math.sqrt(T)  # one-hot @ W / sqrt(T)
    onehot = np.eye(T)

    hidden = parse_irreps(cfg["feature_irreps_hidden"])
    layers = []
    for i, n in enumerate(layer_names):
        if n != f"layer{i}_convnet":
            raise ConversionError(f"{path}: layer modules out of order ({n})")
        layer = getattr(func, n)
        conv = layer.conv
        where = f"{path}: {n}"
        q = f"{P}{n}.conv."
        gate = layer.equivariant_nonlin
        if gate.original_name != "Gate":
            raise ConversionError(f"{where}: nonlinearity {gate.original_name} is not supported "
                                  f"(only e3nn Gate)")
        scalar_acts = _acts(gate.act_scalars, f"{where}: scalar activation")
        gate_acts = _acts(gate.act_gates, f"{where}: gate activation")
        fc_keys = sorted((k for k in sd if k.startswith(q + "fc.layer")),
                         key=lambda k: int(k[len(q + "fc.layer"):].split(".")[0]))
        radial = [sd[k] / math.sqrt(sd[k].shape[0]) for k in fc_keys]  # e3nn FC: W / sqrt(h_in)
        radial_act = _activation_of(conv.fc.layer0.act, f"{where}: radial MLP activation") \
            if len(fc_keys) > 1 else activation("identity")
        avg = conv.avg_num_neighbors
        layers.append({
            "hidden": hidden,
            "scalar_acts": lambda l, p, k, a=scalar_acts: a[k],
            "gate_acts": lambda l, p, k, a=gate_acts: a[k],
            "linear_1": sd[q + "linear_1.weight"],
            "sender_scale": 1.0 if avg is None else 1.0 / math.sqrt(float(avg)),
            "radial": radial, "radial_act": radial_act,
            "linear_2": sd[q + "linear_2.weight"],
            "self_connection": _self_connection(sd, q + "sc.weight", onehot, where)
            if bool(conv.use_sc) else None,
            "resnet": bool(layer.resnet),
        })
    fnqm_input = {
        "family": "nequip",
        "notes": f"converted from nequip {version} deployed file {path.rsplit('/', 1)[-1]} "
                 f"(model_dtype {extra['model_dtype'] or '?'})",
        "num_parameters": int(sum(p.numel() for p in m.parameters())),
        "species": species, "cutoff": r_max, "bessel_freq": bessel,
        "polynomial_p": float(rb.cutoff.p), "lmax": lmax, "sh_parity": sh_parity,
        "irreps_sh": irreps_sh, "embedding_irreps": emb_irreps, "embedding": embedding,
        "layers": layers,
    }
    out_hidden = parse_irreps(cfg["conv_to_output_hidden_irreps_out"])
    fnqm_input["readout"] = [
        (None, out_hidden, sd[P + "conv_to_output_hidden.linear.weight"]),
        (out_hidden, [(1, 0, 1)], sd[P + "output_hidden_to_scalar.linear.weight"]),
    ]
    fnqm_input["energy_scale"], fnqm_input["energy_shift"] = _energy_scale_shift(
        sd, P, T, path)
    return build_fnqm(fnqm_input)


def _element(index, name, cfg, path):
    mapping = cfg.get("type_to_chemical_symbol") or {}  # type index (or name) -> symbol
    sym = mapping.get(index, mapping.get(name, name))
    if not is_element(sym):
        chem = cfg.get("chemical_symbols") or cfg.get("chemical_symbol_to_type")
        raise ConversionError(f"{path}: type name '{name}' is not an element symbol (nequip "
                              f"option type_to_chemical_symbol; chemical symbols in the config: "
                              f"{chem})")
    return sym


def _acts(activation_module, where):
    acts = activation_module.acts
    out = []
    k = 0
    while hasattr(acts, str(k)):
        out.append(_activation_of(getattr(acts, str(k)), f"{where} {k}"))
        k += 1
    return out


def _energy_scale_shift(sd, P, T, path):
    scale_by = sd.get("model.scale_by", np.zeros(0))
    shift_by = sd.get("model.shift_by", np.zeros(0))
    if shift_by.size:
        raise ConversionError(f"{path}: a global energy shift (global_rescale_shift = "
                              f"{float(shift_by.ravel()[0])}) is not supported: it is added to "
                              f"the total energy only, not to per-atom energies")
    s = float(scale_by.ravel()[0]) if scale_by.size else 1.0
    scales = sd.get(P + "per_species_rescale.scales", np.zeros(0)).ravel()
    shifts = sd.get(P + "per_species_rescale.shifts", np.zeros(0)).ravel()
    scales = np.ones(T) if scales.size == 0 else np.broadcast_to(scales, (T,))
    shifts = np.zeros(T) if shifts.size == 0 else np.broadcast_to(shifts, (T,))
    # E_i = s * (shift_t + scale_t * e_i): nequip stores per-species values divided by s
    return s * scales, s * shifts


def _self_connection(sd, key, onehot, where):
    """FCTP(h, one-hot) as per-species linear weights, once the layout gives the irreps."""
    if key not in sd:
        raise ConversionError(f"{where}: use_sc is set but {key} is missing")
    return lambda irreps_in, irreps_gate_in: self_connection_per_species(
        sd[key], irreps_in, irreps_gate_in, onehot)
