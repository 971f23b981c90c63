"""Test structures for the LAMMPS pair style, in LAMMPS' frame (standard library only).

A structure is a dict: symbols, positions (A), cell (rows a, b, c), pbc. LAMMPS wants the cell
lower-triangular (a along x, b in the xy plane): `to_lammps_frame` rotates any right-handed
cell into that form and returns the rotation, so reference values given in another frame
(the published Nequix ones) can be rotated too.

Run as a script to write a LAMMPS data file: python3 structures.py quartz 3 3 2 > data.quartz
"""
import math
import random
import sys


def dot(u, v):
    return sum(a * b for a, b in zip(u, v))


def cross(u, v):
    return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]


def matvec(m, v):
    return [dot(row, v) for row in m]


def rotate_tensor(r, t):
    """R T R^T for 3x3 lists."""
    rt = [[dot(r[i], [t[k][j] for k in range(3)]) for j in range(3)] for i in range(3)]
    return [[dot(rt[i], r[j]) for j in range(3)] for i in range(3)]


def to_lammps_frame(s):
    """(structure in LAMMPS' frame, rotation R with x_lammps = R x)."""
    a, b, c = s["cell"]
    e1 = [x / math.sqrt(dot(a, a)) for x in a]
    n = cross(a, b)
    e3 = [x / math.sqrt(dot(n, n)) for x in n]
    e2 = cross(e3, e1)
    r = [e1, e2, e3]
    if dot(cross(a, b), c) <= 0:
        raise ValueError("the cell must be right-handed")
    cell = [matvec(r, v) for v in (a, b, c)]
    for i in range(3):    # exact zeros above the diagonal
        for k in range(i + 1, 3):
            cell[i][k] = 0.0
    out = dict(s, cell=cell, positions=[matvec(r, p) for p in s["positions"]])
    return out, r


def supercell(s, n1, n2, n3):
    a, b, c = s["cell"]
    symbols, positions = [], []
    for i in range(n1):
        for j in range(n2):
            for k in range(n3):
                shift = [i * a[m] + j * b[m] + k * c[m] for m in range(3)]
                for sym, p in zip(s["symbols"], s["positions"]):
                    symbols.append(sym)
                    positions.append([p[m] + shift[m] for m in range(3)])
    cell = [[n1 * x for x in a], [n2 * x for x in b], [n3 * x for x in c]]
    return dict(s, symbols=symbols, positions=positions, cell=cell)


def rattled(s, amplitude, seed):
    rng = random.Random(seed)
    pos = [[x + rng.uniform(-amplitude, amplitude) for x in p] for p in s["positions"]]
    return dict(s, positions=pos)


def strained(s, strain):
    """Cell and positions times (1 + strain), strain a 3x3 list (row vectors: x' = x (1+e))."""
    m = [[(1.0 if i == j else 0.0) + strain[i][j] for j in range(3)] for i in range(3)]
    tr = lambda v: [sum(v[i] * m[i][j] for i in range(3)) for j in range(3)]
    return dict(s, cell=[tr(v) for v in s["cell"]], positions=[tr(p) for p in s["positions"]])


def diamond_si(n, a=5.43):
    """n x n x n conventional cells of diamond Si (8 n^3 atoms)."""
    basis = [(0, 0, 0), (0, 0.5, 0.5), (0.5, 0, 0.5), (0.5, 0.5, 0),
             (0.25, 0.25, 0.25), (0.25, 0.75, 0.75), (0.75, 0.25, 0.75), (0.75, 0.75, 0.25)]
    cell = {"symbols": ["Si"] * 8, "positions": [[a * x for x in f] for f in basis],
            "cell": [[a, 0, 0], [0, a, 0], [0, 0, a]], "pbc": [True, True, True]}
    return supercell(cell, n, n, n)


def alpha_quartz(a=4.9134, c=5.4052, u=0.4697, x=0.4135, y=0.2669, z=0.1191):
    """alpha-quartz SiO2 (P3_2 21, 9 atoms; Levien et al. 1980): Si on (u, 0, 0), O on (x, y, z).
    Origin on a two-fold axis through Si: Si-O 1.60 A, O-O 2.61 A, Si-Si 3.06 A."""
    ops = [lambda p: (p[0], p[1], p[2]),
           lambda p: (-p[1], p[0] - p[1], p[2] + 2 / 3),
           lambda p: (-p[0] + p[1], -p[0], p[2] + 1 / 3),
           lambda p: (p[1], p[0], -p[2] + 2 / 3),
           lambda p: (p[0] - p[1], -p[1], -p[2]),
           lambda p: (-p[0], -p[0] + p[1], -p[2] + 1 / 3)]
    cell = [[a, 0.0, 0.0], [-a / 2, a * math.sqrt(3) / 2, 0.0], [0.0, 0.0, c]]
    def same(f, g):
        return all(min((f[k] - g[k]) % 1.0, (g[k] - f[k]) % 1.0) < 1e-6 for k in range(3))

    symbols, frac = [], []
    for sym, site in (("Si", (u, 0.0, 0.0)), ("O", (x, y, z))):
        for op in ops:
            f = tuple(v % 1.0 for v in op(site))
            if not any(same(f, g) for g in frac):
                symbols.append(sym)
                frac.append(f)
    positions = [[sum(f[i] * cell[i][m] for i in range(3)) for m in range(3)] for f in frac]
    return {"symbols": symbols, "positions": positions, "cell": cell, "pbc": [True] * 3}


def triclinic_quartz(n1=3, n2=3, n3=2, seed=7):
    """A general triclinic SiO2 cell: alpha-quartz supercell, sheared (all three LAMMPS tilts
    non-zero), rattled by 0.04 A, in LAMMPS' frame."""
    s = supercell(alpha_quartz(), n1, n2, n3)
    s = strained(s, [[0.01, 0.0, 0.0], [0.03, -0.01, 0.0], [0.05, -0.04, 0.02]])
    s, _ = to_lammps_frame(s)
    return rattled(s, 0.04, seed)


def reduced_tilts(s):
    """The same periodic structure (LAMMPS' frame) with its tilts within LAMMPS' limits
    (|xy| <= lx/2, ...): lattice vectors minus whole multiples of the ones before them;
    read_data maps the atoms into the new box."""
    a, b, c = [list(v) for v in s["cell"]]
    k = round(c[1] / b[1])
    c = [c[i] - k * b[i] for i in range(3)]
    for v in (c, b):
        k = round(v[0] / a[0])
        v[0] -= k * a[0]
    return dict(s, cell=[a, b, c])


def masses(symbols):
    known = {"H": 1.008, "Li": 6.94, "C": 12.011, "N": 14.007, "O": 15.9994, "Mg": 24.305,
             "Al": 26.9815385, "Si": 28.0855, "P": 30.973762, "S": 32.06, "Fe": 55.845,
             "Cu": 63.546, "Ge": 72.630, "Pt": 195.084}
    return [known[s] for s in symbols]


def write_data(path, s, elements, ids=None):
    """LAMMPS data file (atom_style atomic); type k+1 is elements[k]. s in LAMMPS' frame.
    ids: the atom IDs in the order of s (default 1, 2, ...)."""
    (ax, _, _), (bx, by, _), (cx, cy, cz) = s["cell"]
    with open(path, "w") as f:
        f.write("fusednequip test structure\n\n")
        f.write(f"{len(s['symbols'])} atoms\n{len(elements)} atom types\n\n")
        f.write(f"0.0 {ax!r} xlo xhi\n0.0 {by!r} ylo yhi\n0.0 {cz!r} zlo zhi\n")
        f.write(f"{bx!r} {cx!r} {cy!r} xy xz yz\n\nMasses\n\n")
        for k, m in enumerate(masses(elements)):
            f.write(f"{k + 1} {m}\n")
        f.write("\nAtoms # atomic\n\n")
        for i, (sym, p) in enumerate(zip(s["symbols"], s["positions"])):
            f.write(f"{ids[i] if ids else i + 1} {elements.index(sym) + 1} {p[0]!r} {p[1]!r} "
                    f"{p[2]!r}\n")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "quartz":
        sys.exit("usage: structures.py quartz [n1 n2 n3]")
    n = [int(v) for v in sys.argv[2:5]] or [3, 3, 2]
    q, _ = to_lammps_frame(supercell(alpha_quartz(), *n))
    write_data("/dev/stdout", q, ["Si", "O"])
