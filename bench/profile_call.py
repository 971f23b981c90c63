"""Where one fusednequip model call's time goes on the GPU: the wall time of a call against the
time the GPU spends in kernels (torch.profiler's CUDA activity, real clocks, CUDA graph
replays included), by kernel name, and the idle time between kernels. The budget question of
issues 46 and 47: is a call's time the kernels' or what lies between them?

Workload as bench_nequip_peers.py's model mode: a folder from make_nequip_peer_model.py
(--models: the 5-species mixed crystal of its type names) or nequix-mp-1 diamond Si (--si),
the neighbour list given as torch CUDA tensors (compute_graph_device; an Allegro model's as
host arrays, compute_graph, as bench_nequip_peers.py gives it), float32.

usage: python bench/profile_call.py (--models DIR | --si) [--sizes 10,16] [--calls 20]
prints per size: ms per call (wall, timed without the profiler), kernel ms per call (summed;
busy: their union on the GPU's timeline), launches per call, the GPU's idle time inside a
call, and the kernels taking most of it.
"""
import argparse
import collections
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mixed_workload import mixed_crystal  # noqa: E402


def structure(args, rep):
    if args.si:
        from ase.build import bulk
        return bulk("Si", "diamond", a=5.43, cubic=True).repeat((rep, rep, rep))
    with open(os.path.join(args.models, "nequip-peer.json")) as f:
        return mixed_crystal(rep, json.load(f)["type_names"])


def model_path(args):
    if args.si:
        return "nequix-mp-1"  # looked up in $FUSEDNEQUIP_MODEL_DIR
    return os.path.join(args.models, "nequip-peer.fnqm")


def device_call(ctx, model, atoms):
    import matscipy.neighbours
    import torch
    i, j, s = matscipy.neighbours.neighbour_list(
        "ijS", positions=atoms.positions, cell=atoms.cell.array, pbc=atoms.pbc,
        cutoff=model.cutoff)
    sp = model.species_indices(atoms.get_chemical_symbols())
    shift = s.astype(np.float64) @ atoms.cell.array
    if model.family == "allegro":  # the Allegro engine builds its graph on the host
        return lambda: ctx.compute_graph(atoms.positions, sp, i, j, shift), len(i)

    def dev(a, dtype):
        return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device="cuda")
    g = (dev(atoms.positions, torch.float64), dev(sp, torch.int32), dev(i, torch.int64),
         dev(j, torch.int64), dev(shift, torch.float64))
    torch.cuda.synchronize()
    return lambda: ctx.compute_graph_device(*g), len(i)


def kernel_intervals(prof):
    """(name, start_us, end_us) of every GPU kernel the profiler saw"""
    out = []
    for e in prof.events():
        if e.device_type.name == "CUDA" and e.time_range.elapsed_us() >= 0:
            name = e.name
            if name.startswith(("Memcpy", "Memset")) or "memcpy" in name.lower():
                kind = "copy"
            else:
                kind = "kernel"
            out.append((kind, name, e.time_range.start, e.time_range.end))
    return out


def busy_us(iv):
    """the union's length of [start, end) intervals"""
    total, end = 0.0, -1e300
    for _, _, s, e in sorted(iv, key=lambda t: t[2]):
        if s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def print_by_grid(prof, calls, top):
    """kernel time by (name, launch grid), from the profiler's trace (the events of
    prof.events() carry no grid): a GEMM's grid is its output's tiles, so this splits the
    GEMMs by shape"""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        with open(f.name) as t:
            trace = json.load(t)
    by = collections.defaultdict(lambda: [0.0, 0])
    for ev in trace.get("traceEvents", []):
        if ev.get("cat") == "kernel" and "grid" in ev.get("args", {}):
            key = (ev["name"][:60], tuple(ev["args"]["grid"]))
            by[key][0] += ev.get("dur", 0) / 1e3 / calls
            by[key][1] += 1
    print("  by grid:")
    for (name, grid), (ms, c) in sorted(by.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"  {ms:8.3f} ms {c / calls:5.1f}x  grid {grid}  {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--models", help="make_nequip_peer_model.py's folder")
    src.add_argument("--si", action="store_true", help="nequix-mp-1 on diamond Si")
    ap.add_argument("--sizes", default="10", help="repeats of the 8-atom cell (10: 8,000)")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--grids", action="store_true",
                    help="also the kernels by (name, grid): which GEMM shapes take the time")
    args = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile
    from fusednequip import Context, Model
    model = Model(model_path(args))
    ctx = Context(model, device="cuda", dtype="float32")
    print(f"model {model_path(args)}  GPU {torch.cuda.get_device_name()}")
    for rep in (int(s) for s in args.sizes.split(",")):
        atoms = structure(args, rep)
        call, edges = device_call(ctx, model, atoms)
        for _ in range(3):
            call()
        walls = []
        for _ in range(args.calls):
            t = time.perf_counter()
            call()
            walls.append(time.perf_counter() - t)
        wall = 1e3 * float(np.median(walls))
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            t0 = time.perf_counter()
            for _ in range(args.calls):
                call()
            torch.cuda.synchronize()
            prof_wall = 1e3 * (time.perf_counter() - t0) / args.calls
        iv = kernel_intervals(prof)
        kern = [t for t in iv if t[0] == "kernel"]
        n = args.calls
        k_sum = sum(e - s for _, _, s, e in kern) / 1e3 / n
        busy = busy_us(iv) / 1e3 / n
        span = (max(t[3] for t in iv) - min(t[2] for t in iv)) / 1e3 / n if iv else 0.0
        print(f"\n{len(atoms)} atoms, {edges} edges: {wall:.3f} ms a call (median of "
              f"{n}; {prof_wall:.3f} under the profiler)")
        print(f"  kernels {k_sum:.3f} ms a call summed, GPU busy {busy:.3f} ms (copies "
              f"included), first to last {span:.3f} ms; {len(kern) / n:.0f} kernels and "
              f"{(len(iv) - len(kern)) / n:.0f} copies a call")
        print(f"  not on the GPU: {wall - busy:.3f} ms a call ({100 * (wall - busy) / wall:.1f} %)")
        by = collections.defaultdict(lambda: [0.0, 0])
        for _, name, s, e in iv:
            by[name][0] += (e - s) / 1e3 / n
            by[name][1] += 1
        for name, (ms, c) in sorted(by.items(), key=lambda kv: -kv[1][0])[:args.top]:
            print(f"  {ms:8.3f} ms {c / n:5.1f}x  {name[:110]}")
        if args.grids:
            print_by_grid(prof, n, args.top)
        api = collections.defaultdict(float)
        for e in prof.events():
            if e.device_type.name == "CPU" and e.name.startswith("cuda"):
                api[e.name] += e.cpu_time_total / 1e3 / n
        for name, ms in sorted(api.items(), key=lambda kv: -kv[1])[:6]:
            print(f"  host {name}: {ms:.3f} ms a call")


if __name__ == "__main__":
    main()
