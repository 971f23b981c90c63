"""SevenNet checkpoints converted by fusednequip-convert and evaluated by `fusednequip eval`
against sevenn's own outputs (tests/fixtures/sevenn, made by generate.py there with sevenn
0.13.0): float64 to 1e-10 relative (sevenn's model cast to float64 with exact Clebsch-Gordan
coefficients), float32 to 1e-5 relative of the float64 reference; energy, per-atom energies,
forces, and for periodic structures stress and virial (the per-atom virials summed).

The pretrained checkpoints are read from the installed sevenn package (never copied here):
$FNQ_SEVENN_DIR, else the package found by this interpreter (CTest: build/venv's) or
/usr/bin/python3 (importlib.util.find_spec: sevenn itself is not imported, so `pip install
--no-deps sevenn` is enough). The converter runs under the first Python with torch
($FNQ_CONVERT_PYTHON, this one, /usr/bin/python3). Exits 77 (skipped) when either is missing.

Models using a feature the core does not have yet (parity,
per-species self-connection, universal species) must be refused with exit status 2 and the
feature named; the test fails if one of them converts without its check being added here.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

from cliutil import SKIP, Checker, python_with, rel_dev, run, sevenn_site

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "sevenn")
TOL = {"float64": 1e-10, "float32": 1e-5}
DEVICE = os.environ.get("FNQ_FIXTURE_DEVICE", "cpu")
# fixture -> what the converter must name when it refuses the model (not supported yet)
REFUSED = {}


def check_modal_refusals(c, name, model):
    """a multi-modal model without a modality, or with one it lacks, is refused naming them"""
    xyz = os.path.join(FIXTURES, "sevenn.molecule.xyz")
    for extra, want in (([], "choose one"), (["--modal", "NOPE"], "no modality 'NOPE'")):
        rc, _, err = run("eval", "--device", DEVICE, *extra, model, xyz, check=False)
        c.check(rc == 2 and want in err and "modalities:" in err,
                f"{name}: eval {' '.join(extra) or 'without --modal'}: expected exit 2 naming "
                f"the modalities, got {rc}: {err.strip()}")


def main():
    c = Checker(f"sevenn fixtures ({DEVICE})")
    exe, site = python_with("torch", "numpy"), sevenn_site()
    if exe is None or site is None:
        print(f"SKIP: {'no Python with torch' if exe is None else 'no sevenn package'} "
              "(pip install --no-deps sevenn, or set FNQ_SEVENN_DIR)")
        return SKIP
    refs = sorted(glob.glob(os.path.join(FIXTURES, "*.json")))
    c.check(len(refs) >= 9, f"expected 9 fixture files in {FIXTURES}, found {len(refs)}")
    tmp = tempfile.mkdtemp(prefix="fnq-sevenn-")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    worst, ran = {}, 0
    for ref_path in refs:
        name = os.path.basename(ref_path)[:-5]
        ref = json.load(open(ref_path))
        ckpt = ref["checkpoint"]
        ckpt = os.path.join(site, ckpt) if ckpt.startswith("sevenn/") else os.path.join(FIXTURES, ckpt)
        if not os.path.exists(ckpt) and os.environ.get("FNQ_SEVENN_DIR"):
            # a partial copy of the package (a GPU machine's carry): what it holds is tested
            print(f"{name}: {ckpt} is not in $FNQ_SEVENN_DIR, left out")
            continue
        model = os.path.join(tmp, name + ".fnqm")
        p = subprocess.run([exe, "-m", "fusednequip.convert", ckpt, model], capture_output=True,
                           text=True, env=env)
        if name in REFUSED:
            c.check(p.returncode == 2 and REFUSED[name] in p.stderr,
                    f"{name}: expected a refusal naming {REFUSED[name]!r}, got exit "
                    f"{p.returncode}: {p.stderr.strip()} (supported now? check it here)")
            print(f"{name}: refused as expected: {p.stderr.strip().splitlines()[-1]}")
            continue
        c.check(p.returncode == 0, f"{name}: conversion failed ({p.returncode}): {p.stderr}")
        if p.returncode != 0:
            continue
        if DEVICE != "cpu":
            rc, _, err = run("eval", "--device", DEVICE, model,
                             os.path.join(FIXTURES, "sevenn.molecule.xyz"), check=False)
            if rc != 0 and ("has no CUDA backend" in err or "no usable GPU" in err):
                print(f"SKIP: no usable {DEVICE} device: {err.strip()}")
                return SKIP
        modal = ["--modal", ref["modal"]] if ref.get("modal") else []
        if modal:
            check_modal_refusals(c, name, model)
        for case, want in sorted(ref["cases"].items()):
            xyz = os.path.join(FIXTURES, f"sevenn.{case}.xyz")
            exact = want["float64"]
            for dtype, tol in TOL.items():
                if dtype == "float32" and case == "close_pair":
                    tol = 1e-4  # two atoms 1 A apart: float32 rounding of the steep repulsion
                _, out, _ = run("eval", "--dtype", dtype, "--device", DEVICE, *modal, model, xyz)
                got = json.loads(out.splitlines()[0])
                ran += 1
                c.check(got["nedges"] == want["n_edges"],
                        f"{name} {case}: {got['nedges']} edges, sevenn {want['n_edges']}")
                pairs = [("energy", got["energy"], exact["energy"]),
                         ("energies", got["energies"], exact["energies"]),
                         ("forces", got["forces"], exact["forces"])]
                if "stress" in exact:
                    total = [sum(v[k] for v in exact["atomic_virial"]) for k in range(6)]
                    pairs += [("stress", got["stress"], exact["stress"]),
                              ("virial", got["virial"], total)]
                for q, ours, theirs in pairs:
                    d = rel_dev(ours, theirs)
                    worst[(dtype, q)] = max(worst.get((dtype, q), 0.0), d)
                    c.check(d <= tol, f"{name} {case} {dtype} {q}: relative deviation "
                                      f"{d:.3e} > {tol:g}")
    c.check(ran > 0, "no SevenNet model was evaluated")
    for (dtype, q), d in sorted(worst.items()):
        print(f"worst relative deviation ({DEVICE}) {dtype} {q}: {d:.2e}")
    c.finish()
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
