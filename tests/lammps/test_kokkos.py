"""pair_style fusednequip in a LAMMPS built with KOKKOS, run as GPU users run LAMMPS: `-k on g 1
-sf kk` where that LAMMPS's Kokkos has CUDA (else `-k on t 2 -sf kk`, its OpenMP backend), so
that the integrator, the neighbour lists and the communication are Kokkos styles and the pair
style is ours: fusednequip/kk where the plugin was built against that LAMMPS' Kokkos for CUDA
(positions and forces on Kokkos' device arrays between neighbour-list rebuilds), else the plain
style (LAMMPS moves the atoms' data between Kokkos' views and the host for it). Energy, forces,
virial and the sums of pe/atom and stress/atom equal the same deck without Kokkos (float64,
1e-10 relative), on 1, 2 and 4 ranks, for rattled diamond Si and alpha-quartz (two atom types,
triclinic); and 10 NVE steps with `fix nve` (nve/kk under -sf kk), pe/atom summed every 5th
step, end at the same energies and positions (1e-9). With CUDA, fusednequip/kk must have run
most of those steps on the device arrays and the pe/atom steps through the host.

Runs where FNQ_LMP is an lmp with the KOKKOS package (CTest lammps_kokkos, label kokkos: the lmp
given to CMake as FNQ_LAMMPS_LMP, scripts/gpu/gpu-lammps-kokkos.sh builds one); exits 77
(skipped) elsewhere. FNQ_LAMMPS_DEVICE: the style's device (default: cuda with a CUDA Kokkos,
else cpu); FNQ_KOKKOS_GPUS: GPUs given to Kokkos (kokkos_args). FNQ_KOKKOS_QUICK=1: Si only, the
single point on one rank, and the NVE run (the small case scripts/gpu/gpu-kokkos-measure.sh runs
under compute-sanitizer).
"""
import os
import subprocess
import sys
import tempfile

from lmputil import (MODEL, Checker, flat, lmp, rel_diff, require_model, run_lammps,
                     single_point, thermo_rows)
from structures import (alpha_quartz, diamond_si, rattled, supercell, to_lammps_frame,
                        write_data)

TOL = 1e-10


def kokkos_backends():
    """The Kokkos backends of FNQ_LMP's KOKKOS package ("" without the package)."""
    out = subprocess.run([lmp(), "-h"], capture_output=True, text=True).stdout
    installed = out.split("Installed packages:")[-1].split("List of individual style")[0]
    if "KOKKOS" not in installed.split():
        return ""
    for line in out.splitlines():
        if "KOKKOS package API:" in line:
            return line.split(":", 1)[1].strip()
    return "OpenMP"


def kokkos_args(backends, nprocs):
    """FNQ_KOKKOS_GPUS (default 1): `-k on g N`, Kokkos and the style giving each rank GPU
    (node-local rank mod N): 1 puts every rank on one GPU, N = ranks one GPU per rank; never
    more than the ranks (one rank started without mpiexec has no node-local rank for Kokkos).
    Kokkos on a GPU defaults to newton off with full lists; the style needs newton on, which
    Kokkos allows with half lists (its own; the style still gets its full list): `-pk kokkos
    newton on neigh half`."""
    if "CUDA" not in backends:
        return ["-k", "on", "t", "2", "-sf", "kk"]
    gpus = min(int(os.environ.get("FNQ_KOKKOS_GPUS", "1")), nprocs)
    return ["-k", "on", "g", str(gpus), "-sf", "kk", "-pk", "kokkos", "newton", "on", "neigh", "half"]


def structures(quick):
    si, _ = to_lammps_frame(rattled(diamond_si(2), 0.05, 3))
    if quick:
        return {"Si": (si, ["Si"])}
    quartz, _ = to_lammps_frame(rattled(supercell(alpha_quartz(), 2, 2, 1), 0.03, 5))
    return {"Si": (si, ["Si"]), "quartz": (quartz, ["Si", "O"])}


def compare(c, label, got, ref):
    devs = {"E": abs(got["energy"] - ref["energy"]) / abs(ref["energy"]),
            "E_i": rel_diff(got["energies"], ref["energies"]),
            "F": rel_diff(flat(got["forces"]), flat(ref["forces"])),
            "W": rel_diff(got["virial"], ref["virial"]),
            "sum W_i": rel_diff(got["atom_virial_sum"], ref["atom_virial_sum"])}
    print(f"{label:44s} " + ", ".join(f"{k} {v:.1e}" for k, v in devs.items()))
    for k, v in devs.items():
        c.check(v <= TOL, f"{label}: {k} differs from the run without Kokkos by {v:.2e}")


def md_deck(data, elements, style):
    return f"""units metal
atom_style atomic
atom_modify map array
read_data {data}
pair_style fusednequip {style}
pair_coeff * * {MODEL} {' '.join(elements)}
velocity all create 600 4 loop geom
fix nve all nve
info fixes
compute pe_atom all pe/atom
compute pe_sum all reduce sum c_pe_atom
thermo 5
thermo_style custom step pe ke etotal c_pe_sum
thermo_modify format float %.17g
dump d all custom 10 md.dump id x y z
dump_modify d sort id format float %.17g
run 10
"""


def md_end(tmp, deck, nprocs, args):
    _, out = run_lammps(tmp, deck, nprocs, args=args)
    row = thermo_rows(out, ["PotEng", "TotEng"])[-1]
    lines = open(os.path.join(tmp, "md.dump")).read().splitlines()
    start = max(i for i, l in enumerate(lines) if l.startswith("ITEM: ATOMS"))
    xyz = [float(v) for l in lines[start + 1:] for v in l.split()[1:4]]
    return row["PotEng"], row["TotEng"], xyz, out


def main():
    require_model()
    backends = kokkos_backends()
    if not backends:
        print(f"SKIP: {lmp()} has no KOKKOS package")
        sys.exit(77)
    device = os.environ.get("FNQ_LAMMPS_DEVICE") or ("cuda" if "CUDA" in backends else "cpu")
    style = f"device {device} dtype float64"
    print(f"Kokkos backends: {backends}; style {style}")
    c = Checker("fusednequip under Kokkos LAMMPS")
    quick = os.environ.get("FNQ_KOKKOS_QUICK") == "1"
    for name, (s, elements) in structures(quick).items():
        with tempfile.TemporaryDirectory() as tmp:
            ref = single_point(tmp, s, elements, style_args=style)
        for nprocs in (1,) if quick else (1, 2, 4):
            args = kokkos_args(backends, nprocs)
            with tempfile.TemporaryDirectory() as tmp:
                got = single_point(tmp, s, elements, nprocs=nprocs, style_args=style, args=args)
            c.check("KOKKOS mode" in got["output"], f"{name}: LAMMPS did not run in KOKKOS mode")
            compare(c, f"{name}, {nprocs} rank(s), {' '.join(args)}", got, ref)
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            write_data(data, s, elements)
            plain = md_end(tmp, md_deck(data, elements, style), 1, ())
            kk = md_end(tmp, md_deck(data, elements, style), 2, kokkos_args(backends, 2))
        c.check("style = nve/kk" in kk[3], f"{name}: fix nve did not become nve/kk under -sf kk")
        if "CUDA" in backends and device == "cuda":
            steps = [l for l in kk[3].splitlines() if l.startswith("fusednequip/kk:")]
            print(f"{name}: {steps[-1] if steps else 'fusednequip/kk did not run'}")
            words = steps[-1].split() if steps else []
            c.check(len(words) > 7 and int(words[1]) >= 5 and int(words[7]) >= 2,
                    f"{name}: fusednequip/kk did not run most steps on the device arrays and "
                    f"the pe/atom steps through the host: {steps}")
        dpe = abs(kk[0] - plain[0]) / abs(plain[0])
        dx = max(abs(a - b) for a, b in zip(kk[2], plain[2]))
        print(f"{name}: 10 NVE steps, Kokkos on 2 ranks vs plain: pe {dpe:.1e}, x {dx:.1e} A")
        c.check(dpe <= 1e-9 and dx <= 1e-9, f"{name}: the Kokkos MD run differs: pe {dpe:.2e} "
                                             f"relative, positions {dx:.2e} A")
    c.finish()


if __name__ == "__main__":
    main()
