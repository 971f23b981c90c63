"""LAMMPS cases users hit with a message-passing potential, each a deck with a check that can
fail. float64 on the CPU by default; the environment picks another device or precision, so the
same decks run on the GPU (CTest lammps_user_cases_gpu; exits 77 without a usable GPU):

  FNQ_LAMMPS_DEVICE  cpu (default) | cuda | cuda:N     FNQ_LAMMPS_DTYPE  float64 (default) | float32
  FNQ_LAMMPS_COMM    the style's `comm` keyword (default: none given, i.e. auto)
  FNQ_LAMMPS_MODEL   the model (default nequix-mp-1; lmputil.py): scripts/test-sanitize.sh
                     runs the cases with a small NequIP fixture (Si, O; cutoff 4.5 A)

"Equal" below: float64 within 1e-10 relative (energies, forces, velocities; positions 1e-10 A),
the bar of lammps_ranks: the runs differ only in the order of float64 sums (1e-13 seen after 20
MD steps); float32 within the looser bars of the GPU tests (unverified here: no GPU).
Cases (--case NAME runs one; all by default; seconds on 2 shared cores, 2026-11):
  empty_ranks    (~25 s) a Si slab with vacuum on 4 ranks stacked along z (processors 1 1 4): 2
                 ranks own atoms, 2 own none and one of those has no ghosts either (LAMMPS'
                 Nlocal/Nghost "min 0" is checked); 12 NVE steps equal 1 rank.
  sparse_ids     (~30 s) atom IDs 10^9 + 7 k + (k mod 3), shuffled in the data file (Debian's
                 LAMMPS has a 32-bit tagint, at most 2147483647: the base is 10^9 there, 10^12
                 where `lmp -h` says tagint is 64-bit); 10 NVE steps on 1 and 2 ranks equal the
                 run with IDs 1..N, and the 1-rank run takes < 1 GB more memory than that one
                 (the one-rank ID -> atom table took 4 bytes per possible ID: 3.9 GB here).
  migration      (~25 s) a crystal drifting at 150 / 100 A/ps through 4 ranks (processors
                 2 2 1): atoms that changed sub-domain (> 0) and neighbour-list builds (> 2) are
                 counted; 12 NVE steps equal 1 rank.
  tiled_balance  (~25 s) the slab drifting along z on 3 ranks, comm_style tiled and `fix balance
                 5 1.0 rcb` (re-partitioning during the run, seen in its imbalance output);
                 15 steps equal 1 rank.
  npt_flip       (~30 s) a sheared 40-atom Si cell under `fix npt` (all six components, a
                 -2 GPa xy target): the tilt xy reaches LAMMPS' flip limit 0.6 lx at step ~9
                 (0.71 without flips) and the box flips (xy changes sign, checked); 4 ranks equal
                 1 rank over 20 steps, and the final state (energy, forces, virial) equals
                 `fusednequip eval` of the final cell (its own neighbour list) within 1e-9.
  hybrid_zbl     (~10 s) pair_style hybrid/overlay fusednequip ... zbl 2.0 3.0 (Si Z = 14; the
                 outer cutoff reaches the 2.35 A bonds, so ZBL adds ~60 eV) on 1, 2 and 4 ranks:
                 equal to 1 rank and to the sum of the two styles run alone (energy, per-atom
                 energies, forces, virial); compute pe/atom sums to pe and compute stress/atom to
                 the global virial within 1e-10 relative to the largest component (float64 sums
                 of the same terms in another order: ~1e-15 seen). Before the fix, 2 ranks
                 crashed (LAMMPS sized its buffers from hybrid's comm_forward, 0).
  restart        (~45 s) 32 atoms: `run 6` + write_restart on 2 ranks, then a new process on 1
                 and on 2 ranks: read_restart, pair_style and pair_coeff again (the style stores
                 no restart info), `run 6`: equals the uninterrupted `run 12`; `run 4` three
                 times in one input, and with `pre no post no`, equal it too.
  clear          (~15 s) one process: a Si run, `clear`, the style registered again (the prelude,
                 or load-fusednequip.lmp: `clear` removes styles added at run time, as it unloads
                 LAMMPS plugins), then a second instance on SiO2 (two types): both equal fresh
                 processes (1e-12), on 1 and 2 ranks.
Already elsewhere, not repeated: 1/2/4 ranks brick and tiled with a static `balance` and boxes
smaller than the ghost cutoff (lammps_ranks), pe/atom and stress/atom sums on 1 rank
(lammps_vs_eval), a slab with empty ranks on the GPU with comm staged (lammps_gpu_exchange).
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from lmputil import (MODEL, Checker, NKTV2P, eval_frames, flat, gpu_available, lmp, max_abs,
                     rel_diff, require_model, run_lammps, thermo_rows, write_data, write_xyz)
from cliutil import SKIP  # noqa: E402 (lmputil puts tests/cli on the path)
from structures import diamond_si, rattled, supercell, alpha_quartz, to_lammps_frame

DEVICE = os.environ.get("FNQ_LAMMPS_DEVICE", "cpu")
DTYPE = os.environ.get("FNQ_LAMMPS_DTYPE", "float64")
COMM = os.environ.get("FNQ_LAMMPS_COMM", "")
F64 = DTYPE == "float64"
# equal across rank counts / runs: float64 to the bar of lammps_ranks; float32 (GPU) to the bars
# of lammps_gpu_exchange (energy 1e-6 relative, forces 1e-4 eV/A), looser after MD steps
TOL = {"E": 1e-10, "F": 1e-10, "x": 1e-10, "sum": 1e-10} if F64 else \
      {"E": 1e-5, "F": 1e-3, "x": 1e-4, "sum": 1e-5}
A = 5.43


def style():
    return f"fusednequip dtype {DTYPE} device {DEVICE}" + (f" comm {COMM}" if COMM else "")


def header(data, elements=("Si",), before_box="", pair=None, coeff=None):
    pair = pair or style()
    coeff = coeff or f"pair_coeff * * {MODEL} {' '.join(elements)}"
    return f"""units metal
atom_style atomic
{before_box}read_data {data}
pair_style {pair}
{coeff}
"""


DUMP_COLS = "id x y z xu yu zu vx vy vz fx fy fz"


def md_lines(steps, thermo_cols="step pe ke etotal", every=None, extra="", integrator=None,
             velocity=True, dump_every=None):
    vel = "velocity all create 600.0 4928459 loop geom\n" if velocity else ""
    return f"""{vel}neighbor 1.0 bin
neigh_modify every 1 delay 0 check yes
{extra}
{integrator or "fix md all nve"}
thermo_style custom {thermo_cols}
thermo_modify format float %.17g
thermo {every or steps}
dump d all custom {dump_every or steps} md.dump {DUMP_COLS}
dump_modify d sort id format float %.17g
"""


def dump_frames(path):
    """[(timestep, {column: [values in id order]})] of a LAMMPS custom dump"""
    frames, lines, i = [], open(path).read().splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("ITEM: TIMESTEP"):
            step = int(lines[i + 1])
            n = int(lines[i + 3])
            while not lines[i].startswith("ITEM: ATOMS"):
                i += 1
            cols = lines[i].split()[2:]
            table = {c: [] for c in cols}
            for line in lines[i + 1:i + 1 + n]:
                for c, v in zip(cols, line.split()):
                    table[c].append(float(v))
            frames.append((step, table))
            i += 1 + n
        else:
            i += 1
    return frames


def md_result(tmp, out, thermo_cols=("PotEng", "TotEng")):
    rows = thermo_rows(out, list(thermo_cols))
    frames = dump_frames(os.path.join(tmp, "md.dump"))
    d = frames[-1][1]
    n = len(d["id"])
    return {"energy": rows[-1]["PotEng"], "etotal": rows[-1]["TotEng"], "rows": rows,
            "frames": frames, "ids": d["id"], "output": out,
            "forces": [[d["fx"][i], d["fy"][i], d["fz"][i]] for i in range(n)],
            "positions": [[d["xu"][i], d["yu"][i], d["zu"][i]] for i in range(n)],
            "velocities": [[d["vx"][i], d["vy"][i], d["vz"][i]] for i in range(n)]}


def run_md(tmp, deck, nprocs):
    _, out = run_lammps(tmp, deck, nprocs)
    return md_result(tmp, out)


def compare_md(c, tag, got, ref, tol=None):
    """final energy, total energy, forces, unwrapped positions, velocities"""
    tol = tol or TOL
    de = abs(got["energy"] - ref["energy"]) / abs(ref["energy"])
    dt = abs(got["etotal"] - ref["etotal"]) / abs(ref["etotal"])
    if F64:
        df = rel_diff(flat(got["forces"]), flat(ref["forces"]), 1e-3)
    else:
        df = max_abs([a - b for a, b in zip(flat(got["forces"]), flat(ref["forces"]))])
    dx = max_abs([a - b for a, b in zip(flat(got["positions"]), flat(ref["positions"]))])
    dv = rel_diff(flat(got["velocities"]), flat(ref["velocities"]), 1e-3)
    print(f"  {tag:58s} E {de:.1e}, E_tot {dt:.1e}, F {df:.1e}, x {dx:.1e} A, v {dv:.1e}")
    c.check(len(got["forces"]) == len(ref["forces"]),
            f"{tag}: {len(got['forces'])} atoms, reference {len(ref['forces'])}")
    c.check(got["ids"] == ref["ids"], f"{tag}: the atom IDs differ from the reference")
    c.check(de <= tol["E"], f"{tag}: energy {got['energy']!r} vs {ref['energy']!r}")
    c.check(dt <= tol["E"], f"{tag}: total energy {got['etotal']!r} vs {ref['etotal']!r}")
    c.check(df <= tol["F"], f"{tag}: forces differ by {df:.2e}")
    c.check(dx <= tol["x"], f"{tag}: positions differ by {dx:.2e} A")
    c.check(dv <= tol["F"], f"{tag}: velocities differ by {dv:.2e} relative")


def loop_stats(out, what):
    """LAMMPS' end-of-run 'Nlocal: ave max min' (or Nghost) line of the last run"""
    found = re.findall(rf"^{what}:\s+(\S+) ave\s+(\S+) max\s+(\S+) min", out, re.M)
    return [float(v) for v in found[-1]] if found else None


# ---------------------------------------------------------------- structures

def slab(z_box, z_shift=1.0, seed=5):
    """2 x 2 x 2 cells of Si (64 atoms) from z = z_shift up, in a box z_box tall (vacuum above)"""
    s = rattled(diamond_si(2), 0.03, seed)
    s = dict(s, positions=[[p[0], p[1], p[2] + z_shift] for p in s["positions"]])
    s["cell"] = [list(r) for r in s["cell"]]
    s["cell"][2][2] = z_box
    return s


def sheared_si(strain=0.08, ny=5, nz=2, seed=9):
    """diamond Si in the cell a = (A, 0, 0), b = (A/2, ny A/2, 0), c = (0, 0, nz A), which the
    lattice fills with b's tilt at exactly 0.5 lx, then sheared by `strain` back from it: under
    npt the tilt swings past 0.5 lx and beyond LAMMPS' flip limit 0.6 lx (40 atoms)"""
    ly, lz = ny * A / 2, nz * A
    cell = [[A, 0.0, 0.0], [A / 2, ly, 0.0], [0.0, 0.0, lz]]
    basis = [(0, 0, 0), (0, .5, .5), (.5, 0, .5), (.5, .5, 0)]
    basis += [(x + .25, y + .25, z + .25) for x, y, z in basis]
    pos = []
    for i in range(-2, 4):
        for j in range(-1, ny):
            for k in range(-1, nz + 1):
                for b in basis:
                    x, y, z = [(n + f) * A for n, f in zip((i, j, k), b)]
                    fz, fy = z / lz, y / ly
                    fx = (x - fy * cell[1][0]) / A
                    if all(-1e-9 <= f < 1 - 1e-9 for f in (fx, fy, fz)):
                        pos.append([x, y, z])
    d = strain * ly
    cell[1][0] -= d
    s = {"symbols": ["Si"] * len(pos), "positions": [[x - d * y / ly, y, z] for x, y, z in pos],
         "cell": cell, "pbc": [True] * 3}
    return rattled(s, 0.03, seed)


# ---------------------------------------------------------------- cases

def case_empty_ranks(c, tmp):
    # box 36 A tall, atoms in planes from z = 1 to 10.5 A: 4 sub-domains of 9 A along z; the
    # first two own atoms, the third (18-27) is farther than the ghost cutoff (7 A) from every
    # atom and image, the fourth holds the images of the bottom planes as ghosts
    s = slab(36.0)
    data = os.path.join(tmp, "data")
    write_data(data, s, ["Si"])
    res = {}
    for nprocs, procs in ((1, ""), (4, "processors 1 1 4\n")):
        os.makedirs(os.path.join(tmp, str(nprocs)))
        deck = header(data, before_box=procs) + md_lines(12) + "run 12\n"
        res[nprocs] = run_md(os.path.join(tmp, str(nprocs)), deck, nprocs)
    nl, ng = loop_stats(res[4]["output"], "Nlocal"), loop_stats(res[4]["output"], "Nghost")
    print(f"  4 ranks: Nlocal ave/max/min {nl}, Nghost ave/max/min {ng}")
    c.check(nl is not None and nl[2] == 0 and nl[1] < 64,
            f"empty_ranks: want ranks without atoms and atoms on 2 ranks: Nlocal {nl}")
    c.check(ng is not None and ng[2] == 0, f"empty_ranks: no rank without ghosts: Nghost {ng}")
    compare_md(c, "slab, 4 ranks along z (2 own no atoms), 12 steps", res[4], res[1])


def tagint_bits():
    out = subprocess.run([lmp(), "-h"], capture_output=True, text=True).stdout
    m = re.search(r"sizeof\(tagint\):\s+(\d+)-bit", out)
    return int(m.group(1)) if m else 32    # older LAMMPS do not say: assume the smaller


def case_sparse_ids(c, tmp):
    bits = tagint_bits()
    base = 10 ** 9 if bits == 32 else 10 ** 12
    s = rattled(diamond_si(2), 0.05, 13)
    n = len(s["symbols"])
    ids = [base + 7 * k + k % 3 for k in range(n)]
    c.check(max(ids) < 2 ** (bits - 1), f"sparse_ids: IDs up to {max(ids)} exceed tagint")
    print(f"  tagint is {bits}-bit: IDs {ids[0]} .. {ids[-1]} (gaps of 5 to 8), shuffled")
    # the data file lists the atoms in another order; LAMMPS sorts nothing by ID, the dump does
    order = list(range(n))
    order = order[1::2] + order[0::2][::-1]
    shuffled = dict(s, positions=[s["positions"][k] for k in order],
                    symbols=[s["symbols"][k] for k in order])
    plain, sparse = os.path.join(tmp, "plain.data"), os.path.join(tmp, "sparse.data")
    write_data(plain, s, ["Si"])
    write_data(sparse, shuffled, ["Si"], ids=[ids[k] for k in order])
    # velocities from `loop geom` depend on the coordinates only, not on IDs or order
    def deck(data):
        return header(data) + md_lines(10) + "run 10\n"
    os.makedirs(os.path.join(tmp, "ref"))
    ref = run_md(os.path.join(tmp, "ref"), deck(plain), 1)
    for nprocs in (1, 2):
        sub = os.path.join(tmp, f"sparse{nprocs}")
        os.makedirs(sub)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        got = run_md(sub, deck(sparse), nprocs)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        c.check(got["ids"] == [float(i) for i in ids],
                "sparse_ids: the dump's IDs are not the sparse ones")
        got["ids"] = ref["ids"]
        compare_md(c, f"IDs 1e{len(str(base)) - 1} + 7k, {nprocs} rank(s), 10 steps", got, ref)
        if nprocs == 1:
            # ru_maxrss: the largest child so far (kB): `before` includes the run with IDs 1..N
            print(f"  peak memory of a LAMMPS process so far: {peak / 1024:.0f} MB "
                  f"(before this run {before / 1024:.0f} MB)")
            c.check(peak < before + 1024 * 1024,
                    f"sparse_ids: a 64-atom run took {peak / 1024:.0f} MB, the same with IDs "
                    f"1..N {before / 1024:.0f} MB")


def case_migration(c, tmp):
    s = rattled(diamond_si(2), 0.05, 17)
    data = os.path.join(tmp, "data")
    write_data(data, s, ["Si"])
    # 150 A/ps drift along x and 100 along y: 1.8 A and 1.2 A in 12 fs, across the sub-domain
    # boundaries at x, y = 0 and 5.43 A (the relative motion, and so the forces, are the same)
    drift = "velocity all set 150.0 100.0 0.0 sum yes units box\n"
    res = {}
    for nprocs, procs in ((1, ""), (4, "processors 2 2 1\n")):
        os.makedirs(os.path.join(tmp, str(nprocs)))
        deck = header(data, before_box=procs) + md_lines(12, extra=drift) + "run 12\n"
        res[nprocs] = run_md(os.path.join(tmp, str(nprocs)), deck, nprocs)
    frames = res[4]["frames"]
    first, last = frames[0][1], frames[-1][1]
    half = A    # 2 x 2 x 2 cells: the box is 2 A wide, split in halves along x and y

    def domain(t, i):
        return (int((t["x"][i] % (2 * A)) // half), int((t["y"][i] % (2 * A)) // half))
    moved = sum(domain(first, i) != domain(last, i) for i in range(len(first["id"])))
    builds = re.findall(r"Neighbor list builds = (\d+)", res[4]["output"])
    nb = int(builds[-1]) if builds else 0
    print(f"  4 ranks: {moved} of {len(first['id'])} atoms changed sub-domain, "
          f"{nb} neighbour-list builds")
    c.check(moved > 0, "migration: no atom changed sub-domain")
    c.check(nb > 2, f"migration: only {nb} neighbour-list builds")
    compare_md(c, "drifting crystal, 4 ranks (2 x 2 x 1), 12 steps", res[4], res[1])


def case_tiled_balance(c, tmp):
    s = slab(24.0, z_shift=2.0, seed=21)
    data = os.path.join(tmp, "data")
    write_data(data, s, ["Si"])
    drift = "velocity all set 0.0 0.0 100.0 sum yes units box\n"
    res = {}
    for nprocs in (1, 3):
        sub = os.path.join(tmp, str(nprocs))
        os.makedirs(sub)
        bal = "comm_style tiled\nfix bal all balance 5 1.0 rcb\n" if nprocs > 1 else ""
        cols = "step pe ke etotal" + (" f_bal f_bal[3]" if nprocs > 1 else "")
        deck = header(data) + bal + md_lines(15, thermo_cols=cols, every=5, extra=drift) + \
            "run 15\n"
        res[nprocs] = run_md(sub, deck, nprocs)
    rows = res[3]["rows"]
    # f_bal: imbalance after the last re-partitioning; f_bal[3]: just before it
    print("  3 ranks, tiled: (step, imbalance before, after the last rcb) " +
          ", ".join(f"({r['Step']:.0f}, {r['f_bal[3]']:.3f}, {r['f_bal']:.3f})" for r in rows))
    # a re-partitioning during the run changes the imbalance (the slab moves across the cuts)
    changed = [r for r, p in zip(rows[1:], rows) if r["f_bal[3]"] != r["f_bal"] or
               r["f_bal"] != p["f_bal"]]
    c.check(bool(changed), "tiled_balance: fix balance never re-partitioned during the run")
    compare_md(c, "slab drifting along z, 3 ranks tiled + fix balance, 15 steps", res[3],
               res[1])


def read_data_file(path):
    """(cell rows, {id: position}) of a LAMMPS data file written by write_data (atomic)"""
    lines = open(path).read().splitlines()
    box, tilt, atoms, section = {}, (0.0, 0.0, 0.0), {}, None
    for line in lines:
        w = line.split()
        if len(w) == 4 and w[2] in ("xlo", "ylo", "zlo"):
            box[w[2][0]] = float(w[1]) - float(w[0])
        elif len(w) == 6 and w[3:] == ["xy", "xz", "yz"]:
            tilt = tuple(float(v) for v in w[:3])
        elif w[:1] in (["Atoms"], ["Velocities"]):
            section = w[0]
        elif section == "Atoms" and len(w) >= 5:
            atoms[int(w[0])] = [float(v) for v in w[2:5]]
    xy, xz, yz = tilt
    return [[box["x"], 0, 0], [xy, box["y"], 0], [xz, yz, box["z"]]], atoms


def case_npt_flip(c, tmp):
    s = sheared_si()
    data = os.path.join(tmp, "data")
    write_data(data, s, ["Si"])
    npt = ("fix md all npt temp 300.0 300.0 0.1 x 0.0 0.0 0.1 y 0.0 0.0 0.1 z 0.0 0.0 0.1 "
           "xy -20000.0 -20000.0 0.1 xz 0.0 0.0 0.1 yz 0.0 0.0 0.1")
    cols = "step pe ke etotal xy lx c_vir[1] c_vir[2] c_vir[3] c_vir[4] c_vir[5] c_vir[6] vol"
    res = {}
    for nprocs in (1, 4):
        sub = os.path.join(tmp, str(nprocs))
        os.makedirs(sub)
        deck = header(data) + "compute vir all pressure NULL virial\n" + \
            md_lines(20, thermo_cols=cols, every=1, integrator=npt) + \
            "run 20\nwrite_data final.data\n"
        res[nprocs] = run_md(sub, deck, nprocs)
        xy = [r["Xy"] for r in res[nprocs]["rows"]]
        lx = [r["Lx"] for r in res[nprocs]["rows"]]
        flips = sum(1 for a, b in zip(xy, xy[1:]) if a * b < 0)
        print(f"  {nprocs} rank(s): xy/lx from {xy[0] / lx[0]:.3f} up to "
              f"{max(x / l for x, l in zip(xy, lx)):.3f}, {flips} flip(s), ends at "
              f"{xy[-1] / lx[-1]:.3f}")
        c.check(flips >= 1, f"npt_flip: the box did not flip on {nprocs} rank(s): xy {xy}")
        if nprocs > 1:
            compare_md(c, f"npt with a tilt flip, {nprocs} ranks, 20 steps", res[nprocs], res[1])
    # the state after the flip against the CLI on the same cell (its own neighbour list)
    cell, atoms = read_data_file(os.path.join(tmp, "1", "final.data"))
    ids = sorted(atoms)
    xyz = os.path.join(tmp, "final.xyz")
    write_xyz(xyz, ["Si"] * len(ids), [atoms[i] for i in ids], cell)
    ref = eval_frames(MODEL, xyz, "--dtype", "float64", "--device", "cpu")[0]
    got, last = res[1], res[1]["rows"][-1]
    p = [last[f"c_vir[{k}]"] for k in range(1, 7)]
    w = [x * last["Volume"] / NKTV2P for x in (p[0], p[1], p[2], p[5], p[4], p[3])]
    de = abs(got["energy"] - ref["energy"]) / abs(ref["energy"])
    ftol, wtol = (1e-9, 1e-9) if F64 else (1e-4, 1e-6 * last["Volume"])
    if F64:
        df = rel_diff(flat(got["forces"]), flat(ref["forces"]), 1e-3)
        dw = rel_diff(w, ref["virial"], 1e-3)
    else:
        df = max_abs([a - b for a, b in zip(flat(got["forces"]), flat(ref["forces"]))])
        dw = max_abs([a - b for a, b in zip(w, ref["virial"])])
    print(f"  after the flip, 1 rank vs fusednequip eval of the final cell: E {de:.1e}, "
          f"F {df:.1e}, W {dw:.1e}")
    c.check(de <= (1e-9 if F64 else 1e-6), f"npt_flip: energy {got['energy']!r} vs eval "
                                           f"{ref['energy']!r}")
    c.check(df <= ftol, f"npt_flip: forces differ from eval by {df:.2e}")
    c.check(dw <= wtol, f"npt_flip: virial {w} vs eval {ref['virial']}")


def single_point(tmp, data, pair, coeffs, nprocs):
    deck = f"""units metal
atom_style atomic
read_data {data}
pair_style {pair}
{coeffs}
compute pa all pe/atom
compute sa all stress/atom NULL virial
compute pesum all reduce sum c_pa
compute vatsum all reduce sum c_sa[1] c_sa[2] c_sa[3] c_sa[4] c_sa[5] c_sa[6]
compute vir all pressure NULL virial
thermo_style custom step pe vol c_pesum c_vir[1] c_vir[2] c_vir[3] c_vir[4] c_vir[5] c_vir[6] &
    c_vatsum[1] c_vatsum[2] c_vatsum[3] c_vatsum[4] c_vatsum[5] c_vatsum[6]
thermo_modify format float %.17g
dump d all custom 1 atoms.dump id fx fy fz c_pa
dump_modify d sort id format float %.17g
run 0
"""
    _, out = run_lammps(tmp, deck, nprocs)
    row = thermo_rows(out, ["PotEng", "Volume"])[0]
    p = [row[f"c_vir[{k}]"] for k in range(1, 7)]
    s = [row[f"c_vatsum[{k}]"] for k in range(1, 7)]
    d = dump_frames(os.path.join(tmp, "atoms.dump"))[-1][1]
    # LAMMPS' order xx yy zz xy xz yz; pressure (bar) * V -> virial (eV); stress/atom sums to
    # -(the virial) in bar A^3
    return {"energy": row["PotEng"], "pesum": row["c_pesum"], "energies": d["c_pa"],
            "virial": [x * row["Volume"] / NKTV2P for x in p],
            "atom_virial_sum": [-x / NKTV2P for x in s],
            "forces": [[d["fx"][i], d["fy"][i], d["fz"][i]] for i in range(len(d["id"]))]}


def case_hybrid_zbl(c, tmp):
    s = rattled(diamond_si(2), 0.08, 23)
    data = os.path.join(tmp, "data")
    write_data(data, s, ["Si"])
    zbl = "zbl 2.0 3.0"
    hybrid = f"hybrid/overlay {style()} {zbl}"
    hcoeff = f"pair_coeff * * fusednequip {MODEL} Si\npair_coeff * * zbl 14.0 14.0"
    runs = {}
    for key, pair, coeff, nprocs in [("fnq", style(), f"pair_coeff * * {MODEL} Si", 1),
                                     ("zbl", zbl, "pair_coeff * * 14.0 14.0", 1),
                                     (1, hybrid, hcoeff, 1), (2, hybrid, hcoeff, 2),
                                     (4, hybrid, hcoeff, 4)]:
        sub = os.path.join(tmp, str(key))
        os.makedirs(sub)
        runs[key] = single_point(sub, data, pair, coeff, nprocs)
    fnq, z = runs["fnq"], runs["zbl"]
    print(f"  E: fusednequip {fnq['energy']:.6f}, zbl {z['energy']:.6f} eV")
    c.check(abs(z["energy"]) > 1.0, f"hybrid_zbl: ZBL contributes only {z['energy']} eV")
    summed = {"energy": fnq["energy"] + z["energy"],
              "energies": [a + b for a, b in zip(fnq["energies"], z["energies"])],
              "forces": [[a + b for a, b in zip(u, v)] for u, v in zip(fnq["forces"],
                                                                      z["forces"])],
              "virial": [a + b for a, b in zip(fnq["virial"], z["virial"])]}
    tol = TOL["E"] if F64 else 1e-6
    for key in (1, 2, 4):
        got = runs[key]
        for ref, what in ((summed, "the sum of the styles alone"), (runs[1], "1 rank")):
            if ref is got:
                continue
            de = abs(got["energy"] - ref["energy"]) / abs(ref["energy"])
            dei = rel_diff(got["energies"], ref["energies"], 1e-3)
            dw = rel_diff(got["virial"], ref["virial"], 1e-3)
            if F64:
                df = rel_diff(flat(got["forces"]), flat(ref["forces"]), 1e-3)
            else:
                df = max_abs([a - b for a, b in zip(flat(got["forces"]), flat(ref["forces"]))])
            tag = f"hybrid/overlay, {key} rank(s), vs {what}"
            print(f"  {tag:58s} E {de:.1e}, E_i {dei:.1e}, F {df:.1e}, W {dw:.1e}")
            c.check(de <= tol and dei <= tol and dw <= tol and df <= TOL["F"],
                    f"{tag}: E {de:.2e}, E_i {dei:.2e}, F {df:.2e}, W {dw:.2e}")
        dpe = abs(got["pesum"] - got["energy"]) / abs(got["energy"])
        dws = rel_diff(got["atom_virial_sum"], got["virial"], 1e-3)
        print(f"  {'':58s} sum pe/atom - pe {dpe:.1e}, sum stress/atom - virial {dws:.1e}")
        c.check(dpe <= TOL["sum"], f"hybrid_zbl, {key} rank(s): sum of pe/atom "
                                   f"{got['pesum']!r} vs pe {got['energy']!r}")
        c.check(dws <= TOL["sum"], f"hybrid_zbl, {key} rank(s): stress/atom sums to "
                                   f"{got['atom_virial_sum']}, virial {got['virial']}")


def case_restart(c, tmp):
    s = rattled(supercell(diamond_si(1), 2, 2, 1), 0.05, 29)    # 32 atoms
    data = os.path.join(tmp, "data")
    write_data(data, s, ["Si"])
    res = {}
    # uninterrupted on 2 ranks; the first half with a restart file, on 2 ranks
    for key, runs in (("whole", "run 12\n"), ("first", "run 6\nwrite_restart half.restart\n")):
        sub = os.path.join(tmp, key)
        os.makedirs(sub)
        deck = header(data) + md_lines(12, every=6, dump_every=6) + runs
        res[key] = run_md(sub, deck, 2)
    # the second half in a new process, on 1 and on 2 ranks
    for nprocs in (1, 2):
        sub = os.path.join(tmp, f"second{nprocs}")
        os.makedirs(sub)
        deck = f"""units metal
read_restart {os.path.join(tmp, "first", "half.restart")}
pair_style {style()}
pair_coeff * * {MODEL} Si
""" + md_lines(12, every=6, dump_every=6, velocity=False) + "run 6\n"
        got = run_md(sub, deck, nprocs)
        c.check(got["rows"][-1]["Step"] == 12, "restart: the continued run did not end at "
                                               "step 12")
        compare_md(c, f"write_restart (2 ranks), read_restart ({nprocs} rank(s)) + "
                      "pair_style/coeff, run 6 vs run 12", got, res["whole"])
    # one input, several runs, 1 rank
    for key, runs in (("3 x run 4", "run 4\n" * 3),
                      ("run 4, 2 x run 4 pre no post no",
                       "run 4\n" + "run 4 pre no post no\n" * 2)):
        sub = os.path.join(tmp, key.replace(" ", "_"))
        os.makedirs(sub)
        deck = header(data) + md_lines(12, every=4) + runs
        got = run_md(sub, deck, 1)
        c.check([r["Step"] for r in got["rows"]][-1] == 12, f"{key}: did not end at step 12")
        compare_md(c, f"{key} (1 rank) vs run 12 (2 ranks)", got, res["whole"])


def sp_deck(data, elements):
    return header(data, elements) + """compute pa all pe/atom
thermo_style custom step pe press
thermo_modify format float %.17g
dump d{n} all custom 1 atoms{n}.dump id fx fy fz c_pa
dump_modify d{n} sort id format float %.17g
run 0
undump d{n}
"""


def case_clear(c, tmp):
    si = rattled(diamond_si(2), 0.05, 31)
    quartz = rattled(to_lammps_frame(supercell(alpha_quartz(), 2, 2, 2))[0], 0.04, 33)
    d1, d2 = os.path.join(tmp, "si.data"), os.path.join(tmp, "quartz.data")
    write_data(d1, si, ["Si"])
    write_data(d2, quartz, ["Si", "O"])
    first = sp_deck(d1, ["Si"]).replace("{n}", "1")
    second = sp_deck(d2, ["Si", "O"]).replace("{n}", "2")
    # `clear` deletes the styles registered at run time: register again, as a deck does
    prelude = os.environ.get("FNQ_LMP_PRELUDE", "")
    load = os.environ.get("FNQ_LOAD_SCRIPT", "")
    if prelude.strip():
        again = prelude
    elif load and os.path.exists(load):
        again = f"include {load}"
    else:
        print("  SKIP clear: no FNQ_LMP_PRELUDE or FNQ_LOAD_SCRIPT to register the style again")
        return
    for nprocs in (1, 2):
        sub = os.path.join(tmp, f"one{nprocs}")
        os.makedirs(sub)
        _, out = run_lammps(sub, first + "clear\n" + again + "\n" + second, nprocs)
        rows = thermo_rows(out, ["PotEng"])
        fresh = []
        for k, deck in ((1, first), (2, second)):
            fsub = os.path.join(tmp, f"fresh{nprocs}_{k}")
            os.makedirs(fsub)
            _, fout = run_lammps(fsub, deck, nprocs)
            fresh.append((thermo_rows(fout, ["PotEng"])[0],
                          dump_frames(os.path.join(fsub, f"atoms{k}.dump"))[-1][1]))
        # thermo_rows: one row per `run 0`, in order
        c.check(len(rows) == 2, f"clear: expected 2 thermo rows, got {len(rows)}")
        for k in (1, 2):
            got_row = rows[k - 1]
            got = dump_frames(os.path.join(sub, f"atoms{k}.dump"))[-1][1]
            ref_row, ref = fresh[k - 1]
            de = abs(got_row["PotEng"] - ref_row["PotEng"]) / abs(ref_row["PotEng"])
            dp = abs(got_row["Press"] - ref_row["Press"]) / abs(ref_row["Press"])
            df = max_abs([a - b for col in ("fx", "fy", "fz", "c_pa")
                          for a, b in zip(got[col], ref[col])])
            tag = ("instance 1 (Si) before clear" if k == 1 else
                   "instance 2 (SiO2) after clear") + f", {nprocs} rank(s)"
            print(f"  {tag:58s} vs a fresh process: E {de:.1e}, P {dp:.1e}, "
                  f"F/E_i {df:.1e}")
            bar = 1e-12 if F64 else 1e-6
            c.check(de <= bar and dp <= bar and df <= (1e-10 if F64 else 1e-4),
                    f"clear: {tag}: E {de:.2e}, P {dp:.2e}, F {df:.2e} vs a fresh process")


CASES = {"empty_ranks": case_empty_ranks, "sparse_ids": case_sparse_ids,
         "migration": case_migration, "tiled_balance": case_tiled_balance,
         "npt_flip": case_npt_flip, "hybrid_zbl": case_hybrid_zbl, "restart": case_restart,
         "clear": case_clear}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    a = ap.parse_args()
    require_model()
    if DEVICE.startswith("cuda") and not gpu_available():
        sys.exit(SKIP)
    c = Checker(f"LAMMPS user cases ({DTYPE} on {DEVICE})")
    print(f"pair_style {style()}")
    for name in a.case or CASES:
        start = time.time()
        failures = c.failures
        print(f"{name}:")
        with tempfile.TemporaryDirectory() as tmp:
            CASES[name](c, tmp)
        print(f"{name}: {'ok' if c.failures == failures else 'FAILED'} "
              f"({time.time() - start:.0f} s)")
    c.finish()


main()
