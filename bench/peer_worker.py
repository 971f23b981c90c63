"""The peer benchmarks' worker processes (bench_peers.py, bench_cpu_peers.py,
bench_nequip_peers.py): each peer runs in a process of its own and prints one JSON line per
result. The driver takes the lines as they come, so a worker killed at its time limit keeps
what it had measured."""
import json
import subprocess
import sys
import tempfile
import threading
import time


def keep(line, rows, out):
    """One result line: into rows (parsed), onto the screen and, if given, into the file out."""
    rows.append(json.loads(line))
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


def run_peer(label, cmd, env, timeout, rows, out):
    """Run cmd, keeping its JSON lines (keep). A worker still running after timeout seconds is
    killed. Prints the seconds it took, and its stderr's tail when it gave no result, raised or
    failed. Returns (results, timed_out)."""
    t0 = time.time()
    with tempfile.TemporaryFile(mode="w+") as err_file:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_file, text=True,
                                env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        got = 0
        for line in proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("{"):
                keep(line, rows, out)
                got += 1
        proc.wait()
        timed_out = not timer.is_alive() and proc.returncode != 0
        timer.cancel()
        err_file.seek(0)
        err = err_file.read()
    if timed_out:
        err += f"\n[timed out after {timeout:.0f} s (--worker-timeout)]"
    elif proc.returncode != 0:
        err += f"\n[exit status {proc.returncode}]"
    print(f"[{label}] {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    if got == 0 or "Traceback" in err or proc.returncode != 0:
        print(f"[{label}] stderr tail:\n{err[-2500:]}", file=sys.stderr, flush=True)
    return got, timed_out
