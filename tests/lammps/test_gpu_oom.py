"""A GPU that runs out of memory during a LAMMPS run (the reliability issue): a system grown by
`replicate` past what the GPU holds must stop LAMMPS cleanly, with a message saying what was
needed and what was free, and the restart files written before must stay intact.

One LAMMPS run (pair_style fusednequip dtype float32 device cuda, nequix-mp-1, one rank):
4,096 diamond Si at 300 K, NVE, 20 steps writing `restart 10 si.*.restart`, then
`write_restart si-before.restart`, then `replicate k k k` to 4,096 k^3 atoms and `run 10`.
k is chosen from the GPU's memory (nvidia-smi) so that the system needs about 1.5x more
than the GPU has in the library's lean layout, the one it falls back to when the fast one does
not fit: ~72 kB of device memory per Si atom in float32 (on the 80 GB H100, 1,000,000 atoms
fit and 1,191,016 do not: docs/gpu.md, bench/NOTES.md v11), so k = 8 (2.1 M atoms) on an 80 GB
H100 and k = 10 (4.1 M) on a 141 GB H200. LAMMPS itself then needs a few
kB of host memory per atom (its full neighbour list with the skin, ~107 pairs per atom, and
the pair style's copy of it): ~8 GB at 2.1 M atoms; the test skips when the host has less
than twice its estimate available.

Checked:
  - LAMMPS exits with a non-zero status, not by a signal (no crash), and the deck's line after
    the failing run is never reached;
  - an ERROR line names "out of memory" with the figures: "<X> MB needed for <buffer>,
    device <d> has <Y> MB free of <Z> MB", X > Y, Z within 10 % of what nvidia-smi reports,
    and "in all, this system's <N> atoms and <M> edges need <T> MB of GPU buffers", N the
    replicated system's atoms, T > Z;
  - the thermo rows of the 20 steps before (4,096 atoms) are all there;
  - si.10.restart, si.20.restart and si-before.restart exist and each reads back in a new
    LAMMPS (read_restart, the pair style, run 0): the step, 4,096 atoms, the kinetic energy
    to 1e-12 relative (velocities come back exactly) and the potential energy to 1e-6
    relative (float32 on the GPU; the pairs may be listed in another order) of the first run
    at that step.

  test_gpu_oom.py [--replicate k] [--smoke | --cpu-stand-in]
--replicate forces k. --smoke runs the same decks on the CPU in float64 with 64 atoms and
`replicate 2 2 2`, where nothing fails: the decks and the restart read-back (by hand).
--cpu-stand-in (CTest lammps_stop_restart, label cpu) adds, after the replicate, an atom
0.05 A from another: the library refuses the step as it refuses a system too large for the
GPU (the same path: a failed library call in the pair style's compute), and the same checks
run, the message naming the two atoms instead of the memory.
Exits 77 (skipped) without a usable GPU, or without the host memory the replicated system needs.
"""
import argparse
import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from lmputil import Checker, gpu_available, model_dir, run_lammps, thermo_rows
from cliutil import SKIP

BYTES_PER_ATOM = 72e3        # device memory per Si atom, float32, lean layout (see above)
HOST_BYTES_PER_ATOM = 4e3    # LAMMPS + the pair style's pair arrays, per atom (see above)
OOM = re.compile(r"GPU out of memory: ([\d.e+]+) MB needed for (.+?), device (\d+) has "
                 r"([\d.e+]+) MB free of ([\d.e+]+) MB")
OOM_ALL = re.compile(r"in all, this system's (\d+) atoms and (\d+) edges need ([\d.e+]+) MB of "
                     r"GPU buffers")


def gpu_memory_mb(index=0):
    """Total memory of GPU `index` in MB (10^6 bytes), from nvidia-smi; None if unknown."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    p = subprocess.run([smi, "-i", str(index), "--query-gpu=memory.total",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True)
    try:
        return float(p.stdout.split()[0]) * 1.048576    # MiB -> MB
    except (IndexError, ValueError):
        return None


def host_available_bytes():
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def first_deck(cells, style, k, after_steps, after_replicate=""):
    return f"""units metal
atom_style atomic
atom_modify map array
boundary p p p
lattice diamond 5.43
region box block 0 {cells} 0 {cells} 0 {cells}
create_box 1 box
create_atoms 1 box
mass 1 28.0855
pair_style fusednequip {style}
pair_coeff * * nequix-mp-1 Si
velocity all create 300 4928459 mom yes rot yes dist gaussian loop geom
timestep 0.001
fix md all nve
thermo_style custom step atoms pe ke etotal
thermo_modify format float %.17g norm no flush yes
thermo 10
restart 10 si.*.restart
run 20
write_restart si-before.restart
print "replicating {k} x {k} x {k}"
replicate {k} {k} {k}
{after_replicate}run {after_steps}
print "AFTER THE RUN: the replicated system did not run out of memory"
"""


def read_back_deck(restart, style):
    return f"""read_restart {restart}
pair_style fusednequip {style}
pair_coeff * * nequix-mp-1 Si
thermo_style custom step atoms pe ke etotal
thermo_modify format float %.17g norm no
run 0
"""


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicate", type=int, help="replicate factor per axis (default: from "
                                                  "the GPU's memory)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--smoke", action="store_true",
                      help="CPU, float64, 64 atoms, replicate 2: the decks, nothing fails")
    mode.add_argument("--cpu-stand-in", action="store_true",
                      help="CPU, float64, 64 atoms, replicate 2 plus an atom 0.05 A from "
                           "another: the library's refusal stands in for out of memory")
    a = ap.parse_args()
    model_dir()
    c = Checker("LAMMPS: a failing run after replicate" if a.cpu_stand_in else
                "LAMMPS: GPU out of memory after replicate")
    after = ""
    if a.smoke or a.cpu_stand_in:
        cells, style, k, rel_pe = 2, "dtype float64 device cpu", a.replicate or 2, 1e-10
        gpu_mb = None
        if a.cpu_stand_in:    # next to the atom at the origin: "closer than" at the set-up
            after = "create_atoms 1 single 0.05 0.0 0.0 units box\n"
    else:
        if not gpu_available():
            sys.exit(SKIP)
        cells, style, rel_pe = 8, "dtype float32 device cuda", 1e-6
        gpu_mb = gpu_memory_mb()
        if a.replicate:
            k = a.replicate
        else:
            mem = (gpu_mb or 150e3) * 1e6    # unknown: as if 150 GB (more than an H200)
            k = max(6, math.ceil((1.5 * mem / BYTES_PER_ATOM / (8 * cells ** 3)) ** (1 / 3)))
    natoms0 = 8 * cells ** 3
    natoms = natoms0 * k ** 3 + (1 if after else 0)
    print(f"GPU memory {gpu_mb:.0f} MB; " if gpu_mb else "", end="")
    print(f"{natoms0} atoms, replicate {k} x {k} x {k} -> {natoms:,} atoms ({style})")
    if gpu_mb is not None or not (a.smoke or a.cpu_stand_in):
        need = 2 * HOST_BYTES_PER_ATOM * natoms
        avail = host_available_bytes()
        if avail is not None and avail < need:
            print(f"SKIP: {natoms:,} atoms need ~{need / 1e9:.1f} GB of host memory with "
                  f"margin, {avail / 1e9:.1f} GB available")
            sys.exit(SKIP)

    with tempfile.TemporaryDirectory() as tmp:
        start = time.time()
        rc, out = run_lammps(tmp, first_deck(cells, style, k, 10, after), check=False,
                             timeout=1500)
        print(f"first run: exit {rc} after {time.time() - start:.0f} s")
        errors = [l for l in out.splitlines() if "ERROR" in l]
        for l in errors:
            print("  " + l)
        rows = thermo_rows(out, ["Step", "Atoms", "PotEng", "KinEng"])
        before = {int(r["Step"]): r for r in rows if int(r["Atoms"]) == natoms0}
        c.check(sorted(before) == [0, 10, 20],
                f"thermo rows of the first 20 steps: {sorted(before)}, expected [0, 10, 20]")
        if a.smoke:
            c.check(rc == 0, f"smoke run failed ({rc}):\n{out[-3000:]}")
            c.check(any(int(r["Atoms"]) == natoms for r in rows),
                    f"no thermo row with {natoms} atoms after replicate")
        else:
            c.check(rc != 0, "LAMMPS exited with 0: the run after replicate did not fail "
                             f"({natoms:,} atoms; GPU of {gpu_mb} MB)")
            c.check(rc > 0, f"LAMMPS was killed by signal {-rc} (a crash, not a clean stop)")
            c.check("AFTER THE RUN" not in out, "the deck went on after the failing run")
            for bad in ("Segmentation fault", "core dumped", "terminate called", "Aborted"):
                c.check(bad not in out, f"the output says {bad!r}:\n{out[-3000:]}")
        if a.cpu_stand_in:
            c.check(any("closer than" in l and "atom ID" in l for l in errors),
                    f"no ERROR line names the atoms too close:\n{out[-3000:]}")
        elif not a.smoke:
            oom = [m for m in map(OOM.search, errors) if m]
            c.check(bool(oom), "no ERROR line says 'GPU out of memory: <X> MB needed for ..., "
                               f"device <d> has <Y> MB free of <Z> MB':\n{out[-3000:]}")
            if oom:
                need, what, dev, free, total = oom[0].groups()
                need, free, total = float(need), float(free), float(total)
                print(f"out of memory: {need:.0f} MB needed for {what}, {free:.0f} MB free "
                      f"of {total:.0f} MB on device {dev}")
                c.check(need > free, f"the message says {need} MB needed but {free} MB free")
                if gpu_mb:
                    c.check(abs(total - gpu_mb) <= 0.1 * gpu_mb,
                            f"the message says {total} MB in all, nvidia-smi {gpu_mb:.0f} MB")
                whole = [m for m in map(OOM_ALL.search, errors) if m]
                c.check(bool(whole), "the message does not say what the whole system needs")
                if whole:
                    n_at, n_ed, all_mb = whole[0].groups()
                    print(f"in all: {int(n_at):,} atoms and {int(n_ed):,} edges need "
                          f"{float(all_mb):.0f} MB")
                    c.check(int(n_at) == natoms, f"the message names {n_at} atoms, not {natoms}")
                    c.check(float(all_mb) > total,
                            f"the message says the system needs {all_mb} MB in all, less than "
                            f"the GPU's {total} MB")

        files = {"si.10.restart": 10, "si.20.restart": 20, "si-before.restart": 20}
        for name, step in files.items():
            path = os.path.join(tmp, name)
            if not os.path.exists(path) or os.path.getsize(path) == 0:
                c.check(False, f"restart file {name} is missing or empty")
                continue
            digest = sha256(path)
            with tempfile.TemporaryDirectory() as tmp2:
                shutil.copy(path, tmp2)
                rc2, out2 = run_lammps(tmp2, read_back_deck(name, style), check=False,
                                       timeout=600)
            c.check(rc2 == 0, f"{name} does not read back ({rc2}):\n{out2[-3000:]}")
            if rc2 != 0:
                continue
            r = thermo_rows(out2, ["Step", "Atoms", "PotEng", "KinEng"])[0]
            ref = before.get(step)
            c.check(int(r["Step"]) == step and int(r["Atoms"]) == natoms0,
                    f"{name}: step {r['Step']:.0f} with {r['Atoms']:.0f} atoms, expected step "
                    f"{step} with {natoms0}")
            if ref:
                dpe = abs(r["PotEng"] - ref["PotEng"]) / abs(ref["PotEng"])
                dke = abs(r["KinEng"] - ref["KinEng"]) / abs(ref["KinEng"])
                print(f"{name}: step {step}, {natoms0} atoms, pe {r['PotEng']:.10f} "
                      f"(run: {ref['PotEng']:.10f}, {dpe:.1e} rel), ke {dke:.1e} rel, "
                      f"sha256 {digest[:16]}")
                c.check(dpe <= rel_pe, f"{name}: potential energy {r['PotEng']} differs from "
                                       f"the run's {ref['PotEng']} by {dpe:.2e} relative")
                c.check(dke <= 1e-12, f"{name}: kinetic energy {r['KinEng']} differs from the "
                                      f"run's {ref['KinEng']} by {dke:.2e} relative")
            c.check(sha256(path) == digest, f"{name} changed while being read")
    c.finish()


main()
