"""NequIP foundation-model architectures at their real widths (89 species, ZBL): converted
file size, load time, and agreement with nequip's own float64 outputs. CPU only.

    python bench/nequip_foundation_sizes.py OUTDIR [--cli build/cli/fusednequip] [--only L|XL]

Under a Python with nequip (0.19) installed: the fixture generator's recipe
(tests/fixtures/nequip/generate.py: one epoch of nequip-train for a real checkpoint,
nequip-package, nequip's float64 outputs on its four structures, one with two atoms
0.6-1.0 A apart) builds each model, then fusednequip-convert converts the package, and
`fusednequip eval` (float64, CPU) is compared with nequip's outputs. Prints one JSON line per
model: parameters, .fnqm size, the size the per-species folded self-connection would have
taken, load time (`fusednequip info`, best of 3), worst relative deviations.

Models (../shared/reference/foundation-models.md), seeded random weights, float64:
  L:  FullNequIPGNNModel, 5 x 128x0e+64x1o+32x2e+32x3o then 128x0e, type embedding 48,
      radial MLP 1 x 128, 8 trainable Bessels, p 5, r_max 6, ZBL
  XL: NequIPGNNModel, 6 layers, l_max 4, num_features [320, 96, 64, 32, 32], parity off,
      type embedding 32, radial MLP 1 x 128, 8 Bessels, p 5, r_max 6, ZBL
Everything made here (checkpoints, packages with nequip's code, .fnqm) stays out of the
repository.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "fixtures", "nequip"))
import generate  # noqa: E402

# H to Pu without Po to Ra: the 89 species of the published models
SPECIES_89 = [s for z, s in enumerate(
    "H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As "
    "Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd "
    "Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu"
    .split(), start=1) if not 84 <= z <= 88]
assert len(SPECIES_89) == 89

MODELS = {
    "L": ("nequip.model.FullNequIPGNNModel", dict(
        r_max=6.0, irreps_edge_sh="0e+1o+2e+3o",
        feature_irreps_hidden=["128x0e+64x1o+32x2e+32x3o"] * 5 + ["128x0e"],
        radial_mlp_depth=[1] * 6, radial_mlp_width=[128] * 6, type_embed_num_features=48,
        num_bessels=8, bessel_trainable=True, polynomial_cutoff_p=5, avg_num_neighbors=62.012)),
    "XL": ("nequip.model.NequIPGNNModel", dict(
        r_max=6.0, num_layers=6, l_max=4, parity=False, num_features=[320, 96, 64, 32, 32],
        type_embed_num_features=32, radial_mlp_depth=1, radial_mlp_width=128, num_bessels=8,
        polynomial_cutoff_p=5, avg_num_neighbors=62.012)),
}


def flat(x):
    return [float(v) for v in __import__("numpy").ravel(x)]


def rel(ours, ref):
    a, b = flat(ours), flat(ref)
    return max(abs(x - y) for x, y in zip(a, b)) / max(abs(v) for v in b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "cli", "fusednequip"))
    ap.add_argument("--only", choices=sorted(MODELS))
    args = ap.parse_args()
    out = os.path.abspath(args.outdir)
    os.makedirs(out, exist_ok=True)
    names = [args.only] if args.only else sorted(MODELS)
    todo = [(f"fm_real_{n.lower()}_zbl_89sp", (MODELS[n][0], SPECIES_89, MODELS[n][1]))
            for n in names]
    generate.FOUNDATION_MODELS.update({k: ("", v[1], v[0], v[2]) for k, v in todo})
    generate.current(out, todo)
    for name, _ in todo:
        pkg = glob.glob(f"/tmp/fnq-nequip-*/{name}.nequip.zip")[-1]
        fnqm = os.path.join(out, name + ".fnqm")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fusednequip.convert", pkg, fnqm], check=True,
                       env=env)
        t_convert = time.perf_counter() - t0
        loads = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run([args.cli, "info", fnqm], check=True, capture_output=True)
            loads.append(time.perf_counter() - t0)
        ref = json.load(open(os.path.join(out, name + ".json")))
        worst = {}
        for case, want in ref["cases"].items():
            got = json.loads(subprocess.run(
                [args.cli, "eval", "--dtype", "float64", "--device", "cpu", fnqm,
                 os.path.join(out, want["xyz"])], check=True, capture_output=True,
                text=True).stdout.splitlines()[0])
            for q in ("energy", "energies", "forces"):
                worst[q] = max(worst.get(q, 0), rel(got[q], want[q]))
            if "virial" in want:
                w = want["virial"]
                voigt = [w[0][0], w[1][1], w[2][2], w[1][2], w[0][2], w[0][1]]
                worst["virial"] = max(worst.get("virial", 0), rel(got["virial"], voigt))
        header = json.loads(open(fnqm, "rb").readline())
        shapes = {a["name"]: a["shape"] for a in header["arrays"]}
        sc = sum(v[1] for k, v in shapes.items() if k.endswith("self_connection"))
        k_embed = shapes["self_connection_coefficients"][1]
        print(json.dumps({
            "model": name, "made_by": ref["made_by"], "species": 89,
            "parameters": header["num_parameters"], "fnqm_bytes": os.path.getsize(fnqm),
            "folded_self_connection_bytes": 8 * 89 * sc,
            "factored_self_connection_bytes": 8 * k_embed * sc,
            "convert_s": round(t_convert, 1), "load_s_best_of_3": round(min(loads), 3),
            "max_rel_dev_float64": {k: float(f"{v:.2e}") for k, v in worst.items()},
            "cases": sorted(ref["cases"])}), flush=True)


if __name__ == "__main__":
    main()
