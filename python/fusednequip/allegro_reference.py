"""A numpy reference evaluator of nequip-allegro's AllegroModel (docs/allegro.md), float64.

It reads the weights that python/fusednequip/convert/allegro/reader.py extracts from a
package or checkpoint (`load_npz`) and computes the energy, per-atom energies, forces and
stress of a structure: the definition the C and CUDA engines are tested against, written
from the math, not from nequip-allegro's code. Plain numpy, slow, no torch: forces and stress
are finite differences of the energy (a 6-point stencil).

This module imports nothing from the fusednequip package (whose import loads the C library),
so the tests can load it by path.
"""
import json
import math
from fractions import Fraction

import numpy as np

# ------------------------------------------------------------------ e3nn's conventions


def _su2_cg(j1, m1, j2, m2, j3, m3):
    """<j1 m1 j2 m2 | j3 m3>, exact (Racah's formula), as a float"""
    if m3 != m1 + m2:
        return 0.0
    f = math.factorial

    def t(k):
        return Fraction((-1) ** k, f(k) * f(j1 + j2 - j3 - k) * f(j1 - m1 - k) * f(j2 + m2 - k)
                        * f(j3 - j2 + m1 + k) * f(j3 - j1 - m2 + k))
    kmin = max(0, j2 - j3 - m1, j1 - j3 + m2)
    kmax = min(j1 + j2 - j3, j1 - m1, j2 + m2)
    s = sum((t(k) for k in range(kmin, kmax + 1)), Fraction(0))
    c2 = Fraction((2 * j3 + 1) * f(j3 + j1 - j2) * f(j3 - j1 + j2) * f(j1 + j2 - j3),
                  f(j1 + j2 + j3 + 1)) * f(j3 + m3) * f(j3 - m3) * f(j1 + m1) * f(j1 - m1) \
        * f(j2 + m2) * f(j2 - m2)
    return float(s) * math.sqrt(c2)


def _real_to_complex(l):
    """e3nn's change of basis from real to complex spherical harmonics (times (-i)^l)"""
    q = np.zeros((2 * l + 1, 2 * l + 1), dtype=np.complex128)
    r2 = 1 / math.sqrt(2)
    for m in range(-l, 0):
        q[l + m, l + abs(m)] = r2
        q[l + m, l - abs(m)] = -1j * r2
    q[l, l] = 1
    for m in range(1, l + 1):
        q[l + m, l + abs(m)] = (-1) ** m * r2
        q[l + m, l - abs(m)] = 1j * (-1) ** m * r2
    return (-1j) ** l * q


_W3J = {}


def wigner_3j(l1, l2, l3):
    """e3nn's real Wigner 3j tensor C[m1, m2, m3] (Frobenius norm 1)"""
    key = (l1, l2, l3)
    if key not in _W3J:
        cg = np.zeros((2 * l1 + 1, 2 * l2 + 1, 2 * l3 + 1))
        for m1 in range(-l1, l1 + 1):
            for m2 in range(-l2, l2 + 1):
                if abs(m1 + m2) <= l3:
                    cg[l1 + m1, l2 + m2, l3 + m1 + m2] = _su2_cg(l1, m1, l2, m2, l3, m1 + m2)
        q1, q2, q3 = _real_to_complex(l1), _real_to_complex(l2), _real_to_complex(l3)
        c = np.einsum("ij,kl,mn,ikn->jlm", q1, q2, np.conj(q3.T), cg).real
        _W3J[key] = c / np.linalg.norm(c)
    return _W3J[key]


def spherical_harmonics(lmax, vec):
    """e3nn's spherical harmonics of the unit vectors vec/|vec| [E, 3], component-normalised
    (|Y_l|^2 = 2l+1), concatenated l = 0..lmax -> [E, (lmax+1)^2]. Y_0 = 1, Y_1 = sqrt(3)
    (x, y, z); higher l by the recursion e3nn's generated formulas follow: Y_{l+1} is
    C(l, 1, l+1) (Y_l x Y_1), rescaled to norm sqrt(2l+3) (checked against e3nn to l = 6)."""
    n = vec / np.linalg.norm(vec, axis=1, keepdims=True)
    out = [np.ones((len(n), 1))]
    y1 = math.sqrt(3) * n
    if lmax >= 1:
        out.append(y1)
    for l in range(1, lmax):
        y = np.einsum("ijk,ei,ej->ek", wigner_3j(l, 1, l + 1), out[-1], y1)
        out.append(y * (math.sqrt(2 * l + 3) / np.linalg.norm(y, axis=1, keepdims=True)))
    return np.concatenate(out, axis=1)


def parse_irreps(s):
    """"1x0e+1x1o" -> [(1, 0, 1), (1, 1, -1)] (mul, l, parity)"""
    out = []
    for part in s.split("+"):
        mul, ir = part.strip().split("x")
        out.append((int(mul), int(ir[:-1]), 1 if ir[-1] == "e" else -1))
    return out


# ------------------------------------------------------------------ the model


ACTIVATIONS = {
    "identity": lambda x: x,
    "silu": lambda x: x / (1 + np.exp(-x)),
    "mish": lambda x: x * np.tanh(np.logaddexp(0, x)),
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "tanh": np.tanh,
    "ssp": lambda x: np.logaddexp(0, x) - math.log(2),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "softplus": lambda x: np.logaddexp(0, x),
}


def load_npz(path):
    """(config, arrays) as convert.allegro.reader.save_npz wrote them"""
    with np.load(path, allow_pickle=False) as z:
        cfg = json.loads(str(z["config"]))
        return cfg, {k: z[k] for k in z.files if k != "config"}


def mlp(cfg, arrays, name, x):
    """ScalarMLPFunction: linear (scales folded into the matrices), activation between"""
    spec = cfg["mlps"][name]
    act = ACTIVATIONS[spec["activation"]]
    for k in range(spec["n_layers"]):
        x = x @ arrays[f"{name}.{k}"]
        if k < spec["n_layers"] - 1:
            x = act(x)
    return x


def _weighted_channels(sh, w, sh_slices):
    """MakeWeightedChannels: out[e, u, m] = w[e, u, r(m)] sh[e, m], r(m) the SH block of m"""
    E = sh.shape[0]
    w = w.reshape(E, -1, len(sh_slices))
    rep = np.concatenate([np.repeat(w[:, :, r:r + 1], b - a, axis=2)
                          for r, (a, b) in enumerate(sh_slices)], axis=2)
    return rep * sh[:, None, :]


def _tp_tensor(tp):
    """[P, dim1, dim2, dim_out]: path p = (i1, i2, i_out) holds sqrt(2 l_out + 1) C(l1, l2, l_out)
    at the blocks' offsets ('component' normalisation)"""
    ir1, ir2, iro = (parse_irreps(tp[k]) for k in ("irreps_in1", "irreps_in2", "irreps_out"))

    def offsets(irreps):
        o = [0]
        for _, l, _ in irreps:
            o.append(o[-1] + 2 * l + 1)
        return o
    o1, o2, oo = offsets(ir1), offsets(ir2), offsets(iro)
    w = np.zeros((len(tp["paths"]), o1[-1], o2[-1], oo[-1]))
    for p, (a, b, c) in enumerate(tp["paths"]):
        l1, l2, l3 = ir1[a][1], ir2[b][1], iro[c][1]
        w[p, o1[a]:o1[a + 1], o2[b]:o2[b + 1], oo[c]:oo[c + 1]] = \
            math.sqrt(2 * l3 + 1) * wigner_3j(l1, l2, l3)
    return w


_WW3J = {}


def _path_weighted(w, tp):
    """sum_p w[u, p] T[p] (T of _tp_tensor), cached: the weights by path, per channel or not"""
    key = (w.tobytes(), json.dumps(tp, sort_keys=True))
    if key not in _WW3J:
        _WW3J[key] = np.einsum("up,pijk->uijk", w, _tp_tensor(tp))
    return _WW3J[key]


def edges(pos, cell, pbc, rc):
    """Full neighbour list: (i, j, r_ij = x_j - x_i + shift) for |r| < rc, periodic images
    included, no self-edge with zero shift"""
    n = len(pos)
    shifts = [np.zeros(3)]
    if np.any(pbc):
        inv = np.linalg.inv(cell)
        # lattice planes k are 1/|inv[:, k]| apart: a pair within rc differs by at most
        # rc |inv[:, k]| + (the atoms' spread in fractional coordinate k) cells
        frac = pos @ inv
        spread = frac.max(axis=0) - frac.min(axis=0)
        reach = [int(math.ceil(rc * np.linalg.norm(inv[:, k]) + spread[k])) if pbc[k] else 0
                 for k in range(3)]
        shifts = [np.array([a, b, c], float) @ cell for a in range(-reach[0], reach[0] + 1)
                  for b in range(-reach[1], reach[1] + 1) for c in range(-reach[2], reach[2] + 1)]
    I, J, R = [], [], []
    for s in shifts:
        d = pos[None, :, :] - pos[:, None, :] + s
        r = np.linalg.norm(d, axis=2)
        mask = r < rc
        if not np.any(s):
            np.fill_diagonal(mask, False)
        i, j = np.nonzero(mask)
        I.append(i), J.append(j), R.append(d[i, j])
    return np.concatenate(I), np.concatenate(J), np.concatenate(R)


def _poly_cutoff(x, p):
    return (1 - (p + 1) * (p + 2) / 2 * x ** p + p * (p + 2) * x ** (p + 1)
            - p * (p + 1) / 2 * x ** (p + 2)) * (x < 1)


def atom_energies(cfg, arrays, pos, cell, pbc, types):
    """Per-atom energies [N] (float64) of AllegroModel; types: the model's type indices"""
    types = np.asarray(types)
    N = len(types)
    i, j, vec = edges(np.asarray(pos, float), np.asarray(cell, float), pbc, cfg["r_max"])
    ti, tj = types[i], types[j]
    r = np.linalg.norm(vec, axis=1)
    # EdgeLengthNormalizer: x = r / r_c(t_i, t_j) (per_edge_type_cutoff) or r / r_max;
    # edges with x > 1 are pruned (NeighborListPruneTransform); at x = 1 they are zero anyway
    if cfg["per_edge_type_cutoff"] is not None:
        x = r / np.asarray(cfg["per_edge_type_cutoff"])[ti, tj]
        keep = x <= 1.0
        i, j, vec, r, x, ti, tj = (a[keep] for a in (i, j, vec, r, x, ti, tj))
    else:
        x = r * (1.0 / cfg["r_max"])
    E = len(i)
    # two-body scalar embedding (TwoBodyBesselScalarEmbed)
    w = arrays["bessel_weights"]
    bessel = np.sin(math.pi * w[None, :] * x[:, None]) / (math.pi * x[:, None])
    basis = bessel * _poly_cutoff(x, cfg["polynomial_p"])[:, None]
    type_embed = np.concatenate([arrays["center_embed"][ti], arrays["neighbor_embed"][tj]], 1)
    z = type_embed * mlp(cfg, arrays, "basis_linear", basis)
    z = mlp(cfg, arrays, "scalar_embed_mlp", z)
    # two-body tensor embedding: channels of weighted spherical harmonics
    lmax = cfg["l_max"]
    sh = spherical_harmonics(lmax, vec)
    sh_slices = [(l * l, (l + 1) ** 2) for l in range(lmax + 1)]
    U, S = cfg["num_tensor_features"], cfg["num_scalar_features"]
    V = _weighted_channels(sh, mlp(cfg, arrays, "env_embed_linear", z), sh_slices)
    # Allegro layers
    proj = mlp(cfg, arrays, "first_layer_env_embed_projection", z)
    scalars = [proj[:, :S]]
    env_w = proj[:, S:]
    norm = arrays["env_sum_norm"][types] if arrays["env_sum_norm"].size > 1 else \
        np.full(N, arrays["env_sum_norm"][0])
    for k, tp in enumerate(cfg["tps"]):
        env = np.zeros((N, U, sh.shape[1]))
        np.add.at(env, i, _weighted_channels(sh, env_w, sh_slices))
        env *= norm[:, None, None]
        # tensor product of the edge's features with its centre's environment, per channel
        ww3 = _path_weighted(arrays[f"tps.{k}.weights"], tp)  # [U or 1, d1, d2, d_out]
        V = np.einsum("uijk,eui,euj->euk", ww3, V[:, :, :ww3.shape[1]], env[i], optimize=True)
        latent_in = np.concatenate(scalars + [V[:, :, 0]], axis=1)
        lat = mlp(cfg, arrays, f"latents.{k}", latent_in)
        scalars.append(lat[:, :S])
        env_w = lat[:, S:]
    # edge energies, summed to the centre atom
    e_edge = mlp(cfg, arrays, "edge_readout", np.concatenate(scalars, axis=1))[:, 0]
    enorm = arrays["edge_sum_norm"][types] if arrays["edge_sum_norm"].size > 1 else \
        np.full(N, arrays["edge_sum_norm"][0])
    e = np.zeros(N)
    np.add.at(e, i, e_edge)
    e = e * enorm / math.sqrt(2)
    e = arrays["energy_scale"][types] * e + arrays["energy_shift"][types]
    zbl = cfg.get("pair_potential")
    if zbl is not None:
        e = e + _zbl(zbl, i, ti, tj, r, x, N)
    return e


def _zbl(zbl, i, ti, tj, r, x, N):
    """nequip's ZBL: per directed edge half the pair energy to the centre, times the
    polynomial envelope of the (per-edge-type) normalised length"""
    Z = np.asarray(zbl["atomic_numbers"], float)
    zi, zj = Z[ti], Z[tj]
    a = (zi ** 0.23 + zj ** 0.23) * r / 0.46850
    psi = sum(c * np.exp(d * a) for c, d in zip((0.02817, 0.28022, 0.50986, 0.18175),
                                                 (-0.20162, -0.40290, -0.94229, -3.19980)))
    eng = 0.5 * zbl["coulomb_constant"] * zi * zj / r * psi * _poly_cutoff(x, zbl["polynomial_p"])
    out = np.zeros(N)
    np.add.at(out, i, eng)
    return out


def evaluate(cfg, arrays, pos, cell, pbc, types, h=5e-4, h_strain=1.5e-4, stress=True):
    """energy, per-atom energies, forces (-dE/dx) and, for periodic cells, nequip's stress
    (dE/d(strain) / volume), the derivatives by a 6-point stencil"""
    pos, cell = np.asarray(pos, float), np.asarray(cell, float)

    def E(p, c):
        return atom_energies(cfg, arrays, p, c, pbc, types).sum()

    def deriv(f, h=h):  # 6-point central stencil: truncation ~h^6, rounding ~eps |E| / h
        return (45 * (f(h) - f(-h)) - 9 * (f(2 * h) - f(-2 * h)) + (f(3 * h) - f(-3 * h))) \
            / (60 * h)
    e = atom_energies(cfg, arrays, pos, cell, pbc, types)
    forces = np.zeros_like(pos)
    for a in range(len(pos)):
        for k in range(3):
            def f(d, a=a, k=k):
                p = pos.copy()
                p[a, k] += d
                return E(p, cell)
            forces[a, k] = -deriv(f)
    out = {"energy": e.sum(), "energies": e, "forces": forces}
    if stress and np.all(pbc):
        s = np.zeros((3, 3))
        for a in range(3):
            for b in range(3):
                def f(d, a=a, b=b):
                    eps = np.zeros((3, 3))
                    eps[a, b] += d / 2
                    eps[b, a] += d / 2
                    m = np.eye(3) + eps
                    return E(pos @ m, cell @ m)
                # a strain moves far atoms (and images) by h |x|: a smaller step
                s[a, b] = deriv(f, h_strain)
        out["stress"] = s / abs(np.linalg.det(cell))
    return out
