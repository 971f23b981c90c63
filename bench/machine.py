"""What a benchmark ran on, for its result lines: the CPU's and the GPU's names, the GPU count."""
import platform
import subprocess


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def gpu_name(*fields):
    """nvidia-smi's name and driver of the first GPU (and `fields`, e.g. memory.total), or
    None without one."""
    query = ",".join(("name", "driver_version") + fields)
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        return None


def gpu_count():
    """GPUs nvidia-smi lists (0 without any): the pair style gives a node's ranks its GPUs
    round-robin, so a run of r ranks uses min(r, gpu_count()) of them."""
    try:
        return len(subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                  text=True).stdout.strip().splitlines())
    except OSError:
        return 0
