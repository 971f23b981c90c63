"""Exceptions raised by fusednequip. Every failure of the C library becomes one of these, with
the library's message (which names the file, field, atom or value at fault) and the indices of
the atoms it names."""
from . import _lib
from ._lib import Status


class FusedNequipError(RuntimeError):
    """Base class. `status` is the library's fnq_status (a fusednequip._lib.Status); `atoms`
    the indices of the atoms the failure is about (a tuple, empty when it names none)."""

    def __init__(self, message, status=Status.INTERNAL, atoms=()):
        super().__init__(message)
        self.status = Status(status)
        self.atoms = tuple(atoms)


class ModelFileError(FusedNequipError):
    """The model file is missing, unreadable, truncated, corrupt or of an unsupported kind."""


class UnknownElementError(FusedNequipError, KeyError):
    """An atom's element is not among the model's species."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


class StructureError(FusedNequipError, ValueError):
    """The structure cannot be evaluated: NaN coordinates, atoms closer than the minimum
    distance, more neighbours than the limit, a singular cell, ... `atoms` names the atoms at
    fault: (i, j) for two atoms too close, (i,) for one atom."""


class ModalityError(FusedNequipError, ValueError):
    """A multi-modal model used without a modality, or with one it does not have (the
    message lists its modalities), or a modality given for a model without any."""


class DeviceError(FusedNequipError):
    """The requested device is unavailable, or a GPU error (out of memory, ...)."""


# The library's messages name its C functions where a limit can be changed; from Python the
# calculator's arguments and the Context's methods change them.
_PYTHON_TERMS = {
    "fnq_ctx_set_max_neighbors": "FusedNequIPCalculator(..., max_neighbors=N) or "
                                 "Context.set_max_neighbors(N)",
    "fnq_ctx_set_min_distance": "FusedNequIPCalculator(..., min_distance=D) or "
                                "Context.set_min_distance(D)",
    "C fnq_model_set_modality": "Model(path, modal=NAME)",
}


def python_terms(message):
    for c_name, python in _PYTHON_TERMS.items():
        message = message.replace(c_name, python)
    return message


def raise_for(status, during_load=False):
    """Raise the exception for a library call's status, with the library's last error."""
    status = Status(status)
    if status == Status.OK:
        return
    message = python_terms(_lib.last_error())
    if during_load and status in (Status.IO, Status.FORMAT, Status.UNSUPPORTED):
        raise ModelFileError(message, status)
    if status in (Status.DEVICE, Status.OUT_OF_MEMORY) or (
            status == Status.UNSUPPORTED and "device" in message):
        raise DeviceError(message, status)
    if status == Status.INVALID_ARG:
        raise StructureError(message, status, _lib.last_error_atoms())
    raise FusedNequipError(message, status)
