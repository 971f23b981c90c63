"""Bad input gives a clear error naming the problem and a non-zero exit, never a crash:
unknown elements, missing/truncated/corrupt model files, NaN coordinates, atoms too close,
too many neighbours, malformed structure files, bad options. Each case checks the exit code
and that the message names the problem (file, line, field, atom).
"""
import os
import shutil
import tempfile

from cliutil import Checker, expect, model_dir, run, write_xyz

CELL = [[0.0, 2.715, 2.715], [2.715, 0.0, 2.715], [2.715, 2.715, 0.0]]


def main():
    d = model_dir()
    model = os.path.join(d, "nequix", "nequix-mp-1.nqx")
    c = Checker("error handling")
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "si.xyz")
        write_xyz(good, ["Si", "Si"], [[0, 0, 0], [1.3575, 1.3575, 1.3575]], CELL)

        # elements
        p = os.path.join(tmp, "po.xyz")
        write_xyz(p, ["Si", "Po"], [[0, 0, 0], [1.3575, 1.3575, 1.3575]], CELL)
        expect(c, "unknown element", ["eval", model, p], 2, "po.xyz:4", "atom 1", "'Po'")

        # model files
        expect(c, "missing model", ["eval", os.path.join(tmp, "nope.nqx"), good], 2, "nope.nqx",
               "not found")
        expect(c, "model name not found", ["eval", "no-such-model", good], 2, "no-such-model",
               "FUSEDNEQUIP_MODEL_DIR")
        data = open(model, "rb").read()
        trunc = os.path.join(tmp, "truncated.nqx")
        open(trunc, "wb").write(data[: len(data) // 2])
        expect(c, "truncated model", ["eval", trunc, good], 2, "truncated.nqx", "truncated")
        trunc2 = os.path.join(tmp, "header-only.nqx")
        open(trunc2, "wb").write(data[:2000])
        expect(c, "model cut inside its header", ["eval", trunc2, good], 2, "header-only.nqx",
               "truncated")
        bad = os.path.join(tmp, "badjson.nqx")
        open(bad, "wb").write(data.replace(b'"cutoff"', b'"cutoff"::', 1))
        expect(c, "corrupt JSON header", ["eval", bad, good], 2, "badjson.nqx", "line 1",
               "not valid JSON")
        nl = data.index(b"\n") + 1
        bad = os.path.join(tmp, "badmagic.nqx")
        open(bad, "wb").write(data[:nl] + b"X" + data[nl + 1:])
        expect(c, "corrupt array record", ["eval", bad, good], 2, "badmagic.nqx", "array 0",
               "corrupt")
        bad = os.path.join(tmp, "nanweights.nqx")
        first_data = data.index(b"\n", nl) + 1  # end of the first .npy header
        open(bad, "wb").write(data[:first_data] + b"\xff\xff\xff\xff" + data[first_data + 4:])
        expect(c, "NaN in the weights", ["eval", bad, good], 2, "nanweights.nqx",
               "atom_energies", "nan")
        bad = os.path.join(tmp, "mismatch.nqx")
        open(bad, "wb").write(data.replace(b"32x3o", b"16x3o", 1))
        expect(c, "weights not matching the header", ["eval", bad, good], 2, "mismatch.nqx",
               "does not match the architecture")
        bad = os.path.join(tmp, "nofield.nqx")
        open(bad, "wb").write(data.replace(b'"avg_n_neighbors"', b'"avg_n_neighbours"', 1))
        expect(c, "missing header field", ["eval", bad, good], 2, "nofield.nqx",
               "'avg_n_neighbors' is missing")
        expect(c, "a structure file given as the model", ["info", good], 2, "si.xyz",
               "not a model file")
        # sizes the header declares but the file does not hold (found by tests/fuzz): refused
        # before anything that size is allocated
        bad = os.path.join(tmp, "widehidden.nqx")
        open(bad, "wb").write(data.replace(b'"128x0e + ', b'"1000000x0e + ', 1))
        expect(c, "hidden irreps wider than the file's weights", ["eval", bad, good], 2,
               "widehidden.nqx", "values needed", "bytes left in the file")
        bad = os.path.join(tmp, "mul2p31.nqx")
        open(bad, "wb").write(data.replace(b'"128x0e + ', b'"2147483648x0e + ', 1))
        expect(c, "a multiplicity beyond 32 bits", ["eval", bad, good], 2, "mul2p31.nqx",
               "hidden_irreps", "not an irreps string")
        # the first record's header, its shape replaced, padded to the same length
        hlen = int.from_bytes(data[nl + 8:nl + 10], "little")
        head = data[nl + 10:nl + 10 + hlen]
        i = head.index(b"'shape': (")
        j = head.index(b")", i) + 1
        head2 = (head[:i] + b"'shape': (14, 9223372036854775807)" + head[j:]).rstrip()
        head2 = head2.ljust(hlen - 1) + b"\n"
        assert len(head2) == hlen
        rec = data[nl:nl + 10] + head2 + data[nl + 10 + hlen:]
        bad = os.path.join(tmp, "hugeshape.nqx")
        open(bad, "wb").write(data[:nl] + rec)
        expect(c, "an array shape whose product overflows", ["eval", bad, good], 2,
               "hugeshape.nqx", "array 0", "more elements than the file has bytes")
        bad = os.path.join(tmp, "infshift.nqx")
        open(bad, "wb").write(data.replace(b'"shift": ', b'"shift": 1e999, "was": ', 1))
        expect(c, "a number beyond float64 in the header", ["eval", bad, good], 2,
               "infshift.nqx", "'shift'", "finite")

        # coordinates
        p = os.path.join(tmp, "nan.xyz")
        write_xyz(p, ["Si", "Si"], [[0, 0, 0], [1.3575, float("nan"), 1.3575]], CELL)
        expect(c, "NaN coordinate", ["eval", model, p], 2, "atom 1", "non-finite")
        p = os.path.join(tmp, "far.xyz")  # far outside the cell: no digits left to wrap
        write_xyz(p, ["Si", "Si"], [[0, 0, 0], [1e200, 1.3575, 1.3575]], CELL)
        expect(c, "atom far outside the periodic cell", ["eval", model, p], 2, "atom 1",
               "cell lengths outside")
        p = os.path.join(tmp, "huge.xyz")  # a cell of 1e300 A: the grid's arithmetic overflows
        write_xyz(p, ["Si", "Si"], [[0, 0, 0], [1.3575, 1.3575, 1.3575]],
                  [[x * 1e300 for x in row] for row in CELL])
        expect(c, "cell vectors of 1e300 A", ["eval", model, p], 2, "cell vector 0",
               "cells up to")
        p = os.path.join(tmp, "close.xyz")
        write_xyz(p, ["Si", "Si"], [[0, 0, 0], [0.01, 0.02, 0.0]], CELL)
        expect(c, "atoms too close", ["eval", model, p], 2, "atoms 0 and 1", "closer than")
        p = os.path.join(tmp, "nm.xyz")  # positions in nm instead of A
        write_xyz(p, ["Si", "Si"], [[0, 0, 0], [0.13575, 0.13575, 0.13575]],
                  [[x * 0.1 for x in row] for row in CELL])
        expect(c, "too many neighbours", ["eval", model, p], 2, "neighbours", "limit",
               "wrong units")

        # structure files
        p = os.path.join(tmp, "short.xyz")
        open(p, "w").write("3\nProperties=species:S:1:pos:R:3\nSi 0 0 0\nSi 1 1 1\n")
        expect(c, "truncated structure", ["eval", model, p], 2, "short.xyz:5", "truncated")
        p = os.path.join(tmp, "cols.xyz")
        open(p, "w").write("1\nProperties=species:S:1:pos:R:3\nSi 0 0\n")
        expect(c, "missing column", ["eval", model, p], 2, "cols.xyz:3", "columns")
        p = os.path.join(tmp, "lattice.xyz")
        open(p, "w").write('1\nLattice="1 0 0 0 1" Properties=species:S:1:pos:R:3\nSi 0 0 0\n')
        expect(c, "short lattice", ["eval", model, p], 2, "lattice.xyz:2", "Lattice")
        p = os.path.join(tmp, "count.xyz")  # an atom count the lines do not back
        open(p, "w").write("1000000000000\nProperties=species:S:1:pos:R:3\nSi 0 0 0\n")
        expect(c, "atom count without atom lines", ["eval", model, p], 2, "count.xyz:4",
               "1 of 1000000000000 atoms", "truncated")
        p = os.path.join(tmp, "wide.xyz")
        open(p, "w").write("1\nProperties=species:S:1:pos:R:3:a:R:2147483647\nSi 0 0 0 1\n")
        expect(c, "a column of 2^31 values", ["eval", model, p], 2, "wide.xyz:2", "'a'",
               "at most 512")
        expect(c, "missing structure file", ["eval", model, os.path.join(tmp, "none.xyz")], 2,
               "none.xyz")

        # options
        expect(c, "bad dtype", ["eval", "--dtype", "float16", model, good], 1, "float16")
        expect(c, "unknown option", ["eval", "--fast", "1", model, good], 1, "--fast")
        expect(c, "unknown command", ["frobnicate"], 1, "frobnicate")
    c.finish()


main()
