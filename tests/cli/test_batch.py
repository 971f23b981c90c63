"""`fusednequip eval --batch N` against the same frames one at a time: a multi-frame extended
XYZ of mixed structures (triclinic periodic cell, slab, molecule, a cell smaller than the
cutoff, a larger crystal; several sizes and species) with a NequIP fixture model (ZBL, l = 4).
Every frame's energy, per-atom energies, forces, virial and stress equal the single call's to
1e-12 relative in float64, for batches of 2, 5 and all frames (a last batch shorter than N);
the lines come in the frames' order; a frame with a NaN coordinate inside a batch fails the
run naming that frame's line and the atom, and no line of its batch is printed.
FNQ_FIXTURE_DEVICE=cuda runs it on the GPU (CTest gpu_cli_batch; 77 without one).
"""
import math
import os
import random

from cliutil import Checker, SKIP, eval_frames, expect, rel_dev, run, write_xyz

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "fixtures", "nequip", "fm_xl_like_l4_zbl_3sp.fnqm")
DEVICE = os.environ.get("FNQ_FIXTURE_DEVICE", "cpu")
TOL = 1e-12


def frames(rng):
    """(symbols, positions, cell or None, pbc) of H, Si, Pt structures, rattled"""
    def rattle(pos, amount=0.05):
        return [[x + rng.gauss(0.0, amount) for x in p] for p in pos]

    def cart(frac, cell):
        return [[sum(f[k] * cell[k][d] for k in range(3)) for d in range(3)] for f in frac]

    tri = [[3.9, 0.0, 0.0], [0.8, 3.7, 0.0], [0.5, 0.6, 4.1]]
    small = [[2.6, 0.2, 0.0], [0.0, 2.7, 0.1], [0.3, 0.0, 2.5]]
    cube = [[7.6, 0.0, 0.0], [0.0, 7.6, 0.0], [0.0, 0.0, 7.6]]
    fcc = [[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]]
    big = [[(i + f[0]) / 2, (j + f[1]) / 2, (k + f[2]) / 2] for i in (0, 1) for j in (0, 1)
           for k in (0, 1) for f in fcc]
    out = [
        (["Si", "Pt", "H", "Si"], rattle(cart([[0, 0, 0], [.5, .5, 0], [.5, 0, .5], [.1, .6, .6]],
                                              tri)), tri, (True, True, True)),
        (["Si", "H"] * 4, rattle([[x, y, 8.0 + 1.6 * b] for x in (0.0, 2.5) for y in (0.0, 2.5)
                                  for b in (0, 1)]), [[5, 0, 0], [0, 5, 0], [0, 0, 20]],
         (True, True, False)),
        (["Pt", "Si", "H", "Si"], rattle([[0, 0, 0], [2.3, 0, 0], [0, 1.6, 0], [0, 0, 2.4]]),
         None, (False, False, False)),
        (["Si", "Pt"], rattle(cart([[0, 0, 0], [.5, .5, .5]], small)), small, (True, True, True)),
        ([("H", "Si", "Pt")[k % 3] for k in range(32)], rattle(cart(big, cube)), cube,
         (True, True, True)),
    ]
    return out + out[:2]


def main():
    c = Checker(f"eval --batch ({DEVICE})")
    tmp = os.environ.get("TMPDIR", "/tmp")
    xyz = os.path.join(tmp, f"fnq-batch-{os.getpid()}.xyz")
    fs = frames(random.Random(1))
    for k, (sym, pos, cell, pbc) in enumerate(fs):
        write_xyz(xyz, sym, pos, cell, pbc, append=k > 0)
    opts = ["--device", DEVICE, "--dtype", "float64"]
    if DEVICE != "cpu":
        rc, _, err = run("eval", *opts, MODEL, xyz, check=False)
        if rc != 0:
            print(f"SKIP: no usable {DEVICE} device: {err.strip()}")
            raise SystemExit(SKIP)
    single = eval_frames(MODEL, xyz, *opts)
    c.check(len(single) == len(fs), f"{len(single)} lines for {len(fs)} frames")
    for n in (2, 5, len(fs)):
        got = eval_frames(MODEL, xyz, *opts, "--batch", str(n))
        c.check(len(got) == len(fs), f"--batch {n}: {len(got)} lines for {len(fs)} frames")
        worst = 0.0
        for k, (g, s) in enumerate(zip(got, single)):
            c.check(g["natoms"] == s["natoms"], f"--batch {n} frame {k}: out of order")
            c.check("nedges" not in g, f"--batch {n} frame {k}: a batch line has nedges")
            de = abs(g["energy"] - s["energy"]) / abs(s["energy"])
            worst = max(worst, de)
            c.check(de <= TOL, f"--batch {n} frame {k}: energy {de:.2e}")
            for q in ("energies", "forces", "virial", "stress"):
                c.check((q in g) == (q in s), f"--batch {n} frame {k}: {q} present differs")
                if q in s:
                    d = rel_dev(g[q], s[q])
                    worst = max(worst, d)
                    c.check(d <= TOL, f"--batch {n} frame {k}: {q} {d:.2e}")
        print(f"--batch {n}: worst relative deviation from single calls {worst:.2e}")
    # a NaN in frame 3 (its count line is line 1 + the lines of frames 0..2)
    sym, pos, cell, pbc = fs[3]
    bad = os.path.join(tmp, f"fnq-batch-bad-{os.getpid()}.xyz")
    line = 1
    for k, (s_, p_, c_, b_) in enumerate(fs):
        if k == 3:
            p_ = [p_[0], [math.nan, p_[1][1], p_[1][2]]]
            first_line = line
        write_xyz(bad, s_, p_, c_, b_, append=k > 0)
        line += len(s_) + 2
    expect(c, "NaN in frame 3 of a batch", ["eval", *opts, "--batch", "4", MODEL, bad], 2,
           f"frame at line {first_line}", "atom 1 has a non-finite coordinate")
    rc, out, _ = run("eval", *opts, "--batch", "4", MODEL, bad, check=False)
    c.check(out.strip() == "", f"a failed batch printed lines: {out[:200]}")
    expect(c, "--batch 0", ["eval", "--batch", "0", MODEL, xyz], 1, "--batch must be")
    os.unlink(xyz), os.unlink(bad)
    c.finish()


main()
