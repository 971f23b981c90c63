"""Read a nequip-allegro AllegroModel (`.nequip.zip` package or training checkpoint) into
plain data: a JSON-able config and float64 arrays (docs/allegro.md names each one).

The file is loaded with nequip's own loader (nequip and, for checkpoints, nequip-allegro
installed; a package carries its model code), then the module tree is read: every module
must be one this reader knows, with the options it knows, or the file is refused with the
module and the config key named. The tensor-product coupling tensors are not copied: they
follow from the irreps and paths, and the reader checks the model's own against ours.
Every MLP scale (ScalarLinearLayer.alpha) is folded into its matrix.
"""
import json
import math
import zipfile

import numpy as np

from ...allegro_reference import _tp_tensor, parse_irreps
from ..errors import ConversionError
from ..nequip.current import _is_package, _load, _maker_version, _np, _pair_potential

FUNC_CHILDREN = ("edge_norm", "radial_chemical_embed", "scalar_embed_mlp", "tensor_embed",
                 "allegro", "edge_readout", "edge_eng_sum", "per_type_energy_scale_shift",
                 "cutoff", "pair_potential", "total_energy_sum")
# nequip.nn.mlp._NONLINEARITY_MAP's modules, by class name
# (Identity: the string "None" as a nonlinearity, which keeps the sqrt 2 gains; YAML null
# gives no activation modules at all)
ACTIVATIONS = {"Identity": "identity", "SiLU": "silu", "Mish": "mish", "GELU": "gelu", "Tanh": "tanh",
               "ShiftedSoftplus": "ssp", "Sigmoid": "sigmoid", "Softplus": "softplus"}


def _irreps_str(irreps):
    """e3nn Irreps -> "1x0e+1x1o" with every multiplicity written"""
    return "+".join(f"{mul}x{ir.l}{'e' if ir.p == 1 else 'o'}" for mul, ir in irreps)


def _need(cond, path, what):
    if not cond:
        raise ConversionError(f"{path}: {what} is not supported by the Allegro reader")


def _mlp(fn, name, key, path, arrays, mlps):
    """ScalarMLPFunction `fn` (module `name`, config keys `key`_*) -> arrays name.k"""
    import torch
    from torch.nn.utils import parametrize
    where = f"module {name} (config {key}_*)"
    mlp = fn.mlp
    if type(mlp).__name__ == "DeepLinearMLP":  # no nonlinearity: a product of matrices
        mats = [_np(w) for w in mlp.weights]
        mats[0] = mats[0] * float(mlp.alpha)
        acts = ["identity"]
    else:
        _need(isinstance(mlp, torch.nn.Sequential), path, f"{where}: {type(mlp).__name__}")
        mats, acts = [], []
        for layer in mlp:
            kind = type(layer).__name__
            if kind == "ScalarLinearLayer" or parametrize.is_parametrized(layer):
                _need(not parametrize.is_parametrized(layer), path,
                      f"{where}: a weight parametrization ({key}: parametrization)")
                _need(layer.bias is None, path, f"{where}: biases")
                mats.append(_np(layer.weight) * float(layer.alpha))
            elif kind in ACTIVATIONS:
                approx = getattr(layer, "approximate", "none")  # GELU only
                _need(approx == "none", path, f"{where}: GELU approximate={approx}")
                acts.append(ACTIVATIONS[kind])
            else:
                _need(False, path, f"{where}: layer {kind} ({key}_nonlinearity)")
        _need(len(set(acts)) <= 1 and len(acts) in (0, len(mats) - 1), path,
              f"{where}: activations {acts} not between every pair of layers")
        acts = acts or ["identity"]
    for k, m in enumerate(mats):
        arrays[f"{name}.{k}"] = m
    mlps[name] = {"n_layers": len(mats), "activation": acts[0]}


def _norm(mod, path, where):
    """AvgNumNeighborsNorm -> 1/sqrt(avg_num_neighbors) [1] or per type [T]"""
    _need(type(mod).__name__ == "AvgNumNeighborsNorm", path, f"{where}: {type(mod).__name__}")
    return _np(mod.norm_const).ravel()


def read_allegro(path, species=None):
    """(config, arrays) of the AllegroModel in `path`"""
    graph_model, version, made_by = _load(path)
    return read_graph_model(graph_model, path, version, allegro_made_by(path, made_by), species)


def is_allegro(graph_model):
    """Whether a loaded nequip GraphModel holds an AllegroModel"""
    func = getattr(getattr(graph_model, "model", None), "func", None)
    return func is not None and hasattr(func, "allegro")


def allegro_made_by(path, made_by):
    """"nequip X, nequip-allegro Y" from the versions a package records (None: a checkpoint,
    which records none)"""
    if not made_by:
        return None
    allegro = _allegro_version(path)
    return f"nequip {made_by}" + (f", nequip-allegro {allegro}" if allegro else "")


def _allegro_version(path):
    """The nequip-allegro version a package records (None for a checkpoint)"""
    try:
        return _maker_version(path, _is_package(path), "allegro")
    except (OSError, zipfile.BadZipFile):
        return None


def same_coupling(ours, theirs, dtype):
    """Whether a model's coupling tensor `theirs`, stored in `dtype` (a float32 model's are
    float32), is e3nn's Wigner 3j `ours` (float64) up to that precision's rounding"""
    if theirs.shape != ours.shape:
        return False
    eps = 1e-12 if "64" in str(dtype) else 8 * float(np.finfo(np.float32).eps)
    return np.abs(ours - theirs).max(initial=0.0) <= eps * np.abs(ours).max(initial=1.0)


def read_graph_model(graph_model, path, version=None, made_by=None, species=None):
    """(config, arrays) of a loaded nequip GraphModel holding an AllegroModel; `path` names
    it in errors"""
    _need(hasattr(graph_model, "model"), path, "a file of several models or no GraphModel")
    meta = dict(getattr(graph_model, "_metadata", {}) or {})
    top = graph_model.model
    _need(type(top).__name__ == "ForceStressOutput", path, f"model top {type(top).__name__}")
    func = top.func
    names = [n for n, _ in func.named_children()]
    for n in names:
        _need(n in FUNC_CHILDREN, path, f"model part '{n}' ({type(getattr(func, n)).__name__})")
    for n in FUNC_CHILDREN[:8] + ("total_energy_sum",):
        if n not in names:
            raise ConversionError(f"{path}: no '{n}' module: not an AllegroModel")
    type_names = list(graph_model.type_names or meta.get("type_names", "").split())
    T = len(type_names)
    arrays, mlps = {}, {}

    en = func.edge_norm
    r_max = float(en.r_max)
    cut = None
    if en._per_edge_type:  # [T*T] reciprocal cutoffs, centre type major
        cut = (1.0 / _np(en._rmax_recip).reshape(T, T)).tolist()

    rce = func.radial_chemical_embed
    _need(type(rce).__name__ == "SequentialGraphNetwork" and
          [n for n, _ in rce.named_children()] == ["bessel_encode", "type_embed"], path,
          f"radial_chemical_embed {type(rce).__name__} (only allegro.nn.TwoBodyBesselScalarEmbed)")
    be, te = rce.bessel_encode, rce.type_embed
    _need(type(be.cutoff).__name__ in ("PolynomialCutoff", "RecursiveScriptModule") and
          hasattr(be.cutoff, "p"), path, f"radial_chemical_embed cutoff {type(be.cutoff).__name__}")
    _need(type(te).__name__ == "ProductTypeEmbedding", path,
          f"radial_chemical_embed.type_embed {type(te).__name__}")
    arrays["bessel_weights"] = _np(be.bessel_weights).ravel()
    arrays["center_embed"] = _np(te.center_embed.weight)
    arrays["neighbor_embed"] = _np(te.neighbor_embed.weight)
    _mlp(te.basis_linear, "basis_linear", "radial_chemical_embed", path, arrays, mlps)
    _mlp(func.scalar_embed_mlp.mlp_module, "scalar_embed_mlp", "scalar_embed_mlp", path,
         arrays, mlps)

    tem = func.tensor_embed
    _need(type(tem).__name__ == "TwoBodySphericalHarmonicTensorEmbed", path,
          f"tensor_embed {type(tem).__name__}")
    _need(bool(tem.sh.normalize) and tem.sh.normalization == "component", path,
          f"tensor_embed spherical harmonics normalize={tem.sh.normalize}, "
          f"normalization={tem.sh.normalization}")
    irreps_sh = _irreps_str(tem.irreps_out[tem.tensor_basis_out_field])
    sh = parse_irreps(irreps_sh)
    l_max = max(l for _, l, _ in sh)
    _need([(m, l, p) for m, l, p in sh] == [(1, l, (-1) ** l) for l in range(l_max + 1)], path,
          f"spherical harmonics irreps {irreps_sh} (AllegroModel's are 1x0e+1x1o+...)")
    _mlp(tem.env_embed_linear, "env_embed_linear", "num_tensor_features", path, arrays, mlps)

    al = func.allegro
    _need(type(al).__name__ == "Allegro_Module", path, f"allegro {type(al).__name__}")
    U, S = int(al.num_tensor_features), int(al.num_scalar_features)
    for where, w in (("tensor_embed", tem._edge_weighter), ("allegro", al._env_weighter)):
        _need(w.weight_individual_irreps and float(w.alpha) == 1.0, path,
              f"{where}: weight_individual_irreps false")
    _need(all(n == 1 for n in al._n_scalar_outs), path, "more than one scalar per TP output")
    _mlp(al.first_layer_env_embed_projection, "first_layer_env_embed_projection",
         "num_scalar_features", path, arrays, mlps)  # a fixed linear, no config keys of its own
    arrays["env_sum_norm"] = _norm(al.avg_num_neighbors_norm, path, "allegro")
    tps = []
    for k, (tp, lat) in enumerate(zip(al.tps, al.latents)):
        where = f"allegro.tps.{k}"
        _need(type(tp).__name__ == "Contracter", path,
              f"{where}: {type(tp).__name__} (packages hold the plain Contracter)")
        _need(tp.irrep_normalization == "component" and tp.scatter_factor is None, path,
              f"{where}: irrep_normalization {tp.irrep_normalization}, scatter_factor")
        ir1, ir2, iro = tp.irreps_in1, tp.irreps_in2, tp.irreps_out
        paths = tp.instructions
        if paths is None:  # AllegroModel: every allowed path, output-major, then in1, in2
            paths = [(a, b, c) for c, (_, o) in enumerate(iro) for a, (_, x) in enumerate(ir1)
                     for b, (_, y) in enumerate(ir2) if o in x * y]
        entry = {"irreps_in1": _irreps_str(ir1), "irreps_in2": _irreps_str(ir2),
                 "irreps_out": _irreps_str(iro), "paths": [list(map(int, p)) for p in paths],
                 "path_channel_coupling": bool(tp.path_channel_coupling)}
        _need(tp.mul == U and entry["irreps_in2"] == irreps_sh and
              _irreps_str(iro[:1]) == "1x0e", path, f"{where}: irreps {tp}")
        # the model's coupling tensor (paths x in1 x in2 x out) must be ours
        ours = _tp_tensor(entry)
        theirs = _np(tp.w3j).reshape((len(paths),) + tuple(tp.w3j.shape[-3 + tp.w3j_is_ij_diagonal:]))
        if tp.w3j_is_ij_diagonal:  # stored as [paths, in1 = in2, out] where every i == j
            full = np.zeros_like(ours)
            idx = np.arange(ours.shape[1])
            full[:, idx, idx, :] = theirs
            theirs = full
        if not same_coupling(ours, theirs, tp.w3j.dtype):
            raise ConversionError(f"{path}: {where}: the model's coupling tensor differs from "
                                  f"e3nn's Wigner 3j of the paths {paths}")
        w = _np(tp.weights).reshape(U if tp.path_channel_coupling else 1, len(paths))
        arrays[f"tps.{k}.weights"] = w
        tps.append(entry)
        _mlp(lat, f"latents.{k}", "allegro_mlp", path, arrays, mlps)

    _mlp(func.edge_readout.mlp_module, "edge_readout", "readout_mlp", path, arrays, mlps)
    es = func.edge_eng_sum
    _need(type(es).__name__ == "EdgewiseReduce" and es.reduce == "sum", path,
          f"edge_eng_sum {type(es).__name__}")
    arrays["edge_sum_norm"] = _norm(es.norm_module, path, "edge_eng_sum")
    ss = func.per_type_energy_scale_shift
    scales = _np(ss.scales).ravel() if ss.has_scales else np.ones(1)
    shifts = _np(ss.shifts).ravel() if ss.has_shifts else np.zeros(1)
    arrays["energy_scale"] = np.array(np.broadcast_to(scales, (T,)))
    arrays["energy_shift"] = np.array(np.broadcast_to(shifts, (T,)))
    pp = getattr(func, "pair_potential", None)
    zbl = _pair_potential(pp, r_max, None, T, path)
    if zbl is not None and zbl["polynomial_p"] is None:
        raise ConversionError(f"{path}: pair_potential ZBL without its own cutoff")

    cfg = {"family": "allegro", "made_by": made_by, "read_by": version,
           "type_names": type_names, "species": list(species or type_names),
           "r_max": r_max, "per_edge_type_cutoff": cut,
           "polynomial_p": float(be.cutoff.p), "l_max": l_max, "irreps_sh": irreps_sh,
           "num_layers": len(tps), "num_scalar_features": S, "num_tensor_features": U,
           "mlps": mlps, "tps": tps, "pair_potential": zbl,
           "num_parameters": int(sum(p.numel() for p in graph_model.parameters())),
           "model_dtype": meta.get("model_dtype")}
    _check_shapes(cfg, arrays, path)
    return cfg, arrays


def _check_shapes(cfg, arrays, path):
    """The widths that the forward pass chains together (docs/allegro.md)"""
    U, S, L = cfg["num_tensor_features"], cfg["num_scalar_features"], cfg["num_layers"]
    nsh = cfg["l_max"] + 1

    def io(name):
        n = cfg["mlps"][name]["n_layers"]
        return arrays[f"{name}.0"].shape[0], arrays[f"{name}.{n - 1}"].shape[1]
    want = {"basis_linear": (arrays["bessel_weights"].size, arrays["center_embed"].shape[1] * 2),
            "first_layer_env_embed_projection": (io("scalar_embed_mlp")[1], S + U * nsh),
            "env_embed_linear": (io("scalar_embed_mlp")[1], U * nsh),
            "edge_readout": (S * (L + 1), 1)}
    for k in range(L):
        want[f"latents.{k}"] = (S * (k + 1) + U, S + (U * nsh if k < L - 1 else 0))
    for name, shape in want.items():
        if io(name) != shape:
            raise ConversionError(f"{path}: module {name} maps {io(name)}, the architecture "
                                  f"needs {shape}")


def save_npz(path, cfg, arrays):
    np.savez_compressed(path, config=np.array(json.dumps(cfg, sort_keys=True)),
                        **{k: np.ascontiguousarray(v, dtype=np.float64) for k, v in arrays.items()})
