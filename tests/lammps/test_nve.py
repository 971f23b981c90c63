"""Energy conservation: NVE of diamond Si with pair_style fusednequip (float64, 1 fs steps).
The crystal starts near equilibrium at T (atoms displaced at random by up to 0.115 A, which
holds about as much potential energy as the velocities for T hold kinetic energy at 600 K, so
the mean temperature stays near T), so the run is not dominated by the slow kinetic/potential
swings of a perfect lattice heating up (velocity Verlet's energy error is ~(w dt)^2 times the kinetic energy, so such
swings move E_tot by ~1e-3 of the swing). E_tot is printed every 10 steps.

Drift = |E_fit(end) - E_fit(start)| / N from a linear fit of E_tot(t) over the run: it must be
below 1e-5 eV/atom (the issue's bound). The largest excursion |E_tot(t) - E_tot(0)| / N, which
includes the integrator's bounded oscillation, is reported and must stay below 1e-4 eV/atom
(a sanity bound: broken forces exceed it at once).

Arguments: --cells n (n x n x n conventional cells, 8 n^3 atoms), --steps, --temperature,
--ranks. The default CTest case is what CI affords (64 atoms, 1000 steps); the case labelled
`slow` is the full one of the issue (512 atoms at 600 K, 1000 steps; how long it takes:
docs/developers.md).
"""
import argparse
import tempfile
import time

from lmputil import Checker, model_dir, run_lammps, thermo_rows

DRIFT_LIMIT = 1e-5        # eV/atom
EXCURSION_LIMIT = 1e-4    # eV/atom


def deck(cells, steps, temperature):
    return f"""units metal
atom_style atomic
boundary p p p
lattice diamond 5.43
region box block 0 {cells} 0 {cells} 0 {cells}
create_box 1 box
create_atoms 1 box
mass 1 28.0855
pair_style fusednequip dtype float64 device cpu
pair_coeff * * nequix-mp-1 Si
displace_atoms all random 0.115 0.115 0.115 5873 units box
velocity all create {temperature} 87287 mom yes rot yes dist gaussian loop geom
timestep 0.001
fix md all nve
thermo_style custom step temp pe ke etotal
thermo_modify format float %.15g norm no flush yes
thermo 10
run {steps}
"""


def linear_fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=2)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--temperature", type=float, default=600.0)
    ap.add_argument("--ranks", type=int, default=1)
    a = ap.parse_args()
    model_dir()
    c = Checker("NVE energy conservation")
    natoms = 8 * a.cells ** 3
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        _, out = run_lammps(tmp, deck(a.cells, a.steps, a.temperature), a.ranks)
    wall = time.time() - start
    rows = thermo_rows(out, ["Step", "Temp", "TotEng"])
    steps = [r["Step"] for r in rows]
    etot = [r["TotEng"] for r in rows]
    slope, icept = linear_fit(steps, etot)
    drift = abs(slope * (steps[-1] - steps[0])) / natoms
    excursion = max(abs(e - etot[0]) for e in etot) / natoms
    mean_t = sum(r["Temp"] for r in rows) / len(rows)
    print(f"{natoms} atoms, {a.steps} steps of 1 fs, float64, {a.ranks} rank(s): mean T "
          f"{mean_t:.0f} K; E_tot {etot[0]:.8f} -> {etot[-1]:.8f} eV")
    print(f"drift (linear fit) {drift:.2e} eV/atom over {a.steps} steps; largest |E(t)-E(0)| "
          f"{excursion:.2e} eV/atom; {wall:.0f} s ({1000 * wall / a.steps:.0f} ms/step)")
    c.check(len(rows) == a.steps // 10 + 1, f"expected {a.steps // 10 + 1} thermo rows, got "
                                            f"{len(rows)}")
    c.check(drift < DRIFT_LIMIT, f"energy drift {drift:.3e} eV/atom is not below {DRIFT_LIMIT}")
    c.check(excursion < EXCURSION_LIMIT,
            f"energy excursion {excursion:.3e} eV/atom is not below {EXCURSION_LIMIT}")
    c.check(0.5 * a.temperature < mean_t < 1.5 * a.temperature,
            f"mean temperature {mean_t:.0f} K is far from {a.temperature:.0f} K")
    c.finish()


main()
