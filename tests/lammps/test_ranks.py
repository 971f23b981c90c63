"""The same runs on 1, 2 and 4 MPI ranks agree to 1e-10 relative (energy, per-atom energies,
forces, virial, per-atom virials), with comm_style brick and comm_style tiled (rcb balance).
The per-layer ghost exchange is what makes this work: features of ghost atoms come from
their owners on other ranks at every layer, gradients go back in the backward pass.

Structures:
  - a rattled 8-atom Si cube (5.43 A) and a perturbed 2-atom Si cell (triclinic): boxes smaller than the
    ghost cutoff (6 A + 2 A skin), so an atom's ghosts include its own periodic images, and at
    4 ranks some ranks own no atom at all but still take part in every exchange. Brick only:
    LAMMPS refuses comm_style tiled when the ghost cutoff exceeds the box.
  - a rattled 512-atom Si crystal and the sheared 162-atom quartz cell: brick and tiled.
  - float32 on 1, 2 and 4 ranks: within float32 accuracy of float64 (1e-5 relative energy,
    1e-4 eV/A forces; the library's own float32 test uses the same bounds).
  - 10 MD steps (NVE, 1200 K, neighbour lists rebuilt as atoms move between ranks) of the 8-atom
    cube and of a 72-atom quartz cell: final energy, forces and unwrapped positions.
The reference is the 1-rank brick run; 4 ranks on 2 cores use mpiexec oversubscription. Ranks
fold the periodic images of their own atoms onto them and exchange only the other ghosts; 2
ranks with FNQ_FOLD_OWN_IMAGES=0 (every ghost exchanged) and one rank with
FNQ_EXCHANGE_ONE_RANK=1 (its periodic images exchanged like other ranks' ghosts) match too.
FNQ_LAMMPS_MODEL replaces nequix-mp-1 (lmputil.py; scripts/test-sanitize.sh gives a small fixture).
"""
import os
import tempfile

from lmputil import Checker, flat, read_dump, rel_diff, require_model, run_lammps, setup_lines
from lmputil import single_point, thermo_rows, write_data
from structures import diamond_si, rattled, to_lammps_frame, triclinic_quartz

TOL = 1e-10
MD_STEPS = 10


def md_deck(data, elements, comm):
    # velocities first: `loop geom` seeds them from the coordinates, which balancing may round
    comm_lines = "comm_style tiled\nbalance 1.0 rcb\n" if comm == "tiled" else ""
    return setup_lines(data, elements) + f"""
velocity all create 1200.0 4928459 loop geom
{comm_lines}
neighbor 1.0 bin
neigh_modify every 1 delay 0 check yes
fix md all nve
thermo_style custom step pe ke etotal
thermo_modify format float %.17g
thermo {MD_STEPS}
dump d all custom {MD_STEPS} md.dump id xu yu zu fx fy fz
dump_modify d sort id format float %.17g
run {MD_STEPS}
"""


def md_run(tmp, s, elements, nprocs, comm):
    data = os.path.join(tmp, "data.test")
    write_data(data, s, elements)
    _, out = run_lammps(tmp, md_deck(data, elements, comm), nprocs)
    last = thermo_rows(out, ["PotEng", "TotEng"])[-1]
    d = read_dump(os.path.join(tmp, "md.dump"))
    n = len(d["id"])
    return {"energy": last["PotEng"], "etotal": last["TotEng"],
            "forces": [[d["fx"][i], d["fy"][i], d["fz"][i]] for i in range(n)],
            "positions": [[d["xu"][i], d["yu"][i], d["zu"][i]] for i in range(n)]}


def compare(c, label, got, ref):
    de = abs(got["energy"] - ref["energy"]) / abs(ref["energy"])
    df = rel_diff(flat(got["forces"]), flat(ref["forces"]), 1e-3)
    worst = {"E": de, "F": df}
    c.check(de <= TOL, f"{label}: energy {got['energy']!r} vs 1 rank {ref['energy']!r}")
    c.check(df <= TOL, f"{label}: forces differ from 1 rank by {df:.2e} relative")
    for key in ("energies", "virial", "atom_virial", "positions"):
        if key in ref:
            a, b = got[key], ref[key]
            if key in ("atom_virial", "positions"):
                a, b = flat(a), flat(b)
            d = rel_diff(a, b, 1e-3) if key != "positions" else max(
                abs(x - y) for x, y in zip(a, b))
            worst[key] = d
            c.check(d <= TOL, f"{label}: {key} differ from 1 rank by {d:.2e}")
    print(f"{label:40s} " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))


def single_point_with(env, tmp, *args, **kwargs):
    """single_point with environment variables set for LAMMPS (single_point takes none)"""
    os.environ.update(env)
    try:
        return single_point(tmp, *args, **kwargs)
    finally:
        for k in env:
            del os.environ[k]


def main():
    require_model()
    c = Checker("LAMMPS on 1, 2, 4 ranks")
    si2, _ = to_lammps_frame({"symbols": ["Si", "Si"], "pbc": [True] * 3,
                              "cell": [[0.0, 2.715, 2.715], [2.715, 0.0, 2.715],
                                       [2.715, 2.715, 0.0]],
                              "positions": [[0.0, 0.0, 0.0], [1.41, 1.32, 1.37]]})
    si8 = rattled(diamond_si(1), 0.05, 3)
    cases = [("Si 2-atom", si2, ["Si"], ["brick"]),
             ("Si 8-atom cube", si8, ["Si"], ["brick"]),
             ("Si 512 rattled", rattled(diamond_si(4), 0.05, 11), ["Si"], ["brick", "tiled"]),
             ("SiO2 quartz triclinic", triclinic_quartz(), ["Si", "O"], ["brick", "tiled"])]
    for label, s, elements, styles in cases:
        with tempfile.TemporaryDirectory() as tmp:
            ref = single_point(tmp, s, elements, nprocs=1, comm="brick")
        for comm in styles:
            for nprocs in (1, 2, 4):
                if comm == "brick" and nprocs == 1:
                    continue
                with tempfile.TemporaryDirectory() as tmp:
                    got = single_point(tmp, s, elements, nprocs=nprocs, comm=comm)
                c.check(nprocs == 1 or "periodic images of a rank's own atoms are folded"
                        in got["output"], f"{label}, {comm}, {nprocs} ranks: own images not folded")
                compare(c, f"{label}, {comm}, {nprocs} ranks", got, ref)
        # every ghost exchanged, own images too (FNQ_FOLD_OWN_IMAGES=0), on 2 ranks; and one
        # rank that exchanges its periodic images as ghosts instead of folding them
        # (FNQ_EXCHANGE_ONE_RANK, the measurement of what ghosts cost): the same numbers
        for env, nprocs, says in [({"FNQ_FOLD_OWN_IMAGES": "0"}, 2, "every ghost exchanged"),
                                  ({"FNQ_EXCHANGE_ONE_RANK": "1"}, 1,
                                   "the ghosts are exchanged, not folded")]:
            with tempfile.TemporaryDirectory() as tmp:
                got = single_point_with(env, tmp, s, elements, nprocs=nprocs)
            c.check(says in got["output"], f"{label}: {env} did not exchange every ghost")
            compare(c, f"{label}, {nprocs} rank(s), {env}", got, ref)

    # float32 features travel as doubles in LAMMPS' buffers: converted in pack/unpack
    quartz = triclinic_quartz()
    with tempfile.TemporaryDirectory() as tmp:
        ref = single_point(tmp, quartz, ["Si", "O"])
    for nprocs in (1, 2, 4):
        with tempfile.TemporaryDirectory() as tmp:
            got = single_point(tmp, quartz, ["Si", "O"], nprocs=nprocs, style_args="dtype float32")
        de = abs(got["energy"] - ref["energy"]) / abs(ref["energy"])
        df = max(abs(x - y) for x, y in zip(flat(got["forces"]), flat(ref["forces"])))
        print(f"SiO2 quartz float32, brick, {nprocs} ranks vs float64: E {de:.1e} relative, "
              f"max |dF| {df:.1e} eV/A")
        c.check(de <= 1e-5, f"float32 on {nprocs} ranks: energy {got['energy']!r} vs float64 "
                            f"{ref['energy']!r}")
        c.check(df <= 1e-4, f"float32 on {nprocs} ranks: forces differ from float64 by {df:.2e}")

    for label, s, elements, runs in [("MD Si 8-atom cube", si8, ["Si"],
                                      [(2, "brick"), (4, "brick")]),
                                     ("MD SiO2 quartz", triclinic_quartz(2, 2, 2), ["Si", "O"],
                                      [(2, "brick"), (4, "tiled")])]:
        with tempfile.TemporaryDirectory() as tmp:
            ref = md_run(tmp, s, elements, 1, "brick")
        for nprocs, comm in runs:
            with tempfile.TemporaryDirectory() as tmp:
                got = md_run(tmp, s, elements, nprocs, comm)
            compare(c, f"{label} ({MD_STEPS} steps), {comm}, {nprocs} ranks", got, ref)
    c.finish()


main()
