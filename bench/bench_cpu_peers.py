"""fusednequip on the CPU against Nequix's own JAX and PyTorch backends on the CPU, side by side
in one run on one machine, with the same number of cores for every code.

Workload: nequix-mp-1, cubic diamond Si (a = 5.43 A) supercells rattled once (each coordinate
moved by up to +-0.1 A, uniform, fixed seed, as bench_cpu --rattle 0.1: a perfect lattice has
five distinct neighbour distances and flatters look-ups by distance), energy + forces + stress
per step. Each code runs in its own process, pinned to the first T CPUs (sched_setaffinity)
with its thread pools sized to T:

  fnq-f32, fnq-f64  this project on the CPU (float32, float64): OMP_NUM_THREADS=T
  nequix-jax        nequix's JAX backend (e3nn-jax, XLA CPU), float32: JAX_PLATFORMS=cpu,
                    XLA's pool follows the affinity mask; XLA_FLAGS single-threaded Eigen at T=1
  nequix-torch      nequix's PyTorch backend (e3nn, no OpenEquivariance kernels: they need a
                    GPU), float32: CUDA_VISIBLE_DEVICES="", torch.set_num_threads(T),
                    OMP_NUM_THREADS=T, MKL_NUM_THREADS=T

Modes: `model` times one call of the model on a graph built beforehand (matscipy's list, as
nequix builds it; for fnq the same list through compute_graph, host arrays); fnq also reports
`periodic` (its own neighbour list, compute_periodic); `ase` times an MD-like ASE step as
matbench-speed does (positions moved by N(0, 0.01 A) around the rattled structure, then
energy, forces and stress: neighbour list, transfers and Python included). Timing: warm-up
calls (compilation), then calls until --min-seconds and at least --min-repeats; the median is
reported. One JSON line per (code, mode, size, threads), then a table with the ratios.

usage (from the repository root, with libfusednequip built in build/):
  PYTHONPATH=python python bench/bench_cpu_peers.py --model PATH/nequix-mp-1.nqx \
      [--sizes 4,8] [--threads 1,2] [--peer-threads 2] \
      [--peers fnq-f32,fnq-f64,nequix-jax,nequix-torch] \
      [--min-seconds 5] [--min-repeats 3] [--modes model,ase] [--out FILE]
Sizes are cubic repeats of the 8-atom cell (4 -> 512 atoms, 8 -> 4096).

Python packages: ase, numpy, matscipy, and for the peers nequix (its dependencies without
jax[cuda12]: pip install --no-deps nequix, then e3nn-jax equinox jraph matscipy
ase-db-backends cloudpickle h5py optax pyyaml tqdm), jax + jaxlib (the PyPI wheels are CPU
builds), torch, e3nn and torch-geometric for the PyTorch backend. On the GPU machine's host
(offline; jax and torch preinstalled there) carry these wheels in .whl/ and install them as
scripts/gpu/gpu-bench-env.sh does: nequix, e3nn_jax, jraph, matscipy, ase, ase_db_backends,
equinox, jaxtyping, wadler_lindig, optax, chex, toolz, e3nn, opt_einsum, opt_einsum_fx,
torch_geometric (and whichever of their dependencies `pip download --no-deps` shows missing
there). scripts/gpu/cpu-bench-peers.sh does it and runs this script with 1, 2, 4, 8 and 16 threads.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import shutil
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from machine import cpu_name  # noqa: E402
from peer_worker import run_peer  # noqa: E402

PEERS = ("fnq-f32", "fnq-f64", "nequix-jax", "nequix-torch")
RATTLE = 0.1


def si_rattled(rep):
    """rep^3 cubic diamond Si cells, each coordinate moved by U(-0.1, 0.1) A (seed 0)."""
    from si_workload import si_crystal  # ase: in the workers' environment
    atoms = si_crystal(rep)
    rng = np.random.default_rng(0)
    atoms.positions = atoms.positions + rng.uniform(-RATTLE, RATTLE, atoms.positions.shape)
    atoms.wrap()
    return atoms


def ase_step_fn(atoms, rng):
    from si_workload import ase_step_fn as step_fn
    return step_fn(atoms, rng)


def median_seconds(fn, min_seconds, min_repeats, max_repeats):
    """Median wall time of fn after warm-up, the count, the fastest, and the median process CPU
    time (all threads: on a machine shared with other work, CPU time is what that work did not
    take away; with T threads busy it is T times the wall time)."""
    t = time.perf_counter()
    fn()  # compilation, buffers
    first = time.perf_counter() - t
    if first < 30.0:
        fn()
    times, cpu = [], []
    while len(times) < min_repeats or (sum(times) < min_seconds and len(times) < max_repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(times), len(times), min(times), statistics.median(cpu)


def neighbour_list(atoms, cutoff):
    """Directed pairs (i receives from j) and Cartesian shifts, by matscipy as nequix does."""
    import matscipy.neighbours
    i, j, shift = matscipy.neighbours.neighbour_list(
        "ijS", positions=atoms.positions, cell=atoms.cell.array, pbc=atoms.pbc, cutoff=cutoff)
    return i, j, shift.astype(np.float64) @ atoms.cell.array


def emit(rec):
    print(json.dumps(rec), flush=True)


# --- workers: one per code, each in its own process -----------------------------------------

def worker_fnq(args, record, dtype):
    from fusednequip import Context, FusedNequIPCalculator, Model
    model = Model(args.model)
    ctx = Context(model, device="cpu", dtype=dtype)

    def run_size(rep):
        atoms = si_rattled(rep)
        sp = model.species_indices(atoms.get_chemical_symbols())
        i, j, shift = neighbour_list(atoms, model.cutoff)
        pos, cell, pbc = atoms.positions, atoms.cell.array, atoms.pbc
        energy = ctx.compute_graph(pos, sp, i, j, shift)[0]
        t = median_seconds(lambda: ctx.compute_graph(pos, sp, i, j, shift), args.min_seconds,
                           args.min_repeats, args.max_repeats)
        record("model", atoms, t, energy, len(i))
        if "ase" not in args.modes:  # as the peers' workers: --modes model times the call only
            return
        t = median_seconds(lambda: ctx.compute(pos, sp, cell, pbc), args.min_seconds,
                           args.min_repeats, args.max_repeats)
        record("periodic", atoms, t, energy, len(i))
        atoms.calc = FusedNequIPCalculator(model, device="cpu", dtype=dtype)
        t = median_seconds(ase_step_fn(atoms, np.random.default_rng(0)), args.min_seconds,
                           args.min_repeats, args.max_repeats)
        record("ase", atoms, t, energy, None)
    return run_size


def worker_nequix_torch(args, record):
    import torch
    torch.set_num_threads(args.threads)
    from nequix.calculator import NequixCalculator, from_pretrained
    from nequix.data import atomic_numbers_to_indices, dict_to_pytorch_geometric, preprocess_graph
    from nequix.torch_impl.model import load_model as load_model_torch

    # nequix converts .nqx to its torch format beside the file; work on a copy in /tmp.
    tmp = tempfile.mkdtemp()
    nqx = os.path.join(tmp, "nequix-mp-1.nqx")
    shutil.copy(args.model, nqx)
    from_pretrained("nequix-mp-1", nqx, backend="torch", use_kernel=False)
    pt = os.path.join(tmp, "nequix-mp-1.pt")
    model, config = load_model_torch(pt, False)
    model = model.to("cpu").eval()
    idx = atomic_numbers_to_indices(config["atomic_numbers"])

    def run_size(rep):
        atoms = si_rattled(rep)
        g = dict_to_pytorch_geometric(preprocess_graph(atoms, idx, config["cutoff"], False))
        g.n_graph = torch.zeros(g.x.shape[0], dtype=torch.int64)

        def call():
            e, f, s = model(g.x, g.positions, g.edge_attr, g.edge_index, g.cell, g.n_node,
                            g.n_edge, g.n_graph)
            return float(e.sum())
        energy = call()
        t = median_seconds(call, args.min_seconds, args.min_repeats, args.max_repeats)
        record("model", atoms, t, energy, g.edge_index.shape[1])
        if "ase" not in args.modes:
            return
        atoms.calc = NequixCalculator("nequix-mp-1", pt, backend="torch", use_kernel=False)
        t = median_seconds(ase_step_fn(atoms, np.random.default_rng(0)), args.min_seconds,
                           args.min_repeats, args.max_repeats)
        record("ase", atoms, t, energy, None)
        atoms.calc = None
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
        atoms = si_rattled(rep)
        graph = dict_to_graphstuple(preprocess_graph(atoms, calc.atom_indices, calc.cutoff,
                                                     False))
        n_edges = int(graph.n_edge[0])
        graph = calc._pad_graph_jax(graph, True)  # the calculator's padding, as it runs
        graph = jax.tree_util.tree_map(jnp.asarray, graph)

        def call():
            e, f, s = model(graph)
            jax.block_until_ready((e, f, s))
            return float(e[0])
        energy = call()
        t = median_seconds(call, args.min_seconds, args.min_repeats, args.max_repeats)
        record("model", atoms, t, energy, n_edges)
        if "ase" not in args.modes:
            return
        atoms.calc = NequixCalculator("nequix-mp-1", args.model, backend="jax", use_kernel=False)
        t = median_seconds(ase_step_fn(atoms, np.random.default_rng(0)), args.min_seconds,
                           args.min_repeats, args.max_repeats)
        record("ase", atoms, t, energy, None)
        atoms.calc = None
    return run_size


def run_worker(args):
    cpus = sorted(os.sched_getaffinity(0))[:args.threads]
    os.sched_setaffinity(0, cpus)
    sizes = [int(s) for s in args.sizes.split(",")]

    def record(mode, atoms, t, energy, edges):
        med, n, best, cpu = t
        emit({"peer": args.worker, "mode": mode, "threads": args.threads, "atoms": len(atoms),
              "edges": edges, "ms_per_step": 1e3 * med, "min_ms_per_step": 1e3 * best,
              "cpu_ms_per_step": 1e3 * cpu, "us_per_atom_step": 1e6 * med / len(atoms),
              "repeats": n, "energy": energy, "rattle_A": RATTLE,
              "load_avg_1min": os.getloadavg()[0]})

    if args.worker.startswith("fnq"):
        run_size = worker_fnq(args, record, "float32" if args.worker == "fnq-f32" else "float64")
    elif args.worker == "nequix-jax":
        run_size = worker_nequix_jax(args, record)
    else:
        run_size = worker_nequix_torch(args, record)
    for rep in sizes:
        try:
            run_size(rep)
        except Exception as err:  # noqa: BLE001 - report and go on with the next size
            emit({"peer": args.worker, "threads": args.threads, "atoms": 8 * rep ** 3,
                  "error": f"{type(err).__name__}: {str(err)[:300]}"})


# --- driver -----------------------------------------------------------------------------------

def environment(args):
    info = {"python": sys.version.split()[0], "cpu": cpu_name(),
            "cpus_available": len(os.sched_getaffinity(0))}
    out = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    info["fusednequip_commit"] = out.stdout.strip()
    for mod in ("jax", "torch", "nequix", "e3nn", "e3nn_jax"):
        try:
            from importlib.metadata import version
            info[mod] = version(mod.replace("_", "-"))
        except Exception:  # noqa: BLE001 - not installed
            pass
    return info


def worker_env(peer, threads):
    env = dict(os.environ)
    t = str(threads)
    env.update(OMP_NUM_THREADS=t, MKL_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t)
    env["CUDA_VISIBLE_DEVICES"] = ""  # every code on the CPU, also on a GPU machine
    env["JAX_PLATFORMS"] = "cpu"
    if peer == "nequix-jax" and threads == 1:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    return env


def summary(rows):
    ok = [r for r in rows if "error" not in r]
    keys = sorted({(r["atoms"], r["threads"]) for r in ok})
    cols = sorted({(r["peer"], r["mode"]) for r in ok}, key=lambda pm: (pm[1], pm[0]))
    print("\n| atoms | threads | " + " | ".join(f"{p} {m} ms" for p, m in cols) + " |")
    print("|---" * (len(cols) + 2) + "|")
    for n, th in keys:
        t = {(r["peer"], r["mode"]): r["ms_per_step"] for r in ok
             if r["atoms"] == n and r["threads"] == th}
        print(f"| {n} | {th} | " + " | ".join(f"{t[c]:.1f}" if c in t else "-" for c in cols) +
              " |")
    print("\nratios (peer time / fnq time, same mode, atoms and threads):")
    print("| atoms | threads | mode | fnq | nequix-jax / fnq | nequix-torch / fnq |")
    print("|---|---|---|---|---|---|")
    for n, th in keys:
        t = {(r["peer"], r["mode"]): r["ms_per_step"] for r in ok
             if r["atoms"] == n and r["threads"] == th}
        for mode in ("model", "ase"):
            for ours in ("fnq-f32", "fnq-f64"):
                if (ours, mode) not in t:
                    continue
                cells = []
                for peer in ("nequix-jax", "nequix-torch"):
                    v = t.get((peer, mode))
                    cells.append(f"{v / t[(ours, mode)]:.1f}" if v else "-")
                print(f"| {n} | {th} | {mode} | {ours} | " + " | ".join(cells) + " |")
    for n in sorted({r["atoms"] for r in ok}):
        ref = [r["energy"] for r in ok if r["atoms"] == n and r["peer"] == "fnq-f64"]
        for r in ok:
            if r["atoms"] == n and r["peer"] != "fnq-f64" and ref and r["mode"] == "model":
                print(f"energy check {n} atoms, {r['peer']} ({r['threads']} threads): "
                      f"rel. diff to fnq-f64 {abs(r['energy'] - ref[0]) / abs(ref[0]):.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="path to nequix-mp-1.nqx")
    ap.add_argument("--sizes", default="4,8")
    ap.add_argument("--threads", default="1,2", help="thread counts, each a separate run")
    ap.add_argument("--peer-threads", help="thread counts for nequix-jax/-torch (default: "
                    "--threads; e.g. only the largest, where they are slow)")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--min-seconds", type=float, default=5.0)
    ap.add_argument("--min-repeats", type=int, default=3)
    ap.add_argument("--max-repeats", type=int, default=50)
    ap.add_argument("--modes", default="model,ase",
                    help="model,ase (model only: the peers' slow ASE steps left out)")
    ap.add_argument("--worker-timeout", type=float, default=7200.0)
    ap.add_argument("--out", help="also append the JSON lines to this file")
    ap.add_argument("--summary", nargs="*", help="only print the table of these JSON-line files")
    ap.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    ap.add_argument("--threads-one", type=int, dest="threads_one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.threads = args.threads_one
        return run_worker(args)
    if args.summary:
        rows = [json.loads(line) for f in args.summary for line in open(f)
                if line.startswith("{") and "environment" not in line]
        return summary(rows)

    out = open(args.out, "a") if args.out else None
    env_line = json.dumps({"environment": environment(args)})
    print(env_line, flush=True)
    if out:
        out.write(env_line + "\n")
    rows = []
    peer_threads = [int(t) for t in (args.peer_threads or args.threads).split(",")]
    for threads in (int(t) for t in args.threads.split(",")):
        for peer in args.peers.split(","):
            if peer not in PEERS:
                sys.exit(f"unknown peer {peer!r}; choose from {', '.join(PEERS)}")
            if peer.startswith("nequix") and threads not in peer_threads:
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer,
                   "--threads-one", str(threads), "--model", args.model, "--sizes", args.sizes,
                   "--min-seconds", str(args.min_seconds), "--min-repeats", str(args.min_repeats),
                   "--max-repeats", str(args.max_repeats), "--modes", args.modes]
            run_peer(f"{peer}, {threads} threads", cmd, worker_env(peer, threads),
                     args.worker_timeout, rows, out)
    summary(rows)


if __name__ == "__main__":
    main()
