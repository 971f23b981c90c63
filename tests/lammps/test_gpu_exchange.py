"""The GPU ghost exchange of mpi/ (pair_style fusednequip ... comm staged|nccl) on one GPU,
against one rank (whose ghosts the library folds itself, no exchange):

  comm ipc (the auto choice on a shared GPU): 2 and 4 ranks (brick, tiled; MD of a box
    smaller than the ghost cutoff) with the same bars;
  comm staged, 2 and 4 ranks sharing the GPU: float64 energy, per-atom energies, forces and
    virial within 1e-10 relative, float32 within the GPU bars (energy 1e-6 relative, forces
    1e-4 eV/A, stress 1e-6 eV/A^3); brick and tiled; a box smaller than the ghost cutoff (an
    atom's images in its own ghost shell); a slab with vacuum on 4 ranks stacked along z, so
    that ranks own no atoms; forces bitwise identical over 3 repeated runs;
  comm nccl with 2 ranks on the one GPU: refused, naming NCCL and the shared GPU;
  comm nccl through the NCCL_HOSTID harness (each rank its own NCCL_HOSTID, so NCCL takes the
    ranks for nodes of their own; correct and slow, a harness and no timing): 2 and 3 ranks,
    10 MD steps, so that the exchange runs inside the recorded CUDA graph, against 1 rank.
The log must name the exchange chosen. Every rank runs on the first visible GPU, on a machine of
several too. Exits 77 (skipped) without CUDA, a GPU or mpi/.

With --multigpu (label multigpu): one GPU per rank, comm nccl without the harness, 2 ranks
(and 4 where there are 4 GPUs) against 1 rank: the same bars, brick and tiled, a box smaller
than the ghost cutoff, forces bitwise identical over 3 runs; skipped with fewer than 2 GPUs.
"""
import re
import subprocess
import os
import stat
import sys
import tempfile

from lmputil import (Checker, cli, flat, gpu_available, max_abs, model_dir, read_dump, rel_diff,
                     run_lammps, setup_lines, single_point, thermo_rows, write_data)
from cliutil import SKIP  # noqa: E402
from structures import diamond_si, rattled, to_lammps_frame

MD_STEPS = 10


def slab_with_vacuum():
    """4x4x2 Si cells in a box twice as tall: the upper half is vacuum"""
    s = rattled(diamond_si(4), 0.03, 5)
    s = dict(s)
    s["positions"] = [p for p in s["positions"] if p[2] < 2 * 5.43 - 0.01]
    s["symbols"] = ["Si"] * len(s["positions"])
    cell = [list(r) for r in s["cell"]]
    cell[2][2] = 4 * 5.43 + 12.0
    s["cell"] = cell
    return s


def compare(c, tag, got, ref, dtype, vol):
    de = abs(got["energy"] - ref["energy"]) / abs(ref["energy"])
    df = rel_diff(flat(got["forces"]), flat(ref["forces"]), 1e-3)
    df_abs = max_abs([a - b for a, b in zip(flat(got["forces"]), flat(ref["forces"]))])
    line = f"{tag:55s} E {de:.1e} rel, F {df:.1e} rel ({df_abs:.1e} eV/A)"
    if "virial" in ref:
        dw = rel_diff(got["virial"], ref["virial"], 1e-3)
        ds = max_abs([(a - b) / vol for a, b in zip(got["virial"], ref["virial"])])
        dei = rel_diff(got["energies"], ref["energies"], 1e-3)
        line += f", E_i {dei:.1e}, W {dw:.1e} rel"
    print(line)
    if dtype == "float64":
        c.check(de <= 1e-10 and df <= 1e-10, f"{tag}: E {de:.2e}, F {df:.2e} relative to 1 rank")
        if "virial" in ref:
            c.check(dw <= 1e-10 and dei <= 1e-10, f"{tag}: W {dw:.2e}, E_i {dei:.2e}")
    else:
        c.check(de <= 1e-6 and df_abs <= 1e-4, f"{tag}: E {de:.2e}, F {df_abs:.2e} eV/A")
        if "virial" in ref:
            c.check(ds <= 1e-6, f"{tag}: stress {ds:.2e} eV/A^3")


def exchange_named(c, tag, out, name):
    c.check(f"ghost exchange '{name}'" in out,
            f"{tag}: the log does not say ghost exchange '{name}':\n{out[-1500:]}")


def md(tmp, s, style_args, nprocs, extra=""):
    data = os.path.join(tmp, "data.test")
    write_data(data, s, ["Si"])
    # `processors` and the like come before the box
    deck = setup_lines(data, ["Si"], style_args=style_args).replace("read_data",
                                                                    extra + "read_data") + f"""
velocity all create 900.0 4928459 loop geom
neighbor 1.0 bin
neigh_modify every 1 delay 0 check yes
fix md all nve
thermo_style custom step pe ke etotal
thermo_modify format float %.17g
thermo {MD_STEPS}
dump d all custom {MD_STEPS} md.dump id fx fy fz
dump_modify d sort id format float %.17g
run {MD_STEPS}
"""
    _, out = run_lammps(tmp, deck, nprocs)
    d = read_dump(os.path.join(tmp, "md.dump"))
    last = thermo_rows(out, ["PotEng"])[-1]
    return {"energy": last["PotEng"],
            "forces": [[d["fx"][i], d["fy"][i], d["fz"][i]] for i in range(len(d["id"]))],
            "output": out}


def against_one_rank(c, label, s, runs, exchange, dtypes=("float64", "float32")):
    """single points of `s` on (ranks, comm_style) `runs` with `comm exchange` against 1 rank;
    float32 skips comm_style tiled (its bars are checked on brick)"""
    vol = s["cell"][0][0] * s["cell"][1][1] * s["cell"][2][2]
    for dtype in dtypes:
        style = f"dtype {dtype} device cuda"
        with tempfile.TemporaryDirectory() as tmp:
            ref = single_point(tmp, s, ["Si"], style_args=style)
        for nprocs, comm in runs:
            if dtype == "float32" and comm == "tiled":
                continue
            with tempfile.TemporaryDirectory() as tmp:
                got = single_point(tmp, s, ["Si"], nprocs=nprocs, comm=comm,
                                   style_args=f"{style} comm {exchange}")
            tag = f"{label} {dtype}, {exchange}, {nprocs} ranks {comm}"
            exchange_named(c, tag, got["output"], exchange)
            compare(c, tag, got, ref, dtype, vol)


def harness(tmp):
    """FNQ_LMP wrapped so that each rank gets its own NCCL_HOSTID"""
    path = os.path.join(tmp, "lmp-hostid.sh")
    with open(path, "w") as f:
        f.write('#!/bin/sh\nexport NCCL_HOSTID="fnq-rank-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"\n'
                f'exec "{os.environ["FNQ_LMP"]}" "$@"\n')
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def gpu_count():
    out = subprocess.run([cli(), "info"], capture_output=True, text=True).stdout
    m = re.search(r"cuda devices: (\d+)", out)
    return int(m.group(1)) if m else 0


def multigpu():
    """one GPU per rank through NCCL, no harness"""
    n = gpu_count()
    if n < 2:
        print(f"SKIP: {n} GPU(s): the multigpu checks need one GPU per rank, 2 or more")
        sys.exit(SKIP)
    c = Checker(f"LAMMPS GPU ghost exchange, nccl, one GPU per rank ({n} GPUs)")
    si512 = rattled(diamond_si(4), 0.05, 11)
    si8 = rattled(to_lammps_frame(diamond_si(1))[0], 0.05, 3)
    ranks = [r for r in (2, 4) if r <= n]
    against_one_rank(c, "Si 512", si512, [(r, st) for r in ranks for st in ("brick", "tiled")],
                     "nccl")
    against_one_rank(c, "Si 8-atom", si8, [(r, "brick") for r in ranks], "nccl")
    with tempfile.TemporaryDirectory() as tmp:
        ref = md(tmp, si512, "dtype float32 device cuda", 1)
    runs = []
    for rep in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(md(tmp, si512, "dtype float32 device cuda comm nccl", 2))
    compare(c, f"Si 512 float32 MD {MD_STEPS} steps, nccl, 2 ranks", runs[0], ref, "float32", 1.0)
    same = all(r["forces"] == runs[0]["forces"] for r in runs[1:])
    print(f"nccl, 2 ranks, 3 MD runs: forces bitwise identical: {same}")
    c.check(same, "nccl exchange: forces differ between repeated runs")
    c.finish()


def main():
    model_dir()
    if not gpu_available():
        sys.exit(SKIP)
    if "--multigpu" in sys.argv:
        os.environ["NCCL_NVLS_ENABLE"] = "0"
        return multigpu()
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    # every rank on the first GPU, so that the ranks share it on a machine of several too
    # (there the style gives each rank its own GPU, and auto would choose nccl)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    os.environ["CUDA_VISIBLE_DEVICES"] = visible or "0"
    c = Checker("LAMMPS GPU ghost exchange (mpi/) on one GPU")
    si512 = rattled(diamond_si(4), 0.05, 11)
    si8 = rattled(to_lammps_frame(diamond_si(1))[0], 0.05, 3)
    slab = slab_with_vacuum()

    with tempfile.TemporaryDirectory() as tmp:    # is mpi/ in this build?
        probe = single_point(tmp, si8, ["Si"], nprocs=2,
                             style_args="dtype float64 device cuda comm auto")
    if "ghost exchange 'host'" in probe["output"]:
        print("SKIP: this build has no GPU exchange (mpi/): " +
              [l for l in probe["output"].splitlines() if "ghost exchange '" in l][0])
        sys.exit(SKIP)
    exchange_named(c, "2 ranks on one GPU, comm auto", probe["output"], "ipc")

    against_one_rank(c, "Si 512", si512, [(2, "brick"), (4, "brick"), (4, "tiled")], "staged")
    against_one_rank(c, "Si 8-atom (box < ghost cutoff)", si8, [(2, "brick"), (4, "brick")],
                     "staged")
    # CUDA IPC between ranks on the one GPU (the auto choice there): the same bars
    against_one_rank(c, "Si 512", si512, [(2, "brick"), (4, "tiled")], "ipc", ("float64",))
    against_one_rank(c, "Si 512", si512, [(2, "brick"), (4, "brick")], "ipc", ("float32",))
    with tempfile.TemporaryDirectory() as tmp:
        ref = md(tmp, si8, "dtype float64 device cuda", 1)
    with tempfile.TemporaryDirectory() as tmp:
        got = md(tmp, si8, "dtype float64 device cuda comm ipc", 4)
    compare(c, f"Si 8-atom float64 MD {MD_STEPS} steps, ipc, 4 ranks", got, ref, "float64", 1.0)

    # ranks that own no atoms (4 slabs along z, 2 of them vacuum), atoms moving between ranks
    with tempfile.TemporaryDirectory() as tmp:
        ref = md(tmp, slab, "dtype float64 device cuda", 1)
    with tempfile.TemporaryDirectory() as tmp:
        got = md(tmp, slab, "dtype float64 device cuda comm staged", 4, "processors 1 1 4\n")
    compare(c, f"Si slab float64 MD {MD_STEPS} steps, 4 ranks along z (2 empty)", got, ref,
            "float64", 1.0)

    # bitwise reproducible at a fixed rank count
    dumps = []
    for rep in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            got = single_point(tmp, si512, ["Si"], nprocs=2,
                               style_args="dtype float32 device cuda comm staged")
        dumps.append(got["forces"])
    same = all(d == dumps[0] for d in dumps[1:])
    print(f"Si 512 float32 staged 2 ranks, 3 runs: forces bitwise identical: {same}")
    c.check(same, "staged exchange: forces differ between repeated runs")

    # NCCL refuses ranks that share a GPU: a clear stop, no hang
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.test")
        write_data(data, si8, ["Si"])
        deck = setup_lines(data, ["Si"], style_args="dtype float32 device cuda comm nccl") + \
            "run 0\n"
        rc, out = run_lammps(tmp, deck, 2, check=False, timeout=300)
    said = "NCCL cannot run two ranks on one GPU" in out
    print(f"comm nccl, 2 ranks sharing the GPU: exit {rc}, refused with the message: {said}")
    c.check(rc != 0 and said, f"comm nccl with a shared GPU was not refused clearly:\n{out[-1500:]}")

    # NCCL through the harness: the exchange recorded in the CUDA graph (steps after the first)
    for dtype in ("float64", "float32"):
        style = f"dtype {dtype} device cuda"
        with tempfile.TemporaryDirectory() as tmp:
            ref = md(tmp, si512, style, 1)
        for nprocs in (2, 3):
            with tempfile.TemporaryDirectory() as tmp:
                saved = os.environ["FNQ_LMP"]
                os.environ["FNQ_LMP"] = harness(tmp)
                try:
                    got = md(tmp, si512, style + " comm nccl", nprocs)
                finally:
                    os.environ["FNQ_LMP"] = saved
            tag = f"Si 512 {dtype} MD {MD_STEPS} steps, nccl (harness), {nprocs} ranks"
            exchange_named(c, tag, got["output"], "nccl")
            compare(c, tag, got, ref, dtype, 1.0)
    c.finish()


main()
