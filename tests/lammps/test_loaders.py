"""Loading the style into a stock `lmp` without the PLUGIN package (Debian 12's): an input deck
that includes build/pair_style/load-fusednequip.lmp (LAMMPS' `python` command registers the
style) gives exactly the results of the driver lmp_fusednequip, on 1 and 2 ranks.
"""
import os
import tempfile

from lmputil import Checker, flat, model_dir, single_point
from structures import diamond_si, rattled


def main():
    model_dir()
    stock = os.environ.get("FNQ_STOCK_LMP", "")
    load = os.environ.get("FNQ_LOAD_SCRIPT", "")
    if not os.path.exists(stock) or not os.path.exists(load):
        print(f"SKIP: no stock lmp ({stock!r}) or load script ({load!r})")
        raise SystemExit(77)
    c = Checker("loading into a stock lmp")
    s = rattled(diamond_si(1), 0.05, 5)
    with tempfile.TemporaryDirectory() as tmp:
        ref = single_point(tmp, s, ["Si"])
    driver = os.environ["FNQ_LMP"]
    os.environ.update(FNQ_LMP=stock, FNQ_LMP_PRELUDE=f"include {load}")
    for nprocs in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            got = single_point(tmp, s, ["Si"], nprocs=nprocs)
        de = abs(got["energy"] - ref["energy"])
        df = max(abs(a - b) for a, b in zip(flat(got["forces"]), flat(ref["forces"])))
        print(f"stock lmp + load-fusednequip.lmp, {nprocs} rank(s): E {got['energy']!r}; vs "
              f"{os.path.basename(driver)} on 1 rank: |dE| {de:.1e} eV, max |dF| {df:.1e} eV/A")
        c.check(abs(got["energy"] - ref["energy"]) <= 1e-12 * abs(ref["energy"]),
                f"{nprocs} rank(s): energy {got['energy']!r} vs driver {ref['energy']!r}")
        c.check(df <= 1e-12,
                f"{nprocs} rank(s): forces differ from the driver's")
    c.finish()


main()
