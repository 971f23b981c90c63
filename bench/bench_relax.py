"""Many relaxations at once: --count rattled crystals of 20-100 atoms (diamond Si, rock-salt
(Mg,Ni)O, fcc Cu, antifluorite Li2O; several sizes of each, each rattled with its own seed)
relaxed to --fmax (eV/A, positions only, fixed cells) by TorchSim's batched FIRE through our
model interface (fusednequip.torchsim.FusedNequIPModel: every unconverged structure in one
fnq_ctx_compute_batch a step), against the same relaxations one by one with ASE's FIRE through
our calculator, in one run. TorchSim's FIRE runs in ASE's flavour (md_flavor="ase_fire"), so
both take the same steps. The ASE loop is timed on the first --ase-count structures and scaled
to all of them. Prints one JSON line: seconds, structures per second, the ratio, how many
converged, and the largest difference of the relaxed energies per atom between the two.

usage: python bench/bench_relax.py --model M.fnqm [--device cuda] [--count 1000]
           [--ase-count 100] [--fmax 0.05] [--max-steps 1000] [--dtype float32]
Needs torch and torch-sim-atomistic in this interpreter.
"""
import argparse
import json
import time

import numpy as np
import torch
import torch_sim as ts
from ase.build import bulk
from ase.optimize import FIRE

from fusednequip import FusedNequIPCalculator
from fusednequip.torchsim import FusedNequIPModel
from si_workload import oxide_crystal, rattled


def li2o(a=4.61):
    from ase import Atoms
    o = [[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]]
    li = [[x, y, z] for x in (0.25, 0.75) for y in (0.25, 0.75) for z in (0.25, 0.75)]
    return Atoms("O4Li8", scaled_positions=o + li, cell=[a] * 3, pbc=True)


def base_cells():
    """(name, cubic cell, repeats): each between 20 and 100 atoms"""
    si = bulk("Si", "diamond", a=5.43, cubic=True)
    cu = bulk("Cu", "fcc", a=3.61, cubic=True)
    return ([si.repeat(r) for r in ((2, 2, 1), (2, 2, 2), (3, 2, 2))] +
            [oxide_crystal(1).repeat(r) for r in ((2, 2, 1), (3, 2, 1), (2, 2, 2), (3, 3, 1))] +
            [cu.repeat(r) for r in ((2, 2, 2), (3, 2, 2), (3, 3, 2))] +
            [li2o().repeat(r) for r in ((2, 1, 1), (2, 2, 1), (2, 2, 2))])


def crystals(count):
    cells = base_cells()
    return [rattled(cells[k % len(cells)].copy(), seed=k, amount=0.08) for k in range(count)]


def relax_torchsim(model, images, fmax, max_steps):
    final = ts.optimize(system=images, model=model, optimizer=ts.optimizers.fire,
                        convergence_fn=ts.generate_force_convergence_fn(
                            force_tol=fmax, include_cell_forces=False),
                        max_steps=max_steps, md_flavor="ase_fire")
    out = model(final)
    counts = np.bincount(final.system_idx.cpu().numpy(), minlength=len(images))
    ends = np.cumsum(counts)
    forces = out["forces"].detach().cpu().numpy()
    fmax_each = [np.linalg.norm(forces[e - n:e], axis=1).max() for n, e in zip(counts, ends)]
    return out["energy"].detach().cpu().numpy() / counts, np.array(fmax_each)


def relax_ase(calc, images, fmax, max_steps):
    energies, fmax_each = [], []
    for a in images:
        a = a.copy()
        a.calc = calc
        FIRE(a, logfile=None).run(fmax=fmax, steps=max_steps)
        energies.append(a.get_potential_energy() / len(a))
        fmax_each.append(np.linalg.norm(a.get_forces(), axis=1).max())
    return np.array(energies), np.array(fmax_each)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--ase-count", type=int, default=100)
    ap.add_argument("--fmax", type=float, default=0.05)
    ap.add_argument("--max-steps", type=int, default=1000)
    args = ap.parse_args()
    images = crystals(args.count)
    ase_images = images[: max(1, min(args.count, args.ase_count))]
    model = FusedNequIPModel(args.model, device=args.device, dtype=torch.float64,
                             precision=args.dtype)
    calc = FusedNequIPCalculator(args.model, device=args.device, dtype=args.dtype)
    relax_torchsim(model, images[:2], args.fmax, 20)  # warm-up: buffers, kernels
    t = time.perf_counter()
    e_ts, f_ts = relax_torchsim(model, images, args.fmax, args.max_steps)
    ts_s = time.perf_counter() - t
    t = time.perf_counter()
    e_ase, f_ase = relax_ase(calc, ase_images, args.fmax, args.max_steps)
    ase_s = (time.perf_counter() - t) * len(images) / len(ase_images)
    k = len(ase_images)
    print(json.dumps({
        "bench": "relax", "model": args.model, "device": args.device, "dtype": args.dtype,
        "structures": len(images), "atoms_min": min(map(len, images)),
        "atoms_max": max(map(len, images)), "fmax": args.fmax,
        "torchsim_s": ts_s, "ase_one_by_one_s": ase_s, "ase_structures_timed": k,
        "torchsim_structures_per_s": len(images) / ts_s,
        "ase_structures_per_s": len(images) / ase_s, "ratio": ase_s / ts_s,
        "torchsim_converged": int((f_ts < args.fmax).sum()),
        "ase_converged": int((f_ase < args.fmax).sum()),
        "max_energy_diff_ev_per_atom": float(np.abs(e_ts[:k] - e_ase).max())}), flush=True)


if __name__ == "__main__":
    main()
