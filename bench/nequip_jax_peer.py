"""A NequIP interatomic potential in JAX with e3nn-jax, jit-compiled: the JAX peer of
bench_nequip_peers.py (timing only: seeded random weights, no training, no file format).

The architecture follows nequip >= 0.7's NequIPGNNModel as bench/make_nequip_peer_model.py
builds it, with 3 interaction layers instead of 4 by default:
  type embedding (one-hot -> C x 0e); per edge: spherical harmonics up to l_max ('component',
  normalised vectors), 8 Bessel functions x polynomial cutoff (p = 6) -> radial MLP (one hidden
  layer of 128, SiLU, no biases) -> one weight per tensor-product path and channel;
  per layer: self-connection (a linear per species) from the input, linear_1, / sqrt(average
  neighbours), tensor product of the sender's features with the harmonics ('uvu': each
  channel with its own per-edge weight, outputs restricted to the layer's gate input), sum
  over the receiver's edges, linear_2, + self-connection, gate (SiLU on even scalars and
  gates, tanh on odd); the last layer keeps scalars only;
  readout: linear C x 0e -> 1 x 0e, per-species scale and shift, summed.
Energy, forces (-dE/dx) and virial (-dE/d(strain), so stress = -virial / volume) come from one
jax.value_and_grad with respect to the positions and a strain of the edge vectors.

    model = NequIPJax(num_species=5)
    step = model.jitted()                  # (pos, species, senders, receivers, shifts)
    energy, forces, virial = step(...)     #   -> total energy, [N, 3], [3, 3]
"""
import math

import e3nn_jax as e3nn
import jax
import jax.numpy as jnp
import numpy as np


class NequIPJax:
    def __init__(self, num_species=5, num_layers=3, l_max=2, features=64, parity=False,
                 r_max=5.0, num_bessels=8, radial_width=128, avg_num_neighbors=28.0,
                 poly_p=6, seed=0, dtype=jnp.float32):
        self.num_species, self.r_max, self.num_bessels = num_species, r_max, num_bessels
        self.poly_p, self.dtype = poly_p, dtype
        self.inv_sqrt_avg = 1.0 / math.sqrt(avg_num_neighbors)
        self.irreps_sh = e3nn.Irreps.spherical_harmonics(l_max, p=-1)
        hidden = e3nn.Irreps([(features, (l, p)) for l in range(l_max + 1)
                              for p in ((1, -1) if parity else ((-1) ** l,))]).simplify()
        scalars = e3nn.Irreps(f"{features}x0e")
        rng = np.random.default_rng(seed)

        def normal(shape, std=1.0):
            return jnp.asarray(rng.normal(0.0, std, shape), dtype)

        self.params = {"embed": normal((num_species, features))}
        self.layers = []
        irreps_in = scalars
        for k in range(num_layers):
            target = hidden if k < num_layers - 1 else scalars
            # the gate's input: activated scalars, one gate per gated irrep, the gated irreps
            # (those the tensor product can reach from irreps_in)
            mid = e3nn.tensor_product(irreps_in, self.irreps_sh, filter_ir_out=target)
            reach = {ir for _, ir in mid}
            gated = e3nn.Irreps([(m, ir) for m, ir in target if ir.l > 0 and ir in reach])
            gate_in = (e3nn.Irreps([(m, ir) for m, ir in target if ir.l == 0]) +
                       e3nn.Irreps(f"{gated.num_irreps}x0e") + gated).simplify()
            lin1 = e3nn.FunctionalLinear(irreps_in, irreps_in)
            lin2 = e3nn.FunctionalLinear(mid.regroup(), gate_in)
            sc = e3nn.FunctionalLinear(irreps_in, gate_in)
            filt = e3nn.Irreps([(1, ir) for ir in reach])
            self.layers.append(dict(irreps_in=irreps_in, filter=filt, lin1=lin1, lin2=lin2,
                                    sc=sc, num_weights=mid.num_irreps))
            self.params[f"layer{k}"] = {
                "lin1": [normal(i.path_shape, i.weight_std) for i in lin1.instructions],
                "lin2": [normal(i.path_shape, i.weight_std) for i in lin2.instructions],
                "sc": [normal((num_species,) + i.path_shape, i.weight_std)
                       for i in sc.instructions],
                "mlp0": normal((num_bessels, radial_width), 1 / math.sqrt(num_bessels)),
                "mlp1": normal((radial_width, mid.num_irreps), 1 / math.sqrt(radial_width)),
            }
            irreps_in = e3nn.gate(e3nn.IrrepsArray(gate_in, jnp.ones(gate_in.dim, dtype))).irreps
        self.readout = e3nn.FunctionalLinear(irreps_in, e3nn.Irreps("0e"))
        self.params["readout"] = [normal(i.path_shape, i.weight_std)
                                  for i in self.readout.instructions]
        self.params["scale"] = jnp.asarray(rng.uniform(0.5, 1.5, num_species), dtype)
        self.params["shift"] = jnp.asarray(rng.uniform(-3.0, 1.0, num_species), dtype)

    # -- pieces -----------------------------------------------------------------------------

    def radial(self, r):
        n = jnp.arange(1, self.num_bessels + 1, dtype=self.dtype)
        x = r[:, None] / self.r_max
        bessel = math.sqrt(2.0 / self.r_max) * jnp.sin(n * jnp.pi * x) / r[:, None]
        p, u = self.poly_p, x
        env = (1.0 - (p + 1) * (p + 2) / 2 * u ** p + p * (p + 2) * u ** (p + 1)
               - p * (p + 1) / 2 * u ** (p + 2))
        return bessel * jnp.where(u < 1.0, env, 0.0)

    @staticmethod
    def _linear(lin, ws, x):
        return e3nn.utils.vmap(lambda v: lin(ws, v))(x)

    def energy(self, params, pos, strain, species, senders, receivers, shifts):
        n = pos.shape[0]
        vec = (pos[senders] - pos[receivers] + shifts) @ (jnp.eye(3, dtype=self.dtype) + strain)
        r = jnp.linalg.norm(vec, axis=1)
        sh = e3nn.spherical_harmonics(self.irreps_sh, vec, normalize=True,
                                      normalization="component")
        radial = self.radial(r)
        onehot = jax.nn.one_hot(species, self.num_species, dtype=self.dtype)
        x = e3nn.IrrepsArray(self.layers[0]["irreps_in"], params["embed"][species])
        for k, layer in enumerate(self.layers):
            p = params[f"layer{k}"]
            sc = None
            for s in range(self.num_species):  # one linear per species, selected per atom
                y = self._linear(layer["sc"], [w[s] for w in p["sc"]], x) * onehot[:, s:s + 1]
                sc = y if sc is None else sc + y
            h = self._linear(layer["lin1"], p["lin1"], x) * self.inv_sqrt_avg
            msg = e3nn.tensor_product(h[senders], sh, filter_ir_out=layer["filter"])
            weights = jax.nn.silu(radial @ p["mlp0"]) @ p["mlp1"]
            msg = msg * weights  # one weight per path and channel (uvu)
            agg = e3nn.IrrepsArray(msg.irreps, jax.ops.segment_sum(msg.array, receivers, n))
            y = self._linear(layer["lin2"], p["lin2"], agg.regroup()) + sc
            x = e3nn.gate(y, even_act=jax.nn.silu, odd_act=jnp.tanh,
                          even_gate_act=jax.nn.silu, odd_gate_act=jnp.tanh)
        e = self._linear(self.readout, params["readout"], x).array[:, 0]
        e = e * params["scale"][species] + params["shift"][species]
        return jnp.sum(e)

    def jitted(self):
        """(pos [N, 3], species [N], senders [E], receivers [E], shifts [E, 3]) ->
        (energy, forces [N, 3], virial [3, 3]), one compiled function per shape."""
        grad = jax.value_and_grad(self.energy, argnums=(1, 2))

        @jax.jit
        def step(params, pos, species, senders, receivers, shifts):
            strain = jnp.zeros((3, 3), self.dtype)
            e, (de_dx, de_ds) = grad(params, pos, strain, species, senders, receivers, shifts)
            return e, -de_dx, -de_ds

        return lambda *graph: step(self.params, *graph)

