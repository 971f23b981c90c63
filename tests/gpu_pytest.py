"""Run pytest on the given tests as a GPU CTest: exit 77 (skipped) when the library has no CUDA
backend, the machine no GPU or this Python no ASE and NumPy; otherwise pytest's status, where a
test that skipped fails the run (on a GPU every selected case must run)."""
import sys

import pytest

from fusednequip._lib import lib

SKIP = 77


class CountSkips:
    def __init__(self):
        self.skipped = []

    def pytest_runtest_logreport(self, report):
        if report.skipped:
            self.skipped.append(report.nodeid)


def main():
    try:  # what the tests need besides the library (a GPU machine's Python may lack ASE)
        import ase.io  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        print(f"SKIP: this Python lacks what the tests need ({e}); install ase and numpy")
        return SKIP
    names = [lib.fnq_backend_name(k).decode() for k in range(lib.fnq_backend_count())]
    if "cuda" not in names or lib.fnq_cuda_device_count() <= 0:
        print("SKIP: this library has no CUDA backend or this machine no GPU")
        return SKIP
    skips = CountSkips()
    rc = pytest.main(["-q", "-rs", *sys.argv[1:]], plugins=[skips])
    if rc == 0 and skips.skipped:
        print(f"FAIL: {len(skips.skipped)} cases skipped on a GPU: {skips.skipped}")
        return 1
    return int(rc)


if __name__ == "__main__":
    sys.exit(main())
