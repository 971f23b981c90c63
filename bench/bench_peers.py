"""fusednequip against Nequix's own GPU implementations, side by side in one run on one GPU.

Workload: nequix-mp-1, cubic diamond Si (a = 5.43 A) supercells, energy + forces + stress per
step, float32. Each implementation runs in its own process (so one's memory pool or failure
cannot touch another's), over the same structures:

  fnq            this project: compute_graph_device with the caller's neighbour list as
                 torch CUDA tensors (model), compute_graph with the same list as host arrays
                 (model-host: its upload included, ~115 MB at 64000 atoms), compute_periodic
                 with the library's GPU neighbour list (periodic), and the ASE calculator (ase)
  nequix-torch   nequix's PyTorch backend, e3nn tensor products (use_kernel=False)
  nequix-oeq     nequix's PyTorch backend with OpenEquivariance kernels (use_kernel=True)
  nequix-jax     nequix's JAX backend (e3nn-jax; its OpenEquivariance-JAX kernels need a
                 separately built extension and are not measured)

Modes: `model` times one call of the model on a graph already on the GPU (neighbour list
given; for fnq without torch or a GPU it falls back to host arrays, marked "inputs": "host");
`ase` times an MD-like ASE step as matbench-speed does (new positions, then energy,
forces and stress: neighbour list, host transfers and Python included). Timing: warm-up (two
calls, then up to 1 s), then calls until --min-seconds or --max-repeats; the median is reported.

usage: python bench/bench_peers.py --model PATH/nequix-mp-1.nqx [--sizes 4,8,10,16,20]
           [--peers fnq,nequix-jax,nequix-torch,nequix-oeq] [--min-seconds 3] [--out FILE]
Sizes are cubic repeats of the 8-atom cell (4 -> 512, 8 -> 4096, 10 -> 8000, 16 -> 32768,
20 -> 64000 atoms). One JSON line per (peer, mode, size), then a table of ratios.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from peer_worker import run_peer
from si_workload import ase_step_fn, si_crystal
from timing import median_seconds

PEERS = ("fnq", "nequix-jax", "nequix-torch", "nequix-oeq")


def emit(rec):
    print(json.dumps(rec), flush=True)


def neighbour_list(atoms, cutoff):
    """Directed pairs (i receives from j) and Cartesian shifts, by matscipy as nequix does."""
    import matscipy.neighbours
    i, j, shift = matscipy.neighbours.neighbour_list(
        "ijS", positions=atoms.positions, cell=atoms.cell.array, pbc=atoms.pbc, cutoff=cutoff)
    return i, j, shift.astype(np.float64) @ atoms.cell.array


# --- workers: one per peer, each in its own process ------------------------------------------

def device_graph(ctx, pos, sp, i, j, shift):
    """The graph as torch CUDA tensors, as the peers hold theirs; None without torch, a GPU or
    a CUDA context."""
    try:
        import torch
    except ImportError:
        return None
    if ctx.device != "cuda" or not torch.cuda.is_available():
        return None

    def dev(a, dtype):
        return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device="cuda")
    graph = (dev(pos, torch.float64), dev(sp, torch.int32), dev(i, torch.int64),
             dev(j, torch.int64), dev(shift, torch.float64))
    torch.cuda.synchronize()
    return graph


def worker_fnq(args, record):
    from fusednequip import Context, FusedNequIPCalculator, Model
    model = Model(args.model)
    ctx = Context(model, device=args.fnq_device, dtype="float32")

    def run_size(rep):
        atoms = si_crystal(rep)
        sp = model.species_indices(atoms.get_chemical_symbols())
        i, j, shift = neighbour_list(atoms, model.cutoff)
        pos, cell, pbc = atoms.positions, atoms.cell.array, atoms.pbc
        energy = ctx.compute_graph(pos, sp, i, j, shift)[0]
        t, n = median_seconds(lambda: ctx.compute_graph(pos, sp, i, j, shift),
                              args.min_seconds, args.max_repeats)
        graph = device_graph(ctx, pos, sp, i, j, shift)
        if graph is None:
            record("model", atoms, t, n, energy, len(i), inputs="host")
        else:
            record("model-host", atoms, t, n, energy, len(i), inputs="host")
            energy = ctx.compute_graph_device(*graph)[0]
            t, n = median_seconds(lambda: ctx.compute_graph_device(*graph),
                                  args.min_seconds, args.max_repeats)
            record("model", atoms, t, n, energy, len(i), inputs="device")
            graph = None
        t, n = median_seconds(lambda: ctx.compute(pos, sp, cell, pbc),
                              args.min_seconds, args.max_repeats)
        record("periodic", atoms, t, n, energy, len(i))
        atoms.calc = FusedNequIPCalculator(model, device=args.fnq_device, dtype="float32")
        t, n = median_seconds(ase_step_fn(atoms, np.random.default_rng(0)),
                              args.min_seconds, args.max_repeats)
        record("ase", atoms, t, n, energy, len(i))
    return run_size


def worker_nequix_torch(args, record, kernel):
    import torch
    from nequix.calculator import NequixCalculator, from_pretrained
    from nequix.data import atomic_numbers_to_indices, dict_to_pytorch_geometric, preprocess_graph
    from nequix.torch_impl.model import load_model as load_model_torch

    # nequix converts .nqx to its torch format beside the file; work on a copy in /tmp.
    tmp = tempfile.mkdtemp()
    nqx = os.path.join(tmp, "nequix-mp-1.nqx")
    shutil.copy(args.model, nqx)
    from_pretrained("nequix-mp-1", nqx, backend="torch", use_kernel=False)
    pt = os.path.join(tmp, "nequix-mp-1.pt")
    model, config = load_model_torch(pt, kernel)
    model = model.to("cuda").eval()
    idx = atomic_numbers_to_indices(config["atomic_numbers"])

    def run_size(rep):
        atoms = si_crystal(rep)
        g = dict_to_pytorch_geometric(preprocess_graph(atoms, idx, config["cutoff"], False))
        g.n_graph = torch.zeros(g.x.shape[0], dtype=torch.int64)
        g = g.to("cuda")

        def call():
            e, f, s = model(g.x, g.positions, g.edge_attr, g.edge_index, g.cell, g.n_node,
                            g.n_edge, g.n_graph)
            torch.cuda.synchronize()
            return float(e.sum())
        energy = call()
        t, n = median_seconds(call, args.min_seconds, args.max_repeats)
        record("model", atoms, t, n, energy, g.edge_index.shape[1])
        g = call = None  # free the graph before the ASE run
        torch.cuda.empty_cache()
        atoms.calc = NequixCalculator("nequix-mp-1", pt, backend="torch", use_kernel=kernel)
        t, n = median_seconds(ase_step_fn(atoms, np.random.default_rng(0)),
                              args.min_seconds, args.max_repeats)
        record("ase", atoms, t, n, energy, None)
        atoms.calc = None
        torch.cuda.empty_cache()
    return run_size


def worker_nequix_jax(args, record):
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    from nequix.calculator import NequixCalculator
    from nequix.data import dict_to_graphstuple, preprocess_graph

    calc = NequixCalculator("nequix-mp-1", args.model, backend="jax", use_kernel=False)
    model = eqx.filter_jit(calc.model)

    def run_size(rep):
        atoms = si_crystal(rep)
        graph = dict_to_graphstuple(preprocess_graph(atoms, calc.atom_indices, calc.cutoff,
                                                     False))
        n_edges = int(graph.n_edge[0])
        graph = calc._pad_graph_jax(graph, True)  # the calculator's padding, as it runs
        graph = jax.tree_util.tree_map(jnp.asarray, graph)  # on the GPU before timing

        def call():
            e, f, s = model(graph)
            jax.block_until_ready((e, f, s))
            return float(e[0])
        energy = call()
        t, n = median_seconds(call, args.min_seconds, args.max_repeats)
        record("model", atoms, t, n, energy, n_edges)
        atoms.calc = NequixCalculator("nequix-mp-1", args.model, backend="jax", use_kernel=False)
        t, n = median_seconds(ase_step_fn(atoms, np.random.default_rng(0)),
                              args.min_seconds, args.max_repeats)
        record("ase", atoms, t, n, energy, None)
        atoms.calc = None
    return run_size


def run_worker(args):
    sizes = [int(s) for s in args.sizes.split(",")]

    def record(mode, atoms, t, n, energy, edges, **extra):
        emit({"peer": args.worker, "mode": mode, "atoms": len(atoms), "edges": edges,
              "ms_per_step": 1e3 * t, "us_per_atom_step": 1e6 * t / len(atoms),
              "repeats": n, "energy": energy, **extra})

    if args.worker == "fnq":
        run_size = worker_fnq(args, record)
    elif args.worker == "nequix-jax":
        run_size = worker_nequix_jax(args, record)
    else:
        run_size = worker_nequix_torch(args, record, kernel=args.worker == "nequix-oeq")
    for rep in sizes:  # one size at a time, so an out-of-memory ends only the larger sizes
        try:
            run_size(rep)
        except Exception as err:  # noqa: BLE001 - report and go on with the next size
            emit({"peer": args.worker, "atoms": 8 * rep ** 3,
                  "error": f"{type(err).__name__}: {str(err)[:300]}"})
            if "out of memory" in str(err).lower() or "RESOURCE_EXHAUSTED" in str(err):
                break


# --- driver -----------------------------------------------------------------------------------

def environment():
    info = {"python": sys.version.split()[0]}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True)
        info["gpu"] = out.stdout.strip()
    except OSError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    info["fusednequip_commit"] = out.stdout.strip()
    return info


def summary(rows):
    ok = [r for r in rows if "error" not in r]
    sizes = sorted({r["atoms"] for r in ok})
    cols = sorted({(r["peer"], r["mode"]) for r in ok}, key=lambda pm: (pm[1], pm[0]))
    print("\n| atoms | " + " | ".join(f"{p} {m} ms" for p, m in cols) +
          " | fastest peer / fnq (model) | fastest peer / fnq (ase) |")
    print("|---" * (len(cols) + 3) + "|")
    for n in sizes:
        t = {(r["peer"], r["mode"]): r["ms_per_step"] for r in ok if r["atoms"] == n}
        cells = [f"{t[c]:.2f}" if c in t else "-" for c in cols]
        ratios = []
        for mode in ("model", "ase"):
            peers = [v for (p, m), v in t.items() if m == mode and p != "fnq"]
            ours = t.get(("fnq", mode))
            ratios.append(f"{min(peers) / ours:.2f}" if peers and ours else "-")
        print(f"| {n} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    for n in sizes:
        ref = [r["energy"] for r in ok if r["atoms"] == n and r["peer"] == "fnq"]
        for r in ok:
            if r["atoms"] == n and r["peer"] != "fnq" and ref and r["mode"] == "model":
                print(f"energy check {n} atoms, {r['peer']}: rel. diff to fnq "
                      f"{abs(r['energy'] - ref[0]) / abs(ref[0]):.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="path to nequix-mp-1.nqx")
    ap.add_argument("--sizes", default="4,8,10,16,20")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--min-seconds", type=float, default=3.0)
    ap.add_argument("--max-repeats", type=int, default=100)
    ap.add_argument("--worker-timeout", type=float, default=900.0)
    ap.add_argument("--fnq-device", default="cuda", help="cpu: try the script without a GPU")
    ap.add_argument("--out", help="also append the JSON lines to this file")
    ap.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return run_worker(args)

    out = open(args.out, "a") if args.out else None
    env_line = {"environment": environment()}
    print(json.dumps(env_line), flush=True)
    rows = []
    for peer in args.peers.split(","):
        if peer not in PEERS:
            sys.exit(f"unknown peer {peer!r}; choose from {', '.join(PEERS)}")
        env = dict(os.environ)
        if peer != "nequix-jax":
            env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # jax only converts weights there
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer,
               "--model", args.model, "--sizes", args.sizes,
               "--min-seconds", str(args.min_seconds), "--max-repeats", str(args.max_repeats),
               "--fnq-device", args.fnq_device]
        run_peer(peer, cmd, env, args.worker_timeout, rows, out)
    summary(rows)


if __name__ == "__main__":
    main()
