"""fusednequip against nequip's own inference paths and a JAX NequIP, side by side in one run
on one GPU.

Workload: a model made by bench/make_nequip_peer_model.py (nequip >= 0.7, float32, 5 species;
--arch m: NequIP-M size, 4 layers, l_max 2, 64 channels, r_max 5 A; oam-l / xl: NequIP-OAM-L's
and -XL's architectures at their real widths with ZBL, r_max 6 A) on the 5-species rattled
diamond lattice of bench/mixed_workload.py (8 * rep^3 atoms, ~28 neighbours each within 5 A,
~44 within 6 A), energy + forces + stress (virial) per call. Each peer runs in its own process (one's memory pool or failure cannot touch
another's), over the same structures and the same matscipy neighbour list:

  fnq              this project, the model converted to .fnqm: compute_graph_device with the
                   list as torch CUDA tensors (model; host arrays without a GPU: "inputs":
                   "host"), and compute_periodic with the library's own GPU neighbour list
                   (periodic)
  nequip-compiled  nequip's fastest inference: the package compiled by nequip-compile with
                   AOTInductor and, on the GPU, OpenEquivariance tensor products
                   (nequip-peer-oeq[-ase].nequip.pt2, or --compiled)
  nequip-cueq      the same with cuEquivariance tensor products (nequip-peer-cueq[-ase]...)
  nequip-triton    the same with nequip-allegro's Triton contracter (an Allegro model:
                   nequip-peer-triton[-ase]...; fnq's model mode then takes host arrays,
                   compute_graph, as the Allegro engine builds its graph on the host)
  nequip-torch     nequip's eager PyTorch model from the package (e3nn tensor products;
                   TorchScript is gone from PyTorch >= 2.10's nequip-compile)
  nequip-jax       bench/nequip_jax_peer.py: a 3-layer NequIP of the same widths in JAX with
                   e3nn-jax, jax.jit, random weights (its energy is not comparable; timed alone)

Modes (--modes): `model` times one call of the model on a graph already on the device
(neighbour list given, as bench_peers.py does); `periodic` (fnq) with the library's own GPU
neighbour list; `ase` an MD-like step through each one's ASE calculator (si_workload.ase_step_fn:
new positions, energy, forces, stress; neighbour list, transfers and Python included): fnq's
FusedNequIPCalculator, nequip's NequIPCalculator.from_compiled_model (needs the `--target ase`
package, nequip-peer-oeq-ase.nequip.pt2, which then also serves the model mode). Timing: two warm-up calls (compilation, autotuning, buffers),
more for up to 1 s, then calls until --min-seconds or --max-repeats; the median is reported.
Sizes go up until a peer runs out of memory: that size is reported as an error row and the peer
stops there ("could not"); other errors are reported and the next size is tried.

usage: python bench/bench_nequip_peers.py --models DIR [--sizes 8,10,16,20,25,32,40]
           [--peers fnq,nequip-compiled,nequip-cueq,nequip-triton,nequip-torch,nequip-jax]
           (a peer `fnq:VAR=VALUE[:VAR=VALUE]` is fnq with those switches set, e.g.
           fnq:FNQ_NODE_GEMM=0, timed beside plain fnq in the same run)
           [--modes model,periodic,ase] [--device cuda|cpu]
           [--compiled DIR/nequip-peer-oeq.nequip.pt2] [--min-seconds 2] [--out FILE]
DIR holds what make_nequip_peer_model.py made (nequip-peer.fnqm, .nequip.zip, .json and the
compiled .nequip.pt2). One JSON line per (peer, mode, size), then the ms table and the ratios.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from machine import cpu_name, gpu_name  # noqa: E402
from mixed_workload import atoms_of, mixed_crystal  # noqa: E402
from peer_worker import keep, run_peer  # noqa: E402
from si_workload import ase_step_fn  # noqa: E402
from timing import median_seconds  # noqa: E402

PEERS = ("fnq", "nequip-compiled", "nequip-cueq", "nequip-triton", "nequip-torch", "nequip-jax")
# make_nequip_peer_model --accel
ACCEL = {"nequip-compiled": "oeq", "nequip-cueq": "cueq", "nequip-triton": "triton"}
NAME = "nequip-peer"


def peer_parts(peer):
    """`fnq:VAR=VALUE:...` -> ("fnq", {VAR: VALUE, ...}); any other peer -> (peer, {})"""
    base, *switches = peer.split(":")
    if switches and base != "fnq":
        sys.exit(f"peer {peer!r}: only fnq takes switches (fnq:VAR=VALUE)")
    extra = {}
    for sw in switches:
        var, eq, value = sw.partition("=")
        if not eq or not var.startswith("FNQ_"):
            sys.exit(f"peer {peer!r}: {sw!r} is not FNQ_NAME=VALUE")
        extra[var] = value
    return base, extra


def emit(rec):
    print(json.dumps(rec), flush=True)


def is_oom(err):
    text = f"{type(err).__name__} {err}".lower()
    return any(s in text for s in ("out of memory", "outofmemory", "resource_exhausted",
                                   "resource exhausted", "cudaerrormemoryallocation"))


def model_info(args):
    with open(os.path.join(args.models, NAME + ".json")) as f:
        return json.load(f)


def neighbour_list(atoms, cutoff):
    """Directed pairs (i receives from j), their integer cell shifts and Cartesian shifts."""
    import matscipy.neighbours
    i, j, shift = matscipy.neighbours.neighbour_list(
        "ijS", positions=atoms.positions, cell=atoms.cell.array, pbc=atoms.pbc, cutoff=cutoff)
    return i, j, shift, shift.astype(np.float64) @ atoms.cell.array


def structure(args, rep):
    info = model_info(args)
    atoms = mixed_crystal(rep, info["type_names"])
    return atoms, info


def sync(device):
    if device == "cuda":
        import torch
        torch.cuda.synchronize()


# --- workers: one per peer, each in its own process ------------------------------------------

def gpu_memory(ctx):
    """GPU memory in use on the device (all processes, nvidia-smi's view) after a call, GB."""
    if ctx.device != "cuda":
        return {}
    import torch
    free, total = torch.cuda.mem_get_info()
    return {"gpu_memory_used_gb": round((total - free) / 1e9, 2)}


def worker_fnq(args, record):
    from fusednequip import Context, FusedNequIPCalculator, Model
    model = Model(os.path.join(args.models, NAME + ".fnqm"))
    ctx = Context(model, device=args.device, dtype="float32")
    record.info = {"fnq_device": ctx.device}

    def run_size(rep):
        atoms, info = structure(args, rep)
        sp = model.species_indices(atoms.get_chemical_symbols())
        pos, cell, pbc = atoms.positions, atoms.cell.array, atoms.pbc
        energy = edges = None
        if "model" in args.mode_set:
            i, j, _, shift = neighbour_list(atoms, model.cutoff)
            if ctx.device == "cuda" and model.family != "allegro":
                import torch

                def dev(a, dtype):
                    return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device="cuda")
                graph = (dev(pos, torch.float64), dev(sp, torch.int32), dev(i, torch.int64),
                         dev(j, torch.int64), dev(shift, torch.float64))
                torch.cuda.synchronize()
                call, inputs = (lambda: ctx.compute_graph_device(*graph)), "device"
            else:
                call, inputs = (lambda: ctx.compute_graph(pos, sp, i, j, shift)), "host"
            energy, edges = call()[0], len(i)
            t, n = median_seconds(call, args.min_seconds, args.max_repeats)
            record("model", atoms, t, n, energy, edges, inputs=inputs)
            graph = call = i = j = shift = None
        if "periodic" in args.mode_set:
            energy = ctx.compute(pos, sp, cell, pbc)[0] if energy is None else energy
            edges = ctx.last_num_edges if edges is None else edges
            t, n = median_seconds(lambda: ctx.compute(pos, sp, cell, pbc),
                                  args.min_seconds, args.max_repeats)
            record("periodic", atoms, t, n, energy, edges, **gpu_memory(ctx))
        if "ase" in args.mode_set:
            atoms.calc = FusedNequIPCalculator(model, device=args.device, dtype="float32")
            t, n = median_seconds(ase_step_fn(atoms, np.random.default_rng(0)),
                                  args.min_seconds, args.max_repeats)
            record("ase", atoms, t, n, energy, edges)
            atoms.calc = None
    return run_size


def nequip_data(atoms, info, device):
    """nequip's own input dict (its from_ase and neighbour-list transform), on the device."""
    import torch
    from nequip.data import AtomicDataDict, from_ase
    from nequip.data.transforms import NeighborListTransform
    types = info["type_names"]
    data = NeighborListTransform(r_max=info["options"]["r_max"])(from_ase(atoms))
    type_of = {s: k for k, s in enumerate(types)}
    data[AtomicDataDict.ATOM_TYPE_KEY] = torch.as_tensor(
        [type_of[s] for s in atoms.get_chemical_symbols()], dtype=torch.int64)
    data = AtomicDataDict.to_(data, torch.device(device))
    return data, int(data[AtomicDataDict.EDGE_INDEX_KEY].shape[1])


def compiled_file(args, peer):
    """--compiled, else the `--target ase` package of the peer's kernels if made (it serves
    both modes), else the pair_nequip one."""
    if peer == "nequip-compiled" and args.compiled:
        return args.compiled
    base = os.path.join(args.models, f"{NAME}-{ACCEL[peer]}")
    return base + "-ase.nequip.pt2" if os.path.exists(base + "-ase.nequip.pt2") else \
        base + ".nequip.pt2"


def worker_nequip(args, record, compiled):
    import torch
    import nequip
    from nequip.utils.global_state import set_global_state
    calc = None
    if compiled:
        from nequip.model.inference_models import load_compiled_model
        if args.device == "cuda" and args.worker == "nequip-compiled":
            import openequivariance  # noqa: F401 - registers the kernels' ops before the load
        path = compiled_file(args, args.worker)
        if "ase" in args.mode_set and path.endswith("-ase.nequip.pt2"):
            from nequip.integrations.ase import NequIPCalculator
            calc = NequIPCalculator.from_compiled_model(path, device=args.device)
            model = calc.model
        else:
            model, _ = load_compiled_model(path, args.device)
        record.info = {"compiled": os.path.basename(path)}
        if args.worker == "nequip-compiled" and args.device == "cuda":
            from openequivariance._torch import extlib
            record.info["oeq_precompiled_extension"] = bool(extlib.USE_PRECOMPILED_EXTENSION)
            record.info["openequivariance"] = getattr(openequivariance, "__version__", None)
        if args.worker == "nequip-cueq":
            import cuequivariance_torch
            record.info["cuequivariance_torch"] = cuequivariance_torch.__version__
    else:
        from nequip.model.saved_models import load_saved_model
        set_global_state()
        model = load_saved_model(os.path.join(args.models, NAME + ".nequip.zip"),
                                 compile_mode="eager").to(args.device).eval()
        record.info = {}
    record.info.update({"nequip": nequip.__version__, "torch": torch.__version__})

    def run_size(rep):
        atoms, info = structure(args, rep)
        data, n_edges = nequip_data(atoms, info, args.device)
        sync(args.device)

        def call():
            out = model(dict(data))
            # target ase: total energy and stress; pair_nequip: per-atom energies and virial
            energy = out["total_energy"] if "total_energy" in out else out["atomic_energy"]
            forces, virial = out["forces"], out["stress" if "stress" in out else "virial"]
            sync(args.device)
            return float(energy.detach().sum()), forces, virial
        energy = call()[0]
        if "model" in args.mode_set:
            t, n = median_seconds(call, args.min_seconds, args.max_repeats)
            record("model", atoms, t, n, energy, n_edges)
        data = call = None
        if args.device == "cuda":
            torch.cuda.empty_cache()
        if "ase" in args.mode_set and calc is not None:
            atoms.calc = calc
            t, n = median_seconds(ase_step_fn(atoms, np.random.default_rng(0)),
                                  args.min_seconds, args.max_repeats)
            record("ase", atoms, t, n, energy, n_edges)
            atoms.calc = None
            if args.device == "cuda":
                torch.cuda.empty_cache()
    return run_size


def worker_jax(args, record):
    import jax
    import jax.numpy as jnp
    from nequip_jax_peer import NequIPJax
    if args.device == "cpu":
        jax.config.update("jax_platforms", "cpu")
    info = model_info(args)
    opts = info["options"]
    features = opts["num_features"]
    net = NequIPJax(num_species=len(info["type_names"]), num_layers=args.jax_layers,
                    l_max=opts["l_max"], features=features, parity=opts["parity"],
                    r_max=opts["r_max"], num_bessels=opts["num_bessels"],
                    radial_width=opts["radial_mlp_width"],
                    avg_num_neighbors=opts["avg_num_neighbors"])
    step = net.jitted()
    record.info = {"jax": jax.__version__, "jax_device": str(jax.devices()[0]),
                   "layers": args.jax_layers}
    type_of = {s: k for k, s in enumerate(info["type_names"])}

    def run_size(rep):
        atoms, info = structure(args, rep)
        i, j, _, shift = neighbour_list(atoms, opts["r_max"])
        graph = (jnp.asarray(atoms.positions, jnp.float32),
                 jnp.asarray([type_of[s] for s in atoms.get_chemical_symbols()], jnp.int32),
                 jnp.asarray(j, jnp.int32), jnp.asarray(i, jnp.int32),
                 jnp.asarray(shift, jnp.float32))
        jax.block_until_ready(graph)

        def call():
            out = step(*graph)
            jax.block_until_ready(out)
            return float(out[0])
        energy = call()
        t, n = median_seconds(call, args.min_seconds, args.max_repeats)
        record("model", atoms, t, n, energy, len(i), layers=args.jax_layers)
    return run_size


def run_keeping_stderr(fn, *args):
    """fn(*args) with file descriptor 2 going to a temporary file, whose text is then copied
    to the real stderr: C++ code writes there what its exception does not say. Returns (the
    exception or None, the text)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            fn(*args)
            err = None
        except Exception as e:  # noqa: BLE001 - the caller reports it and goes on
            err = e
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read()
    sys.stderr.write(text)
    sys.stderr.flush()
    return err, text


def run_worker(args):
    sizes = [int(s) for s in args.sizes.split(",")]

    def record(mode, atoms, t, n, energy, edges, **extra):
        emit({"peer": args.peer_name or args.worker, "mode": mode, "atoms": len(atoms),
              "edges": edges,
              "ms_per_step": 1e3 * t, "us_per_atom_step": 1e6 * t / len(atoms),
              "repeats": n, "energy": energy, "device": args.device, **extra})
    record.info = {}

    if args.worker == "fnq":
        run_size = worker_fnq(args, record)
    elif args.worker == "nequip-jax":
        run_size = worker_jax(args, record)
    else:
        run_size = worker_nequip(args, record, compiled=args.worker in ACCEL)
    emit({"peer": args.peer_name or args.worker, "info": record.info})
    for rep in sizes:  # one size at a time, so an out-of-memory ends only the larger sizes
        err, stderr_text = run_keeping_stderr(run_size, rep)
        if err is not None:
            # AOTInductor's error names only the failed call; the reason is on stderr
            oom = is_oom(err) or is_oom(stderr_text)
            emit({"peer": args.peer_name or args.worker, "atoms": atoms_of(rep), "oom": oom,
                  "error": f"{type(err).__name__}: {str(err)[:300]}"})
            if oom:
                break


# --- driver -----------------------------------------------------------------------------------

def environment():
    info = {"python": sys.version.split()[0], "cpu": cpu_name(), "gpu": gpu_name()}
    out = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    # a copy without git metadata (a device run from an exported tree) names it in FNQ_COMMIT
    info["fusednequip_commit"] = out.stdout.strip() or os.environ.get("FNQ_COMMIT", "")
    return info


def summary(rows):
    ok = [r for r in rows if "ms_per_step" in r]
    sizes = sorted({r["atoms"] for r in ok} |
                   {r["atoms"] for r in rows if "error" in r and r["atoms"] is not None})
    cols = sorted({(r["peer"], r["mode"]) for r in ok},
                  key=lambda pm: (PEERS.index(peer_parts(pm[0])[0]), pm[0],
                                  ("model", "periodic", "ase").index(pm[1])))
    others = [(p, m) for p, m in cols if p != "fnq" and ("fnq", m) in cols]
    print("\nms per call, median (fnq model = compute_graph_device, periodic = own GPU list, "
          "ase = an MD-like step through the ASE calculator):")
    print("\n| atoms | " + " | ".join(f"{p} {m}" for p, m in cols) + " | " +
          " | ".join(f"{p} / fnq {m}" for p, m in others) + " |")
    print("|---" * (len(cols) + len(others) + 1) + "|")
    for n in sizes:
        t = {(r["peer"], r["mode"]): r["ms_per_step"] for r in ok if r["atoms"] == n}
        err = {r["peer"]: ("OOM" if r.get("oom") else "error") for r in rows
               if "error" in r and r["atoms"] == n}
        cells = [f"{t[c]:.2f}" if c in t else err.get(c[0], "-") for c in cols]
        ratios = [f"{t[(p, m)] / t[('fnq', m)]:.2f}" if (p, m) in t and ("fnq", m) in t
                  else "-" for p, m in others]
        print(f"| {n} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    print("\n(peer / fnq: the peer's time over fnq's in the same mode; > 1: fnq is faster. "
          "nequip-jax has --jax-layers layers.)")
    for p in sorted({r["peer"] for r in rows if "peer" in r}):
        bad = [r for r in rows if r.get("peer") == p and "error" in r]
        for r in bad:
            what = "out of memory" if r.get("oom") else "failed"
            where = f"at {r['atoms']} atoms" if r["atoms"] is not None else "after its last row"
            print(f"could not: {p} {where}: {what} ({r['error'][:160]})")
    for n in sizes:
        ref = [r["energy"] for r in ok if r["atoms"] == n and r["peer"] == "fnq"
               and r["mode"] == "model"]
        for r in ok:
            if (r["atoms"] == n and r["peer"] != "fnq" and r["peer"] != "nequip-jax" and ref
                    and r["mode"] == "model"):
                same = " (the same bits)" if r["energy"] == ref[0] else ""
                print(f"energy check {n} atoms, {r['peer']}: rel. diff to fnq "
                      f"{abs(r['energy'] - ref[0]) / abs(ref[0]):.2e}{same}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", required=True,
                    help="folder with make_nequip_peer_model.py's files")
    ap.add_argument("--compiled", help="the .nequip.pt2 (default: MODELS/nequip-peer-oeq."
                                       "nequip.pt2)")
    ap.add_argument("--sizes", default="8,10,16,20,25,32,40",
                    help="repeats of the 8-atom cell: 8 -> 4,096 atoms, 10 -> 8,000, "
                         "16 -> 32,768, 20 -> 64,000, 25 -> 125,000, 32 -> 262,144, "
                         "40 -> 512,000")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--modes", default="model,periodic",
                    help="any of model, periodic (fnq), ase")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: try the script without a GPU")
    ap.add_argument("--jax-layers", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=2.0)
    ap.add_argument("--max-repeats", type=int, default=50)
    ap.add_argument("--worker-timeout", type=float, default=900.0)
    ap.add_argument("--out", help="also append the JSON lines to this file")
    ap.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    ap.add_argument("--peer-name", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.models = os.path.abspath(args.models)
    args.mode_set = set(args.modes.split(","))
    if args.worker:
        return run_worker(args)

    out = open(args.out, "a") if args.out else None
    env_line = json.dumps({"environment": environment(), "bench": "bench_nequip_peers",
                           "model": model_info(args), "device": args.device})
    print(env_line, flush=True)
    if out:
        out.write(env_line + "\n")
    rows = []
    for peer in args.peers.split(","):
        base, extra = peer_parts(peer)
        if base not in PEERS:
            sys.exit(f"unknown peer {peer!r}; choose from {', '.join(PEERS)}")
        env = dict(os.environ, **extra)
        if peer != "nequip-jax":
            env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", base, "--peer-name", peer,
               "--models", args.models, "--sizes", args.sizes, "--device", args.device,
               "--jax-layers", str(args.jax_layers), "--min-seconds", str(args.min_seconds),
               "--max-repeats", str(args.max_repeats), "--modes", args.modes]
        if args.compiled:
            cmd += ["--compiled", os.path.abspath(args.compiled)]
        _, timed_out = run_peer(peer, cmd, env, args.worker_timeout, rows, out)
        if timed_out:
            keep(json.dumps({"peer": peer, "atoms": None, "error": f"worker timed out "
                             f"after {args.worker_timeout:.0f} s (--worker-timeout)"}),
                 rows, out)
    summary([r for r in rows if "atoms" in r])


if __name__ == "__main__":
    main()
