"""A reference fixture's structure as a LAMMPS single point sees it, and the comparison with
the reference's values (test_nequip_fixtures.py, test_allegro_fixtures.py)."""
from lmputil import flat, rel_diff
from structures import matvec, rotate_tensor, to_lammps_frame


def read_xyz(path):
    """The fixtures' extended XYZ (one frame): symbols, positions, cell or None, pbc."""
    lines = open(path).read().splitlines()
    n, comment = int(lines[0]), lines[1]
    cell = None
    if 'Lattice="' in comment:
        v = [float(x) for x in comment.split('Lattice="')[1].split('"')[0].split()]
        cell = [v[0:3], v[3:6], v[6:9]]
    symbols, positions = [], []
    for line in lines[2:2 + n]:
        w = line.split()
        symbols.append(w[0])
        positions.append([float(x) for x in w[1:4]])
    return {"symbols": symbols, "positions": positions, "cell": cell}


def in_box(s, margin=2.0):
    """A molecule moved into a box that holds it with `margin` A to spare (boundary f f f)."""
    lo = [min(p[k] for p in s["positions"]) - margin for k in range(3)]
    hi = [max(p[k] for p in s["positions"]) + margin for k in range(3)]
    positions = [[p[k] - lo[k] for k in range(3)] for p in s["positions"]]
    cell = [[hi[0] - lo[0], 0.0, 0.0], [0.0, hi[1] - lo[1], 0.0], [0.0, 0.0, hi[2] - lo[2]]]
    return dict(s, positions=positions, cell=cell, pbc=(False, False, False))


def rotated_reference(want, rot):
    """nequip's values in LAMMPS' frame: forces R f, virial R W R^T (as Voigt, ASE order)."""
    out = {"energy": want["energy"], "energies": want["energies"],
           "forces": [matvec(rot, f) for f in want["forces"]]}
    if "virial" in want:
        w = rotate_tensor(rot, want["virial"])
        out["virial"] = [w[0][0], w[1][1], w[2][2], w[1][2], w[0][2], w[0][1]]
    return out


def compare(c, label, got, ref, tol, source="nequip"):
    de = abs(got["energy"] - ref["energy"]) / abs(ref["energy"])
    devs = {"E": de, "E_i": rel_diff(got["energies"], ref["energies"]),
            "F": rel_diff(flat(got["forces"]), flat(ref["forces"]))}
    if "virial" in ref:
        devs["W"] = rel_diff(got["virial"], ref["virial"])
        # the per-atom virials (compute stress/atom; ZBL's included) sum to the virial
        devs["sum W_i"] = rel_diff(got["atom_virial_sum"], ref["virial"])
    print(f"{label:52s} " + ", ".join(f"{k} {v:.1e}" for k, v in devs.items()))
    for k, v in devs.items():
        c.check(v <= tol, f"{label}: {k} differs from {source} by {v:.2e} relative (> {tol:g})")


def lammps_case(xyz, want):
    """(structure, boundary, reference values in LAMMPS' frame) of one fixture case: a
    periodic cell turned into LAMMPS' frame, a molecule (no cell) into a box (f f f)"""
    s = read_xyz(xyz)
    if s["cell"] is None:
        s, rot, boundary = in_box(s), [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "f f f"
    else:
        s, rot = to_lammps_frame(dict(s, pbc=(True, True, True)))
        boundary = "p p p"
    return s, boundary, rotated_reference(want, rot)
