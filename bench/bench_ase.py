"""ASE end-to-end step time with FusedNequIPCalculator: energy + forces + stress of cubic
diamond Si supercells (a = 5.43 A) after a small rattle, as matbench-speed measures MD-like
steps (neighbour list, Python and host transfers included). One JSON line per size.

usage: python bench/bench_ase.py [--model nequix-mp-1] [--device cpu|cuda|auto]
                                 [--dtype float32|float64] [--sizes 4,8] [--min-seconds 3]
(sizes are cubic repeats of the 8-atom cell: 4 -> 512 atoms, 8 -> 4096 atoms)
"""
import argparse
import json
import time

import numpy as np

from fusednequip import FusedNequIPCalculator
from si_workload import ase_step_fn, si_crystal


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="nequix-mp-1")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--sizes", default="4,8")
    ap.add_argument("--min-seconds", type=float, default=3.0)
    ap.add_argument("--max-repeats", type=int, default=100)
    args = ap.parse_args()
    calc = FusedNequIPCalculator(args.model, device=args.device, dtype=args.dtype)
    rng = np.random.default_rng(0)
    for rep in (int(s) for s in args.sizes.split(",")):
        atoms = si_crystal(rep)
        atoms.calc = calc
        step = ase_step_fn(atoms, rng)
        step()  # warm-up
        n, t0 = 0, time.perf_counter()
        while True:
            step()
            n += 1
            t = time.perf_counter() - t0
            if t >= args.min_seconds or n >= args.max_repeats:
                break
        print(json.dumps({"bench": "ase", "model": args.model, "device": calc.context.device,
                          "dtype": calc.context.dtype, "atoms": len(atoms),
                          "edges": calc.context.last_num_edges, "ms_per_step": 1e3 * t / n,
                          "us_per_atom_step": 1e6 * t / n / len(atoms), "repeats": n}),
              flush=True)


if __name__ == "__main__":
    main()
