"""Bad input to pair_style fusednequip stops LAMMPS with a clear error naming the problem, never a
crash: units other than metal, newton pair off, an element the model lacks, a type mapped to
NULL, a model file that is missing or does not load, a wrong pair_coeff line, unknown keywords
and values, two atoms closer than the model allows and too many neighbours (led by their atom
IDs), a directory given as the model, a run with `pre no` on a neighbour list that atoms left
(stale), device cuda without a GPU (or without a CUDA build). Each case runs a failing deck
and checks the exit code and the message; the model-file case runs on 2 ranks as well.
"""
import os
import tempfile

from lmputil import Checker, expect_error, model_dir, run_lammps, thermo_rows

BOX = """atom_style atomic
boundary p p p
lattice diamond 5.43
region box block 0 1 0 1 0 1
create_box {ntypes} box
create_atoms 1 box
mass * 28.0855
"""


def deck(units="metal", newton="", style="", coeff="nequix-mp-1 Si", ntypes=1, extra=""):
    return (f"units {units}\n{newton}\n" + BOX.format(ntypes=ntypes) + extra +
            f"pair_style fusednequip {style}\npair_coeff * * {coeff}\nrun 0\n")


def main():
    model_dir()
    c = Checker("pair_style fusednequip errors")
    with tempfile.TemporaryDirectory() as tmp:
        expect_error(c, tmp, "units real", deck(units="real"),
                     ["fusednequip", "units metal", "real"])
        expect_error(c, tmp, "newton pair off", deck(newton="newton off"),
                     ["fusednequip", "newton pair on"])
        expect_error(c, tmp, "element the model lacks", deck(coeff="nequix-mp-1 Am"),
                     ["element 'Am'", "atom type 1", "nequix-mp-1.nqx", "89 elements"])
        expect_error(c, tmp, "type mapped to NULL", deck(coeff="nequix-mp-1 Si NULL", ntypes=2),
                     ["atom type 2", "NULL"])
        missing = os.path.join(tmp, "no-such-model.nqx")
        for nprocs in (1, 2):
            expect_error(c, tmp, f"missing model file, {nprocs} rank(s)",
                         deck(coeff=f"{missing} Si"), ["cannot load model", "no-such-model.nqx"],
                         nprocs)
        truncated = os.path.join(tmp, "truncated.nqx")
        with open(os.path.join(model_dir(), "nequix", "nequix-mp-1.nqx"), "rb") as f:
            head = f.read(100000)
        with open(truncated, "wb") as f:
            f.write(head)
        expect_error(c, tmp, "truncated model file", deck(coeff=f"{truncated} Si"),
                     ["cannot load model", "truncated.nqx"])
        expect_error(c, tmp, "too few elements", deck(coeff="nequix-mp-1 Si", ntypes=2),
                     ["pair_coeff * * <model file>", "2 atom types"])
        expect_error(c, tmp, "unknown keyword", deck(style="precision float64"),
                     ["Unknown pair_style fusednequip keyword 'precision'"])
        expect_error(c, tmp, "bad dtype", deck(style="dtype float16"), ["dtype 'float16'"])
        expect_error(c, tmp, "keyword without value", deck(style="device"),
                     ["'device' needs a value"])
        # atom ID 9, 0.05 A from atom ID 1 (at the origin): the message leads with both IDs
        close = "create_atoms 1 single 0.05 0.0 0.0 units box\n"
        expect_error(c, tmp, "atoms too close", deck(style="device cpu", extra=close),
                     ["on rank 0: atom IDs 1 and 9: atoms 0 and 8 are", "closer than",
                      "(atoms 0 and 8 are indices on this rank)"])
        expect_error(c, tmp, "too many neighbours",
                     deck(style="device cpu max_neighbors 10"),
                     ["atom ID 1: atom 0 has", "more than the limit of 10",
                      "pair_style fusednequip keyword max_neighbors"])
        expect_error(c, tmp, "bad max_neighbors", deck(style="max_neighbors many"),
                     ["many"])
        expect_error(c, tmp, "a directory as the model", deck(coeff=f"{tmp} Si"),
                     ["cannot load model", "is a directory, not a model file"])
        # the box changed and atoms moved, and the run skips the set-up that rebuilds the list:
        # where that leaves a list naming atoms the rank no longer has (29 Sep 2021), the style
        # says so; where LAMMPS keeps the list valid itself (4 Feb 2025), the run must equal
        # the one with `pre yes`
        for change in ("change_box all x scale 1.5 remap", "displace_atoms all move 20 0 0"):
            md = ("velocity all create 300 1\nfix nve all nve\nthermo_style custom step pe\n"
                  "thermo_modify format float %.17g\n")
            label = f"stale list after {change.split()[0]}"
            runs = {pre: deck(style="device cpu", extra=md)
                    .replace("run 0\n", f"run 0\n{change}\nrun 1 pre {pre}\n")
                    for pre in ("no", "yes")}
            rc, out = run_lammps(tmp, runs["no"], check=False)
            if rc != 0:
                expect_error(c, tmp, label, runs["no"],
                             ["neighbour list is stale", "run N pre yes"])
                continue
            _, ref = run_lammps(tmp, runs["yes"])
            got = thermo_rows(out, ["PotEng"])[-1]["PotEng"]
            want = thermo_rows(ref, ["PotEng"])[-1]["PotEng"]
            c.check(got == want, f"{label}: pre no ran on a stale list: pe {got!r}, with pre "
                                 f"yes {want!r}")
            print(f"{label}: LAMMPS kept the list valid (pe as with pre yes)")

        # device cuda: an error without a GPU or without a CUDA build; runs where there is one
        rc, out = run_lammps(tmp, deck(style="device cuda"), check=False)
        if rc == 0:
            c.check("on cuda" in out, "device cuda ran, but not on cuda")
            print("device cuda: a GPU is present, the run used it")
        else:
            expect_error(c, tmp, "device cuda without a GPU", deck(style="device cuda"),
                         ["cannot set up device 'cuda'"])
    c.finish()


main()
