"""fusednequip-convert on the nequip files of tests/fixtures/nequip:

* every nequip 0.6 deployed file (torch only) and every nequip >= 0.7 package and checkpoint
  (needs nequip) converts into exactly the committed .fnqm (header and arrays; the notes name
  the source file), so the accuracy test of the committed files covers the converter;
* files with an unsupported option fail with exit status 2 and a message naming the option;
* corrupt inputs (truncated archive, flipped bytes, not a zip, a zip of something else, a
  missing file) fail cleanly with exit status 2 and a message naming the file.

The converter runs under the first Python that can import what a file needs: $FNQ_CONVERT_PYTHON,
this interpreter, /usr/bin/python3 (Debian's python3-torch). Parts whose requirements are not
installed are reported as skipped; the test exits 77 (skipped) when no Python has torch.

$FNQ_NEQUIP_PYTHONS (Pythons with different nequip versions, separated by ':') adds the
foundation-like fixtures (fm_*, made by nequip 0.14, 0.16 and 0.19): each checkpoint is
packaged by the nequip version that made it, as a user gets it, and that package converts to
the committed .fnqm under every nequip version given (a package carries its own model code);
a ZBL species without an atomic number is refused.
"""
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from cliutil import SKIP, Checker, python_with

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "nequip")


def convert(exe, src, out):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    p = subprocess.run([exe, "-m", "fusednequip.convert", src, out], capture_output=True,
                       text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def nequip_version(exe):
    p = subprocess.run([exe, "-c", "import nequip; print(nequip.__version__)"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def minor(version):
    return ".".join(version.split()[-1].split(".")[:2])


def compare(c, src, out, name):
    got, want = read_fnqm(out), read_fnqm(os.path.join(FIXTURES, name + ".fnqm"))
    c.check(got[0] == want[0], f"{src}: header differs from the committed {name}.fnqm")
    for k, v in want[1].items():
        c.check(got[1].get(k) == v, f"{src}: array {k} differs")


def foundation_fixtures(c, tmp):
    """The fm_* fixtures across nequip versions (FNQ_NEQUIP_PYTHONS)."""
    pythons = {}
    for exe in filter(None, os.environ.get("FNQ_NEQUIP_PYTHONS", "").split(":")):
        v = nequip_version(exe)
        c.check(v is not None, f"FNQ_NEQUIP_PYTHONS: {exe} cannot import nequip")
        if v:
            pythons[minor(v)] = exe
    if not pythons:
        print("foundation-like fixtures across nequip versions: skipped (set "
              "FNQ_NEQUIP_PYTHONS)")
        return
    print(f"nequip versions: {', '.join(sorted(pythons))}")
    for ref_path in sorted(glob.glob(os.path.join(FIXTURES, "fm_*.json"))):
        name = os.path.basename(ref_path)[:-len(".json")]
        maker = minor(json.load(open(ref_path))["made_by"])
        if maker not in pythons:
            print(f"{name}: made by nequip {maker}, not given: skipped")
            continue
        ckpt = os.path.join(FIXTURES, name + ".ckpt")
        pkg = os.path.join(tmp, name + ".nequip.zip")
        built = subprocess.run([pythons[maker], "-m", "nequip.scripts.package", "build", ckpt,
                                pkg], capture_output=True, text=True, cwd=tmp)
        c.check(built.returncode == 0, f"nequip {maker} package build {name}: "
                                       f"{built.stderr.strip()[-500:]}")
        jobs = [(maker, ckpt)] + [(v, pkg) for v in sorted(pythons)] * (built.returncode == 0)
        for v, src in jobs:
            out = os.path.join(tmp, name + ".fnqm")
            rc, _, err = convert(pythons[v], src, out)
            label = f"{os.path.basename(src)} (made by nequip {maker}) with nequip {v}"
            c.check(rc == 0, f"{label}: exit {rc}: {err.strip()[-500:]}")
            if rc == 0:
                compare(c, label, out, name)
                print(f"{label}: converts to the committed {name}.fnqm")

    # a ZBL species without an atomic number (the checkpoint's buffer edited) is refused
    if "0.19" in pythons:
        exe = pythons["0.19"]
        bad = os.path.join(tmp, "zbl_no_z.ckpt")
        edit = ("import sys, torch; ck = torch.load(sys.argv[1], weights_only=False); "
                "k = [k for k in ck['state_dict'] if k.endswith('pair_potential.atomic_numbers')]; "
                "ck['state_dict'][k[0]][0] = 0; torch.save(ck, sys.argv[2])")
        p = subprocess.run([exe, "-c", edit, os.path.join(FIXTURES, "fm_l_like_zbl_4sp.ckpt"),
                            bad], capture_output=True, text=True)
        c.check(p.returncode == 0, f"editing the checkpoint: {p.stderr[-300:]}")
        rc, _, err = convert(exe, bad, os.path.join(tmp, "x.fnqm"))
        c.check(rc == 2 and "atomic numbers" in err and "chemical_species" in err and
                "Traceback" not in err, f"ZBL without atomic number: exit {rc}: {err[-300:]}")
        print(f"zbl_no_z.ckpt: {err.strip().splitlines()[-1] if err.strip() else ''}")


def read_fnqm(path):
    """(header without notes, {name: raw .npy bytes}) -- a reader independent of the writer"""
    data = open(path, "rb").read()
    nl = data.index(b"\n")
    header = json.loads(data[:nl])
    header.pop("notes", None)
    arrays, pos = {}, nl + 1
    import numpy as np
    f = io.BytesIO(data[pos:])
    for entry in header["arrays"]:
        start = f.tell()
        np.load(f)
        arrays[entry["name"]] = data[pos + start:pos + f.tell()]
    return header, arrays


def main():
    c = Checker("converter")
    torch_py = python_with("torch", "yaml", "numpy")
    if torch_py is None:
        print("SKIP: no Python with torch, PyYAML and NumPy (apt-get install python3-torch "
              "python3-yaml, or set FNQ_CONVERT_PYTHON)")
        sys.exit(SKIP)
    nequip_py = python_with("nequip", "numpy")
    print(f"torch: {torch_py}; nequip: {nequip_py or 'not installed: those parts skipped'}")
    tmp = tempfile.mkdtemp()
    try:
        jobs = [(torch_py, p) for p in sorted(glob.glob(os.path.join(FIXTURES, "classic_*.pth")))]
        if nequip_py:
            ckpts = sorted(glob.glob(os.path.join(FIXTURES, "current_*.ckpt")))
            jobs += [(nequip_py, p) for p in ckpts]
            # the .nequip.zip packages are not committed (they carry nequip's own source):
            # build them from the checkpoints, as the fixture generator did
            for ckpt in ckpts:
                pkg = os.path.join(tmp, os.path.basename(ckpt)[:-len(".ckpt")] + ".nequip.zip")
                built = subprocess.run([nequip_py, "-m", "nequip.scripts.package", "build", ckpt,
                                        pkg], capture_output=True, text=True, cwd=tmp)
                c.check(built.returncode == 0,
                        f"nequip-package build {os.path.basename(ckpt)}: "
                        f"{built.stderr.strip()[-500:]}")
                if built.returncode == 0:
                    jobs.append((nequip_py, pkg))
        c.check(len(jobs) >= 4, f"found only {len(jobs)} nequip files in {FIXTURES}")
        for exe, src in jobs:
            name = os.path.basename(src).split(".")[0]
            out = os.path.join(tmp, name + ".fnqm")
            rc, _, err = convert(exe, src, out)
            c.check(rc == 0, f"{os.path.basename(src)}: exit {rc}: {err.strip()[-500:]}")
            if rc != 0:
                continue
            compare(c, os.path.basename(src), out, name)
            print(f"{os.path.basename(src)}: converts to the committed {name}.fnqm")

        # unsupported options: the message names the option
        refusals = [(torch_py, "unsupported_classic_zbl.pth", ["ZBL", "PairPotentialTerm"])]
        if nequip_py:
            refusals += [(nequip_py, "unsupported_current_edge_cutoff.ckpt",
                          ["per_edge_type_cutoff"])]
        for exe, f, needles in refusals:
            rc, _, err = convert(exe, os.path.join(FIXTURES, f), os.path.join(tmp, "x.fnqm"))
            c.check(rc == 2, f"{f}: exit {rc}, expected 2 ({err.strip()[-300:]})")
            for n in needles:
                c.check(n in err, f"{f}: message lacks {n!r}: {err.strip()[-300:]}")
            c.check("Traceback" not in err, f"{f}: traceback instead of a message")
            print(f"{f}: {err.strip().splitlines()[-1]}")

        foundation_fixtures(c, tmp)

        # a pair term other than ZBL is refused by name (nequip 0.19's LennardJones does not
        # train with its model builders, SimpleLennardJones cannot be built by them: no
        # fixture file, so the converter's check is called on stand-ins of those modules)
        probe = ("import sys; sys.path.insert(0, sys.argv[1])\n"
                 "from fusednequip.convert.nequip.current import _pair_potential\n"
                 "from fusednequip.convert.errors import ConversionError\n"
                 "for kind in ('LennardJones', 'SimpleLennardJones'):\n"
                 "    try:\n"
                 "        _pair_potential(type(kind, (), {})(), 4.0, 6.0, 2, 'm.ckpt')\n"
                 "        print('accepted', kind)\n"
                 "    except ConversionError as e:\n"
                 "        print(e)\n")
        p = subprocess.run([torch_py, "-c", probe, os.path.join(REPO, "python")],
                           capture_output=True, text=True)
        for kind in ("LennardJones", "SimpleLennardJones"):
            c.check(f"pair_potential {kind} (model config key 'pair_potential'" in p.stdout,
                    f"{kind} not refused by name: {p.stdout}{p.stderr[-300:]}")
        print(p.stdout.strip())

        # corrupt inputs
        src = os.path.join(FIXTURES, "classic_l1_parity_2sp.pth")
        data = open(src, "rb").read()
        cases = {"truncated.pth": data[: len(data) // 2],
                 "tail-cut.pth": data[:-200],
                 "not-a-zip.pth": b"this is not a model\n" * 10}
        flipped = bytearray(data)
        member = zipfile.ZipFile(src).getinfo(
            [n for n in zipfile.ZipFile(src).namelist() if n.endswith("data.pkl")][0])
        flipped[member.header_offset + 200] ^= 0xFF  # inside data.pkl
        cases["flipped.pth"] = bytes(flipped)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("readme.txt", "hello")
        cases["other.zip"] = buf.getvalue()
        for f, blob in cases.items():
            p = os.path.join(tmp, f)
            open(p, "wb").write(blob)
            rc, _, err = convert(torch_py, p, os.path.join(tmp, "x.fnqm"))
            c.check(rc == 2, f"{f}: exit {rc}, expected 2 ({err.strip()[-300:]})")
            c.check(f in err and "Traceback" not in err,
                    f"{f}: message should name the file, without a traceback: {err[-300:]}")
            c.check(not os.path.exists(os.path.join(tmp, "x.fnqm")), f"{f}: wrote an output")
            print(f"{f}: {err.strip().splitlines()[-1] if err.strip() else '(no message)'}")
        # a readable file whose config does not match its weights
        mismatched = os.path.join(tmp, "mismatched.pth")
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(mismatched, "w") as zout:
            for item in zin.infolist():
                blob = zin.read(item.filename)
                if item.filename.endswith("/extra/config"):
                    blob = blob.replace(b"feature_irreps_hidden: 8x0e", b"feature_irreps_hidden: 7x0e")
                zout.writestr(item, blob)
        rc, _, err = convert(torch_py, mismatched, os.path.join(tmp, "x.fnqm"))
        c.check(rc == 2 and "mismatched.pth" in err and "weights" in err and
                "Traceback" not in err, f"config not matching the weights: exit {rc}: {err[-400:]}")
        print(f"mismatched.pth: {err.strip().splitlines()[-1] if err.strip() else ''}")
        rc, _, err = convert(torch_py, os.path.join(tmp, "missing.pth"), os.path.join(tmp, "x"))
        c.check(rc == 2 and "missing.pth" in err and "no such file" in err,
                f"missing file: exit {rc}: {err.strip()}")
    finally:
        shutil.rmtree(tmp)
    c.finish()


if __name__ == "__main__":
    main()
