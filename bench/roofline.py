#!/usr/bin/env python3
"""Roofline of the GPU kernels of one evaluation, from scripts/gpu/gpu-roofline.sh's CSVs.

usage: roofline.py OUT.png LABEL=CSV [LABEL=CSV ...] [--title T]
Each CSV holds Nsight Compute's raw counters for every kernel of two evaluations (warm-up and
timed); the second is kept. Per kernel: FLOPs = adds + multiplies + 2 x fused multiply-adds
(FP32 and FP64 SASS instructions, per thread), DRAM bytes read + written, L2 bytes, duration.
Plotted: achieved FLOP/s against arithmetic intensity (FLOP per DRAM byte), one marker per
kernel with its area proportional to its share of the time, under the H100 SXM's roofs (FP32
non-tensor 66.9 TFLOP/s, HBM3 3.35 TB/s; NVIDIA's data sheet). A table goes to stdout.
"""
import csv
import sys

PEAK_FP32 = 66.9e12  # FLOP/s, H100 SXM5, without tensor cores
PEAK_FP64 = 33.5e12
PEAK_HBM = 3.35e12   # bytes/s

OPS = ["fadd", "fmul", "ffma", "dadd", "dmul", "dfma"]


def value(row, hdr, name):
    text = row[hdr.index(name)].replace(",", "")
    return float(text) if text not in ("", "n/a") else 0.0


def kernels(path):
    rows = [r for r in csv.reader(open(path)) if r]
    start = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    hdr = rows[start]
    data = [r for r in rows[start + 1:] if len(r) == len(hdr) and r[hdr.index("ID")].isdigit()]
    names = [r[hdr.index("Kernel Name")] for r in data]
    half = len(data) // 2
    if len(data) % 2 == 0 and names[:half] == names[half:]:
        data = data[half:]  # the timed evaluation
    out = []
    for r in data:
        m = {op: value(r, hdr, f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum") for op in OPS}
        flops = m["fadd"] + m["fmul"] + 2 * m["ffma"] + m["dadd"] + m["dmul"] + 2 * m["dfma"]
        out.append({
            "name": r[hdr.index("Kernel Name")].split("(")[0].split("<")[0].replace("void ", ""),
            "seconds": value(r, hdr, "gpu__time_duration.sum") * 1e-9,
            "flops": flops,
            "fp64": m["dadd"] + m["dmul"] + m["dfma"] > 0,
            "dram": value(r, hdr, "dram__bytes_read.sum") + value(r, hdr, "dram__bytes_write.sum"),
            "l2": value(r, hdr, "lts__t_bytes.sum"),
        })
    return out


def table(label, ks):
    total = sum(k["seconds"] for k in ks)
    flops = sum(k["flops"] for k in ks)
    dram = sum(k["dram"] for k in ks)
    print(f"\n{label}: {len(ks)} kernels, {1e3 * total:.3f} ms, {flops / 1e9:.1f} GFLOP, "
          f"{flops / total / 1e12:.2f} TFLOP/s ({100 * flops / total / PEAK_FP32:.1f} % of FP32 "
          f"peak), DRAM {dram / 1e9:.2f} GB at {dram / total / 1e12:.2f} TB/s "
          f"({100 * dram / total / PEAK_HBM:.1f} % of HBM)")
    print("| kernel | ms | share | GFLOP | TFLOP/s | % FP32 peak | DRAM GB/s | % HBM | L2 GB/s | FLOP/byte |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(ks, key=lambda k: -k["seconds"]):
        s = k["seconds"] or 1e-12
        print(f"| {k['name']} | {1e3 * s:.3f} | {100 * s / total:.1f} % | {k['flops'] / 1e9:.2f} | "
              f"{k['flops'] / s / 1e12:.2f} | {100 * k['flops'] / s / PEAK_FP32:.1f} | "
              f"{k['dram'] / s / 1e9:.0f} | {100 * k['dram'] / s / PEAK_HBM:.1f} | "
              f"{k['l2'] / s / 1e9:.0f} | {k['flops'] / max(k['dram'], 1):.1f} |")


def main():
    args = sys.argv[1:]
    title = "fusednequip kernels, NVIDIA H100 80GB HBM3"
    if "--title" in args:
        i = args.index("--title")
        title = args[i + 1]
        del args[i:i + 2]
    png, runs = args[0], [a.split("=", 1) for a in args[1:]]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5.5))
    x = [10 ** (e / 10) for e in range(-20, 41)]
    ax.plot(x, [min(PEAK_FP32, v * PEAK_HBM) for v in x], "k-", lw=1.2,
            label="roof: FP32 66.9 TFLOP/s, HBM 3.35 TB/s")
    markers = ["o", "s", "^", "D"]
    for n, (label, path) in enumerate(runs):
        ks = kernels(path)
        table(label, ks)
        total = sum(k["seconds"] for k in ks)
        labelled = False
        for k in ks:
            if k["seconds"] <= 0 or k["flops"] <= 0:
                continue
            ai = k["flops"] / max(k["dram"], 1)
            perf = k["flops"] / k["seconds"]
            ax.scatter(ai, perf, s=2000 * k["seconds"] / total + 8, marker=markers[n % 4],
                       alpha=0.6, label=None if labelled else label, color=f"C{n}")
            labelled = True
            if k["seconds"] / total > 0.05:
                ax.annotate(k["name"], (ai, perf), fontsize=7, xytext=(4, 4),
                            textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=130)
    print(f"\nwrote {png}")


main()
