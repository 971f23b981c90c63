"""Shared helpers for the command-line tests (standard library only).

Each test exits 0 (pass), 1 (fail) or 77 (skipped, e.g. no model directory).
"""
import json
import os
import subprocess
import sys

SKIP = 77


def python_with(*modules):
    """The first Python that imports `modules`: $FNQ_CONVERT_PYTHON, this one, /usr/bin/python3
    (Debian's python3-torch), or None."""
    for exe in (os.environ.get("FNQ_CONVERT_PYTHON"), sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import " + ", ".join(modules)], capture_output=True).returncode == 0:
            return exe
    return None


def sevenn_site():
    """the directory holding the installed sevenn package (fixtures name sevenn/...):
    $FNQ_SEVENN_DIR's parent, else where this interpreter or /usr/bin/python3 finds it
    (importlib.util.find_spec: sevenn is not imported, `pip install --no-deps` is enough)"""
    d = os.environ.get("FNQ_SEVENN_DIR")
    if d:
        return os.path.dirname(os.path.abspath(d))
    probe = ("import importlib.util, os; s = importlib.util.find_spec('sevenn'); "
             "print(os.path.dirname(os.path.dirname(s.origin)) if s else '')")
    for exe in (sys.executable, "/usr/bin/python3"):
        p = subprocess.run([exe, "-c", probe], capture_output=True, text=True)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip()
    return None


def flat(x):
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in flat(item)]
    return [float(x)]


def rel_dev(ours, ref):
    """max |ours - ref| / max |ref| over the components of one quantity"""
    a, b = flat(ours), flat(ref)
    assert len(a) == len(b), (len(a), len(b))
    scale = max(abs(v) for v in b)
    return max(abs(x - y) for x, y in zip(a, b)) / scale


def cli():
    """Path of the fusednequip executable (set by CTest)."""
    path = os.environ.get("FNQ_CLI")
    if not path or not os.path.exists(path):
        print("FNQ_CLI is not set to the fusednequip executable")
        sys.exit(1)
    return path


def model_dir():
    """The model directory, or skip the test with a message saying where we looked."""
    for d in (os.environ.get("FUSEDNEQUIP_MODEL_DIR"), os.environ.get("FNQ_DEFAULT_MODEL_DIR")):
        if d and os.path.isdir(os.path.join(d, "nequix")):
            return d
    print("SKIP: no model directory with nequix/ (set FUSEDNEQUIP_MODEL_DIR)")
    sys.exit(SKIP)


def run(*args, check=True):
    """Run the CLI; returns (exit code, stdout, stderr)."""
    p = subprocess.run([cli(), *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        print(f"fusednequip {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
        sys.exit(1)
    return p.returncode, p.stdout, p.stderr


def expect(c, label, args, code, *needles):
    """Run the CLI expecting exit `code` and a message on stderr containing every needle."""
    rc, out, err = run(*args, check=False)
    c.check(rc == code, f"{label}: exit code {rc}, expected {code} (stderr: {err.strip()})")
    c.check(rc >= 0, f"{label}: killed by signal {-rc}")
    for n in needles:
        c.check(n in err, f"{label}: message lacks {n!r}: {err.strip()}")
    print(f"{label}: exit {rc}: {err.strip()}")


def eval_frames(model, xyz_path, *opts):
    _, out, _ = run("eval", *opts, model, xyz_path)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def write_xyz(path, symbols, positions, cell=None, pbc=(True, True, True), append=False):
    with open(path, "a" if append else "w") as f:
        f.write(f"{len(symbols)}\n")
        head = "Properties=species:S:1:pos:R:3"
        if cell is not None:
            lat = " ".join(repr(float(x)) for row in cell for x in row)
            flags = " ".join("T" if p else "F" for p in pbc)
            head = f'Lattice="{lat}" {head} pbc="{flags}"'
        f.write(head + "\n")
        for s, p in zip(symbols, positions):
            f.write(f"{s} {p[0]!r} {p[1]!r} {p[2]!r}\n")


class Checker:
    def __init__(self, name):
        self.name = name
        self.failures = 0

    def check(self, ok, message):
        if not ok:
            self.failures += 1
            print("FAIL:", message)

    def finish(self):
        if self.failures:
            print(f"{self.name}: {self.failures} check(s) failed")
            sys.exit(1)
        print(f"{self.name}: all checks passed")
        sys.exit(0)
