"""Current NequIP (>= 0.7): a `.nequip.zip` package or a training checkpoint `.ckpt`.

Both are loaded with nequip's own loader (so the nequip package must be installed) into the
eager model; the converter then reads the module tree: irreps from the modules themselves,
weights from their parameters and buffers, the radial MLP's and readout's scale factors from
their layers, the activations' normalisation constants from e3nn's normalize2mom objects.
The differences from 0.6 (../shared/reference/nequip.md section 6) are data here: a type
embedding instead of one-hot x linear, no self-connection in layer 0, plain SiLU radial MLP
with relu gain, per-type neighbour normalisation, per-type scale/shift, no global rescale.
"""
import math

import numpy as np

from ..e3nn_layout import parse_irreps, self_connection_factored
from ..elements import is_element
from ..errors import ConversionError
from .common import activation, build_fnqm, fold_scalar_linear_alpha

FUNC_CHILDREN = {"type_embed", "spharm", "edge_norm", "bessel_encode", "factor",
                 "per_atom_energy_readout", "per_type_energy_scale_shift", "total_energy_sum"}


def _irreps(x):
    return parse_irreps(str(x))


def _np(t):
    import torch
    return t.detach().to(torch.float64).cpu().numpy()


def _act_of(fn, where):
    """normalize2mom-wrapped (or plain) activation -> {"name", "scale"}."""
    import torch
    scale = 1.0
    inner = fn
    if type(fn).__name__ == "normalize2mom":
        scale = float(getattr(fn, "cst", 1.0))
        inner = fn.f
    name = getattr(inner, "__name__", type(inner).__name__)
    table = {torch.nn.functional.silu: "silu", torch.tanh: "tanh", torch.abs: "abs",
             torch.sigmoid: "sigmoid"}
    for f, n in table.items():
        if inner is f:
            return activation(n, scale)
    if "shifted_softplus" in name or "ShiftedSoftplus" in name:
        return activation("ssp", scale)
    raise ConversionError(f"{where}: activation {name} is not supported")


# nequip versions whose files this converter was checked on (tests/fixtures/nequip); others
# are tried, with a warning naming these
KNOWN_VERSIONS = ("0.13", "0.14", "0.16", "0.17", "0.19")


def _minor(version):
    return ".".join(str(version).split(".")[:2])


def _is_package(path):
    """torch.package archive (nequip-package) rather than a torch.save checkpoint"""
    import zipfile
    with zipfile.ZipFile(path) as z:
        return any(n.endswith(".data/extern_modules") for n in z.namelist())


def _maker_version(path, package, name="nequip"):
    """The version of `name` (nequip, allegro) a package's metadata records (None if not
    recorded; checkpoints record none)."""
    import re
    import zipfile
    if not package:
        return None
    try:
        with zipfile.ZipFile(path) as z:
            meta = [n for n in z.namelist() if n.endswith("model/package_metadata.txt")]
            text = z.read(meta[0]).decode() if meta else ""
            m = re.search(rf"^\s*{name}:\s*['\"]?([0-9][^\s'\"]*)", text, re.M)
            return m.group(1) if m else None
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def _load(path):
    """(GraphModel, installed nequip version, version that made the file or None)"""
    import contextlib
    import io
    import os
    import sys
    import tempfile
    try:
        import torch  # noqa: F401
        import nequip
    except ImportError as err:
        raise ConversionError(f"{path}: converting nequip >= 0.7 files needs the nequip package "
                              f"(pip install nequip): {err}") from err
    installed = getattr(nequip, "__version__", "?")
    try:  # nequip refuses to build models before its global state (dtype, seeds) is set
        from nequip.utils.global_state import set_global_state
        set_global_state()
    except ImportError:
        pass
    package = _is_package(path)
    made_by = _maker_version(path, package)
    for v, what in ((installed, "installed"), (made_by, "that made the file")):
        if v is not None and _minor(v) not in KNOWN_VERSIONS:
            print(f"fusednequip-convert: warning: nequip {v} ({what}) is not one this converter "
                  f"was checked with (nequip {', '.join(KNOWN_VERSIONS)}); converting anyway",
                  file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        # nequip picks the loader by the file name's ending
        want = ".nequip.zip" if package else ".ckpt"
        src = str(path)
        if not src.endswith(want):
            src = os.path.join(tmp, "model" + want)
            os.symlink(os.path.abspath(str(path)), src)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                model = _load_with_nequip(src, package)
        except ConversionError:
            raise
        except Exception as err:  # noqa: BLE001 - nequip/torch raise many kinds for bad files
            raise ConversionError(
                f"{path}: nequip {installed} could not load it ({type(err).__name__}: "
                f"{str(err).strip()[:400]}); this converter was checked with files of nequip "
                f"{', '.join(KNOWN_VERSIONS)}") from err
    if isinstance(model, torch.nn.ModuleDict) and "sole_model" in model:
        model = model["sole_model"]
    return model, installed, made_by


def _load_with_nequip(src, package):
    """nequip's own loader: load_saved_model from 0.16 on, ModelFromPackage/-Checkpoint
    before (0.13, 0.14)."""
    try:
        from nequip.model.saved_models import load_saved_model
        return load_saved_model(src, compile_mode="eager")
    except ImportError:
        pass
    from nequip.model.saved_models import ModelFromCheckpoint, ModelFromPackage
    if package:
        return ModelFromPackage(src, compile_mode="eager")
    from nequip.model.modify_utils import only_apply_persistent_modifiers
    with only_apply_persistent_modifiers(persistent_only=True):
        return ModelFromCheckpoint(src, compile_mode="eager")


def convert_current(path, species=None):
    graph_model, version, made_by = _load(path)
    if isinstance(graph_model, dict) or not hasattr(graph_model, "model"):
        raise ConversionError(f"{path}: holds several models or no GraphModel; only single "
                              f"NequIP models are supported")
    from ..allegro.reader import allegro_made_by, is_allegro, read_graph_model
    if is_allegro(graph_model):
        from ..allegro.fnqm import to_fnqm
        cfg, arrays = read_graph_model(graph_model, path, version,
                                       allegro_made_by(path, made_by), species)
        _check_elements(cfg["species"], cfg["type_names"], path)
        return to_fnqm(cfg, arrays)
    meta = dict(getattr(graph_model, "_metadata", {}) or {})
    if meta.get("per_edge_type_cutoff"):
        raise ConversionError(f"{path}: per_edge_type_cutoff is not supported")
    top = graph_model.model
    func = getattr(top, "func", None)
    if func is None or type(func).__name__ != "SequentialGraphNetwork":
        raise ConversionError(f"{path}: unexpected model structure under {type(top).__name__}; "
                              f"only NequIPGNNModel and AllegroModel are supported")
    names = [n for n, _ in func.named_children()]
    layer_names = [n for n in names if n.startswith("layer") and n.endswith("_convnet")]
    for n in names:
        if n not in FUNC_CHILDREN and n not in layer_names and n != "pair_potential":
            raise ConversionError(f"{path}: model part '{n}' ({type(getattr(func, n)).__name__}) "
                                  f"is not supported (a custom NequIP model?)")
    if not layer_names or "type_embed" not in names:
        raise ConversionError(f"{path}: no NequIP convolution layers found")

    te = func.type_embed
    if getattr(te, "do_categorical_graph_field_embed", False):
        raise ConversionError(f"{path}: categorical_graph_field_embed is not supported")
    type_names = list(graph_model.type_names or meta.get("type_names", "").split())
    symbols = species or type_names
    _check_elements(symbols, type_names, path)
    T = len(type_names)
    embed = _np(te.embed_module.weight)  # [T, F_embed]; node_attrs = node features = embedding

    en = func.edge_norm
    if getattr(en, "_per_edge_type", False):
        raise ConversionError(f"{path}: per_edge_type_cutoff is not supported")
    r_max = float(en.r_max)
    be = func.bessel_encode
    if type(be.cutoff).__name__ not in ("PolynomialCutoff", "RecursiveScriptModule") or \
            not hasattr(be.cutoff, "p"):
        raise ConversionError(f"{path}: cutoff {type(be.cutoff).__name__} is not supported "
                              f"(PolynomialCutoff only)")
    # sinc(w x) w * 2 pi / r_max^2 with x = r / r_max  ==  (2/r_max) sin(pi w r / r_max) / r
    factor = float(func.factor.factor)
    if not math.isclose(factor, 2 * math.pi / r_max ** 2, rel_tol=1e-12):
        raise ConversionError(f"{path}: edge-embedding factor {factor} is not 2 pi / r_max^2")
    bessel = math.pi * _np(be.bessel_weights).ravel()

    sh_mod = func.spharm
    sh = sh_mod.sh
    if not bool(sh.normalize) or sh.normalization != "component":
        raise ConversionError(f"{path}: spherical harmonics with normalize={sh.normalize}, "
                              f"normalization={sh.normalization} are not supported")
    irreps_sh = _irreps(sh_mod.irreps_edge_sh)
    lmax = max(l for _, l, _ in irreps_sh)
    sh_parity = "natural" if lmax == 0 or irreps_sh[1][2] == -1 else "even"

    layers = []
    emb_irreps = _irreps(te.irreps_out["node_features"])
    for i, n in enumerate(layer_names):
        if n != f"layer{i}_convnet":
            raise ConversionError(f"{path}: layer modules out of order ({n})")
        layer = getattr(func, n)
        where = f"{path}: {n}"
        if type(layer.equivariant_nonlin).__name__ != "Gate":
            raise ConversionError(f"{where}: convnet_nonlinearity_type "
                                  f"'{type(layer.equivariant_nonlin).__name__}' is not supported "
                                  f"(only 'gate')")
        conv = layer.conv
        gate = layer.equivariant_nonlin
        scalar_acts = [_act_of(a, f"{where} scalar activation") for a in gate.act_scalars.acts]
        gate_acts = [_act_of(a, f"{where} gate activation") for a in gate.act_gates.acts]
        radial, radial_act = _scalar_mlp(conv.edge_mlp, where + " radial MLP")
        norm = _neighbour_norm(conv, where)
        for lin in (conv.linear_1, conv.linear_2):
            if getattr(lin, "bias", None) is not None and lin.bias.numel() > 0:
                raise ConversionError(f"{where}: linear biases are not supported")
        sc = None
        if conv.sc is not None:  # FCTP(h, type embedding): K = F_embed sets, embedding-weighted
            sc = (lambda w: lambda irreps_in, irreps_gate_in: (self_connection_factored(
                w, irreps_in, irreps_gate_in, embed.shape[1]), embed / math.sqrt(embed.shape[1])))(
                _np(conv.sc.weight))
        layers.append({
            "hidden": _irreps(layer.feature_irreps_hidden),
            "scalar_acts": lambda l, p, k, a=scalar_acts: a[k],
            "gate_acts": lambda l, p, k, a=gate_acts: a[k],
            "linear_1": _np(conv.linear_1.weight),
            "sender_scale": norm if norm.size > 1 else float(norm[0]),
            "radial": radial, "radial_act": radial_act,
            "linear_2": _np(conv.linear_2.weight),
            "self_connection": sc,
            "resnet": bool(layer.resnet),
            "expect_out": _irreps(layer.irreps_out["node_features"]),
        })
    prev = layers[-1]["expect_out"]

    ro = func.per_atom_energy_readout.mlp_module
    mats, alphas = _mlp_layers(ro, f"{path}: per_atom_energy_readout")
    if len(mats) != 1:
        raise ConversionError(f"{path}: readout_mlp_hidden_layers_depth = {len(mats) - 1} "
                              f"(a readout MLP) is not supported")
    F_last = sum(m for m, _, _ in prev)
    if len(prev) != 1 or prev[0][1:] != (0, 1) or mats[0].shape != (F_last, 1):
        raise ConversionError(f"{path}: the readout expects scalar features, the last layer "
                              f"gives {prev}")
    readout = [(None, [(1, 0, 1)], fold_scalar_linear_alpha(mats[0], alphas[0], F_last))]

    ss = func.per_type_energy_scale_shift
    scales = _np(ss.scales).ravel() if ss.has_scales else np.ones(1)
    shifts = _np(ss.shifts).ravel() if ss.has_shifts else np.zeros(1)
    d = {
        "family": "nequip",
        "notes": f"converted by nequip {version} from file {str(path).rsplit('/', 1)[-1]}"
                 f"{f' (made by nequip {made_by})' if made_by else ''} "
                 f"(model_dtype {meta.get('model_dtype', '?')})",
        "num_parameters": int(sum(p.numel() for p in graph_model.parameters())),
        "species": list(symbols), "cutoff": r_max, "bessel_freq": bessel,
        "polynomial_p": float(be.cutoff.p), "lmax": lmax, "sh_parity": sh_parity,
        "irreps_sh": irreps_sh, "embedding_irreps": emb_irreps, "embedding": embed,
        "layers": layers, "readout": readout,
        "energy_scale": np.broadcast_to(scales, (T,)),
        "energy_shift": np.broadcast_to(shifts, (T,)),
        "pair_potential": _pair_potential(getattr(func, "pair_potential", None), r_max,
                                          float(be.cutoff.p), T, path),
    }
    return build_fnqm(d)


def _neighbour_norm(conv, where):
    """1/sqrt(avg_num_neighbors) per type (or one value): the buffer
    avg_num_neighbors_norm.norm_const from nequip 0.16 on, the float scatter_norm_factor before
    (None: no normalisation)."""
    mod = getattr(conv, "avg_num_neighbors_norm", None)
    if mod is not None:
        return _np(mod.norm_const).ravel()
    if hasattr(conv, "scatter_norm_factor"):
        f = conv.scatter_norm_factor
        return np.array([1.0 if f is None else float(f)])
    raise ConversionError(f"{where}: neither avg_num_neighbors_norm (nequip >= 0.16) nor "
                          f"scatter_norm_factor (nequip 0.13-0.15) found: the neighbour "
                          f"normalisation of this nequip version is unknown")


def _pair_potential(pp, r_max, model_p, T, path):
    """The `pair_potential` module as the .fnqm header's "pair_potential" (ZBL), or None."""
    if pp is None:
        return None
    kind = type(pp).__name__
    if kind != "ZBL":
        raise ConversionError(f"{path}: pair_potential {kind} (model config key "
                              f"'pair_potential', module nequip.nn.pair_potential.{kind}) is not "
                              f"supported; only ZBL is")
    if getattr(pp, "per_atom_energy_field", "atomic_energy") != "atomic_energy":
        raise ConversionError(f"{path}: pair_potential ZBL writes to the field "
                              f"'{pp.per_atom_energy_field}', not the per-atom energy")
    z = _np(pp.atomic_numbers).ravel()
    if z.size != T or np.any(z != np.round(z)) or np.any(z < 1) or np.any(z > 118):
        raise ConversionError(f"{path}: pair_potential ZBL: atomic numbers {z.tolist()} (config "
                              f"key 'pair_potential.chemical_species') are not one element per "
                              f"model type ({T} types)")
    # nequip >= 0.17 gives ZBL its own envelope (pair_potential.cutoff, p default 6); before,
    # ZBL multiplies by the model's edge cutoff (polynomial_cutoff_p)
    own = getattr(pp, "cutoff", None)
    p = float(own.p) if own is not None and hasattr(own, "p") else model_p
    return {"kind": "zbl", "atomic_numbers": [int(v) for v in z],
            "coulomb_constant": 2.0 * float(_np(pp._qqr2exesquare)),
            "cutoff": r_max, "polynomial_p": p}


def _mlp_layers(fn, where):
    """ScalarMLPFunction -> ([weight matrices], [alphas]); refuses biases."""
    mlp = fn.mlp
    if type(mlp).__name__ == "DeepLinearMLP":
        return [_np(w) for w in mlp.weights], [float(mlp.alpha)] + [1.0] * (len(mlp.weights) - 1)
    mats, alphas = [], []
    for layer in mlp:
        if type(layer).__name__ == "ScalarLinearLayer":
            if getattr(layer, "bias", None) is not None:
                raise ConversionError(f"{where}: MLP biases are not supported")
            mats.append(_np(layer.weight))
            alphas.append(float(layer.alpha))
    return mats, alphas


def _scalar_mlp(fn, where):
    """The radial MLP as matrices with every scale folded in, and its hidden activation."""
    import torch
    mlp = fn.mlp
    if type(mlp).__name__ == "DeepLinearMLP":
        raise ConversionError(f"{where}: a radial MLP without nonlinearity is not supported")
    mats, acts = [], []
    for layer in mlp:
        if type(layer).__name__ == "ScalarLinearLayer":
            if getattr(layer, "bias", None) is not None:
                raise ConversionError(f"{where}: MLP biases are not supported")
            mats.append(_np(layer.weight) * float(layer.alpha))
        elif isinstance(layer, torch.nn.SiLU):
            acts.append("silu")
        else:
            raise ConversionError(f"{where}: MLP part {type(layer).__name__} is not supported")
    if len(mats) > 1 and (set(acts) != {"silu"} or len(acts) != len(mats) - 1):
        raise ConversionError(f"{where}: only SiLU between the radial MLP layers is supported")
    return mats, activation("silu" if len(mats) > 1 else "identity")


def _check_elements(symbols, type_names, path):
    if len(symbols) != len(type_names):
        raise ConversionError(f"{path}: --species gives {len(symbols)} symbols for "
                              f"{len(type_names)} model types {type_names}")
    for s in symbols:
        if not is_element(s):
            raise ConversionError(f"{path}: model type '{s}' is not an element symbol; give "
                                  f"the elements in type order with --species (types: "
                                  f"{' '.join(type_names)})")
