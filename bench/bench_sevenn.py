"""SevenNet side by side in one run: sevenn's own model (plain e3nn or an accelerator:
OpenEquivariance, cuEquivariance, FlashTP) and fusednequip on the converted model.

Modes (both on by default):
  model  one call of the model on a graph already on the GPU: sevenn's model on its own
         AtomGraphData (a device copy of it a call, since the model writes into its input),
         ours compute_graph_device with the same pairs (matscipy) as torch CUDA tensors
  ase    matbench-speed's step (bench/si_workload.py: new rattled positions, then energy,
         forces and stress through each one's ASE calculator; neighbour list included)
Structures: `si` (cubic diamond Si, 8 atoms a repeat: 4 -> 512, 20 -> 64,000) or `oxide`
(rock-salt Mg0.5Ni0.5O, a = 4.21 A, the cations shuffled with a fixed seed; 8 atoms a repeat,
about twice Si's neighbours within 5 A). One JSON line per size and mode, with both times, the
ratio and the energies' relative difference (model mode: the same graph, float32 both).

usage: python bench/bench_sevenn.py --model 7net-0 --fnqm 7net-0.fnqm [--device cuda]
           [--accelerator e3nn|oeq|cueq|flash] [--modal PBE] [--structure si|oxide]
           [--modes model,ase] [--sizes 4,8,10,16,20] [--min-seconds 1] [--max-repeats 20]
Needs sevenn (with its dependencies and the accelerator's package) in this interpreter; the
accelerator really loaded is checked from sevenn's warnings (it falls back to e3nn with one).
"""
import argparse
import json
import warnings

import numpy as np

from fusednequip import Context, FusedNequIPCalculator, Model
from bench_peers import device_graph, neighbour_list
from si_workload import ase_step_fn, oxide_crystal, si_crystal
from timing import median_seconds


STRUCTURES = {"si": si_crystal, "oxide": oxide_crystal}


def sevenn_calculator(args):
    from sevenn.calculator import SevenNetCalculator
    flags = {"oeq": "enable_oeq", "cueq": "enable_cueq", "flash": "enable_flash"}
    kw = {flags[args.accelerator]: True} if args.accelerator in flags else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calc = SevenNetCalculator(args.model, device=args.device, modal=args.modal, **kw)
    fallback = [str(w.message) for w in caught if "fall" in str(w.message).lower()]
    if fallback:
        raise SystemExit(f"sevenn did not load {args.accelerator}: {fallback}")
    return calc


def sevenn_model_call(calc, atoms):
    """one call of sevenn's model (energy, forces, stress) on a graph already on the device"""
    import torch
    import sevenn._keys as KEY
    from sevenn.atom_graph_data import AtomGraphData
    from sevenn.train.dataload import unlabeled_atoms_to_graph
    graph = AtomGraphData.from_numpy_dict(unlabeled_atoms_to_graph(atoms, calc.cutoff))
    if calc.modal:
        graph[KEY.DATA_MODALITY] = calc.modal
    graph.to(calc.device)

    def call():
        out = calc.model(graph.clone())
        energy = float(out[KEY.PRED_TOTAL_ENERGY].sum())  # synchronises
        return energy
    return call


def fnq_model_call(ctx, model, atoms):
    sp = model.species_indices(atoms.get_chemical_symbols())
    i, j, shift = neighbour_list(atoms, model.cutoff)
    graph = device_graph(ctx, atoms.positions, sp, i, j, shift)
    if graph is None:  # no GPU (a try of the script on a CPU): the same pairs as host arrays
        return lambda: float(ctx.compute_graph(atoms.positions, sp, i, j, shift)[0])
    return lambda: float(ctx.compute_graph_device(*graph)[0])


def free_gpu_cache():
    try:
        import torch
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - no torch / no CUDA: nothing cached
        pass


def timed(row, name, make_call, args):
    """time one side; an error (e.g. out of GPU memory) is recorded, not raised"""
    try:
        call = make_call()
        energy = call()
        t, n = median_seconds(call, args.min_seconds, args.max_repeats)
        row.update({f"{name}_ms": 1e3 * t, f"{name}_repeats": n})
        return energy
    except Exception as err:  # noqa: BLE001
        row[f"{name}_error"] = f"{type(err).__name__}: {str(err)[:200]}"
        return None
    finally:
        call = None
        free_gpu_cache()


def ase_call(calc, atoms):
    atoms = atoms.copy()
    atoms.calc = calc
    step = ase_step_fn(atoms, np.random.default_rng(0))

    def call():
        step()
        return atoms.get_potential_energy()
    return call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="7net-0", help="sevenn keyword or checkpoint")
    ap.add_argument("--fnqm", required=True, help="the same model converted")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--accelerator", default="e3nn", choices=["e3nn", "oeq", "cueq", "flash"])
    ap.add_argument("--modal", default=None)
    ap.add_argument("--structure", default="si", choices=sorted(STRUCTURES))
    ap.add_argument("--modes", default="model,ase")
    ap.add_argument("--sizes", default="4,8,10,16,20")
    ap.add_argument("--min-seconds", type=float, default=1.0)
    ap.add_argument("--max-repeats", type=int, default=20)
    args = ap.parse_args()
    model = Model(args.fnqm, modal=args.modal)
    ctx = Context(model, device=args.device, dtype="float32")
    ours = FusedNequIPCalculator(model, device=args.device, dtype="float32")
    peer = sevenn_calculator(args)
    for rep in (int(s) for s in args.sizes.split(",")):
        atoms = STRUCTURES[args.structure](rep)
        for mode in args.modes.split(","):
            row = {"bench": "sevenn", "mode": mode, "model": args.model,
                   "accelerator": args.accelerator, "structure": args.structure,
                   "atoms": len(atoms)}
            if mode == "model":
                e_ours = timed(row, "fusednequip", lambda: fnq_model_call(ctx, model, atoms), args)
                e_peer = timed(row, "sevenn", lambda: sevenn_model_call(peer, atoms), args)
                if e_ours is not None and e_peer is not None:
                    row["energy_rel_diff"] = abs(e_ours - e_peer) / abs(e_peer)
            elif mode == "ase":
                timed(row, "fusednequip", lambda: ase_call(ours, atoms), args)
                timed(row, "sevenn", lambda: ase_call(peer, atoms), args)
            else:
                raise SystemExit(f"unknown mode {mode!r}: model or ase")
            if "sevenn_ms" in row and "fusednequip_ms" in row:
                row["ratio"] = row["sevenn_ms"] / row["fusednequip_ms"]
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
