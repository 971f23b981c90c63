"""Whatever takes pairs out of pair_style fusednequip's neighbour list is refused, naming the
command; never a different energy with exit 0. A message-passing model needs every pair within
its cutoff (alpha-quartz with its Si-O pairs removed gave Si alone + O alone, exit 0, before).

Refused (exit != 0, the message names the command and, where there is one, the type pair):
  pair_style hybrid with pair_coeff 1 2 none, or with another sub-style on 1 2;
  neigh_modify exclude type 1 2, exclude group, include group;
  atom_style full with bonds under special_bonds' default weights (0: LAMMPS drops bonded pairs).
Run and equal to the plain style (float64, 1e-10 relative): hybrid/overlay with another
sub-style on 1 2, and bonds with special_bonds lj/coul 1.0e-20 (pairs kept, as the refusal's
message advises), on 1 and 2 ranks.
"""
import os
import tempfile

from lmputil import (MODEL, Checker, expect_error, require_model, run_lammps,
                     thermo_rows)
from structures import alpha_quartz, rattled, supercell, to_lammps_frame, write_data

ELEMENTS = ["Si", "O"]


def quartz(tmp):
    s, _ = to_lammps_frame(rattled(supercell(alpha_quartz(), 2, 2, 1), 0.03, 11))
    path = os.path.join(tmp, "q36.data")
    write_data(path, s, ELEMENTS)
    return path


def deck(data, pair="fusednequip device cpu dtype float64", coeff=None, extra="",
         atom_style="atomic", before_run=""):
    coeff = coeff or f"pair_coeff * * {MODEL} Si O"
    return f"""units metal
atom_style {atom_style}
read_data {data}{' extra/bond/per/atom 4 extra/special/per/atom 24' if atom_style == 'full' else ''}
{extra}
pair_style {pair}
{coeff}
{before_run}
thermo_style custom step pe
thermo_modify format float %.17g
run 0
"""


def full_data(tmp, atomic_path):
    """The quartz data file as atom_style full (molecule 1, charge 0) with one bond type."""
    out, in_atoms = [], False
    for line in open(atomic_path).read().splitlines():
        words = line.split()
        if line.endswith("atom types"):
            out += [line, "1 bond types"]
        elif line.startswith("Atoms"):
            out.append("Atoms # full")
            in_atoms = True
        elif in_atoms and len(words) == 5:
            out.append(f"{words[0]} 1 {words[1]} 0.0 {' '.join(words[2:])}")
        else:
            out.append(line)
    path = os.path.join(tmp, "q36-full.data")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


BONDS = """bond_style harmonic
bond_coeff 1 10.0 1.6"""
CREATE_BONDS = "create_bonds many all all 1 1.4 1.8"


def energy(c, tmp, label, text, nprocs=1):
    rc, out = run_lammps(tmp, text, nprocs, check=False)
    c.check(rc == 0, f"{label}: LAMMPS failed ({rc}):\n{out[-2000:]}")
    if rc != 0:
        return None
    e = thermo_rows(out, ["PotEng"])[0]["PotEng"]
    print(f"{label}: pe = {e!r}")
    return e


def main():
    require_model()
    c = Checker("pairs removed from fusednequip's list")
    with tempfile.TemporaryDirectory() as tmp:
        data = quartz(tmp)
        plain = energy(c, tmp, "plain", deck(data))
        hybrid_coeff = f"pair_coeff * * fusednequip {MODEL} Si O"
        expect_error(c, tmp, "hybrid, pair_coeff 1 2 none",
                     deck(data, "hybrid fusednequip device cpu dtype float64",
                          hybrid_coeff + "\npair_coeff 1 2 none"),
                     ["every pair", "atom types 1 (Si) and 2 (O)", "pair_coeff 1 2",
                      "hybrid/overlay"])
        expect_error(c, tmp, "hybrid, another sub-style on 1 2",
                     deck(data, "hybrid fusednequip device cpu dtype float64 zero 6.0",
                          hybrid_coeff + "\npair_coeff 1 2 zero"),
                     ["atom types 1 (Si) and 2 (O)", "pair_coeff 1 2"])
        for nprocs in (1, 2):
            expect_error(c, tmp, f"neigh_modify exclude type 1 2, {nprocs} rank(s)",
                         deck(data, extra="neigh_modify exclude type 1 2"),
                         ["neigh_modify exclude type 1 2", "exclude none"], nprocs)
        expect_error(c, tmp, "neigh_modify exclude group",
                     deck(data, extra="group si type 1\ngroup ox type 2\n"
                                      "neigh_modify exclude group si ox"),
                     ["neigh_modify exclude group si ox"])
        expect_error(c, tmp, "neigh_modify include group",
                     deck(data, extra="group si type 1\natom_modify first si\n"
                                      "neigh_modify include si"),
                     ["neigh_modify include si"])

        # bonds: LAMMPS' default special_bonds weights (0 0 0) drop bonded pairs from every list
        full = full_data(tmp, data)
        expect_error(c, tmp, "bonds, special_bonds default",
                     deck(full, atom_style="full", extra=BONDS, before_run=CREATE_BONDS),
                     ["special_bonds", "1-2 neighbours", "1.0e-20"])
        for nprocs in (1, 2):
            kept = energy(c, tmp, f"bonds, special_bonds lj/coul 1.0e-20 ..., {nprocs} rank(s)",
                          deck(full, atom_style="full", extra=BONDS,
                               before_run=CREATE_BONDS + "\nbond_coeff 1 0.0 1.6\n"
                               "special_bonds lj/coul 1.0e-20 1.0e-20 1.0e-20"), nprocs)
            if kept is not None and plain is not None:
                c.check(abs(kept - plain) <= 1e-10 * abs(plain),
                        f"bonds with tiny special weights: pe {kept!r}, plain {plain!r}")

        # hybrid/overlay adds a term on 1 2 and removes nothing: runs, same energy
        for nprocs in (1, 2):
            over = energy(c, tmp, f"hybrid/overlay with zero on 1 2, {nprocs} rank(s)",
                          deck(data, "hybrid/overlay fusednequip device cpu dtype float64 zero "
                                     "6.0", hybrid_coeff + "\npair_coeff 1 2 zero"), nprocs)
            if over is not None and plain is not None:
                c.check(abs(over - plain) <= 1e-10 * abs(plain),
                        f"hybrid/overlay: pe {over!r}, plain {plain!r}")
    c.finish()


if __name__ == "__main__":
    main()
