"""A replica of the Matbench Discovery MD task's protocol (DynaMat v1.0: ASE's
NoseHooverChainNVT at 0.25 fs, a frame written every 10 steps, 80,000 steps a system, 17
systems) through our ASE calculator: ms per step on structures of 50-300 atoms of the kinds the
task uses, made with ASE (an oxide, a metal, a molecular liquid, an ionic conductor), each at
its temperature; the step's parts measured apart: the integrator with its frame writing alone
(a calculator that answers zeros), the ASE loop's own cost (the same MD with the library's call
replaced by its last answer: integrator, frames, the calculator's checks and conversions), the
library's call alone; and the projection to 17 x 80,000 steps from the mean step.

usage: python bench/bench_md_protocol.py --model M [--device cuda] [--dtype float32|float64]
           [--steps 200] [--warmup 20] [--systems oxide,metal,liquid,ionic]
           [--peer nequix-jax | --peer nequip-compiled --peer-model FILE]
One JSON line per system, then the projection. `--peer nequix-jax` (a Nequix .nqx model): the
same MD through nequix's own ASE calculator, JAX backend (the leaderboard's Nequix path), in the
same run: its ms per step, the ratio, and its projection. `--peer nequip-compiled --peer-model
X-ase.nequip.pt2`: nequip's own ASE calculator on the same weights compiled by nequip-compile
(make_nequip_peer_model.py compile --target ase), the leaderboard's NequIP path.
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
from ase import Atoms, units
from ase.build import bulk, molecule
from ase.calculators.calculator import Calculator, all_changes
from ase.io.trajectory import Trajectory
from ase.md.nose_hoover_chain import NoseHooverChainNVT
from ase.md.velocitydistribution import MaxwellBoltzmannDistribution

from fusednequip import FusedNequIPCalculator

STEPS_PER_SYSTEM, SYSTEMS_IN_TASK, TIMESTEP_FS, FRAME_EVERY = 80_000, 17, 0.25, 10


def water_box(n_side=4, spacing=3.1):
    """n_side^3 water molecules on a jittered grid (~1 g/cm^3), periodic"""
    rng = np.random.default_rng(0)
    box = Atoms(cell=[n_side * spacing] * 3, pbc=True)
    for i in range(n_side):
        for j in range(n_side):
            for k in range(n_side):
                w = molecule("H2O")
                w.rotate(rng.uniform(0, 360), rng.normal(size=3))
                w.translate(np.array([i, j, k]) * spacing + rng.normal(0, 0.1, 3) + 1.0)
                box += w
    return box


def systems():
    """(name, atoms, temperature K): 50-300 atoms each"""
    oxide = bulk("MgO", "rocksalt", a=4.21, cubic=True).repeat((3, 3, 2))  # 144 atoms
    metal = bulk("Cu", "fcc", a=3.61, cubic=True).repeat((3, 3, 3))  # 108 atoms
    ionic = antifluorite_li2o()  # 96 atoms
    return [("oxide", oxide, 1000.0), ("metal", metal, 1500.0),
            ("liquid", water_box(), 400.0), ("ionic", ionic, 800.0)]


def antifluorite_li2o(a=4.61, rep=2):
    """Li2O (antifluorite: O on fcc sites, Li in the tetrahedral holes), rep^3 cubic cells"""
    o = [[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]]
    li = [[x, y, z] for x in (0.25, 0.75) for y in (0.25, 0.75) for z in (0.25, 0.75)]
    cell = Atoms("O4Li8", scaled_positions=o + li, cell=[a] * 3, pbc=True)
    return cell.repeat((rep, rep, rep))


class NullCalculator(Calculator):
    """zero forces at once: what the integrator and its frame writing cost on their own (with
    our calculator's state check, so that the difference is the calculator's own work)"""
    implemented_properties = ["energy", "forces", "stress", "free_energy"]
    check_state = FusedNequIPCalculator.check_state

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        n = len(self.atoms)
        self.results = {"energy": 0.0, "free_energy": 0.0, "forces": np.zeros((n, 3)),
                        "stress": np.zeros(6)}


def md_ms_per_step(atoms, calc, temperature, steps, warmup, traj_path):
    atoms = atoms.copy()
    atoms.calc = calc
    MaxwellBoltzmannDistribution(atoms, temperature_K=temperature,
                                 rng=np.random.default_rng(1))
    dyn = NoseHooverChainNVT(atoms, timestep=TIMESTEP_FS * units.fs, temperature_K=temperature,
                             tdamp=100 * TIMESTEP_FS * units.fs)
    traj = Trajectory(traj_path, "w", atoms)
    dyn.attach(traj.write, interval=FRAME_EVERY)
    dyn.run(warmup)
    t0 = time.perf_counter()
    dyn.run(steps)
    ms = 1e3 * (time.perf_counter() - t0) / steps
    traj.close()
    return ms, atoms


def loop_own_ms(atoms, calc, temperature, steps, warmup, traj_path):
    """the MD step without the library's evaluation: its last answer replayed"""
    class Replay:
        def __init__(self, answer):
            self.answer = answer

        def compute(self, *_):
            return self.answer

    real = calc.context
    species = calc.model.species_indices(atoms.get_chemical_symbols())
    calc.context = Replay(real.compute(atoms.positions, species, atoms.cell.array, atoms.pbc))
    try:
        return md_ms_per_step(atoms, calc, temperature, steps, warmup, traj_path)[0]
    finally:
        calc.context = real


def library_ms(calc, atoms, repeats=50):
    """the library's call alone on the MD's last positions (median)"""
    species = calc.model.species_indices(atoms.get_chemical_symbols())
    ctx = calc.context
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        ctx.compute(atoms.positions, species, atoms.cell.array, atoms.pbc)
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def peer_calculator(args):
    if args.peer == "nequix-jax":
        if args.dtype == "float64":
            import jax
            jax.config.update("jax_enable_x64", True)
        from nequix.calculator import NequixCalculator
        name = os.path.splitext(os.path.basename(args.model))[0]
        return NequixCalculator(name, args.model, backend="jax", use_kernel=False)
    if args.peer == "nequip-compiled":
        # nequip's own ASE path for its foundation models: the package compiled by
        # nequip-compile (AOTInductor, --target ase; make_nequip_peer_model.py compile)
        from nequip.integrations.ase import NequIPCalculator
        if not args.peer_model:
            raise SystemExit("--peer nequip-compiled needs --peer-model FILE.nequip.pt2")
        return NequIPCalculator.from_compiled_model(args.peer_model, device=args.device)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--modal", default=None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--systems", default="oxide,metal,liquid,ionic")
    ap.add_argument("--peer", choices=["nequix-jax", "nequip-compiled"], default=None)
    ap.add_argument("--peer-model", default=None,
                    help="nequip-compiled: the compiled model of the same weights (-ase.nequip.pt2)")
    args = ap.parse_args()
    calc = FusedNequIPCalculator(args.model, device=args.device, dtype=args.dtype,
                                 modal=args.modal)
    wanted = args.systems.split(",")
    tmp = tempfile.mkdtemp()
    peer = peer_calculator(args)
    steps, peer_steps = [], []
    for name, atoms, temperature in systems():
        if name not in wanted:
            continue
        traj = os.path.join(tmp, f"{name}.traj")
        ms, last = md_ms_per_step(atoms, calc, temperature, args.steps, args.warmup, traj)
        null_ms, _ = md_ms_per_step(atoms, NullCalculator(), temperature, args.steps,
                                    args.warmup, traj)
        own_ms = loop_own_ms(last, calc, temperature, args.steps, args.warmup, traj)
        lib_ms = library_ms(calc, last)
        steps.append(ms)
        row = {"bench": "md_protocol", "system": name, "atoms": len(atoms),
               "temperature_K": temperature, "model": args.model, "device": args.device,
               "dtype": args.dtype, "ms_per_step": ms, "integrator_ms": null_ms,
               "loop_own_ms": own_ms, "calculator_host_ms": own_ms - null_ms,
               "library_ms": lib_ms, "steps": args.steps}
        if peer is not None:
            row[f"{args.peer}_ms"], _ = md_ms_per_step(atoms, peer, temperature, args.steps,
                                                       args.warmup, traj)
            row["ratio"] = row[f"{args.peer}_ms"] / ms
            peer_steps.append(row[f"{args.peer}_ms"])
        print(json.dumps(row), flush=True)
    projection = {"bench": "md_protocol_projection", "dtype": args.dtype,
                  "mean_ms_per_step": statistics.mean(steps),
                  "projected_s": statistics.mean(steps) * 1e-3 * STEPS_PER_SYSTEM *
                  SYSTEMS_IN_TASK, "leaderboard_full_marks_s": 9000}
    if peer_steps:
        projection[f"{args.peer}_projected_s"] = (statistics.mean(peer_steps) * 1e-3 *
                                                  STEPS_PER_SYSTEM * SYSTEMS_IN_TASK)
    print(json.dumps(projection), flush=True)


if __name__ == "__main__":
    main()
