"""Many small structures: one batched call (Context.compute_batch_arrays, and compute_batch on a
list of structures: every structure's neighbour list, one graph, one evaluation) against the same structures one call each, and against one
crystal of the same total size, in one run. Structures: rattled cubic cells of 8 atoms (diamond
Si, or rock-salt Mg/Ni oxide with the cations shuffled), repeated to 8, 64 and 216 atoms, each
rattled with its own seed; enough of them for --total-atoms. Energy, forces and stress (virial)
a call, float32. One JSON line per (structure size, mode) with atom-steps per second, then the
ratios.

usage: python bench/bench_batch.py --model M.fnqm [--device cuda] [--structure si|oxide]
           [--sizes 1,2,3] [--total-atoms 32768] [--min-seconds 1] [--max-repeats 20]
"""
import argparse
import json

import numpy as np

from fusednequip import Context, Model
from si_workload import oxide_crystal, rattled, si_crystal
from timing import median_seconds


def cell_of(structure, rep, seed):
    atoms = si_crystal(rep) if structure == "si" else oxide_crystal(rep, seed)
    return rattled(atoms, seed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--modal", default=None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--structure", default="si", choices=["si", "oxide"])
    ap.add_argument("--sizes", default="1,2,3", help="repeats of the 8-atom cell")
    ap.add_argument("--total-atoms", type=int, default=32768)
    ap.add_argument("--min-seconds", type=float, default=1.0)
    ap.add_argument("--max-repeats", type=int, default=20)
    args = ap.parse_args()
    model = Model(args.model, modal=args.modal)
    ctx = Context(model, device=args.device, dtype=args.dtype)
    for rep in (int(s) for s in args.sizes.split(",")):
        per = 8 * rep ** 3
        count = max(1, args.total_atoms // per)
        images = [cell_of(args.structure, rep, seed) for seed in range(count)]
        structures = [(a.positions, model.species_indices(a.get_chemical_symbols()),
                       a.cell.array, a.pbc) for a in images]
        atoms = per * count
        rows = {}

        def record(mode, seconds, repeats, calls):
            row = {"bench": "batch", "model": args.model, "device": args.device,
                   "structure": args.structure, "atoms_per_structure": per,
                   "structures": count, "mode": mode, "ms_per_step": 1e3 * seconds,
                   "atom_steps_per_s": atoms / seconds, "repeats": repeats, "calls": calls}
            rows[mode] = row
            print(json.dumps(row), flush=True)

        # the batch as flat arrays (compute_batch_arrays, TorchSim's path), then as a list of
        # structures (compute_batch: Python's packing and splitting per structure included)
        flat = (np.concatenate([p for p, _, _, _ in structures]),
                np.concatenate([z for _, z, _, _ in structures]),
                np.arange(count + 1) * per, np.stack([c for _, _, c, _ in structures]),
                np.stack([p for _, _, _, p in structures]))
        t, n = median_seconds(lambda: ctx.compute_batch_arrays(*flat), args.min_seconds,
                              args.max_repeats)
        record("batch", t, n, 1)
        t, n = median_seconds(lambda: ctx.compute_batch(structures), args.min_seconds,
                              args.max_repeats)
        record("batch_list", t, n, 1)
        # one call a structure, over a slice when the loop would take long; scaled to all
        loop = structures[: max(1, min(count, 256))]
        t, n = median_seconds(lambda: [ctx.compute(*s) for s in loop], args.min_seconds,
                              args.max_repeats)
        record("single_loop", t * count / len(loop), n, len(loop))
        big_rep = round((atoms / 8) ** (1 / 3))
        big = cell_of(args.structure, big_rep, 0)
        sp = model.species_indices(big.get_chemical_symbols())
        t, n = median_seconds(lambda: ctx.compute(big.positions, sp, big.cell.array, big.pbc),
                              args.min_seconds, args.max_repeats)
        t *= atoms / len(big)  # per atom-step as the batch's atom count
        record("one_crystal", t, n, 1)
        print(json.dumps({"bench": "batch_ratios", "atoms_per_structure": per,
                          "batch_vs_loop": rows["single_loop"]["ms_per_step"] /
                          rows["batch"]["ms_per_step"],
                          "batch_vs_crystal_rate": rows["batch"]["atom_steps_per_s"] /
                          rows["one_crystal"]["atom_steps_per_s"]}), flush=True)


if __name__ == "__main__":
    main()
