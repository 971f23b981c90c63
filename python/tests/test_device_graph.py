"""Context.compute_graph_device: argument checks on __cuda_array_interface__ (with stand-in
objects, no GPU needed), the refusal on a CPU context, and (with torch on a GPU) bitwise the
results of compute_graph on the same arrays."""
import ctypes

import numpy as np
import pytest

from fusednequip import Context, DeviceError, _lib
from fusednequip.model import _device_array


class FakeDeviceArray:
    """Only the interface: the library never reads it on a CPU context."""

    def __init__(self, shape, typestr, strides=None, ptr=0x10000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (ptr, False), "version": 3}


def test_interface_checks():
    ptr, shape = _device_array("positions", FakeDeviceArray((4, 3), "<f8"), "<f8", (None, 3))
    assert ptr == 0x10000 and shape == (4, 3)
    # explicit C-contiguous strides are fine
    _device_array("positions", FakeDeviceArray((4, 3), "<f8", (24, 8)), "<f8", (None, 3))
    with pytest.raises(TypeError, match="species.*__cuda_array_interface__"):
        _device_array("species", np.zeros(4, np.int32), "<i4", (4,))
    with pytest.raises(TypeError, match="species.*int32"):
        _device_array("species", FakeDeviceArray((4,), "<i8"), "<i4", (4,))
    with pytest.raises(ValueError, match=r"receivers must have shape \(5\)"):
        _device_array("receivers", FakeDeviceArray((6,), "<i8"), "<i8", (5,))
    with pytest.raises(ValueError, match="positions must be C-contiguous"):
        _device_array("positions", FakeDeviceArray((4, 3), "<f8", (8, 32)), "<f8", (None, 3))


def test_cpu_context_refuses(mp1):
    ctx = Context(mp1, device="cpu")
    pos, sp = FakeDeviceArray((2, 3), "<f8"), FakeDeviceArray((2,), "<i4")
    i, j = FakeDeviceArray((2,), "<i8"), FakeDeviceArray((2,), "<i8")
    with pytest.raises(ValueError, match="cuda"):
        ctx.compute_graph_device(pos, sp, i, j)
    # the library itself refuses too, by name
    energy = ctypes.c_double()
    st = _lib.lib.fnq_ctx_compute_graph_device(ctx._handle, 2, 0x10000, 0x10000, 2, 0x10000,
                                               0x10000, None, ctypes.byref(energy), None, None,
                                               None)
    assert st == _lib.Status.INVALID_ARG
    assert "fnq_ctx_compute_graph_device" in _lib.last_error() and "cuda" in _lib.last_error()


def test_matches_compute_graph_on_gpu(mp1):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    try:
        ctx = Context(mp1, device="cuda")
    except DeviceError as err:
        pytest.skip(f"no CUDA context: {err}")
    from ase.build import bulk
    from ase.neighborlist import neighbor_list
    atoms = bulk("Si", "diamond", a=5.43).repeat((3, 3, 3))
    atoms.rattle(0.05, seed=3)
    i, j, shift = neighbor_list("ijS", atoms, mp1.cutoff + 0.5)
    shifts = shift @ atoms.cell.array
    species = mp1.species_indices(atoms.get_chemical_symbols())
    want = ctx.compute_graph(atoms.positions, species, i, j, shifts)
    dev = lambda a, dt: torch.as_tensor(np.ascontiguousarray(a), dtype=dt, device="cuda")
    got = ctx.compute_graph_device(dev(atoms.positions, torch.float64),
                                   dev(species, torch.int32), dev(i, torch.int64),
                                   dev(j, torch.int64), dev(shifts, torch.float64))
    assert got[0] == want[0]
    for a, b in zip(got[1:], want[1:]):
        assert np.array_equal(a, b)
