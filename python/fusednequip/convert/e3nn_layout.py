"""The layout rules of e3nn (torch) as NequIP's ConvNetLayer uses them, in plain Python.

These decide where every value and weight of a NequIP layer lives, so a converter has to
reproduce them exactly (docs/model-format.md, ../shared/reference/nequip.md sections 2.9-2.12):

* irreps are lists of (mul, l, p), p = +1 even / -1 odd; e3nn sorts them by (l, p, original
  position), so 0o comes before 0e, and simplify() merges only adjacent equal irreps;
* the tensor-product paths are created input block by input block, then spherical harmonic,
  then output l ascending; the message irreps are those outputs sorted and simplified, but the
  radial weights stay in creation order;
* the gate input is sort(scalars + gates + gated), simplified; its output is scalars + gated in
  hidden-list order, not sorted.
"""


class LayoutError(ValueError):
    pass


def parse_irreps(text):
    """"16x0e+8x1o" -> [(16, 0, 1), (8, 1, -1)]"""
    out = []
    for part in str(text).replace(" ", "").split("+"):
        if not part:
            continue
        mul, _, ir = part.rpartition("x")
        mul = int(mul) if mul else 1
        l, p = int(ir[:-1]), {"e": 1, "o": -1, "y": None}[ir[-1]]
        if p is None:
            p = 1 if l % 2 == 0 else -1
        if mul > 0:
            out.append((mul, l, p))
    return out


def format_irreps(irreps):
    return "+".join(f"{m}x{l}{'e' if p > 0 else 'o'}" for m, l, p in irreps)


def simplify(irreps):
    out = []
    for m, l, p in irreps:
        if out and out[-1][1:] == (l, p):
            out[-1] = (out[-1][0] + m, l, p)
        else:
            out.append((m, l, p))
    return out


def sort_irreps(irreps):
    """e3nn Irreps.sort(): (sorted irreps, perm) with perm[k] = new position of block k."""
    order = sorted(range(len(irreps)), key=lambda k: (irreps[k][1], irreps[k][2], k))
    perm = [0] * len(irreps)
    for new, old in enumerate(order):
        perm[old] = new
    return [irreps[k] for k in order], perm


def products(l1, p1, l2, p2):
    """ir1 * ir2 in e3nn order: l = |l1-l2| .. l1+l2, parity p1 p2."""
    return [(l, p1 * p2) for l in range(abs(l1 - l2), l1 + l2 + 1)]


def path_exists(irreps_in, irreps_sh, l, p):
    return any((l, p) in products(l1, p1, l2, p2)
               for _, l1, p1 in irreps_in for _, l2, p2 in irreps_sh)


def has_irrep(irreps, l, p):
    return any((bl, bp) == (l, p) for _, bl, bp in irreps)


# parity of an activation as a function: +1 even, -1 odd, 0 neither (e3nn Activation's test)
ACTIVATION_PARITY = {"identity": -1, "tanh": -1, "abs": 1, "silu": 0, "ssp": 0, "sigmoid": 0}


def activated_parity(p_in, act_name, where):
    if p_in > 0:
        return 1
    parity = ACTIVATION_PARITY[act_name]
    if parity == 0:
        raise LayoutError(f"{where}: activation {act_name} on odd scalars breaks parity")
    return -1 if parity < 0 else 1  # an odd function keeps 0o, an even one makes it 0e


def conv_layer(irreps_in, hidden, irreps_sh, scalar_acts, gate_acts, where="layer",
               sevenn=False):
    """NequIP ConvNetLayer + InteractionBlock layout (sevenn=True: SevenNet's variant, below).

    irreps_in: layer input; hidden: feature_irreps_hidden; irreps_sh: edge spherical harmonics.
    scalar_acts / gate_acts: callables (l, p, k) -> {"name", "scale"} for the k-th block of the
    simplified scalars / gates (the e3nn Activation of the Gate).

    Returns a dict with the irreps of every stage, the tensor-product paths in radial-weight
    order as [input block, l of the harmonic, message block], and the gate wiring.

    SevenNet (sevenn/nn/equivariant_gate.py, interaction_blocks.py) keeps every block of
    `hidden`, reachable or not (an unreachable one stays zero), gates with 0e when `hidden`
    has 0e scalars, and its tensor product makes every product up to hidden's l_max (0e only
    when hidden is 0e only, the last layer): "paths_all" lists them all in creation order as
    [input block, l of the harmonic, (l, p) of the output, message block or None], None where
    the output is not in the gate input (no linear_2 weight, dropped from "paths").
    """
    if sevenn:
        scalars = [(m, l, p) for m, l, p in hidden if l == 0]
        gated = [(m, l, p) for m, l, p in hidden if l > 0]
        gate_p = 1 if has_irrep(scalars, 0, 1) else -1
    else:
        scalars = [(m, l, p) for m, l, p in hidden
                   if l == 0 and path_exists(irreps_in, irreps_sh, l, p)]
        gated = [(m, l, p) for m, l, p in hidden
                 if l > 0 and path_exists(irreps_in, irreps_sh, l, p)]
        gate_p = 1 if path_exists(irreps_in, irreps_sh, 0, 1) else -1
    gates = [(m, 0, gate_p) for m, _, _ in gated]
    groups = [simplify(scalars), simplify(gates), simplify(gated)]

    # gate input: the three groups concatenated, sorted, simplified; where each block landed
    flat = [blk for g in groups for blk in g]
    sorted_flat, perm = sort_irreps(flat)
    conv = simplify(sorted_flat)
    where_sorted, b, chan = [], -1, 0
    for k, (m, l, p) in enumerate(sorted_flat):
        if b < 0 or conv[b][1:] != (l, p):
            b, chan = b + 1, 0
        where_sorted.append((b, chan))
        chan += m
    located = [where_sorted[perm[k]] for k in range(len(flat))]
    loc_scalars = located[:len(groups[0])]
    loc_gates = located[len(groups[0]):len(groups[0]) + len(groups[1])]
    loc_gated = located[len(groups[0]) + len(groups[1]):]

    out, gate = [], []
    for k, (m, l, p) in enumerate(groups[0]):
        act = scalar_acts(l, p, k)
        out.append((m, l, activated_parity(p, act["name"], where)))
        gate.append({"source": list(loc_scalars[k]), "source_activation": act})
    # gates: one channel per gated channel, consumed in the order of the gated blocks
    gate_chans = []
    for k, (m, l, p) in enumerate(groups[1]):
        act = gate_acts(l, p, k)
        gate_chans += [(loc_gates[k][0], loc_gates[k][1] + c, act, p) for c in range(m)]
    used = 0
    for k, (m, l, p) in enumerate(groups[2]):
        blk, chan, act, gp = gate_chans[used]
        if any(gate_chans[used + c][0] != blk or gate_chans[used + c][1] != chan + c
               for c in range(m)):
            raise LayoutError(f"{where}: the gates of one gated block span two gate-input blocks")
        used += m
        out.append((m, l, p * activated_parity(gp, act["name"], where)))
        gate.append({"source": list(loc_gated[k]), "gate": [blk, chan], "gate_activation": act})

    # tensor product: creation order; messages sorted and simplified
    created, every = [], []
    lmax_tp, even_only = max(l for _, l, _ in hidden), all(p > 0 for _, _, p in hidden)
    for i, (mul, l1, p1) in enumerate(irreps_in):
        for _, l2, p2 in irreps_sh:
            for l3, p3 in products(l1, p1, l2, p2):
                if has_irrep(conv, l3, p3):
                    created.append((i, l2, (mul, l3, p3)))
                if sevenn and l3 <= lmax_tp and not (even_only and p3 < 0):
                    every.append((i, l2, (l3, p3), has_irrep(conv, l3, p3)))
    mid_sorted, _ = sort_irreps([c[2] for c in created])
    mid = simplify(mid_sorted)

    def block(ir):
        return [k for k, b in enumerate(mid) if b[1:] == tuple(ir)][0]
    paths = [[i, l2, block(ir[1:])] for i, l2, ir in created]
    return {"irreps_in": irreps_in, "irreps_messages": mid, "irreps_gate_in": conv,
            "irreps_out": out, "paths": paths, "gate": gate,
            "paths_all": [[i, l2, ir, block(ir) if live else None]
                          for i, l2, ir, live in every],
            "n_radial_weights": sum(irreps_in[i][0] for i, _, _ in created)}


def linear_numel(irreps_in, irreps_out):
    """Weights of an e3nn Linear (one (mul_in, mul_out) matrix per pair of equal irreps)."""
    return sum(mi * mo for mi, li, pi in irreps_in for mo, lo, po in irreps_out
               if (li, pi) == (lo, po))


def linear_fan_in(irreps_in, irreps_out, k):
    """e3nn 'element' path normalisation: sum of input multiplicities into output block k."""
    return sum(mi for mi, li, pi in irreps_in if (li, pi) == irreps_out[k][1:])


def self_connection_factored(w, irreps_in, irreps_out, n_attr):
    """NequIP's self-connection FullyConnectedTensorProduct(h, a, out) with an n_attr-wide node
    attribute a as n_attr e3nn-Linear weight sets W[q] ([n_attr, linear_numel]): for an atom
    whose attribute is a, the linear's weights are sum_q a[q] W[q] / sqrt(n_attr).

    w: the flat FCTP weight (per instruction (mul_in, n_attr, mul_out), input-major)."""
    import numpy as np
    w = np.asarray(w, dtype=np.float64).ravel()
    parts, off = [], 0
    for mi, li, pi in irreps_in:
        for mo, lo, po in irreps_out:
            if (li, pi) != (lo, po):
                continue
            if off + mi * n_attr * mo > w.size:
                raise LayoutError(f"self-connection has {w.size} weights, the layout needs more")
            block = w[off:off + mi * n_attr * mo].reshape(mi, n_attr, mo)
            parts.append(block.transpose(1, 0, 2).reshape(n_attr, mi * mo))
            off += mi * n_attr * mo
    if off != w.size:
        raise LayoutError(f"self-connection has {w.size} weights, the layout needs {off}")
    return np.concatenate(parts, axis=1) if parts else np.zeros((n_attr, 0))


def self_connection_per_species(w, irreps_in, irreps_out, attrs):
    """The self-connection folded into one e3nn-Linear weight set per species, for a node
    attribute attrs[t] that depends on the species only ([n_species, n_attr]; one-hot in
    nequip 0.6). FCTP 'element' normalisation is 1/sqrt(n_attr * fan_in); the file's Linear
    applies 1/sqrt(fan_in), so the sets carry 1/sqrt(n_attr). Returns [n_species, numel]."""
    import numpy as np
    attrs = np.asarray(attrs, dtype=np.float64)
    n_attr = attrs.shape[1]
    return attrs @ self_connection_factored(w, irreps_in, irreps_out, n_attr) / np.sqrt(n_attr)


def linear_split_modal(w, irreps_in, irreps_out, n_modal):
    """An e3nn Linear whose input is irreps_in + n_modal x 0e (a modality one-hot appended as
    the last block, sevenn's IrrepsLinear) as a Linear of irreps_in plus, per modality, a bias
    on the 0e outputs. The one-hot widens the 0e outputs' fan-in by n_modal: their weights
    are rescaled so that the Linear of irreps_in, which divides by the fan-in without it,
    computes the same. Returns (weights [linear_numel], bias [n_modal, dim of irreps_out])."""
    import math
    import numpy as np
    w = np.asarray(w, dtype=np.float64).ravel()
    n_std = linear_numel(irreps_in, irreps_out)
    scalar_out = [k for k, (_, l, p) in enumerate(irreps_out) if (l, p) == (0, 1)]
    n_mod = n_modal * sum(irreps_out[k][0] for k in scalar_out)
    if w.size != n_std + n_mod:
        raise LayoutError(f"modal linear has {w.size} weights, the layout needs "
                          f"{n_std} + {n_mod} for {n_modal} modalities")
    std, off = w[:n_std].copy(), 0
    for mi, li, pi in irreps_in:
        for k, (mo, lo, po) in enumerate(irreps_out):
            if (li, pi) != (lo, po):
                continue
            if k in scalar_out:
                fan = linear_fan_in(irreps_in, irreps_out, k)
                std[off:off + mi * mo] *= math.sqrt(fan / (fan + n_modal))
            off += mi * mo
    dims = [m * (2 * l + 1) for m, l, _ in irreps_out]
    bias, off = np.zeros((n_modal, sum(dims))), n_std
    for k in scalar_out:
        mo, start = irreps_out[k][0], sum(dims[:k])
        fan = linear_fan_in(irreps_in, irreps_out, k) + n_modal
        bias[:, start:start + mo] = w[off:off + n_modal * mo].reshape(n_modal, mo) / math.sqrt(fan)
        off += n_modal * mo
    return std, bias
