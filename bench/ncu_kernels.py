#!/usr/bin/env python3
"""Kernel time per evaluation from `ncu --csv --metrics gpu__time_duration.sum --log-file F`,
summed by kernel (name and template arguments, without the parameter list), and, given a second
file, what each kernel costs more or less there: where one run's extra time goes, e.g. a rank
with its periodic images exchanged as ghosts against the same rank with them folded
(scripts/gpu/gpu-ghost-kernels.sh). ncu serialises kernels: the times are each kernel alone.

  bench/ncu_kernels.py A.csv [B.csv] [--evals N] [--labels a,b]
--evals: the evaluations each file holds (a LAMMPS run of S steps makes S + 1), to print ms per
evaluation.
"""
import argparse
import csv
import re
import sys

# ncu writes "nsecond" or, in newer releases, "ns"
UNIT = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0,
        "second": 1e3, "s": 1e3}


def kernel_key(name):
    """'void ns::k<float, 1>(Args)' -> 'ns::k<float, 1>'"""
    name = re.sub(r"^void ", "", name.strip())
    depth, out = 0, []
    for ch in name:    # drop the parameter list: the first '(' outside template brackets
        if ch == "(" and depth == 0:
            break
        depth += ch == "<"
        depth -= ch == ">"
        out.append(ch)
    return "".join(out).strip()


def kernel_ms(path):
    """{kernel: ms summed over the file}, in order of first launch"""
    lines = [l for l in open(path) if l.startswith('"')]    # skip ==PROF== and program output
    totals = {}
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        ms = float(row["Metric Value"].replace(",", "")) * UNIT[row["Metric Unit"]]
        key = kernel_key(row["Kernel Name"])
        totals[key] = totals.get(key, 0.0) + ms
    if not totals:
        sys.exit(f"ncu_kernels: no gpu__time_duration.sum rows in {path}")
    return totals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--evals", type=int, default=1)
    ap.add_argument("--labels", default=None)
    a = ap.parse_args()
    if len(a.files) > 2:
        sys.exit("ncu_kernels: one or two files")
    runs = [kernel_ms(f) for f in a.files]
    labels = a.labels.split(",") if a.labels else [f"file {i + 1}" for i in range(len(runs))]
    keys = list(runs[0]) + [k for r in runs[1:] for k in r if k not in runs[0]]
    per = [{k: r.get(k, 0.0) / a.evals for k in keys} for r in runs]
    head = "".join(f"{l:>12}" for l in labels) + ("  difference" if len(runs) == 2 else "")
    print(f"# ms per evaluation ({a.evals} in each file)\n{head}  kernel")
    for k in sorted(keys, key=lambda k: -max(p[k] for p in per)):
        cols = "".join(f"{p[k]:12.3f}" for p in per)
        diff = f"{per[1][k] - per[0][k]:+12.3f}" if len(runs) == 2 else ""
        print(f"{cols}{diff}  {k}")
    tot = "".join(f"{sum(p.values()):12.3f}" for p in per)
    diff = f"{sum(per[1].values()) - sum(per[0].values()):+12.3f}" if len(runs) == 2 else ""
    print(f"{tot}{diff}  all kernels")


main()
