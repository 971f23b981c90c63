"""Every converted NequIP fixture model (tests/fixtures/nequip: made by nequip 0.6.2 and by a
current nequip, see generate.py there) evaluated by `fusednequip eval` equals nequip's own
float64 outputs on each of its structures (periodic triclinic, a cell smaller than twice the
cutoff, a molecule): to 1e-10 relative in float64 and 1e-5 relative in float32, for the
energy, per-atom energies, forces, stress and virial.

Relative means max |ours - nequip| / max |nequip| over the components of one quantity, so
that near-zero components are held to the scale of the quantity. Prints the worst relative
deviation per quantity and precision (the figures quoted in docs/models.md).

With FNQ_FIXTURE_DEVICE=cuda (CTest gpu_nequip_fixtures) the same runs on the GPU, where every
fixture must run (ZBL and l = 4 included), and the test exits 77 (skipped) when this build or
machine has no GPU.
"""
import glob
import json
import os
import sys

from cliutil import SKIP, Checker, rel_dev, run

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.environ.get("FNQ_NEQUIP_FIXTURES",
                          os.path.join(HERE, "..", "fixtures", "nequip"))
TOL = {"float64": 1e-10, "float32": 1e-5}
DEVICE = os.environ.get("FNQ_FIXTURE_DEVICE", "cpu")  # "cuda": the same check on the GPU


def voigt(m):
    """ours: Voigt xx yy zz yz xz xy; nequip: the 3x3 tensor"""
    return [m[0][0], m[1][1], m[2][2], m[1][2], m[0][2], m[0][1]]


def main():
    c = Checker(f"nequip fixtures ({DEVICE})")
    refs = sorted(glob.glob(os.path.join(FIXTURES, "*.json")))
    c.check(len(refs) >= 13, f"expected at least 13 fixture models in {FIXTURES}, found "
                            f"{len(refs)}")
    worst = {}
    for ref_path in refs:
        ref = json.load(open(ref_path))
        model = os.path.join(FIXTURES, ref["model"] + ".fnqm")
        if DEVICE != "cpu":
            rc, _, err = run("eval", "--device", DEVICE, model,
                             os.path.join(FIXTURES, ref["cases"]["molecule"]["xyz"]),
                             check=False)
            if rc != 0 and ("has no CUDA backend" in err or "no usable GPU" in err):
                print(f"SKIP: no usable {DEVICE} device: {err.strip()}")
                sys.exit(SKIP)
            # every fixture runs on the GPU: ZBL and l = 4 (the foundation-like models) too
            c.check(rc == 0, f"{ref['model']}: refused on {DEVICE} (exit {rc}): {err}")
            if rc != 0:
                continue
        for case, want in sorted(ref["cases"].items()):
            xyz = os.path.join(FIXTURES, want["xyz"])
            for dtype, tol in TOL.items():
                _, out, _ = run("eval", "--dtype", dtype, "--device", DEVICE, model, xyz)
                got = json.loads(out.splitlines()[0])
                pairs = [("energy", got["energy"], want["energy"]),
                         ("energies", got["energies"], want["energies"]),
                         ("forces", got["forces"], want["forces"])]
                if "stress" in want:
                    # ours: Voigt xx yy zz yz xz xy; nequip: the 3x3 tensor
                    pairs.append(("stress", got["stress"], voigt(want["stress"])))
                    pairs.append(("virial", got["virial"], voigt(want["virial"])))
                else:
                    c.check("stress" not in got, f"{ref['model']} {case}: stress without a cell")
                for q, ours, theirs in pairs:
                    d = rel_dev(ours, theirs)
                    key = (ref["made_by"].split(".")[1] == "6", dtype, q)
                    worst[key] = max(worst.get(key, 0.0), d)
                    c.check(d <= tol, f"{ref['model']} {case} {dtype} {q}: relative deviation "
                                      f"{d:.3e} > {tol:g}")
    for (classic, dtype, q), d in sorted(worst.items()):
        print(f"worst relative deviation ({DEVICE}), "
              f"{'nequip 0.6' if classic else 'nequip >= 0.7'} {dtype} {q}: {d:.2e}")
    c.finish()


if __name__ == "__main__":
    sys.exit(main())
