"""AllegroModel options beyond the committed fixtures, in memory (needs torch, nequip and
nequip-allegro; skipped without): models built by nequip-allegro with other options than
tests/fixtures/allegro have are read by fusednequip.convert.allegro.reader and evaluated by
the numpy reference, which must give nequip's float64 energies, per-atom energies and forces
(1e-12 / 1e-10 relative); options the reader does not know are refused with the config key
named.
"""
import importlib.util
import os

import pytest

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")
pytest.importorskip("allegro")
pytest.importorskip("ase")

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "allegro_reference", os.path.join(HERE, "..", "fusednequip", "allegro_reference.py"))
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)

BESSEL = {"_target_": "allegro.nn.TwoBodyBesselScalarEmbed", "num_bessels": 6,
          "bessel_trainable": True}
ZBL = {"_target_": "nequip.nn.pair_potential.ZBL", "units": "metal"}
BASE = dict(r_max=3.6, l_max=2, parity=True, num_layers=2, num_scalar_features=6,
            num_tensor_features=3, radial_chemical_embed=BESSEL, avg_num_neighbors=4.0,
            scalar_embed_mlp_hidden_layers_width=8, allegro_mlp_hidden_layers_width=8,
            readout_mlp_hidden_layers_width=4)

ACCEPTED = {
    # backward-normalised initialisation (other alphas), other nonlinearities
    "backward_init_tanh_ssp": dict(BASE, forward_normalize=False,
                                   allegro_mlp_nonlinearity="tanh",
                                   readout_mlp_nonlinearity="ssp",
                                   scalar_embed_mlp_nonlinearity="sigmoid"),
    # a linear MLP of 3 layers (nequip multiplies it out), one layer, single scale / shift
    "deep_linear_one_layer": dict(BASE, num_layers=1, l_max=1, parity=False,
                                  scalar_embed_mlp_hidden_layers_depth=2,
                                  scalar_embed_mlp_nonlinearity=None,
                                  readout_mlp_nonlinearity="softplus",
                                  allegro_mlp_nonlinearity="None",  # Identity, with gains
                                  per_type_energy_scales=1.7, per_type_energy_shifts=-0.4),
    # 4 layers with parity (odd scalars and even vectors in the track), per-type
    # avg_num_neighbors, symmetric per-edge-type cutoffs, ZBL with its own exponent
    "four_layers_edgecut_zbl": dict(BASE, num_layers=4, avg_num_neighbors={"H": 3.0, "O": 5.5},
                                    per_edge_type_cutoff={"H": {"H": 2.5, "O": 3.2}, "O": 3.6},
                                    pair_potential=dict(ZBL, chemical_species=["H", "O"],
                                                        polynomial_cutoff_p=4)),
}

REFUSED = {
    "radial_chemical_embed": dict(BASE, radial_chemical_embed={
        "_target_": "allegro.nn.TwoBodySplineScalarEmbed"}),
    "weight_individual_irreps": dict(BASE, weight_individual_irreps=False),
    "pair_potential": dict(BASE, pair_potential={
        "_target_": "nequip.nn.pair_potential.LennardJones", "lj_sigma": 1.0,
        "lj_epsilon": 0.1}),
}


def build(options, seed=7):
    from nequip.utils.global_state import set_global_state
    set_global_state()
    from allegro.model import AllegroModel
    with torch.no_grad():
        m = AllegroModel(seed=seed, model_dtype="float64", type_names=["H", "O"], **options)
        g = torch.Generator().manual_seed(seed)
        for name, p in m.named_parameters():  # trained-looking Bessel roots
            if name.endswith("bessel_weights"):
                p.mul_(1 + 0.15 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return m


def structure(seed):
    from ase import Atoms
    rng = np.random.default_rng(seed)
    cell = np.array([[3.9, 0.0, 0.0], [0.7, 3.6, 0.0], [-0.4, 0.5, 4.1]])
    frac = rng.uniform(0, 1, (5, 3))
    return Atoms(["H", "O", "O", "H", "O"], scaled_positions=frac, cell=cell, pbc=True)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_reference_equals_nequip_allegro(name):
    from nequip.data import AtomicDataDict, from_ase
    from nequip.data.transforms import NeighborListTransform
    from fusednequip.convert.allegro.reader import read_graph_model
    options = ACCEPTED[name]
    model = build(options)
    cfg, arrays = read_graph_model(model, name)
    atoms = structure(len(name))
    types = [["H", "O"].index(s) for s in atoms.get_chemical_symbols()]
    nl = NeighborListTransform(r_max=options["r_max"], type_names=["H", "O"],
                               per_edge_type_cutoff=options.get("per_edge_type_cutoff"))
    data = from_ase(atoms)
    data[AtomicDataDict.ATOM_TYPE_KEY] = torch.as_tensor(types)
    out = model(nl(data))
    want = {"energy": out["total_energy"].detach().numpy().ravel()[0],
            "energies": out["atomic_energy"].detach().numpy().ravel(),
            "forces": out["forces"].detach().numpy()}
    ours = R.evaluate(cfg, arrays, atoms.positions, atoms.cell.array, atoms.pbc, types,
                      stress=False)
    for key, tol in (("energy", 1e-12), ("energies", 1e-12), ("forces", 1e-10)):
        err = np.abs(np.asarray(ours[key]) - want[key]).max() / np.abs(want[key]).max()
        assert err < tol, f"{key}: {err:.2e} relative"


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_refused_by_name(key):
    from fusednequip.convert.allegro.reader import read_graph_model
    from fusednequip.convert.errors import ConversionError
    try:
        model = build(REFUSED[key])
    except Exception as err:  # noqa: BLE001 - an option this nequip-allegro lacks
        pytest.skip(f"nequip-allegro does not build it: {err}")
    with pytest.raises(ConversionError, match=key):
        read_graph_model(model, "model")
