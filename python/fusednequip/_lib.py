"""ctypes bindings of libfusednequip: every argtypes/restype and every enum copy in one place.

The enum values are copies of core/include/fnq.h (keep in sync; tests/test_bindings.py checks
them against the header). The library is found through, in order: $FNQ_LIBRARY, a copy bundled
in this package, the repository's build/ directory, the system's library path.
"""
import ctypes
import ctypes.util
import enum
import os

import numpy as np

ABI_VERSION = 1  # keep in sync with FNQ_ABI_VERSION in core/include/fnq.h


class Status(enum.IntEnum):  # keep in sync with enum fnq_status
    OK = 0
    INVALID_ARG = -1
    IO = -2
    FORMAT = -3
    UNSUPPORTED = -4
    OUT_OF_MEMORY = -5
    DEVICE = -6
    COMM = -7
    INTERNAL = -99


class DType(enum.IntEnum):  # keep in sync with enum fnq_dtype
    F32 = 0
    F64 = 1
    DEFAULT = 2


class Device(enum.IntEnum):  # keep in sync with enum fnq_device
    CPU = 0
    CUDA = 1
    AUTO = 2


def _candidates():
    env = os.environ.get("FNQ_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.startswith("libfusednequip.so"):
            yield os.path.join(here, name)
    repo = os.path.dirname(os.path.dirname(here))
    yield os.path.join(repo, "build", "core", "libfusednequip.so")
    found = ctypes.util.find_library("fusednequip")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as err:
            tried.append(f"{path} ({err})")
    raise ImportError(
        "libfusednequip not found; build it (scripts/setup.sh) or set FNQ_LIBRARY. Tried: "
        + ", ".join(tried))


lib, library_path = _load()

_p = ctypes.c_void_p
_f64 = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_f64w = np.ctypeslib.ndpointer(dtype=np.float64, flags=("C_CONTIGUOUS", "WRITEABLE"))
_i32 = np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS")
_i64 = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")


def _opt(nd):
    """An ndpointer that also accepts None (NULL)."""

    class Optional(nd):
        @classmethod
        def from_param(cls, obj):
            return None if obj is None else nd.from_param(obj)

    return Optional


_SIGNATURES = {
    "fnq_abi_version": (ctypes.c_int32, []),
    "fnq_version_string": (ctypes.c_char_p, []),
    "fnq_status_string": (ctypes.c_char_p, [ctypes.c_int]),
    "fnq_last_error": (ctypes.c_char_p, []),
    "fnq_cuda_device_count": (ctypes.c_int32, []),
    "fnq_backend_count": (ctypes.c_int32, []),
    "fnq_backend_name": (ctypes.c_char_p, [ctypes.c_int32]),
    "fnq_last_error_atoms": (ctypes.c_int32, [_opt(_i64), ctypes.c_int32]),
    "fnq_model_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_p)]),
    "fnq_model_free": (None, [_p]),
    "fnq_model_path": (ctypes.c_char_p, [_p]),
    "fnq_model_family": (ctypes.c_char_p, [_p]),
    "fnq_model_cutoff": (ctypes.c_double, [_p]),
    "fnq_model_num_species": (ctypes.c_int32, [_p]),
    "fnq_model_num_layers": (ctypes.c_int32, [_p]),
    "fnq_model_num_params": (ctypes.c_int64, [_p]),
    "fnq_model_species_symbol": (ctypes.c_char_p, [_p, ctypes.c_int32]),
    "fnq_model_species_index": (ctypes.c_int32, [_p, ctypes.c_char_p]),
    "fnq_model_num_modalities": (ctypes.c_int32, [_p]),
    "fnq_model_modality_name": (ctypes.c_char_p, [_p, ctypes.c_int32]),
    "fnq_model_set_modality": (ctypes.c_int, [_p, ctypes.c_char_p]),
    "fnq_ctx_init": (ctypes.c_int, [_p, ctypes.c_int, ctypes.c_int32, ctypes.c_int,
                                    ctypes.POINTER(_p)]),
    "fnq_ctx_free": (None, [_p]),
    "fnq_ctx_device": (ctypes.c_int, [_p]),
    "fnq_ctx_dtype": (ctypes.c_int, [_p]),
    "fnq_ctx_set_min_distance": (ctypes.c_int, [_p, ctypes.c_double]),
    "fnq_ctx_set_max_neighbors": (ctypes.c_int, [_p, ctypes.c_int64]),
    "fnq_ctx_last_num_edges": (ctypes.c_int64, [_p]),
    "fnq_ctx_compute_periodic": (ctypes.c_int, [
        _p, ctypes.c_int64, _f64, _i32, _opt(_f64), _opt(_i32), ctypes.POINTER(ctypes.c_double),
        _opt(_f64w), _opt(_f64w), _opt(_f64w)]),
    "fnq_ctx_compute_batch": (ctypes.c_int, [
        _p, ctypes.c_int64, _i64, _f64, _i32, _opt(_f64), _opt(_i32), _opt(_f64w), _opt(_f64w),
        _opt(_f64w), _opt(_f64w)]),
    "fnq_ctx_compute_graph": (ctypes.c_int, [
        _p, ctypes.c_int64, ctypes.c_int64, _f64, _i32, ctypes.c_int64, _i64, _i64, _opt(_f64),
        _opt(_i64), ctypes.POINTER(ctypes.c_double), _opt(_f64w), _opt(_f64w), _opt(_f64w),
        _opt(_f64w)]),
    # device pointers (integers from __cuda_array_interface__) for the inputs
    "fnq_ctx_compute_graph_device": (ctypes.c_int, [
        _p, ctypes.c_int64, _p, _p, ctypes.c_int64, _p, _p, _p, ctypes.POINTER(ctypes.c_double),
        _opt(_f64w), _opt(_f64w), _opt(_f64w)]),
}

# newer than ABI version 1's first release: a library without them still loads, and the
# methods that need them say so
_OPTIONAL = {"fnq_ctx_compute_graph_device", "fnq_ctx_compute_batch", "fnq_last_error_atoms",
             "fnq_model_num_modalities", "fnq_model_modality_name", "fnq_model_set_modality"}

for _name, (_res, _args) in _SIGNATURES.items():
    if _name in _OPTIONAL and not hasattr(lib, _name):
        continue
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args

if lib.fnq_abi_version() != ABI_VERSION:
    raise ImportError(
        f"{library_path} has ABI version {lib.fnq_abi_version()}, this Python package expects "
        f"{ABI_VERSION}: rebuild the library or reinstall the package")


def require(name):
    """The library function `name`, or an error naming the library that lacks it."""
    if not hasattr(lib, name):
        raise NotImplementedError(f"{library_path} has no {name}: rebuild the library")
    return getattr(lib, name)


def last_error():
    return lib.fnq_last_error().decode(errors="replace")


def last_error_atoms():
    """Indices of the atoms the last failure is about (empty when it names none)."""
    if not hasattr(lib, "fnq_last_error_atoms"):
        return ()
    n = lib.fnq_last_error_atoms(None, 0)
    atoms = np.zeros(n, dtype=np.int64)
    lib.fnq_last_error_atoms(atoms, n)
    return tuple(int(a) for a in atoms)
