"""pair_style fusednequip with `device cuda` against the CPU float64 reference of
`fusednequip eval`: a rattled 8-atom Si cell (a box smaller than the ghost cutoff: an atom's
ghosts include its own images), a rattled 512-atom Si crystal and a rattled triclinic
alpha-quartz SiO2 cell.

  float64 on the GPU: energy, per-atom energies, forces, virial within 1e-10 relative;
  float32 on the GPU: energy within 1e-6 relative, forces within 1e-4 eV/A, stress (virial / V)
                      within 1e-6 eV/A^3 (the GPU issue's bars);
  1, 2 and 4 MPI ranks sharing the GPU (float64, brick; tiled on the larger cells): equal to 1e-10 relative,
  so the CUDA backend's per-layer exchange through LAMMPS' comm (host rows) is exercised.

Exits 77 (skipped) when this build has no CUDA backend or the machine no GPU.
"""
import os
import sys
import tempfile

from lmputil import (Checker, eval_frames, flat, gpu_available, max_abs, model_dir, rel_diff,
                     single_point, write_xyz)
from cliutil import SKIP, cli  # noqa: E402 (lmputil puts tests/cli on the path)
from structures import diamond_si, rattled, to_lammps_frame, triclinic_quartz


def volume(cell):
    return cell[0][0] * cell[1][1] * cell[2][2]


def main():
    model_dir()
    if not gpu_available():
        sys.exit(SKIP)
    c = Checker("LAMMPS device cuda vs CPU reference")
    cases = [("Si 8-atom cell", rattled(to_lammps_frame(diamond_si(1))[0], 0.05, 3), ["Si"]),
             ("Si 512 rattled", rattled(diamond_si(4), 0.05, 11), ["Si"]),
             ("SiO2 quartz triclinic", triclinic_quartz(), ["Si", "O"])]
    for label, s, elements in cases:
        with tempfile.TemporaryDirectory() as tmp:
            xyz = os.path.join(tmp, "s.xyz")
            write_xyz(xyz, s["symbols"], s["positions"], s["cell"], s["pbc"])
            ref = eval_frames("nequix-mp-1", xyz, "--dtype", "float64", "--device", "cpu")[0]
        vol = volume(s["cell"])
        runs = {}
        configs = [("float64", 1, "brick"), ("float32", 1, "brick"), ("float64", 2, "brick"),
                   ("float64", 4, "brick")]
        if min(s["cell"][k][k] for k in range(3)) > 8.0:    # tiled: box wider than the ghost cut
            configs.append(("float64", 4, "tiled"))
        for dtype, ranks, comm in configs:
            with tempfile.TemporaryDirectory() as tmp:
                got = single_point(tmp, s, elements, nprocs=ranks, comm=comm,
                                   style_args=f"dtype {dtype} device cuda")
            runs[(dtype, ranks, comm)] = got
            f_ref, f_got = flat(ref["forces"]), flat(got["forces"])
            de = abs(got["energy"] - ref["energy"]) / abs(ref["energy"])
            df_abs = max_abs([a - b for a, b in zip(f_got, f_ref)])
            df = rel_diff(f_got, f_ref, 1e-3)
            dw = rel_diff(got["virial"], ref["virial"], 1e-3)
            ds = max_abs([(a - b) / vol for a, b in zip(got["virial"], ref["virial"])])
            dei = rel_diff(got["energies"], ref["energies"], 1e-3)
            tag = f"{label} {dtype} {ranks} rank(s) {comm}"
            print(f"{tag:45s} E {de:.1e} rel, E_i {dei:.1e} rel, F {df:.1e} rel "
                  f"({df_abs:.1e} eV/A), W {dw:.1e} rel, stress {ds:.1e} eV/A^3")
            if dtype == "float64":
                for name, v in [("energy", de), ("per-atom energies", dei), ("forces", df),
                                ("virial", dw)]:
                    c.check(v <= 1e-10, f"{tag}: {name} differ from the CPU by {v:.2e} relative")
            else:
                c.check(de <= 1e-6, f"{tag}: energy differs by {de:.2e} relative")
                c.check(df_abs <= 1e-4, f"{tag}: forces differ by {df_abs:.2e} eV/A")
                c.check(ds <= 1e-6, f"{tag}: stress differs by {ds:.2e} eV/A^3")
        one = runs[("float64", 1, "brick")]
        for key, got in runs.items():
            if key[0] != "float64" or key[1] == 1:
                continue
            dE = abs(got["energy"] - one["energy"]) / abs(one["energy"])
            dF = rel_diff(flat(got["forces"]), flat(one["forces"]), 1e-3)
            c.check(dE <= 1e-10 and dF <= 1e-10,
                    f"{label} {key}: differs from 1 rank by E {dE:.2e}, F {dF:.2e}")
    c.finish()


main()
