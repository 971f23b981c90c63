"""ASE calculator over libfusednequip."""
import numpy as np
from ase.calculators.calculator import Calculator, all_changes

from .model import Context, Model


class FusedNequIPCalculator(Calculator):
    """ASE calculator for NequIP-family models (.fnqm files, e.g. converted NequIP models, and
    Nequix .nqx files) evaluated by libfusednequip.

    Parameters
    ----------
    model : str or Model
        A model file, a model name looked up in $FUSEDNEQUIP_MODEL_DIR, or a loaded Model.
    device : "auto" | "cpu" | "cuda"
        "auto" takes the GPU when the library was built with CUDA, one is present and the
        CUDA backend supports the model; otherwise the CPU (with a warning on stderr when the
        model was the reason).
    dtype : None | "float32" | "float64"
        None: float64 on the CPU, float32 on the GPU.

    Results: energy and free_energy (eV), energies (eV per atom), forces (eV/A) and, when the
    cell is three-dimensional, stress (eV/A^3, Voigt xx yy zz yz xz xy, ASE's sign). Works for
    periodic, partly periodic and non-periodic Atoms; the neighbour list is built in C.

    Raises ModelFileError (bad or missing model), UnknownElementError (element not in the
    model), StructureError (NaN coordinates, overlapping atoms, ...), DeviceError.
    """

    implemented_properties = ["energy", "free_energy", "energies", "forces", "stress"]

    def __init__(self, model, device="auto", dtype=None, **kwargs):
        super().__init__(**kwargs)
        self.model = model if isinstance(model, Model) else Model(model)
        self.context = Context(self.model, device=device, dtype=dtype)
        self._species_key = None
        self._species = None

    def _species_of(self, atoms):
        numbers = atoms.numbers
        if self._species_key is None or not np.array_equal(numbers, self._species_key):
            self._species = self.model.species_indices(atoms.get_chemical_symbols())
            self._species_key = numbers.copy()
        return self._species

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        Calculator.calculate(self, atoms, properties, system_changes)
        a = self.atoms
        species = self._species_of(a)
        cell = a.cell.array if a.cell.rank > 0 or a.pbc.any() else None
        energy, energies, forces, virial = self.context.compute(a.positions, species, cell,
                                                                a.pbc)
        self.results = {
            "energy": energy,
            "free_energy": energy,
            "energies": energies,
            "forces": forces,
        }
        if a.cell.rank == 3:
            self.results["stress"] = -virial / a.get_volume()
