"""TorchSim (package torch-sim-atomistic) model interface over the library's batched call:
`torch_sim.integrate` and `torch_sim.optimize` run their batched MD and relaxations with every
system of a SimState evaluated in one fnq_ctx_compute_batch (one graph on the GPU).

    import torch_sim as ts
    from fusednequip.torchsim import FusedNequIPModel
    model = FusedNequIPModel("7net-0.fnqm", device="cuda")
    final = ts.optimize(system=list_of_atoms, model=model, optimizer=ts.frechet_cell_fire)

Needs torch and torch-sim; the rest of the package does not. The state's tensors are copied to
the host for the library's call (positions, cells: a few hundred kB for thousands of atoms)
as flat arrays (Context.compute_batch_arrays) and the results back to the state's device.
"""
import numpy as np
import torch
from ase.data import chemical_symbols
from torch_sim.models.interface import ModelInterface
from torch_sim.state import SimState

from .model import Context, Model


class FusedNequIPModel(ModelInterface):
    """A fusednequip model (a .fnqm or .nqx path, a model name, or a Model) for TorchSim.

    device: where the library evaluates ("cuda", "cpu", or "auto"; a torch.device works) and
        where the outputs go. dtype: the outputs' torch dtype (TorchSim's states are usually
        float64). precision: the library's arithmetic, "float32" or "float64" (default: float32
        on the GPU, float64 on the CPU, as the calculator). modal: the modality of a
        multi-modal model (SevenNet's 7net-mf-0: "PBE")."""

    def __init__(self, model, device=None, dtype=torch.float64, precision=None,
                 compute_stress=True, compute_forces=True, modal=None):
        super().__init__()
        self._fnq_model = model if isinstance(model, Model) else Model(model, modal=modal)
        where = str(device) if device is not None else "auto"
        self._context = Context(self._fnq_model, device=where.split(":")[0], dtype=precision)
        self._device = torch.device("cuda" if self._context.device == "cuda" else "cpu")
        self._dtype = dtype
        self._compute_stress = compute_stress
        self._compute_forces = compute_forces
        self._memory_scales_with = "n_atoms_x_density"
        # atomic number -> the model's species index (-1: not in the model)
        self._species_of_z = np.full(len(chemical_symbols), -1, dtype=np.int32)
        for i, symbol in enumerate(self._fnq_model.species):
            self._species_of_z[chemical_symbols.index(symbol)] = i

    @property
    def cutoff(self):
        return self._fnq_model.cutoff

    def _species(self, numbers):
        species = self._species_of_z[numbers]
        missing = np.flatnonzero(species < 0)
        if len(missing):
            from .errors import UnknownElementError
            i = int(missing[0])
            raise UnknownElementError(
                f"atom {i} is element {chemical_symbols[numbers[i]]}, which the model "
                f"{self._fnq_model.path} does not have (it has {', '.join(self._fnq_model.species)})",
                atoms=(i,))
        return species

    def forward(self, state, **kwargs):
        if isinstance(state, dict):
            state = SimState(**state, masses=torch.ones_like(state["positions"]))
        pos = state.positions.detach().to("cpu", torch.float64).numpy()
        cells = state.row_vector_cell.detach().to("cpu", torch.float64).numpy().reshape(-1, 3, 3)
        system = state.system_idx.detach().to("cpu").numpy()
        numbers = state.atomic_numbers.detach().to("cpu").numpy()
        n_systems = len(cells)
        counts = np.bincount(system, minlength=n_systems)
        if len(system) and np.any(np.diff(system) < 0):
            raise ValueError("the state's system_idx is not sorted: atoms of one system must "
                             "be contiguous")
        pbc = np.broadcast_to(np.asarray(state.pbc.detach().cpu() if torch.is_tensor(state.pbc)
                                         else state.pbc, dtype=bool), 3)
        species = self._species(numbers)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        # flat arrays in, flat arrays out: no Python work per structure
        energies, _, forces, virials = self._context.compute_batch_arrays(
            pos, species, offsets, cells, pbc)
        out = {"energy": self._tensor(energies)}
        if self._compute_forces:
            out["forces"] = self._tensor(forces)
        if self._compute_stress:
            xx, yy, zz, yz, xz, xy = virials.T
            virial = np.stack([xx, xy, xz, xy, yy, yz, xz, yz, zz], axis=1).reshape(-1, 3, 3)
            volume = np.abs(np.linalg.det(cells)) if n_systems else np.zeros(0)
            out["stress"] = self._tensor(-virial / volume[:, None, None])  # ASE's sign
        return out

    def _tensor(self, values):
        return torch.as_tensor(np.asarray(values), dtype=self._dtype, device=self._device)
