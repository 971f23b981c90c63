"""Model and Context: thin owners of the library's fnq_model and fnq_ctx handles.

A Model is read-only and may be shared by any number of contexts and threads. A Context holds
buffers that one evaluation writes: its methods take a lock, so a context shared by several
threads evaluates one call at a time (exact, not concurrent; give each thread its own context
to run them side by side). Both release their C memory when collected, or at once with close()
or a `with` block; both pickle and copy (a copy is a new context on the same model)."""
import ctypes
import math
import threading
import weakref

import numpy as np

from . import _lib
from ._lib import DType, Device, lib
from ._lib import Status
from .errors import (FusedNequipError, ModalityError, UnknownElementError, python_terms,
                     raise_for)

_DEVICES = {"auto": Device.AUTO, "cpu": Device.CPU, "cuda": Device.CUDA, "gpu": Device.CUDA}
_DTYPES = {None: DType.DEFAULT, "float32": DType.F32, "float64": DType.F64}


class Model:
    """A loaded model (read-only; shareable by several contexts).

    `path` is a model file or a name looked up in $FUSEDNEQUIP_MODEL_DIR (see README).
    `modal` chooses the modality of a multi-modal model (SevenNet's 7net-mf-0: "PBE" or
    "R2SCAN"; `modalities` lists them); such a model makes no context without one."""

    def __init__(self, path, modal=None):
        handle = ctypes.c_void_p()
        st = lib.fnq_model_load(str(path).encode(), ctypes.byref(handle))
        raise_for(st, during_load=True)
        modal_api = hasattr(lib, "fnq_model_set_modality")
        self.modalities = [lib.fnq_model_modality_name(handle, i).decode()
                           for i in range(lib.fnq_model_num_modalities(handle))] if modal_api else []
        if modal is not None and not modal_api:
            lib.fnq_model_free(handle)
            raise ModalityError(f"modal={modal!r}: {_lib.library_path} predates multi-modal "
                                f"models; rebuild it", Status.UNSUPPORTED)
        if modal is not None:
            st = lib.fnq_model_set_modality(handle, str(modal).encode())
            if st != 0:
                message = python_terms(lib.fnq_last_error().decode())
                lib.fnq_model_free(handle)
                raise ModalityError(message, st)
        self.modal = modal
        self._handle = handle
        # the C model is freed when the last open context on it is closed and the model is
        # closed (or collected): contexts read it until they are freed
        self._open_contexts = 0
        self._close_wanted = False
        self._state_lock = threading.Lock()
        self._finalizer = weakref.finalize(self, lib.fnq_model_free, handle)
        self.path = lib.fnq_model_path(handle).decode()
        self.family = lib.fnq_model_family(handle).decode()
        self.cutoff = lib.fnq_model_cutoff(handle)
        self.num_layers = lib.fnq_model_num_layers(handle)
        self.num_params = lib.fnq_model_num_params(handle)
        n = lib.fnq_model_num_species(handle)
        self.species = [lib.fnq_model_species_symbol(handle, i).decode() for i in range(n)]
        self._index = {s: i for i, s in enumerate(self.species)}

    def close(self):
        """Free the C model now, or as soon as the contexts still open on it are closed.
        Idempotent; a closed model cannot make new contexts."""
        with self._state_lock:
            self._close_wanted = True
            free_now = self._open_contexts == 0
        if free_now:
            self._finalizer()

    @property
    def closed(self):
        return self._close_wanted

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce__(self):  # pickled by path: the file is read again where it is unpickled
        return (Model, (self.path, self.modal))

    def __copy__(self):  # read-only: a copy may be the model itself
        return self

    def __deepcopy__(self, memo):
        return self

    def _open_context(self):
        with self._state_lock:
            if self._close_wanted:
                raise ValueError(f"model {self.path} is closed")
            self._open_contexts += 1

    def _context_closed(self):
        with self._state_lock:
            self._open_contexts -= 1
            free_now = self._close_wanted and self._open_contexts == 0
        if free_now:
            self._finalizer()

    def species_indices(self, symbols):
        """Model species index of each symbol; UnknownElementError names the first unknown."""
        out = np.empty(len(symbols), dtype=np.int32)
        for i, s in enumerate(symbols):
            t = self._index.get(s)
            if t is None:
                raise UnknownElementError(
                    f"atom {i} is element '{s}', which the model {self.path} does not have "
                    f"(it has {len(self.species)} species)", atoms=(i,))
            out[i] = t
        return out


def _free_context(handle, model):
    """fnq_ctx_free; `model` is held until then, since a model must outlive its contexts."""
    lib.fnq_ctx_free(handle)
    model._context_closed()


class Context:
    """An evaluation context on one device, with buffers reused across calls."""

    def __init__(self, model, device="auto", dtype=None, device_id=0):
        if device not in _DEVICES:
            raise ValueError(f"device must be one of {sorted(_DEVICES)}, not {device!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be None, 'float32' or 'float64', not {dtype!r}")
        self.model = model
        # what was asked for, to make copies and unpickle with; None: the library's default
        self._request = (device, dtype, device_id)
        self.min_distance = None
        self.max_neighbors = None
        self._lock = threading.Lock()
        if model.modalities and model.modal is None:
            raise ModalityError(f"model {model.path} is multi-modal (modalities: "
                                f"{', '.join(model.modalities)}): choose one, "
                                f"FusedNequIPCalculator(..., modal=NAME) or Model(path, "
                                f"modal=NAME)", Status.INVALID_ARG)
        model._open_context()
        handle = ctypes.c_void_p()
        st = lib.fnq_ctx_init(model._handle, _DEVICES[device], device_id, _DTYPES[dtype],
                              ctypes.byref(handle))
        if st != 0:
            model._context_closed()
        raise_for(st)
        self._handle = handle
        # the model goes with the finalizer: the context reads it while being freed, and a
        # model and its context collected together (a reference cycle) would otherwise run
        # their finalizers in either order (AddressSanitizer: heap-use-after-free)
        self._finalizer = weakref.finalize(self, _free_context, handle, model)
        self.device = Device(lib.fnq_ctx_device(handle)).name.lower()
        self.dtype = "float32" if lib.fnq_ctx_dtype(handle) == DType.F32 else "float64"

    def _call(self, fn, *args):
        """One library call on this context: one thread at a time, never after close()."""
        with self._lock:
            if not self._finalizer.alive:
                raise ValueError("this context is closed")
            return fn(self._handle, *args)

    def set_min_distance(self, value):
        """Atoms closer than this (A) are refused as overlapping (default 0.1)."""
        raise_for(self._call(lib.fnq_ctx_set_min_distance, value))
        self.min_distance = value

    def set_max_neighbors(self, value):
        """An atom with more neighbours than this within the cutoff is refused (default 1024)."""
        raise_for(self._call(lib.fnq_ctx_set_max_neighbors, value))
        self.max_neighbors = value

    @property
    def last_num_edges(self):
        return self._call(lib.fnq_ctx_last_num_edges)

    def close(self):
        """Free the context's C memory (and its GPU buffers) now. Idempotent; waits for a
        call in progress in another thread."""
        with self._lock:
            self._finalizer()

    @property
    def closed(self):
        return not self._finalizer.alive

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce__(self):
        device, dtype, device_id = self._request
        return (_new_context, (self.model, device, dtype, device_id, self.min_distance,
                               self.max_neighbors))

    def __copy__(self):  # a context of its own: two copies never share buffers
        return _new_context(*self.__reduce__()[1])

    def __deepcopy__(self, memo):
        return self.__copy__()

    def compute(self, positions, species, cell=None, pbc=None):
        """Energy, per-atom energies, forces and virial (Voigt xx yy zz yz xz xy, eV)."""
        pos = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
        sp = np.ascontiguousarray(species, dtype=np.int32)
        n = len(pos)
        if len(sp) != n:
            raise ValueError(f"{n} positions but {len(sp)} species")
        c = None if cell is None else np.ascontiguousarray(cell, dtype=np.float64).reshape(9)
        p = None if pbc is None else np.ascontiguousarray(np.asarray(pbc, dtype=bool), np.int32)
        energy = ctypes.c_double()
        energies = np.empty(n, dtype=np.float64)
        forces = np.empty((n, 3), dtype=np.float64)
        virial = np.empty(6, dtype=np.float64)
        st = self._call(lib.fnq_ctx_compute_periodic, n, pos.reshape(-1), sp, c, p,
                        ctypes.byref(energy), energies, forces.reshape(-1), virial)
        raise_for(st)
        return energy.value, energies, forces, virial

    def compute_batch(self, structures):
        """compute for many independent structures in one call of the library (one graph on
        the GPU): `structures` is a sequence of (positions, species, cell, pbc) as compute
        takes them. Returns a list of (energy, per-atom energies, forces, virial), one per
        structure. A bad structure raises, naming it ("structure S: ...")."""
        pos, sp, cells, pbcs, offsets = [], [], [], [], [0]
        for s, (positions, species, cell, pbc) in enumerate(structures):
            p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
            z = np.asarray(species, dtype=np.int32).reshape(-1)
            if len(z) != len(p):
                raise ValueError(f"structure {s}: {len(p)} positions but {len(z)} species")
            pos.append(p)
            sp.append(z)
            cells.append(np.zeros(9) if cell is None else
                         np.asarray(cell, dtype=np.float64).reshape(9))
            pbcs.append(False if pbc is None else np.asarray(pbc, dtype=bool))
            offsets.append(offsets[-1] + len(p))
        if len(offsets) == 1:
            return []
        energies, atom_energies, forces, virials = self.compute_batch_arrays(
            np.concatenate(pos), np.concatenate(sp), offsets, np.stack(cells),
            np.stack([np.broadcast_to(p, 3) for p in pbcs]))
        return [(float(energies[s]), atom_energies[a:b], forces[a:b], virials[s])
                for s, (a, b) in enumerate(zip(offsets[:-1], offsets[1:]))]

    def compute_batch_arrays(self, positions, species, offsets, cells=None, pbcs=None):
        """compute_batch with the batch as flat arrays, no per-structure Python work (TorchSim's
        states of thousands of structures: 52 ms a call for 4,096 of them the other way):
        positions [n, 3] and species [n] of all atoms, structure s being atoms
        offsets[s]:offsets[s + 1] (offsets [m + 1], from 0 to n), cells [m, 3, 3] (rows are
        the cell vectors; None or zeros: no cell), pbcs [m, 3] (or [3] for all; None: not
        periodic). Returns (energies [m], per-atom energies [n], forces [n, 3], virials [m, 6]
        in Voigt order xx yy zz yz xz xy)."""
        if not hasattr(lib, "fnq_ctx_compute_batch"):
            raise FusedNequipError(f"{_lib.library_path} predates fnq_ctx_compute_batch")
        offsets = np.ascontiguousarray(offsets, dtype=np.int64).reshape(-1)
        m = len(offsets) - 1
        pos = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
        sp = np.ascontiguousarray(species, dtype=np.int32).reshape(-1)
        n = len(pos)
        if len(sp) != n:
            raise ValueError(f"{n} positions but {len(sp)} species")
        if m < 0 or offsets[0] != 0 or offsets[-1] != n or np.any(np.diff(offsets) < 0):
            raise ValueError(f"offsets must rise from 0 to the {n} atoms")
        cells = (np.zeros((m, 9)) if cells is None else
                 np.ascontiguousarray(cells, dtype=np.float64).reshape(m, 9))
        pbcs = np.ascontiguousarray(np.broadcast_to(
            np.zeros(3, bool) if pbcs is None else np.asarray(pbcs, dtype=bool), (m, 3)),
            dtype=np.int32)
        energies = np.zeros(m, dtype=np.float64)
        atom_energies = np.zeros(n, dtype=np.float64)
        forces = np.zeros((n, 3), dtype=np.float64)
        virials = np.zeros((m, 6), dtype=np.float64)
        if m == 0:
            return energies, atom_energies, forces, virials
        st = self._call(lib.fnq_ctx_compute_batch, m, offsets, pos.reshape(-1), sp,
                        cells.reshape(-1), pbcs.reshape(-1), energies, atom_energies,
                        forces.reshape(-1), virials.reshape(-1))
        raise_for(st)
        return energies, atom_energies, forces, virials

    def compute_graph(self, positions, species, receivers, senders, shifts=None):
        """Like compute, with the caller's full neighbour list instead of the library's.

        Edge e points from senders[e] to receivers[e]: r = positions[senders[e]] -
        positions[receivers[e]] + shifts[e] (Cartesian, A). The list must hold both directions
        of every pair; pairs at or beyond the cutoff are ignored. No ghost atoms: every atom is
        owned. Returns energy, per-atom energies, forces and virial as compute does.
        """
        pos = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
        sp = np.ascontiguousarray(species, dtype=np.int32)
        recv = np.ascontiguousarray(receivers, dtype=np.int64)
        send = np.ascontiguousarray(senders, dtype=np.int64)
        n, n_edges = len(pos), len(recv)
        if len(sp) != n:
            raise ValueError(f"{n} positions but {len(sp)} species")
        if len(send) != n_edges:
            raise ValueError(f"{n_edges} receivers but {len(send)} senders")
        sh = None
        if shifts is not None:
            sh = np.ascontiguousarray(shifts, dtype=np.float64).reshape(-1, 3)
            if len(sh) != n_edges:
                raise ValueError(f"{n_edges} edges but {len(sh)} shifts")
            sh = sh.reshape(-1)
        energy = ctypes.c_double()
        energies = np.empty(n, dtype=np.float64)
        forces = np.empty((n, 3), dtype=np.float64)
        virial = np.empty(6, dtype=np.float64)
        st = self._call(lib.fnq_ctx_compute_graph, n, n, pos.reshape(-1), sp, n_edges, recv,
                        send, sh, None, ctypes.byref(energy), energies, forces.reshape(-1),
                        virial, None)
        raise_for(st)
        return energy.value, energies, forces, virial

    def compute_graph_device(self, positions, species, receivers, senders, shifts=None):
        """compute_graph with the inputs already on the GPU, where it reads them in place.

        The inputs are objects with __cuda_array_interface__ (torch or cupy tensors) on this
        context's device, C-contiguous: positions float64 [n, 3], species int32 [n], receivers
        and senders int64 [e], shifts float64 [e, 3] or None. Work writing them must be done or
        queued on the legacy default stream (torch's and cupy's default; after work on another
        stream, synchronize it first). Needs a context on "cuda".
        Returns what compute_graph returns (host numpy arrays).
        """
        if self.device != "cuda":
            raise ValueError(f"compute_graph_device needs a context on device 'cuda', this one "
                             f"is on {self.device!r} (use compute_graph)")
        pos, (n, _) = _device_array("positions", positions, "<f8", (None, 3))
        sp, _ = _device_array("species", species, "<i4", (n,))
        recv, (n_edges,) = _device_array("receivers", receivers, "<i8", (None,))
        send, _ = _device_array("senders", senders, "<i8", (n_edges,))
        sh = None if shifts is None else _device_array("shifts", shifts, "<f8", (n_edges, 3))[0]
        energy = ctypes.c_double()
        energies = np.empty(n, dtype=np.float64)
        forces = np.empty((n, 3), dtype=np.float64)
        virial = np.empty(6, dtype=np.float64)
        compute = _lib.require("fnq_ctx_compute_graph_device")
        st = self._call(compute, n, pos, sp, n_edges, recv, send, sh, ctypes.byref(energy),
                        energies, forces.reshape(-1), virial)
        raise_for(st)
        return energy.value, energies, forces, virial


def _new_context(model, device, dtype, device_id, min_distance, max_neighbors):
    """A context as asked for, with the same limits: copies and unpickling."""
    ctx = Context(model, device=device, dtype=dtype, device_id=device_id)
    if min_distance is not None:
        ctx.set_min_distance(min_distance)
    if max_neighbors is not None:
        ctx.set_max_neighbors(max_neighbors)
    return ctx


def _device_array(name, obj, typestr, shape):
    """The device pointer and shape of `obj`'s __cuda_array_interface__ after checking its
    element type, shape (None: any length) and C-contiguity; no torch or cupy import."""
    iface = getattr(obj, "__cuda_array_interface__", None)
    if not isinstance(iface, dict):
        raise TypeError(f"{name} must be a GPU array with __cuda_array_interface__ (a torch or "
                        f"cupy tensor on the GPU), not {type(obj).__name__}")
    if iface.get("typestr") != typestr:
        raise TypeError(f"{name} must have element type {typestr} ({_TYPESTRS[typestr]}), not "
                        f"{iface.get('typestr')}")
    got = tuple(int(d) for d in iface["shape"])
    if len(got) != len(shape) or any(w is not None and g != w for g, w in zip(got, shape)):
        want = ", ".join("any" if w is None else str(w) for w in shape)
        raise ValueError(f"{name} must have shape ({want}), not {got}")
    strides = iface.get("strides")
    if strides is not None:
        itemsize, expect = int(typestr[2:]), []
        for d in reversed(got):
            expect.insert(0, itemsize)
            itemsize *= d
        if any(g > 1 and int(s) != e for g, s, e in zip(got, strides, expect)):
            raise ValueError(f"{name} must be C-contiguous (strides {tuple(strides)}); pass "
                             f"{name}.contiguous() or a copy")
    if iface.get("mask") is not None:
        raise ValueError(f"{name} must not be a masked array")
    ptr = int(iface["data"][0])
    if ptr == 0 and math.prod(got) > 0:
        raise ValueError(f"{name} has a NULL data pointer")
    return (ptr or None), got


_TYPESTRS = {"<f8": "float64", "<i4": "int32", "<i8": "int64"}
