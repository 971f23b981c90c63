"""TorchSim's batched MD step, side by side in one run: our model interface
(fusednequip.torchsim.FusedNequIPModel, one fnq_ctx_compute_batch a step) against sevenn's
own TorchSim interface (sevenn.torchsim.SevenNetModel, which needs torch-sim >= 0.6) on the
same SevenNet model when it imports,
and against our ASE calculator one structure at a time. Structures: rattled diamond Si cells of
8 or 64 atoms (--reps), --count of them in one SimState; NVT Langevin at 300 K, 1 fs, float32
states; atom-steps per second over --steps steps after a warm-up. One JSON line per (size,
path), then the ratios.

usage: python bench/bench_torchsim.py --model 7net-0 --fnqm 7net-0.fnqm [--device cuda]
           [--reps 1,2] [--count 64] [--steps 10]
Needs torch and torch-sim-atomistic in this interpreter; sevenn for the peer (left out, with the
reason printed, when its interface does not import).
"""
import argparse
import json
import time

import numpy as np
import torch
import torch_sim as ts

from fusednequip import FusedNequIPCalculator
from fusednequip.torchsim import FusedNequIPModel
from si_workload import rattled, si_crystal


def crystals(rep, count):
    return [rattled(si_crystal(rep), seed) for seed in range(count)]


def md_rate(model, images, steps, device, dtype):
    """atom-steps per second of TorchSim's NVT Langevin on all images at once"""
    state = ts.initialize_state(images, device=device, dtype=dtype)
    dt = torch.tensor(0.001 * ts.units.MetalUnits.time, device=device, dtype=dtype)
    kT = torch.tensor(300 * ts.units.MetalUnits.temperature, device=device, dtype=dtype)
    init, step = ts.nvt_langevin(model=model, dt=dt, kT=kT, seed=1)
    st = step(init(state), kT=kT)  # warm-up: compilation, buffers
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        st = step(st, kT=kT)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return sum(len(a) for a in images) * steps / (time.perf_counter() - t0)


def ase_rate(fnqm, images, steps, device):
    """our ASE calculator on one structure at a time: energy, forces, stress a step each"""
    calc = FusedNequIPCalculator(fnqm, device=device, dtype="float32")
    rng = np.random.default_rng(0)
    work = [a.copy() for a in images]
    for a in work:
        a.calc = calc
    work[0].get_forces()
    t0 = time.perf_counter()
    for _ in range(steps):
        for a in work:
            a.positions += rng.normal(0.0, 1e-3, a.positions.shape)
            a.get_potential_energy(), a.get_forces(), a.get_stress()
    return sum(len(a) for a in images) * steps / (time.perf_counter() - t0)


def sevenn_model(name, device, dtype):
    """sevenn's TorchSim model of `name`, or why there is none (a string)"""
    try:
        from sevenn.util import load_checkpoint
        from sevenn.torchsim import SevenNetModel  # torch_sim's own 0.3 one predates sevenn 0.13
        model = load_checkpoint(name).build_model()
        return SevenNetModel(model=model, modal=None, device=device, dtype=dtype)
    except Exception as err:  # noqa: BLE001 - the peer is optional
        return f"{type(err).__name__}: {str(err)[:200]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="7net-0", help="sevenn keyword or checkpoint")
    ap.add_argument("--fnqm", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", default="1,2")
    ap.add_argument("--count", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    device, dtype = torch.device(args.device), torch.float32
    peer = sevenn_model(args.model, device, dtype)
    ours = FusedNequIPModel(args.fnqm, device=args.device, dtype=dtype, precision="float32")
    for rep in (int(r) for r in args.reps.split(",")):
        images = crystals(rep, args.count)
        row = {"bench": "torchsim", "model": args.model, "device": args.device,
               "atoms_per_structure": len(images[0]), "structures": len(images)}
        row["fusednequip_torchsim"] = md_rate(ours, images, args.steps, device, dtype)
        if not isinstance(peer, str):
            row["sevenn_torchsim"] = md_rate(peer, images, args.steps, device, dtype)
            row["ratio_vs_sevenn_torchsim"] = (row["fusednequip_torchsim"] /
                                               row["sevenn_torchsim"])
        else:
            row["sevenn_torchsim_error"] = peer
        row["fusednequip_ase_loop"] = ase_rate(args.fnqm, images, max(1, args.steps // 5),
                                               args.device)
        row["ratio_vs_ase_loop"] = row["fusednequip_torchsim"] / row["fusednequip_ase_loop"]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
