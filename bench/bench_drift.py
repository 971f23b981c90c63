#!/usr/bin/env python3
"""Energy drift of NVE molecular dynamics in LAMMPS with pair_style fusednequip (the reliability
issue's long run: float32 on the GPU, 100,000 steps of 4,096 Si at 1 fs). A benchmark, not a
test: it reports, it does not judge.

The system: diamond Si, a = 5.43 A, cells^3 conventional cells (8 atoms each; 8 -> 4,096
atoms), nequix-mp-1. Atoms displaced at random by up to 0.08 A and velocities drawn for T
(default 300 K), so that the run starts near equilibrium at about T (the displacement holds
about as much potential energy as the velocities kinetic energy; tests/lammps/test_nve.py
does the same at 600 K), then fix nve with a 1 fs step (metal units), E_tot printed every
--thermo steps.

Reported (a text file in --results-dir, default bench/results/<date>-drift-<device>-<N>atoms-
<dtype>-<steps>steps.txt, the device named by nvidia-smi): the drift per atom from
a linear fit of E_tot(t) over the whole run, |slope| x duration / N (eV/atom, and per ns), the
largest |E_tot(t) - E_tot(0)| / N, the mean temperature, ms per step, the jump of E_tot where a
chunk restarted (see below), and the E_tot(t) series itself.

Chunks: one LAMMPS run per --chunk steps, each ending with write_restart; the next chunk
read_restarts the last file and continues (LAMMPS keeps the step number; velocity Verlet
continues from the same x and v, forces recomputed). The state lives in --workdir (an ignored
path: build-gpu/drift-... when build-gpu/ exists, else build/drift-...); the script picks up
from the last finished chunk, so a run cut short, or stopped by --max-seconds (no new chunk is
started when the last chunk's pace says it would end after that many seconds from the start
of this invocation; its first chunk always starts), is continued by the same command. With --fresh the workdir is cleared
first. The report is written when all steps are done.

  bench/bench_drift.py [--steps 100000] [--chunk 25000] [--cells 8] [--device cuda]
                       [--ranks 1] [--comm auto]
                       [--dtype float32] [--temperature 300] [--thermo 1000]
                       [--model nequix-mp-1] [--timestep-fs 1]
                       [--lmp /tmp/fnq-lammps/lmp] [--plugin build-gpu/pair_style/...so]
                       [--max-seconds 540] [--workdir DIR] [--results-dir DIR] [--fresh]
Smoke test on a CPU (a minute or two on 2 cores):
  bench/bench_drift.py --device cpu --dtype float64 --cells 2 --steps 200 --chunk 100 --thermo 10
"""
import argparse
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

from machine import cpu_name, gpu_count, gpu_name

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_KEYS = ("cells", "steps", "device", "dtype", "temperature", "thermo", "seed", "ranks",
               "comm", "model", "timestep_fs")




def git_commit():
    try:
        p = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                           capture_output=True, text=True)
        return p.stdout.strip() or None
    except OSError:
        return None


def default_lmp():
    for exe in ("/tmp/fnq-lammps/lmp",
                os.path.join(ROOT, "build-gpu", "pair_style", "lmp_fusednequip"),
                os.path.join(ROOT, "build", "pair_style", "lmp_fusednequip")):
        if os.path.exists(exe):
            return exe
    return "lmp"


def default_plugin(lmp):
    """lmp_fusednequip has the style; another lmp loads the plugin of build-gpu/ or build/."""
    if os.path.basename(lmp) == "lmp_fusednequip":
        return None
    for d in ("build-gpu", "build"):
        so = os.path.join(ROOT, d, "pair_style", "fusednequipplugin.so")
        if os.path.exists(so):
            return so
    return None


def setup_deck(a):
    return f"""units metal
atom_style atomic
atom_modify map array
boundary p p p
lattice diamond 5.43
region box block 0 {a.cells} 0 {a.cells} 0 {a.cells}
create_box 1 box
create_atoms 1 box
mass 1 28.0855
displace_atoms all random 0.08 0.08 0.08 {a.seed + 1} units box
velocity all create {a.temperature} {a.seed} mom yes rot yes dist gaussian loop geom
timestep {a.timestep_fs * 1e-3}
"""


def chunk_deck(a, prelude, restart, upto, out_restart):
    start = setup_deck(a) if restart is None else f"read_restart {restart}\n"
    return f"""{prelude}
{start}pair_style fusednequip dtype {a.dtype} device {a.device} comm {a.comm}
pair_coeff * * {a.model} Si
fix md all nve
thermo_style custom step temp pe ke etotal press
thermo_modify format float %.15g norm no flush yes
thermo {a.thermo}
run {upto} upto
write_restart {out_restart}
"""


def thermo_rows(text):
    rows, header = [], None
    for line in text.splitlines():
        w = line.split()
        if w[:1] == ["Step"]:
            header = w
            continue
        if header and len(w) == len(header):
            try:
                rows.append({k: float(v) for k, v in zip(header, w)})
                continue
            except ValueError:
                pass
        header = None
    return rows


def linear_fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return slope, my - slope * mx


def load_state(workdir):
    path = os.path.join(workdir, "state.json")
    return json.load(open(path)) if os.path.exists(path) else None


def save_state(workdir, state):
    tmp = os.path.join(workdir, "state.json.tmp")
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1)
    os.replace(tmp, os.path.join(workdir, "state.json"))    # never half written


def write_report(a, state, workdir, lmp, plugin, partial=False):
    """The drift report over the chunks done so far (partial: a run stopped by --max-seconds,
    named <done>of<steps>steps, so that a run spread over several calls reports each part)."""
    natoms = 8 * a.cells ** 3
    model = os.path.splitext(os.path.basename(a.model))[0]
    # the series: each chunk's rows; a chunk's first row (its set-up, after read_restart) is
    # the previous chunk's last step again: kept as the restart jump, not as a point
    series, jumps = [], []
    for i, ch in enumerate(state["chunks"]):
        rows = thermo_rows(open(os.path.join(workdir, ch["log"])).read())
        if i > 0 and rows and series and rows[0]["Step"] == series[-1]["Step"]:
            jumps.append(rows[0]["TotEng"] - series[-1]["TotEng"])
            rows = rows[1:]
        series += rows
    done = state["chunks"][-1]["upto"]
    dt = a.timestep_fs * 1e-3                       # ps (metal units)
    t = [r["Step"] * dt for r in series]    # LAMMPS' `time` restarts at 0 after read_restart
    e = [r["TotEng"] for r in series]
    slope, icept = linear_fit(t, e)                 # eV per ps
    duration = t[-1] - t[0]                         # ps
    drift = abs(slope) * duration / natoms          # eV/atom over the run
    excursion = max(abs(x - e[0]) for x in e) / natoms
    mean_t = sum(r["Temp"] for r in series) / len(series)
    loop = sum(ch["loop_seconds"] or 0 for ch in state["chunks"])
    ms_step = 1e3 * loop / done if loop else None
    device = gpu_name("memory.total") if a.device != "cpu" else None
    date = datetime.date.today().isoformat()
    short = re.sub(r"[^a-z0-9]+", "-", (device or "cpu").split(",")[0].lower()).strip("-")
    short = re.sub(r"^nvidia-", "", short)
    os.makedirs(a.results_dir, exist_ok=True)
    ranks = f"-{a.ranks}ranks-{a.comm}" if a.ranks > 1 else ""
    steps = f"{done}of{a.steps}steps" if partial else f"{a.steps}steps"
    out = os.path.join(a.results_dir,
                       f"{date}-drift-{short}-{model}-{natoms}atoms-{a.dtype}-{steps}{ranks}.txt")
    lines = [
        f"# bench/bench_drift.py: NVE energy drift, LAMMPS pair_style fusednequip",
        f"date: {date}",
        f"device: {a.device}, {device or cpu_name()}",
        f"host cpu: {cpu_name()}",
        f"commit: {git_commit()}",
        f"lammps: {lmp}" + (f" (plugin {plugin})" if plugin else ""),
        f"ranks: {a.ranks}, comm {a.comm}"
        + (f", gpus {min(a.ranks, gpu_count())}" if a.device != "cpu" else ""),
        f"system: diamond Si a = 5.43 A, {a.cells}^3 cells, {natoms} atoms, {a.model}, "
        f"dtype {a.dtype}, displaced <= 0.08 A, velocities for {a.temperature:g} K "
        f"(seed {a.seed})",
        f"run: fix nve, {a.timestep_fs:g} fs steps, {done} steps ({duration:g} ps)"
        + (f" of {a.steps} (unfinished: the same command continues it)" if partial else "")
        + f", E_tot every "
        f"{a.thermo} steps, {len(state['chunks'])} chunk(s) joined by restart files",
        f"mean temperature: {mean_t:.1f} K",
        f"E_tot: {e[0]:.8f} eV at t = 0, {e[-1]:.8f} eV at the end",
        f"drift (linear fit of E_tot(t)): {slope / natoms * 1e3:.3e} eV/atom/ns, "
        f"{drift:.3e} eV/atom over the run",
        f"largest |E_tot(t) - E_tot(0)| / N: {excursion:.3e} eV/atom",
        f"E_tot jump at the restarts (eV/atom): "
        + (", ".join(f"{j / natoms:.2e}" for j in jumps) if jumps else "none"),
        f"time: {ms_step:.2f} ms per step (LAMMPS' loop time), "
        f"{sum(ch['seconds'] for ch in state['chunks']):.0f} s in all" if ms_step else
        "time: unknown",
        "",
        "# step time_ps temp_K pe_eV ke_eV etotal_eV",
    ] + [f"{r['Step']:.0f} {r['Step'] * dt:.6g} {r['Temp']:.6g} {r['PotEng']:.12g} "
         f"{r['KinEng']:.12g} {r['TotEng']:.12g}" for r in series]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[1:15]))
    print(f"bench_drift: wrote {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--chunk", type=int, default=25000, help="steps per LAMMPS run")
    ap.add_argument("--cells", type=int, default=8)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--temperature", type=float, default=300.0)
    ap.add_argument("--thermo", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=4928459)
    ap.add_argument("--model", default="nequix-mp-1", help="a name or path; it must know Si")
    ap.add_argument("--timestep-fs", type=float, default=1.0)
    ap.add_argument("--lmp", default=None)
    ap.add_argument("--plugin", default=None, help="`plugin load` this first (an lmp with "
                                                   "PLUGIN; default: found next to the build)")
    ap.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS for LAMMPS")
    ap.add_argument("--ranks", type=int, default=1, help="MPI ranks (mpiexec -n; on a node of "
                    "several GPUs, one GPU per rank)")
    ap.add_argument("--comm", default="auto", help="the pair style's ghost exchange (auto, nccl, "
                    "ipc, staged, host)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="start no chunk expected to end later than this after the start")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--results-dir", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--fresh", action="store_true", help="clear the workdir first")
    a = ap.parse_args()
    t_start = time.time()
    lmp = a.lmp or default_lmp()
    plugin = a.plugin or default_plugin(lmp)
    prelude = f"plugin load {os.path.abspath(plugin)}" if plugin else ""
    natoms = 8 * a.cells ** 3
    model = os.path.splitext(os.path.basename(a.model))[0]
    tag = f"{model}-{natoms}atoms-{a.device}-{a.dtype}-{a.steps}steps" + (
        f"-{a.ranks}ranks-{a.comm}" if a.ranks > 1 else "")
    workdir = a.workdir or os.path.join(
        ROOT, "build-gpu" if os.path.isdir(os.path.join(ROOT, "build-gpu")) else "build",
        f"drift-{tag}")
    if a.fresh and os.path.isdir(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir, exist_ok=True)
    config = {k: getattr(a, k) for k in CONFIG_KEYS}
    state = load_state(workdir)
    if state and state["config"] != config:
        sys.exit(f"bench_drift: {workdir} holds a run with {state['config']}, not {config}: "
                 "use --fresh or another --workdir")
    if not state:
        state = {"config": config, "chunks": [], "lmp": lmp, "plugin": plugin}
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if a.threads:
        env["OMP_NUM_THREADS"] = str(a.threads)

    ran_here = 0    # chunks run by this invocation: the first always starts
    while True:
        done = state["chunks"][-1]["upto"] if state["chunks"] else 0
        if done >= a.steps:
            break
        upto = min(a.steps, done + a.chunk)
        if a.max_seconds and ran_here:
            pace = state["chunks"][-1]["seconds"] / max(1, state["chunks"][-1]["steps"])
            expected = time.time() - t_start + pace * (upto - done) + 60
            if expected > a.max_seconds:
                print(f"bench_drift: {done} of {a.steps} steps done; the next chunk would end "
                      f"~{expected:.0f} s after the start (--max-seconds {a.max_seconds:.0f}): "
                      "run the same command again to continue", flush=True)
                write_report(a, state, workdir, lmp, plugin, partial=True)
                return 3
        k = len(state["chunks"])
        restart = state["chunks"][-1]["restart"] if state["chunks"] else None
        out_restart = f"chunk{k}.restart"
        deck = os.path.join(workdir, f"in.chunk{k}")
        with open(deck, "w") as f:
            f.write(chunk_deck(a, prelude, restart, upto, out_restart))
        log = f"chunk{k}.log"
        print(f"bench_drift: chunk {k}: steps {done} -> {upto} ({natoms} atoms, {a.device} "
              f"{a.dtype}) in {workdir}", flush=True)
        t0 = time.time()
        cmd = [lmp, "-in", os.path.basename(deck), "-log", log, "-screen", "none"]
        if a.ranks > 1:
            # Open MPI binds 2 ranks to a core each: their OpenMP threads would share it
            unbind = ["--bind-to", "none"] if (a.threads or 1) > 1 else []
            cmd = ["mpiexec", "-n", str(a.ranks)] + unbind + cmd
        p = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
        seconds = time.time() - t0
        text = open(os.path.join(workdir, log)).read() if os.path.exists(
            os.path.join(workdir, log)) else ""
        if p.returncode != 0 or not os.path.exists(os.path.join(workdir, out_restart)):
            sys.exit(f"bench_drift: chunk {k} failed ({p.returncode}):\n"
                     f"{(text + p.stdout + p.stderr)[-4000:]}")
        loop = re.search(r"Loop time of (\S+) on (\d+) procs for (\d+) steps", text)
        state["chunks"].append({"upto": upto, "steps": upto - done, "restart": out_restart,
                                "log": log, "seconds": round(seconds, 1),
                                "loop_seconds": float(loop.group(1)) if loop else None})
        save_state(workdir, state)
        ran_here += 1
        if restart and restart != out_restart:    # keep the last restart only
            try:
                os.remove(os.path.join(workdir, restart))
            except OSError:
                pass
        print(f"bench_drift: chunk {k} took {seconds:.0f} s "
              f"({1e3 * seconds / (upto - done):.2f} ms per step with set-up)", flush=True)

    write_report(a, state, workdir, lmp, plugin)
    return 0


sys.exit(main())
