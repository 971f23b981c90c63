"""fusednequip: NequIP-family interatomic potentials evaluated by a C library, from Python.

    from fusednequip import FusedNequIPCalculator
    atoms.calc = FusedNequIPCalculator("nequix-mp-1")
"""
from ._lib import ABI_VERSION, DType, Device, Status, library_path
from .errors import (DeviceError, FusedNequipError, ModalityError, ModelFileError,
                     StructureError, UnknownElementError)
from .model import Context, Model

__version__ = "0.1.0"


def __getattr__(name):  # the calculator imports ASE, which the core bindings do not need
    if name == "FusedNequIPCalculator":
        from .calculator import FusedNequIPCalculator
        return FusedNequIPCalculator
    raise AttributeError(name)


__all__ = ["FusedNequIPCalculator", "Model", "Context", "FusedNequipError", "ModelFileError",
           "UnknownElementError", "StructureError", "DeviceError", "ModalityError", "Status",
           "DType", "Device", "ABI_VERSION", "library_path"]
