"""SevenNet through ASE, side by side in one run: sevenn's own SevenNetCalculator (plain e3nn
or an accelerator: OpenEquivariance, cuEquivariance, FlashTP) and FusedNequIPCalculator on
the converted model, on the step matbench-speed times (bench/si_workload.py: rattled cubic
diamond Si, energy + forces + stress a call). One JSON line per calculator and size, then
the ratio.

usage: python bench/bench_sevenn.py --model 7net-0 --fnqm 7net-0.fnqm [--device cuda]
           [--accelerator e3nn|oeq|cueq|flash] [--modal PBE] [--sizes 4,8,10,16,20]
           [--min-seconds 1] [--max-repeats 20]
Needs sevenn (with its dependencies and the accelerator's package) in this interpreter; the
accelerator really loaded is checked from sevenn's warnings (it falls back to e3nn with one).
"""
import argparse
import json
import time
import warnings

import numpy as np

from fusednequip import FusedNequIPCalculator
from si_workload import ase_step_fn, si_crystal


def time_steps(calc, rep, min_seconds, max_repeats):
    atoms = si_crystal(rep)
    atoms.calc = calc
    step = ase_step_fn(atoms, np.random.default_rng(0))
    step()  # warm-up (compilation, graph capture)
    n, t0 = 0, time.perf_counter()
    while True:
        step()
        n += 1
        t = time.perf_counter() - t0
        if t >= min_seconds or n >= max_repeats:
            return len(atoms), 1e3 * t / n, n


def sevenn_calculator(args):
    from sevenn.calculator import SevenNetCalculator
    flags = {"oeq": "enable_oeq", "cueq": "enable_cueq", "flash": "enable_flash"}
    kw = {flags[args.accelerator]: True} if args.accelerator in flags else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calc = SevenNetCalculator(args.model, device=args.device, modal=args.modal, **kw)
    fallback = [str(w.message) for w in caught if "fall" in str(w.message).lower()]
    if fallback:
        raise SystemExit(f"sevenn did not load {args.accelerator}: {fallback}")
    return calc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="7net-0", help="sevenn keyword or checkpoint")
    ap.add_argument("--fnqm", required=True, help="the same model converted")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--accelerator", default="e3nn", choices=["e3nn", "oeq", "cueq", "flash"])
    ap.add_argument("--modal", default=None)
    ap.add_argument("--sizes", default="4,8,10,16,20")
    ap.add_argument("--min-seconds", type=float, default=1.0)
    ap.add_argument("--max-repeats", type=int, default=20)
    args = ap.parse_args()
    ours = FusedNequIPCalculator(args.fnqm, device=args.device, dtype="float32",
                                 modal=args.modal)
    peer = sevenn_calculator(args)
    for rep in (int(s) for s in args.sizes.split(",")):
        row = {"bench": "sevenn_ase", "model": args.model, "accelerator": args.accelerator}
        for name, calc in (("sevenn", peer), ("fusednequip", ours)):
            try:
                n, ms, reps = time_steps(calc, rep, args.min_seconds, args.max_repeats)
                row.update(atoms=n, **{f"{name}_ms": ms, f"{name}_repeats": reps})
            except Exception as err:  # noqa: BLE001 - e.g. the peer out of GPU memory
                row[f"{name}_error"] = f"{type(err).__name__}: {str(err)[:200]}"
        if "sevenn_ms" in row and "fusednequip_ms" in row:
            row["ratio"] = row["sevenn_ms"] / row["fusednequip_ms"]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
