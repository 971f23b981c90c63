"""Every .nqx file in the model directory loads, and `fusednequip info` reports its parameter
count, its cutoff and its species. The expected count is taken from the file itself by an
independent reader written here (JSON line, then .npy records: sum of the element counts of
the leaves up to the readout), and nequix-mp-1 must have 707,658 parameters (published).
"""
import ast
import glob
import json
import os
import re
import struct

from cliutil import Checker, model_dir, run


def count_params(path):
    """Sum of the element counts of the model's float32 arrays, and how many there are."""
    data = open(path, "rb").read()
    pos = data.index(b"\n") + 1
    shapes = []
    while pos < len(data) and data[pos:pos + 6] == b"\x93NUMPY":
        major = data[pos + 6]
        if major == 1:
            hlen = struct.unpack("<H", data[pos + 8:pos + 10])[0]
            start = pos + 10
        else:
            hlen = struct.unpack("<I", data[pos + 8:pos + 12])[0]
            start = pos + 12
        header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
        count = 1
        for s in header["shape"]:
            count *= s
        item = int(header["descr"][2:]) if header["descr"][1] in "fiu" else 1
        shapes.append((header["descr"], header["shape"], count))
        pos = start + hlen + count * item
    # the model's leaves are the float32 records; trailing extras (oam-1 config values) are scalars
    leaves = [s for s in shapes if s[0] == "<f4" and len(s[1]) >= 1]
    return sum(s[2] for s in leaves), len(leaves)


def main():
    d = model_dir()
    c = Checker("model loading")
    files = sorted(glob.glob(os.path.join(d, "nequix", "*.nqx")))
    c.check(len(files) == 6, f"expected the six Nequix models, found {len(files)}")
    for path in files:
        cfg = json.loads(open(path, "rb").readline())
        _, out, _ = run("info", path)
        m = re.search(r"^parameters: (\d+)$", out, re.M)
        c.check(m is not None, f"{path}: no parameter count in info output:\n{out}")
        if not m:
            continue
        got = int(m.group(1))
        want, n_leaves = count_params(path)
        name = os.path.basename(path)
        print(f"{name}: {got} parameters ({n_leaves} arrays), independent count {want}")
        c.check(got == want, f"{name}: info says {got} parameters, the file holds {want}")
        if name == "nequix-mp-1.nqx":
            c.check(got == 707658, f"nequix-mp-1 must have 707,658 parameters, info says {got}")
        cut = re.search(r"^cutoff: ([0-9.]+) A$", out, re.M)
        c.check(cut and float(cut.group(1)) == cfg["cutoff"], f"{name}: cutoff line wrong")
        sp = re.search(r"^species \((\d+)\):", out, re.M)
        c.check(sp and int(sp.group(1)) == len(cfg["atomic_numbers"]), f"{name}: species count")
    c.finish()


main()
