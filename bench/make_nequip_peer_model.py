"""Make the NequIP peer model of bench_nequip_peers.py with the current nequip (>= 0.7).

    python bench/make_nequip_peer_model.py make OUTDIR       # CPU: checkpoint, package, .fnqm, check
    python bench/make_nequip_peer_model.py compile OUTDIR    # GPU: AOTInductor + OpenEquivariance
    python bench/make_nequip_peer_model.py check OUTDIR      # CPU: the conversion check again

`make` builds a model of the architecture `--arch` names, 5 species Si O C H N, float32:
  m      (default) NequIPGNNModel, NequIP-M size: 4 layers, l_max 2, 64 channels, parity off
         as in nequip's presets, radial MLP 8 -> 128 -> weights, r_max 5 A, no pair potential
         (--layers, --l-max, --features, --parity, --r-max change it)
  oam-l  NequIP-OAM-L's architecture at its real widths (MODELS["L"] of
         bench/nequip_foundation_sizes.py): FullNequIPGNNModel, 5 x 128x0e+64x1o+32x2e+32x3o
         then 128x0e, type embedding 48, radial MLP 1 x 128, 8 trainable Bessels, p 5, r_max
         6 A, ZBL
  xl     NequIP-OAM-XL's (MODELS["XL"]): NequIPGNNModel, 6 layers, l_max 4, num_features
         [320, 96, 64, 32, 32], parity off, type embedding 32, the same radial part and ZBL
(oam-l and xl take avg_num_neighbors 44, the mixed crystal's within 6 A), the way nequip makes
one: `nequip-train` for one epoch on a few random labelled 8-atom cells
(only so that nequip writes a real checkpoint; the weights are nequip's seeded initialisation
moved by one epoch of Adam), then `nequip-package build` (OUTDIR/nequip-peer.nequip.zip), then
our converter (OUTDIR/nequip-peer.fnqm). It then checks the conversion on the CPU (check()):
fusednequip float64 against nequip's float64 twin of the model (same weights, model_dtype
float64, converted from its own checkpoint, OUTDIR/nequip-peer-float64.*) and the benchmark's
.fnqm in float32 against nequip's float32 model, on a 64-atom mixed crystal and a 12-atom
triclinic cell; it prints the largest differences (exit status 1 above 1e-10 / 1e-5 relative).
`check OUTDIR` repeats only the check.

`compile` runs `nequip-compile --mode aotinductor --target pair_nequip --device cuda --modifiers
enable_OpenEquivariance` on the package (OUTDIR/nequip-peer-oeq.nequip.pt2; `--target ase` adds
the total energy and the stress, which nequip's ASE calculator needs:
OUTDIR/nequip-peer-oeq-ase.nequip.pt2): it must run on the GPU machine (AOTInductor compiles for
the device it finds). `--accel cueq`: nequip's enable_CuEquivariance modifier instead
(nequip-peer-cueq[-ase].nequip.pt2; needs cuequivariance-torch and its ops package); `--accel
none` (or `--no-oeq`): e3nn tensor products (nequip-peer[-ase].nequip.pt2); `--accel triton`:
an Allegro package's Triton contracter (nequip-allegro's enable_TritonContracter).

openequivariance (and, for `--accel cueq`, cuequivariance and cuequivariance_torch) must be
importable when `make` packages the model (on the CPU their source trees or pure-Python wheels on
PYTHONPATH are enough): torch.package lists an external module only if it was imported, and
nequip-compile's modifiers need it listed. On the GPU machine, use its wheel
with the precompiled extension (bench/NOTES.md): with the JIT-built one, nequip-compile's
AOTInductor run crashed.

OUTDIR/nequip-peer.json records the options. The files made here hold nequip's and e3nn's code
(the package) and model weights: they stay out of the repository.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mixed_workload import SPECIES, mixed_crystal  # noqa: E402

NAME = "nequip-peer"

# nequip's training config, as the fixture generator writes it (one epoch on the CPU)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "fixtures", "nequip"))
from generate import CURRENT_CONFIG as CONFIG, _ZBL  # noqa: E402


def model_options(args):
    """(type names, nequip's model builder, its options) for --arch."""
    types = args.species.split(",")
    rng = np.random.default_rng(args.seed)
    if args.arch == "m":
        target, model = "nequip.model.NequIPGNNModel", dict(
            r_max=args.r_max, num_layers=args.layers, l_max=args.l_max, parity=args.parity,
            num_features=args.features, radial_mlp_depth=1, radial_mlp_width=128,
            num_bessels=8, polynomial_cutoff_p=6,
            avg_num_neighbors=args.avg_num_neighbors or 28.0)
    else:  # the published architectures at their real widths, with ZBL
        from nequip_foundation_sizes import MODELS
        target, model = MODELS[{"oam-l": "L", "xl": "XL"}[args.arch]]
        model = dict(model, avg_num_neighbors=args.avg_num_neighbors or 44.0,
                     pair_potential=dict(_ZBL, chemical_species=types))
    model.update(
        per_type_energy_scales={t: float(v) for t, v in zip(types, rng.uniform(0.5, 1.5,
                                                                               len(types)))},
        per_type_energy_shifts={t: float(v) for t, v in zip(types, rng.uniform(-3, 1,
                                                                               len(types)))})
    return types, target, model


def make(args):
    import torch
    import yaml
    from ase.calculators.singlepoint import SinglePointCalculator
    from ase.io import write

    out = os.path.abspath(args.outdir)
    os.makedirs(out, exist_ok=True)
    types, target, model = model_options(args)
    work = tempfile.mkdtemp(prefix="fnq-nequip-peer-")
    rng = np.random.default_rng(1000 + args.seed)
    frames = []
    for k in range(4):  # labels only so that nequip-train runs one epoch
        a = mixed_crystal(1, types, seed=100 + k, rattle=0.15)
        a.calc = SinglePointCalculator(a, energy=float(rng.normal()),
                                       forces=rng.normal(size=(len(a), 3)))
        frames.append(a)
    data = os.path.join(work, "data.xyz")
    write(data, frames, format="extxyz")
    model_yaml = "\n".join("    " + line for line in yaml.safe_dump(
        model, default_flow_style=False, width=1000).splitlines())
    ckdir = os.path.join(work, "ck")
    with open(os.path.join(work, "config.yaml"), "w") as f:
        f.write(CONFIG.format(types=json.dumps(types), data=data, r_max=model["r_max"],
                              ckdir=ckdir, seed=args.seed, dtype=args.dtype, model=model_yaml,
                              target=target,
                              mapper_key="model_type_names"))
    subprocess.run([sys.executable, "-m", "nequip.scripts.train", "-cp", work, "-cn", "config",
                    f"hydra.run.dir={work}/run"], check=True, cwd=work)
    ckpt = os.path.join(out, NAME + ".ckpt")
    torch.save(torch.load(os.path.join(ckdir, "last.ckpt"), map_location="cpu",
                          weights_only=False), ckpt)
    pkg = os.path.join(out, NAME + ".nequip.zip")
    # torch.package records an external module only when it is imported while packaging:
    # without openequivariance importable here, nequip-compile's enable_OpenEquivariance
    # later fails on the package ("No module named openequivariance in self-contained
    # archive"). Its source tree on PYTHONPATH is enough (no GPU or build needed).
    import importlib.util
    for mod, modifier in (("openequivariance", "enable_OpenEquivariance"),
                          ("cuequivariance_torch", "enable_CuEquivariance")):
        if importlib.util.find_spec(mod) is None:
            print(f"make_nequip_peer_model: {mod} is not importable: the package will not "
                  f"compile with --modifiers {modifier} (bench/NOTES.md)", file=sys.stderr,
                  flush=True)
    subprocess.run([sys.executable, "-m", "nequip.scripts.package", "build", ckpt, pkg],
                   check=True, cwd=work)
    fnqm = os.path.join(out, NAME + ".fnqm")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.dirname(HERE), "python") + os.pathsep + \
        env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-m", "fusednequip.convert", pkg, fnqm], check=True,
                   env=env)
    import nequip
    with open(os.path.join(out, NAME + ".json"), "w") as f:
        json.dump({"made_by": "nequip " + nequip.__version__, "torch": torch.__version__,
                   "arch": args.arch, "model": target, "model_dtype": args.dtype,
                   "type_names": types, "options": model,
                   "files": [os.path.basename(p) for p in (ckpt, pkg, fnqm)]}, f, indent=1)
    if not args.no_check:
        sys.exit(check(ckpt, fnqm, types, model["r_max"], out))


def float64_twin(ckpt_path, out_path):
    """Write nequip's checkpoint of the model rebuilt with model_dtype float64: the float32
    weights, exactly, in float64; the constants nequip derives at construction (1 /
    sqrt(avg_num_neighbors), the radial MLP's normalisation, e3nn's Wigner 3j tables) in
    float64."""
    import torch
    from e3nn import o3
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)

    def to64(node):
        if isinstance(node, dict):
            return {k: ("float64" if k == "model_dtype" else to64(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [to64(v) for v in node]
        return node
    ckpt["hyper_parameters"] = to64(ckpt["hyper_parameters"])
    # e3nn's compiled tensor products keep their Wigner 3j tables as buffers in the state dict,
    # float32 in a float32 model: the twin gets them in float64 (checked to be those tables)
    sd = ckpt["state_dict"]
    for key in list(sd):
        m = re.search(r"\._w3j_(\d+)_(\d+)_(\d+)$", key)
        if m:
            w = o3.wigner_3j(*(int(g) for g in m.groups()), dtype=torch.float64)
            assert torch.allclose(w, sd[key].double(), rtol=0, atol=1e-6), key
            sd[key] = w
    torch.save(ckpt, out_path)


def check(ckpt, fnqm, types, r_max, out):
    """fusednequip's CPU path against nequip's eager model, on a 64-atom mixed crystal and a
    12-atom triclinic cell:
      float64: the float64 twin (float64_twin), converted, against nequip's twin (bar 1e-10);
      float32: the benchmark's .fnqm (from the float32 package) against nequip's float32 model
               (bar 1e-5);
      and, for the record, the benchmark's .fnqm in float64 against the twin: the float32
      package holds two derived constants rounded to float32, ~1e-8 relative.
    Returns the exit status (0: both bars met)."""
    import torch
    from ase import Atoms
    from nequip.data import AtomicDataDict, from_ase
    from nequip.data.transforms import NeighborListTransform
    from nequip.model.saved_models import load_saved_model
    from nequip.utils.global_state import set_global_state
    from fusednequip import Context, Model
    from fusednequip.convert.cli import convert

    set_global_state()
    twin_ckpt = os.path.join(out, NAME + "-float64.ckpt")
    twin_fnqm = os.path.join(out, NAME + "-float64.fnqm")
    float64_twin(ckpt, twin_ckpt)
    convert(twin_ckpt, twin_fnqm)
    nl = NeighborListTransform(r_max=r_max)
    type_of = {s: k for k, s in enumerate(types)}
    ref64 = load_saved_model(twin_ckpt, compile_mode="eager").eval()
    ref32 = load_saved_model(ckpt, compile_mode="eager").eval()
    bench_model, twin_model = Model(fnqm), Model(twin_fnqm)

    def nequip_eval(model, atoms):
        data = nl(from_ase(atoms))
        data[AtomicDataDict.ATOM_TYPE_KEY] = torch.as_tensor(
            [type_of[s] for s in atoms.get_chemical_symbols()])
        o = model(data)
        v = o["virial"].detach().double().numpy().reshape(3, 3)
        return (float(o["total_energy"].detach().sum()), o["forces"].detach().double().numpy(),
                np.array([v[0, 0], v[1, 1], v[2, 2], v[1, 2], v[0, 2], v[0, 1]]))

    def fnq_eval(model, dtype, atoms):
        ctx = Context(model, device="cpu", dtype=dtype)
        sp = model.species_indices(atoms.get_chemical_symbols())
        e, _, f, virial = ctx.compute(atoms.positions, sp, atoms.cell.array, atoms.pbc)
        return e, f, virial  # virial: Voigt xx yy zz yz xz xy, -dE/d(strain) as nequip's

    tri = np.array([[6.2, 0.0, 0.0], [1.1, 5.8, 0.0], [-0.7, 0.9, 6.5]])
    inv = np.linalg.inv(tri)
    rng = np.random.default_rng(7)
    pts = []
    while len(pts) < 12:
        p = rng.uniform(0, 1, 3) @ tri
        if all(np.linalg.norm(((p - q) @ inv - np.round((p - q) @ inv)) @ tri) >= 1.4
               for q in pts):
            pts.append(p)
    structs = {"mixed_64": mixed_crystal(2, types, seed=3, rattle=0.2),
               "triclinic_12": Atoms([types[k % len(types)] for k in range(12)],
                                     positions=np.array(pts), cell=tri, pbc=True)}
    worst = {}
    for name, atoms in structs.items():
        r64, r32 = nequip_eval(ref64, atoms), nequip_eval(ref32, atoms)
        for label, ours, ref in (
                ("float64: fnq (twin .fnqm) vs nequip float64 twin",
                 fnq_eval(twin_model, "float64", atoms), r64),
                ("float32: fnq (bench .fnqm) vs nequip float32",
                 fnq_eval(bench_model, "float32", atoms), r32),
                ("record: fnq float64 (bench .fnqm) vs nequip float64 twin",
                 fnq_eval(bench_model, "float64", atoms), r64)):
            d = [abs(ours[0] - ref[0]), np.abs(ours[1] - ref[1]).max(),
                 np.abs(ours[2] - ref[2]).max()]
            rel = max(d[0] / abs(ref[0]), d[1] / np.abs(ref[1]).max(),
                      d[2] / np.abs(ref[2]).max())
            key = label.split(":")[0]
            worst[key] = max(worst.get(key, 0.0), rel)
            print(f"{name} ({len(atoms)} atoms) {label}: |dE| {d[0]:.2e} eV (E {ref[0]:.6f}), "
                  f"max |dF| {d[1]:.2e} eV/A (max |F| {np.abs(ref[1]).max():.3f}), "
                  f"max |dvirial| {d[2]:.2e} eV; largest relative {rel:.2e}")
    ok64, ok32 = worst["float64"] < 1e-10, worst["float32"] < 1e-5
    print(f"largest relative deviation: float64 {worst['float64']:.2e} "
          f"({'ok' if ok64 else 'FAILED'}, bar 1e-10), float32 {worst['float32']:.2e} "
          f"({'ok' if ok32 else 'FAILED'}, bar 1e-5), bench .fnqm in float64 vs the twin "
          f"{worst['record']:.2e} (float32-rounded constants)", flush=True)
    return 0 if ok64 and ok32 else 1


# triton: nequip-allegro's Triton contracter, for an Allegro package in OUTDIR (made by
# tests/fixtures/allegro/generate.py, scripts/gpu/gpu-allegro.sh)
MODIFIERS = {"oeq": "enable_OpenEquivariance", "cueq": "enable_CuEquivariance",
             "triton": "enable_TritonContracter", "none": None}


def compiled_path(outdir, accel, target):
    """OUTDIR/nequip-peer[-oeq|-cueq][-ase].nequip.pt2"""
    return os.path.join(os.path.abspath(outdir), NAME + ("" if accel == "none" else "-" + accel)
                        + ("-ase" if target == "ase" else "") + ".nequip.pt2")


def compile_aot(args):
    out = os.path.abspath(args.outdir)
    pkg = os.path.join(out, NAME + ".nequip.zip")
    accel = "none" if args.no_oeq else args.accel
    target = compiled_path(out, accel, args.target)
    # pair_nequip: nequip's LAMMPS outputs (per-atom energies, forces, virial), what our model
    # mode computes; ase: per-atom and total energy, forces, stress (nequip's ASE calculator).
    # On the lent machines a package loads only with libstdc++ preloaded
    # (scripts/gpu/gpu-nequip-env.sh, bench/NOTES.md).
    cmd = [sys.executable, "-m", "nequip.scripts.compile", pkg, target, "--mode", "aotinductor",
           "--device", args.compile_device, "--target", args.target]
    if MODIFIERS[accel]:
        cmd += ["--modifiers", MODIFIERS[accel]]
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    print(f"wrote {target}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("make", "compile", "check"))
    ap.add_argument("outdir")
    ap.add_argument("--arch", default="m", choices=("m", "oam-l", "xl"),
                    help="make: the architecture (above); m takes the options below")
    ap.add_argument("--species", default=",".join(SPECIES))
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--l-max", type=int, default=2)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--parity", action="store_true", help="odd and even irreps of each l "
                    "(nequip's NequIPGNNModel default; twice the paths)")
    ap.add_argument("--r-max", type=float, default=5.0)
    ap.add_argument("--avg-num-neighbors", type=float,
                    help="default: the mixed crystal's, ~28 within 5 A (m), ~44 within 6 A")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--accel", default="oeq", choices=sorted(MODIFIERS),
                    help="compile: the tensor-product kernels (nequip's modifier)")
    ap.add_argument("--no-oeq", action="store_true", help="compile: --accel none")
    ap.add_argument("--compile-device", default="cuda", choices=("cuda", "cpu"),
                    help="compile: cpu (with --accel none) only to try the scripts")
    ap.add_argument("--target", default="pair_nequip", choices=("pair_nequip", "ase"),
                    help="compile: nequip-compile's target (the bench reads either)")
    args = ap.parse_args()
    if args.step == "make":
        make(args)
    elif args.step == "compile":
        compile_aot(args)
    else:
        out = os.path.abspath(args.outdir)
        with open(os.path.join(out, NAME + ".json")) as f:
            made = json.load(f)
        sys.exit(check(os.path.join(out, NAME + ".ckpt"), os.path.join(out, NAME + ".fnqm"),
                       made["type_names"], made["options"]["r_max"], out))


if __name__ == "__main__":
    main()
