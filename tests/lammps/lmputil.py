"""Running LAMMPS with pair_style fusednequip from the tests (standard library only).

CTest sets:
  FNQ_LMP          the LAMMPS executable: lmp_fusednequip (the style is registered), or an lmp
                   with the PLUGIN package, then FNQ_LMP_PRELUDE holds the `plugin load` line
  FNQ_LMP_PRELUDE  input lines run before every deck (may be empty)
  FNQ_MPIEXEC      mpiexec, for runs on several ranks
Decks are written to a temporary directory and run there; results come back from the thermo
line of `run 0` (printed with 17 digits) and a dump sorted by atom id.
"""
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from cliutil import Checker, cli, eval_frames, model_dir, write_xyz  # noqa: E402,F401
from structures import write_data  # noqa: E402

NKTV2P = 1602176.5    # LAMMPS metal units: bar per eV/A^3
# the model of decks that name none (test_ranks, test_user_cases, test_loaders); it must have Si
# and O. FNQ_LAMMPS_MODEL replaces nequix-mp-1: scripts/test-sanitize.sh gives a 35 KB NequIP
# fixture (the style's code paths are the same; nequix-mp-1 under the sanitizers takes ~0.15 s
# per atom and step on one core)
MODEL = os.environ.get("FNQ_LAMMPS_MODEL") or "nequix-mp-1"
THERMO = ["pe", "vol", "c_pesum"] + [f"c_vir[{k}]" for k in range(1, 7)] + \
         [f"c_vatsum[{k}]" for k in range(1, 7)]


def lmp():
    exe = os.environ.get("FNQ_LMP")
    if not exe or not os.path.exists(exe):
        print(f"FNQ_LMP is not set to a LAMMPS executable ({exe})")
        sys.exit(1)
    return exe


def require_model():
    """Skip (exit 77) without the model directory, unless FNQ_LAMMPS_MODEL names the model."""
    if not os.environ.get("FNQ_LAMMPS_MODEL"):
        model_dir()


def gpu_available():
    """`fusednequip eval --device cuda` on a tiny cell: does this build and machine run CUDA?"""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        xyz = os.path.join(tmp, "si2.xyz")
        write_xyz(xyz, ["Si", "Si"], [[0, 0, 0], [1.3575, 1.3575, 1.3575]],
                  [[0, 2.715, 2.715], [2.715, 0, 2.715], [2.715, 2.715, 0]])
        p = subprocess.run([cli(), "eval", "--device", "cuda", "nequix-mp-1", xyz],
                           capture_output=True, text=True)
    if p.returncode == 0:
        return True
    if "no CUDA backend" in p.stderr or "no usable GPU" in p.stderr:
        print(f"SKIP: no usable CUDA device: {p.stderr.strip()}")
        return False
    # a GPU that is there but fails is a failure, not a skip
    sys.exit(f"FAIL: the GPU did not run a 2-atom cell: {p.stderr.strip()}")


def run_lammps(workdir, deck, nprocs=1, threads=None, check=True, timeout=None, args=()):
    """Run `deck` (text) in workdir on nprocs MPI ranks, with LAMMPS' command-line `args`
    (e.g. -k on g 1 -sf kk); returns (exit code, stdout+stderr)."""
    path = os.path.join(workdir, "in.test")
    with open(path, "w") as f:
        f.write(os.environ.get("FNQ_LMP_PRELUDE", "") + "\n" + deck)
    # FNQ_LMP_WRAPPER: a command that runs LAMMPS, e.g. "compute-sanitizer --tool memcheck
    # --error-exitcode 99" (scripts/gpu/gpu-sanitize.sh), on every rank
    cmd = shlex.split(os.environ.get("FNQ_LMP_WRAPPER", "")) + \
        [lmp(), *args, "-in", path, "-log", "none", "-echo", "screen"]
    env = dict(os.environ)
    # Open MPI: CI runs as root, and with more ranks than cores
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")
    if nprocs > 1:
        cmd = [os.environ.get("FNQ_MPIEXEC", "mpiexec"), "-n", str(nprocs)] + cmd
        env["OMP_NUM_THREADS"] = str(threads or 1)    # ranks share the cores
    elif threads:
        env["OMP_NUM_THREADS"] = str(threads)
    p = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    out = p.stdout + p.stderr
    if check and p.returncode != 0:
        print(f"LAMMPS failed ({p.returncode}) on {nprocs} rank(s):\n{out[-4000:]}")
        sys.exit(1)
    return p.returncode, out


def expect_error(c, workdir, label, deck, needles, nprocs=1):
    """Run a deck that must fail: a non-zero exit (not a signal) and ERROR lines that hold every
    one of `needles`."""
    rc, out = run_lammps(workdir, deck, nprocs, check=False)
    errors = [l for l in out.splitlines() if "ERROR" in l]
    c.check(rc != 0, f"{label}: LAMMPS exited with 0:\n{out[-1500:]}")
    c.check(rc > 0, f"{label}: killed by signal {-rc}")
    c.check(bool(errors), f"{label}: no ERROR line in the output:\n{out[-2000:]}")
    for n in needles:
        c.check(any(n in l for l in errors), f"{label}: the error lacks {n!r}: {errors}")
    print(f"{label} (exit {rc}): {errors[0] if errors else '(none)'}")


def setup_lines(data_file, elements, model=None, style_args="", boundary="p p p"):
    # the CPU float64 reference unless a test asks otherwise: `device auto` would take a GPU
    # where there is one, and float32 with it
    if "device" not in style_args:
        style_args += " device cpu"
    if "dtype" not in style_args:
        style_args += " dtype float64"
    return f"""units metal
atom_style atomic
atom_modify map array
boundary {boundary}
read_data {data_file}
pair_style fusednequip {style_args}
pair_coeff * * {model or MODEL} {' '.join(elements)}
"""


def single_point_deck(data_file, elements, comm="brick", style_args="", model=None,
                      boundary="p p p"):
    """Energy, forces, virial, per-atom energy and per-atom virial of the structure as it is."""
    comm_lines = "comm_style tiled\nbalance 1.0 rcb\n" if comm == "tiled" else ""
    return setup_lines(data_file, elements, model, style_args, boundary) + comm_lines + f"""
compute pa all pe/atom
compute sa all stress/atom NULL virial
compute pesum all reduce sum c_pa
compute vatsum all reduce sum c_sa[1] c_sa[2] c_sa[3] c_sa[4] c_sa[5] c_sa[6]
compute vir all pressure NULL virial
thermo_style custom step {' '.join(THERMO)}
thermo_modify format float %.17g
dump d all custom 1 atoms.dump id type fx fy fz c_pa c_sa[1] c_sa[2] c_sa[3] c_sa[4] c_sa[5] c_sa[6]
dump_modify d sort id format float %.17g
run 0
"""


def thermo_rows(out, columns):
    """Rows of thermo output under a header starting with 'Step', as dicts (floats)."""
    rows, header = [], None
    for line in out.splitlines():
        words = line.split()
        if words[:1] == ["Step"]:
            header = words
            continue
        if header and len(words) == len(header):
            try:
                rows.append({k: float(v) for k, v in zip(header, words)})
            except ValueError:
                header = None
        elif header:
            header = None
    if not rows:
        print("no thermo output found:\n" + out[-3000:])
        sys.exit(1)
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        print(f"thermo output lacks {missing}")
        sys.exit(1)
    return rows


def read_dump(path):
    """{column: [values in atom-id order]} of the last step in a LAMMPS custom dump."""
    lines = open(path).read().splitlines()
    start = max(i for i, l in enumerate(lines) if l.startswith("ITEM: ATOMS"))
    cols = lines[start].split()[2:]
    table = {c: [] for c in cols}
    for line in lines[start + 1:]:
        for c, v in zip(cols, line.split()):
            table[c].append(float(v))
    return table


def single_point(workdir, structure, elements, nprocs=1, comm="brick", style_args="",
                 model=None, boundary="p p p", args=()):
    """Run the single-point deck; returns a result dict in the conventions of `fusednequip eval`:
    energy, energies, forces (N x 3), virial (6, ASE order xx yy zz yz xz xy, eV), plus
    atom_virial_sum (6, same order) and the LAMMPS output. args: LAMMPS' command line."""
    data = os.path.join(workdir, "data.test")
    write_data(data, structure, elements)
    deck = single_point_deck(data, elements, comm, style_args, model, boundary)
    _, out = run_lammps(workdir, deck, nprocs, args=args)
    row = thermo_rows(out, ["PotEng", "Volume"] + THERMO[2:])[0]
    vol = row["Volume"]
    # LAMMPS: pressure xx yy zz xy xz yz (bar) -> virial in ASE's order (eV)
    p = [row[f"c_vir[{k}]"] for k in range(1, 7)]
    virial = [x * vol / NKTV2P for x in (p[0], p[1], p[2], p[5], p[4], p[3])]
    s = [row[f"c_vatsum[{k}]"] for k in range(1, 7)]    # sum of stress/atom = -(sum of W_i)
    d = read_dump(os.path.join(workdir, "atoms.dump"))
    n = len(d["id"])
    return {
        "energy": row["PotEng"], "pesum": row["c_pesum"], "virial": virial,
        "atom_virial_sum": [-x / NKTV2P for x in (s[0], s[1], s[2], s[5], s[4], s[3])],
        "energies": d["c_pa"],
        "forces": [[d["fx"][i], d["fy"][i], d["fz"][i]] for i in range(n)],
        "atom_virial": [[-d[f"c_sa[{k}]"][i] / NKTV2P for k in (1, 2, 3, 6, 5, 4)]
                        for i in range(n)],
        "output": out,
    }


def max_abs(values):
    return max((abs(v) for v in values), default=0.0)


def flat(rows):
    return [x for r in rows for x in r]


def rel_diff(a, b, floor=0.0):
    """max |a - b| / max(max |b|, floor): the error relative to the size of the quantity."""
    return max_abs([x - y for x, y in zip(a, b)]) / max(max_abs(b), floor)
