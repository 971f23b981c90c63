#!/usr/bin/env python3
"""Make the small synthetic .nqx seeds of the fuzz harness (tests/fuzz/seeds/nqx/).

The real Nequix models are 2.8 MB: a byte-level fuzzer spends nearly all its mutations on
their weights. These seeds are the same format with tiny architectures (a few hundred
values), so that mutations reach the config line and the record headers often. Their
leaves are made to match the config by asking the loader: start with the config line, append
a placeholder record, and replace it by a record of the shape that `fusednequip info` says it
expected, until the model loads. Weights are deterministic made-up numbers, not a trained
model. Standard library only.

    tests/fuzz/make_nqx_seeds.py build/cli/fusednequip tests/fuzz/seeds/nqx
"""
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

CONFIGS = {
    "tiny-l1-2sp.nqx": dict(atomic_numbers=[1, 8], hidden_irreps="4x0e+2x1o", lmax=1,
                            n_layers=2, radial_basis_size=4, radial_mlp_size=4,
                            radial_mlp_layers=1, layer_norm=True),
    "tiny-l3-3sp.nqx": dict(atomic_numbers=[79, 6, 14], hidden_irreps="4x0e+2x1o+2x2e+2x3o",
                            lmax=3, n_layers=3, radial_basis_size=3, radial_mlp_size=5,
                            radial_mlp_layers=2, layer_norm=False),
    "tiny-scalars-1sp.nqx": dict(atomic_numbers=[14], hidden_irreps="3x0e", lmax=2,
                                 n_layers=1, radial_basis_size=2, radial_mlp_size=2,
                                 radial_mlp_layers=0, layer_norm=True),
}
COMMON = dict(cutoff=4.0, radial_polynomial_p=6.0, shift=0.25, scale=1.5, avg_n_neighbors=12.0,
              index_weights=False)


def npy(shape, serial, dtype="<f4"):
    count = math.prod(shape)
    dims = "".join(f"{s}, " for s in shape).rstrip(" ") if len(shape) > 1 else \
        (f"{shape[0]}," if shape else "")
    head = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': ({dims}), }}"
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    vals = [0.2 + ((serial + i) * 0.6180339887) % 1.0 for i in range(count)]
    data = struct.pack(f"<{count}f", *vals)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + data


def build(cli, config, path):
    header = json.dumps({**COMMON, **config}).encode() + b"\n"
    leaves = []
    for _ in range(1000):
        open(path, "wb").write(header + b"".join(leaves))
        p = subprocess.run([cli, "info", path], capture_output=True, text=True)
        if p.returncode == 0:
            return
        m = re.search(r"array (\d+) .*expected float shape \(([\d, ]*)\)", p.stderr)
        if m and int(m.group(1)) == len(leaves) - 1:
            shape = [int(x) for x in m.group(2).split(",") if x.strip()]
            leaves[-1] = npy(shape, 7 * len(leaves))
        elif "file ends before array" in p.stderr:
            leaves.append(npy([1], 0))
        else:
            sys.exit(f"{path}: unexpected: {p.stderr.strip()}")
    sys.exit(f"{path}: no end")


def main():
    cli, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name, config in CONFIGS.items():
        build(cli, config, os.path.join(out, name))
        print(f"{name}: {os.path.getsize(os.path.join(out, name))} bytes")


main()
