"""ASE calculator over libfusednequip."""
import copy
import threading

import numpy as np
from ase.calculators.calculator import (Calculator, PropertyNotImplementedError, all_changes)

from .model import Context, Model


class FusedNequIPCalculator(Calculator):
    """ASE calculator for NequIP-family models (.fnqm files, e.g. converted NequIP models, and
    Nequix .nqx files) evaluated by libfusednequip.

    Parameters
    ----------
    model : str or Model
        A model file, a model name looked up in $FUSEDNEQUIP_MODEL_DIR, or a loaded Model.
    modal : str, optional
        The modality of a multi-modal model (as SevenNetCalculator's `modal`: "PBE" or
        "R2SCAN" for 7net-mf-0); required for such a model, refused for others.
    device : "auto" | "cpu" | "cuda"
        "auto" takes the GPU when the library was built with CUDA, one is present and the
        CUDA backend supports the model; otherwise the CPU (with a warning on stderr when the
        model was the reason).
    dtype : None | "float32" | "float64"
        None: float64 on the CPU, float32 on the GPU.
    max_neighbors : int, optional
        An atom with more neighbours than this within the cutoff is refused (default 1024).
    min_distance : float, optional
        Atoms closer than this (A) are refused as overlapping (default 0.1).

    Results: energy and free_energy (eV), energies (eV per atom), forces (eV/A) and stress
    (eV/A^3, Voigt xx yy zz yz xz xy, ASE's sign). Works for periodic, partly periodic and
    non-periodic Atoms; the neighbour list is built in C. Stress needs a cell of three non-zero
    vectors: it is -virial / cell volume, and for a slab or a wire that volume includes the
    vacuum along the non-periodic axes (as with ASE's other calculators).

    Threads: one calculator may be used from several threads; its evaluations then run one at
    a time (a lock), with exact results. For evaluations side by side, give each thread its
    own calculator (`copy.copy(calc)` makes one on the same loaded model).

    Memory: the C model and buffers are freed when the calculator is collected, or at once by
    close() or a `with` block. Copies and pickles are independent calculators.

    Raises ModelFileError (bad or missing model), UnknownElementError (element not in the
    model), StructureError (NaN coordinates, overlapping atoms, ...), DeviceError.
    """

    implemented_properties = ["energy", "free_energy", "energies", "forces", "stress"]

    def __init__(self, model, device="auto", dtype=None, max_neighbors=None, min_distance=None,
                 modal=None, **kwargs):
        super().__init__(**kwargs)
        self._lock = threading.RLock()
        self._owns_model = not isinstance(model, Model)
        self.model = Model(model, modal=modal) if self._owns_model else model
        if not self._owns_model and modal is not None and modal != model.modal:
            raise ValueError(f"modal={modal!r}, but the Model passed was loaded with "
                             f"modal={model.modal!r}: give it to Model(path, modal=...)")
        self.context = Context(self.model, device=device, dtype=dtype)
        if max_neighbors is not None:
            self.context.set_max_neighbors(max_neighbors)
        if min_distance is not None:
            self.context.set_min_distance(min_distance)
        self._species_key = None
        self._species = None

    # ASE's base class stores a bound method of the calculator in the calculator when the
    # class has no get_spin_polarized: a reference cycle that kept the C model and buffers
    # until Python's cyclic collector ran
    def get_spin_polarized(self):
        return False

    def _species_of(self, atoms):
        numbers = atoms.numbers
        if self._species_key is None or not np.array_equal(numbers, self._species_key):
            self._species = self.model.species_indices(atoms.get_chemical_symbols())
            self._species_key = numbers.copy()
        return self._species

    def check_state(self, atoms, tol=1e-15):
        """What changed since the last calculation. ASE's own check (np.allclose on every
        array, 3-4 times an MD step) cost more than the rest of an ASE step at 100 atoms
        (bench/bench_md_protocol.py); the model reads only positions, numbers, cell and pbc,
        so only those are compared, bit for bit (a change below tol recomputes: the same
        results, never stale ones)."""
        old = self.atoms
        if old is None or len(old) != len(atoms):
            return list(all_changes)
        # bytes, not np.array_equal: the same bit-for-bit answer in a sixth of the time
        # (0.2 against 1.2 us an array at 100 atoms)
        was, now = old.arrays, atoms.arrays
        changes = []
        if was["positions"].tobytes() != now["positions"].tobytes():
            changes.append("positions")
        if was["numbers"].tobytes() != now["numbers"].tobytes():
            changes.append("numbers")
        if old.cell.array.tobytes() != atoms.cell.array.tobytes():
            changes.append("cell")
        if old.pbc.tobytes() != atoms.pbc.tobytes():
            changes.append("pbc")
        return changes

    def get_property(self, name, atoms=None, allow_calculation=True):
        # one thread at a time: ASE compares the atoms, calculates and reads the results in
        # separate steps, each on the calculator's state
        with self._lock:
            return super().get_property(name, atoms, allow_calculation)

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        with self._lock:
            Calculator.calculate(self, atoms, properties, system_changes)
            a = self.atoms
            if "stress" in properties and a.cell.rank < 3:
                raise PropertyNotImplementedError(_why_no_stress(a))
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

    def calculate_batch(self, images):
        """Evaluate many structures (a list of ase.Atoms, each its own cell, periodicity,
        size and species) in one call of the library, one graph on the GPU: what screening,
        phonon displacements or NEB images want. Returns one dict per structure with the keys
        of `calculator.results` after a single call: energy, free_energy, energies, forces,
        and stress where the cell has three vectors. The images' own calculators are left
        alone, and so are this calculator's results."""
        with self._lock:
            structures = []
            for a in images:
                species = self.model.species_indices(a.get_chemical_symbols())
                cell = a.cell.array if a.cell.rank > 0 or a.pbc.any() else None
                structures.append((a.positions, species, cell, a.pbc))
            out = []
            for a, (energy, energies, forces, virial) in zip(
                    images, self.context.compute_batch(structures)):
                r = {"energy": energy, "free_energy": energy, "energies": energies,
                     "forces": forces}
                if a.cell.rank == 3:
                    r["stress"] = -virial / a.get_volume()
                out.append(r)
            return out

    def close(self):
        """Free the context (and the model, when this calculator loaded it) now."""
        with self._lock:
            self.context.close()
            if self._owns_model:
                self.model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # A copy has the same model and a context of its own: used from another thread it never
    # waits for this one, and closing one leaves the other working. (A pickle reloads the
    # model from its file, and the unpickled calculator owns it.)
    def __copy__(self):
        new = self.__class__.__new__(self.__class__)
        new.__setstate__(self.__getstate__())
        new.context = copy.copy(self.context)
        new.results = dict(self.results)
        new._owns_model = False
        return new

    def __deepcopy__(self, memo):
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        new._owns_model = False
        return new


def _why_no_stress(atoms):
    zero = [f"{'abc'[k]}" for k in range(3) if not atoms.cell[k].any()]
    vectors = ", ".join(zero) if zero else "none (they are linearly dependent)"
    return (f"stress needs a cell of three non-zero, independent vectors, since it is the "
            f"virial divided by the cell volume; this cell has rank {atoms.cell.rank} (zero "
            f"vectors: {vectors}). Give the non-periodic directions a length (vacuum), e.g. "
            f"atoms.center(vacuum=10, axis=2), or ask only for energy and forces")
