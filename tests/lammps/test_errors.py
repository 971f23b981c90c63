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

from lmputil import Checker, model_dir, run_lammps

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


def expect(c, tmp, label, text, needles, nprocs=1):
    rc, out = run_lammps(tmp, text, nprocs, check=False)
    errors = [l for l in out.splitlines() if "ERROR" in l]
    c.check(rc != 0, f"{label}: LAMMPS exited with 0")
    c.check(rc > 0, f"{label}: killed by signal {-rc}")
    c.check(bool(errors), f"{label}: no ERROR line in the output:\n{out[-2000:]}")
    for n in needles:
        c.check(any(n in l for l in errors), f"{label}: the error lacks {n!r}: {errors}")
    print(f"{label} (exit {rc}): {errors[0] if errors else '(none)'}")


def main():
    model_dir()
    c = Checker("pair_style fusednequip errors")
    with tempfile.TemporaryDirectory() as tmp:
        expect(c, tmp, "units real", deck(units="real"), ["fusednequip", "units metal", "real"])
        expect(c, tmp, "newton pair off", deck(newton="newton off"),
               ["fusednequip", "newton pair on"])
        expect(c, tmp, "element the model lacks", deck(coeff="nequix-mp-1 Am"),
               ["element 'Am'", "atom type 1", "nequix-mp-1.nqx", "89 elements"])
        expect(c, tmp, "type mapped to NULL", deck(coeff="nequix-mp-1 Si NULL", ntypes=2),
               ["atom type 2", "NULL"])
        missing = os.path.join(tmp, "no-such-model.nqx")
        for nprocs in (1, 2):
            expect(c, tmp, f"missing model file, {nprocs} rank(s)", deck(coeff=f"{missing} Si"),
                   ["cannot load model", "no-such-model.nqx"], nprocs)
        truncated = os.path.join(tmp, "truncated.nqx")
        with open(os.path.join(model_dir(), "nequix", "nequix-mp-1.nqx"), "rb") as f:
            head = f.read(100000)
        with open(truncated, "wb") as f:
            f.write(head)
        expect(c, tmp, "truncated model file", deck(coeff=f"{truncated} Si"),
               ["cannot load model", "truncated.nqx"])
        expect(c, tmp, "too few elements", deck(coeff="nequix-mp-1 Si", ntypes=2),
               ["pair_coeff * * <model file>", "2 atom types"])
        expect(c, tmp, "unknown keyword", deck(style="precision float64"),
               ["Unknown pair_style fusednequip keyword 'precision'"])
        expect(c, tmp, "bad dtype", deck(style="dtype float16"), ["dtype 'float16'"])
        expect(c, tmp, "keyword without value", deck(style="device"),
               ["'device' needs a value"])
        # atom ID 9, 0.05 A from atom ID 1 (at the origin): the message leads with both IDs
        expect(c, tmp, "atoms too close",
               deck(style="device cpu", extra="create_atoms 1 single 0.05 0.0 0.0 units box\n"),
               ["on rank 0: atom IDs 1 and 9: atoms 0 and 8 are", "closer than",
                "(atoms 0 and 8 are indices on this rank)"])
        expect(c, tmp, "too many neighbours",
               deck(style="device cpu max_neighbors 10"),
               ["atom ID 1: atom 0 has", "more than the limit of 10",
                "pair_style fusednequip keyword max_neighbors"])
        expect(c, tmp, "bad max_neighbors", deck(style="max_neighbors many"),
               ["many"])
        expect(c, tmp, "a directory as the model", deck(coeff=f"{tmp} Si"),
               ["cannot load model", "is a directory, not a model file"])
        # the box changed and atoms moved, and the run skips the set-up that rebuilds the list
        for change in ("change_box all x scale 1.5 remap", "displace_atoms all move 20 0 0"):
            expect(c, tmp, f"stale list after {change.split()[0]}",
                   deck(style="device cpu", extra="velocity all create 300 1\nfix nve all nve\n")
                   .replace("run 0\n", f"run 0\n{change}\nrun 1 pre no\n"),
                   ["neighbour list is stale", "run N pre yes"])

        # device cuda: an error without a GPU or without a CUDA build; runs where there is one
        rc, out = run_lammps(tmp, deck(style="device cuda"), check=False)
        if rc == 0:
            c.check("on cuda" in out, "device cuda ran, but not on cuda")
            print("device cuda: a GPU is present, the run used it")
        else:
            expect(c, tmp, "device cuda without a GPU", deck(style="device cuda"),
                   ["cannot set up device 'cuda'"])
    c.finish()


main()
