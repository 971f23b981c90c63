"""A corrupt, truncated or inconsistent .fnqm file is refused with exit status 2 and a message
naming the file and the header field or array at fault, never a crash. Each case edits one
thing of a good fixture model (tests/fixtures/nequip) and checks the message; the unedited
file must still work, so every failure is the edit's.
"""
import json
import os
import tempfile

from cliutil import Checker, expect, run

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "nequip")
MODEL = os.path.join(FIXTURES, "classic_l2_parity_resnet_3sp.fnqm")
XYZ = os.path.join(FIXTURES, "classic_l2_parity_resnet_3sp.molecule.xyz")


def split(data):
    nl = data.index(b"\n")
    return json.loads(data[:nl]), data[nl + 1:]


def joined(header, rest):
    return json.dumps(header).encode() + b"\n" + rest


def main():
    c = Checker("fnqm errors")
    data = open(MODEL, "rb").read()
    header, rest = split(data)
    rc, _, err = run("eval", MODEL, XYZ, check=False)
    c.check(rc == 0, f"the unedited model must evaluate: {err}")

    def case(label, blob, *needles, name="bad.fnqm"):
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, name)
            open(p, "wb").write(blob)
            expect(c, label, ["eval", p, XYZ], 2, name, *needles)

    def edit(label, fn, *needles):
        h = json.loads(json.dumps(header))
        fn(h)
        case(label, joined(h, rest), *needles)

    # the container
    case("truncated in the arrays", data[: len(data) - 1000], "truncated")
    case("truncated in the header", data[:300], "truncated")
    case("bytes appended", data + b"\0" * 16, "16 bytes follow")
    first = rest.index(b"\x93NUMPY")
    case("corrupt array record", joined(header, rest[:first] + b"X" + rest[first + 1:]),
         "array 0", "corrupt")
    nan_at = rest.index(b"\n", first) + 1  # data of the first array (bessel_freq)
    case("NaN in an array", joined(header, rest[:nan_at] + b"\xff" * 8 + rest[nan_at + 8:]),
         "bessel_freq", "not finite")
    edit("shape in the list differs from the record",
         lambda h: h["arrays"][0].update(shape=[99]), "bessel_freq", "shape (6)", "[99]")
    edit("unknown format version", lambda h: h.update(version=7), "version 7")

    # fields
    edit("missing field", lambda h: h.pop("cutoff"), "'cutoff' is missing")
    edit("not an element", lambda h: h["species"].__setitem__(1, "Qq"), "species[1]")
    edit("bad irreps", lambda h: h["layers"][1].update(irreps_out="8x1q"),
         "layers[1].irreps_out")
    edit("layer input differs from the previous output",
         lambda h: h["layers"][2].update(irreps_in="6x0e"), "layers[2].irreps_in")
    edit("path index out of range",
         lambda h: h["layers"][1]["tensor_product"][0].__setitem__(0, 40),
         "layers[1].tensor_product[0]")
    edit("path against the selection rules",
         lambda h: h["layers"][0]["tensor_product"][1].__setitem__(2, 0),
         "layers[0].tensor_product", "selection rules")
    edit("array of the wrong size for a linear",
         lambda h: h["layers"][1].update(linear_2=h["layers"][1]["linear_1"]),
         "layers[1].linear_2", "the model needs")
    edit("array that does not exist", lambda h: h.update(energy_shift="nothing"),
         "energy_shift", "'nothing'")
    edit("unknown activation",
         lambda h: h["layers"][0]["gate"][0].update(source_activation={"name": "gelu"}),
         "layers[0].gate[0].source_activation", "gelu")
    edit("gate channel out of range",
         lambda h: h["layers"][0]["gate"][1].update(gate=[0, 1000]), "layers[0].gate[1].gate")
    edit("readout not ending in one scalar",
         lambda h: h["readout"]["irreps"].__setitem__(-1, "2x0e"), "readout")
    edit("resnet with different irreps", lambda h: h["layers"][0].update(resnet=True),
         "layers[0].resnet")
    # sizes the header declares but the arrays do not hold (found by tests/fuzz): refused
    # before the linear of that size is allocated
    edit("message irreps far wider than the linear's array",
         lambda h: h["layers"][0].update(irreps_gate_in="1000000x0e+6x1o+6x2e"),
         "layers[0].linear_2", "has shape (180)", "the model needs (6000072)")
    edit("a multiplicity beyond 32 bits",
         lambda h: h["layers"][0].update(irreps_gate_in="2147483648x0e+6x1o+6x2e"),
         "layers[0].irreps_gate_in", "irreps string")

    # a model with a pair term (ZBL) and a factored self-connection
    zbl_model = os.path.join(FIXTURES, "fm_l_like_zbl_4sp.fnqm")
    zbl_header, zbl_rest = split(open(zbl_model, "rb").read())
    zbl_xyz = os.path.join(FIXTURES, "fm_l_like_zbl_4sp.molecule.xyz")
    rc, _, err = run("eval", zbl_model, zbl_xyz, check=False)
    c.check(rc == 0, f"the unedited ZBL model must evaluate: {err}")

    def edit_zbl(label, fn, *needles):
        h = json.loads(json.dumps(zbl_header))
        fn(h)
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "bad.fnqm")
            open(p, "wb").write(joined(h, zbl_rest))
            expect(c, label, ["eval", p, zbl_xyz], 2, "bad.fnqm", *needles)

    edit_zbl("unknown pair term", lambda h: h["pair_potential"].update(kind="lj"),
             "pair_potential.kind")
    edit_zbl("one atomic number too few",
             lambda h: h["pair_potential"]["atomic_numbers"].pop(),
             "pair_potential.atomic_numbers", "one atomic number per species")
    edit_zbl("a species without an atomic number",
             lambda h: h["pair_potential"]["atomic_numbers"].__setitem__(0, 0),
             "pair_potential.atomic_numbers[0]")
    edit_zbl("pair cutoff beyond the model's",
             lambda h: h["pair_potential"].update(cutoff=h["cutoff"] + 1), "pair_potential")
    edit_zbl("missing Coulomb constant", lambda h: h["pair_potential"].pop("coulomb_constant"),
             "pair_potential.coulomb_constant")
    edit_zbl("factored linear: coefficients of another shape",
             lambda h: h["layers"][1]["self_connection"].update(
                 species_coefficients=h["layers"][1]["self_connection"]["weights"]),
             "layers[1].self_connection.species_coefficients")
    edit_zbl("factored linear: weights of another layer",
             lambda h: h["layers"][1]["self_connection"].update(
                 weights=h["layers"][5]["self_connection"]["weights"]),
             "layers[1].self_connection.weights", "the model needs")

    h = json.loads(json.dumps(header))
    h["cutoff"] = "@"
    case("a number beyond float64 (1e999, read as infinity)",
         joined(h, rest).replace(b'"@"', b"1e999"), "'cutoff'", "not a number")

    # any truncation point (loading) and any flipped byte (loading and evaluating): a clean
    # refusal or a (different) result, never a crash
    import random
    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "fuzz.fnqm")
        cuts = [("info", p, data[:n]) for n in range(0, len(data), max(1, len(data) // 60))]
        flips = []
        for _ in range(60):
            i = rng.randrange(len(data))
            flips.append(("eval", p, XYZ, data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) +
                          data[i + 1:]))
        for k, (*args, blob) in enumerate(cuts + flips):
            open(p, "wb").write(blob)
            rc, _, err = run(*args, check=False)
            c.check(rc in (0, 2), f"fuzz case {k}: exit {rc} ({err.strip()[:200]})")
            c.check(rc == 0 or "fuzz.fnqm" in err, f"fuzz case {k}: message lacks the file")
    c.finish()


if __name__ == "__main__":
    main()
