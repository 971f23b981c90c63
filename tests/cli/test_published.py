"""The published Nequix reference values (../shared/reference/nequix_published_values.json:
nequix-mp-1 and nequix-oam-1, relaxed and perturbed 2-atom Si) through `fusednequip eval`.

Tolerance: the one of the test that produced the values (atomicarchitects/nequix
tests/test_calculator.py: numpy allclose with atol = rtol = 1e-5), i.e.
|ours - published| <= 1e-5 + 1e-5 |published|, on energy, forces and stress. The largest
absolute deviation is printed too: the published numbers are float32 results, so they carry
rounding of order 1e-5 eV in the energy themselves.
"""
import json
import os
import sys
import tempfile

from cliutil import Checker, eval_frames, model_dir, write_xyz

ATOL = RTOL = 1e-5


def main():
    ref_path = os.environ.get("FNQ_PUBLISHED_VALUES")
    if not ref_path or not os.path.exists(ref_path):
        print(f"SKIP: published values file not found ({ref_path})")
        sys.exit(77)
    model_dir()
    ref = json.load(open(ref_path))
    c = Checker("published Nequix values")
    worst = {"energy": 0.0, "forces": 0.0, "stress": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for case, st in ref["structures"].items():
            xyz = os.path.join(tmp, f"{case}.xyz")
            write_xyz(xyz, st["symbols"], st["positions"], st["cell"], st["pbc"])
            for model, want in ref["values"][case].items():
                for dtype in ("float64", "float32"):
                    got = eval_frames(model, xyz, "--dtype", dtype, "--device", "cpu")[0]
                    pairs = [("energy", [got["energy"]], [want["energy"]])]
                    pairs.append(("forces", sum(got["forces"], []), sum(want["forces"], [])))
                    pairs.append(("stress", got["stress"], want["stress"]))
                    for key, a, b in pairs:
                        for x, y in zip(a, b):
                            d = abs(x - y)
                            worst[key] = max(worst[key], d)
                            c.check(d <= ATOL + RTOL * abs(y),
                                    f"{model} {case} {dtype} {key}: {x!r} vs published {y!r} "
                                    f"(|diff| {d:.3e})")
                    print(f"{model:13s} {case:9s} {dtype}: E = {got['energy']:.8f} "
                          f"(published {want['energy']:.6f}, diff {got['energy'] - want['energy']:+.2e})")
    print("largest absolute deviations: " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    c.finish()


main()
