#!/usr/bin/env python3
"""LAMMPS timing of the Si example (examples/si-diamond/in.si-nvt: 512 atoms, nequix-mp-1 or
--model, float64, NVT) with pair_style fusednequip, on the CPU at 1 and 2 MPI ranks by default. Prints one
JSON line per configuration: ms per MD step and atom-steps per second, from LAMMPS' own "Loop
time" (the run without its set-up).

  bench/bench_lammps.py [--lmp build/pair_style/lmp_fusednequip] [--steps 20]
                        [--configs 1x1,1x2,2x1]     (ranks x OpenMP threads per rank)
                        [--device cpu|cuda] [--dtype float64|float32] [--cells 4,10,20]
                        [--plugin build/pair_style/fusednequipplugin.so]
                        [--comm auto,ipc,staged,host,nccl] [--nccl-hostid]
                        [--lmp-args="-k on g 1 -sf kk"] [--model NAME_OR_PATH]
--plugin: an lmp with the PLUGIN package (not lmp_fusednequip) loads the style first.
--comm: the pair style's ghost exchange, one run each (several ranks); --nccl-hostid gives each
rank its own NCCL_HOSTID, so that NCCL runs ranks sharing one GPU (a correctness harness
through loopback sockets, not a speed figure). --lmp-args: more lmp arguments, e.g. a LAMMPS
built with KOKKOS run as GPU users run it (Kokkos integrator, neighbour lists, communication). The exchange's rows and bytes per step come
from the style's FNQ_TIMING report (rank 0).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from machine import cpu_name, gpu_count, gpu_name

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lmp", default=os.path.join(ROOT, "build", "pair_style", "lmp_fusednequip"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--configs", default="1x1,1x2,2x1")
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--cells", default="4", help="diamond cells per edge, comma-separated; "
                    "AxBxC for a box of A x B x C cells (weak scaling: 40x20x20 on 2 GPUs)")
    ap.add_argument("--plugin", help="`plugin load` this file before the deck")
    ap.add_argument("--comm", default="auto", help="ghost exchanges, comma-separated")
    ap.add_argument("--nccl-hostid", action="store_true",
                    help="each rank its own NCCL_HOSTID (NCCL on one GPU, for testing)")
    ap.add_argument("--lmp-args", default="", help="more lmp arguments, e.g. '-k on g 1 -sf kk'")
    ap.add_argument("--model", default="nequix-mp-1",
                    help="the deck's model (a name or a path; it must know Si)")
    a = ap.parse_args()
    deck = os.path.join(ROOT, "examples", "si-diamond", "in.si-nvt")
    if a.plugin:
        wrapper = os.path.join(tempfile.mkdtemp(), "in.bench")
        with open(wrapper, "w") as f:
            f.write(f"plugin load {os.path.abspath(a.plugin)}\ninclude {deck}\n")
        deck = wrapper
    runs = [(n, c, x) for n in a.cells.split(",") for c in a.configs.split(",")
            for x in a.comm.split(",")]
    for cells, config, comm in runs:
        ranks, threads = (int(v) for v in config.split("x"))
        if ranks == 1 and comm != a.comm.split(",")[0]:
            continue    # one rank exchanges nothing: once is enough
        box = [int(v) for v in cells.split("x")] if "x" in cells else [int(cells)] * 3
        cmd = [a.lmp, "-in", deck, "-log", "none", "-var", "steps", str(a.steps),
               "-var", "cx", str(box[0]), "-var", "cy", str(box[1]), "-var", "cz", str(box[2]),
               "-var", "device", a.device, "-var", "dtype", a.dtype, "-var", "comm", comm,
               "-var", "model", a.model]
        cmd += a.lmp_args.split()
        if ranks > 1 and a.nccl_hostid:
            cmd = ["sh", "-c", 'NCCL_HOSTID=r$OMPI_COMM_WORLD_RANK exec "$0" "$@"'] + cmd
        if ranks > 1:
            # Open MPI binds 2 ranks to a core each: their OpenMP threads would share it
            unbind = ["--bind-to", "none"] if threads > 1 else []
            cmd = [a.mpiexec, "-n", str(ranks)] + unbind + cmd
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", FNQ_TIMING="1", NCCL_NVLS_ENABLE="0")
        p = subprocess.run(cmd, cwd=os.path.dirname(deck), env=env, capture_output=True,
                           text=True)
        m = re.search(r"Loop time of (\S+) on (\d+) procs for (\d+) steps with (\d+) atoms",
                      p.stdout)
        if p.returncode != 0 or not m:
            sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
        seconds, steps, atoms = float(m.group(1)), int(m.group(3)), int(m.group(4))
        # LAMMPS' own breakdown (avg over ranks), ms per step: Pair holds our library call
        parts = {}
        for line in p.stdout.splitlines():
            cols = [c.strip() for c in line.split("|")]
            if len(cols) == 6 and cols[0] in ("Pair", "Neigh", "Comm", "Modify", "Output", "Other"):
                parts[f"{cols[0].lower()}_ms"] = round(1000 * float(cols[2]) / steps, 2)
        # the exchange: what the log says ran, and rank 0's rows and bytes per step
        chosen = re.search(r"ghost exchange '(\w+)': (.*)", p.stdout)
        moved = re.search(r"exchange \(rank 0\): .*?([\d.]+) rows and ([\d.]+) MB sent",
                          p.stderr)
        why = chosen.group(2) if chosen else ""
        # which ghosts go through the exchange (FNQ_EXCHANGE_ONE_RANK, FNQ_FOLD_OWN_IMAGES)
        ghosts = ("exchanged" if "exchanged, not folded" in why or "every ghost exchanged" in why
                  else "own images folded" if "own atoms are folded" in why
                  else "folded" if chosen and chosen.group(1) == "none" else None)
        exchange = {"comm": comm, "exchange": chosen.group(1) if chosen else None,
                    "ghosts": ghosts, "nccl_hostid_harness": bool(a.nccl_hostid and ranks > 1)}
        if moved:
            exchange.update(rank0_rows_sent_per_step=float(moved.group(1)),
                            rank0_mb_sent_per_step=float(moved.group(2)))
        # the style's own split of rank 0's Pair time: host side before, library, tallies
        split = re.search(r"timing \(rank 0\): .*?prepare ([\d.]+), library ([\d.]+), "
                          r"tally ([\d.]+)", p.stderr)
        if split:
            exchange.update({f"rank0_{k}_ms": float(v) for k, v in
                             zip(("prepare", "library", "tally"), split.groups())})
        # an Allegro model's GPU engine, each rank (FNQ_TIMING): host before, then the GPU
        phases = re.findall(r"Allegro on the GPU, ms per call over \d+ calls: active edges and "
                            r"upload ([\d.]+), GPU \(chunks, forces, download\) ([\d.]+)",
                            p.stderr)
        if phases:
            for i, k in enumerate(("collect", "gpu")):
                exchange[f"allegro_{k}_ms_by_rank"] = [float(v[i]) for v in phases]
        print(json.dumps({
            "bench": "lammps", "deck": "examples/si-diamond/in.si-nvt",
            "cells": cells if "x" in cells else int(cells), "model": a.model,
            "dtype": a.dtype, "device": a.device, "gpu": (gpu_name() or "unknown") if a.device != "cpu" else None,
            "cpu": cpu_name(), "ranks": ranks,
            "gpus": min(ranks, gpu_count()) if a.device != "cpu" else 0,
            "threads_per_rank": threads, "lmp_args": a.lmp_args, "atoms": atoms, "steps": steps,
            "ms_per_step": round(1000 * seconds / steps, 1),
            "atom_steps_per_s": round(atoms * steps / seconds, 1), **exchange, **parts}),
              flush=True)


main()
