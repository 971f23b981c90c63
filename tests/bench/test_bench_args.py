"""The benchmark programs' arguments: --help and -h print the usage on stdout and exit 0 without
running anything; an unknown option, a bad value or an option without its value print the usage
on stderr and exit 1. (bench_cpu --help used to run the benchmark.) Needs no model.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from cliutil import Checker  # noqa: E402


def run(exe, *args):
    """(exit code, stdout, stderr); a benchmark that starts instead would hit the timeout"""
    try:
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None, "", "still running after 30 s"
    return p.returncode, p.stdout, p.stderr


def main():
    exe = os.environ.get("FNQ_BENCH_CPU")
    if not exe or not os.path.exists(exe):
        print("FNQ_BENCH_CPU is not set to the bench_cpu executable")
        sys.exit(1)
    c = Checker("bench_cpu arguments")
    for flag in ("--help", "-h"):
        rc, out, err = run(exe, flag)
        c.check(rc == 0, f"bench_cpu {flag}: exit {rc}, expected 0 ({err.strip()})")
        c.check(out.startswith("usage: bench_cpu"), f"bench_cpu {flag}: no usage: {out!r}")
        c.check('"bench": "cpu"' not in out, f"bench_cpu {flag}: ran the benchmark")
    for args, needle in ((["--sizes"], "needs a value"), (["--frobnicate", "1"], "--frobnicate"),
                         (["--dtype", "float16"], "float16"), (["--device", "gpu"], "gpu")):
        rc, out, err = run(exe, *args)
        label = "bench_cpu " + " ".join(args)
        c.check(rc == 1, f"{label}: exit {rc}, expected 1")
        c.check(needle in err and "usage: bench_cpu" in err, f"{label}: stderr lacks {needle!r} "
                f"or the usage: {err!r}")
        c.check(out == "", f"{label}: printed on stdout: {out!r}")
        print(f"{label}: exit {rc}: {err.splitlines()[0] if err else ''}")
    c.finish()


if __name__ == "__main__":
    main()
