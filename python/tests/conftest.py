import ctypes
import gc
import os

import pytest


@pytest.fixture(scope="session")
def model_dir():
    from fusednequip import Model
    try:
        Model("nequix-mp-1")
    except Exception as err:  # noqa: BLE001 - any failure to find the model means skip
        pytest.skip(f"nequix-mp-1 not found ({err}); set FUSEDNEQUIP_MODEL_DIR")
    return Model("nequix-mp-1").path.rsplit("/nequix/", 1)[0]


@pytest.fixture(scope="session")
def mp1(model_dir):
    from fusednequip import Model
    return Model("nequix-mp-1")


@pytest.fixture(scope="session")
def repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_sessionfinish(session, exitstatus):
    """Exit 77 (CTest: skipped) when every test was skipped, e.g. no model directory. Under
    LeakSanitizer, fail when memory leaked."""
    if leak_check():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    if rep and exitstatus == 0 and rep.stats.get("skipped") and not rep.stats.get("passed"):
        session.exitstatus = 77


def leak_check():
    """True when LeakSanitizer finds leaks now. It is there when scripts/test-sanitize.sh
    preloads the sanitizers' runtimes into this Python to load the sanitized library; there it
    runs with leak_check_at_exit=0 and PYTHONMALLOC=malloc: the check runs here, every test's
    objects collected and Python's own memory still in use (Python leaves much of it allocated
    at exit), and with Python's objects in malloc's blocks LeakSanitizer sees the pointers
    they hold. Prints the report (stderr) itself."""
    check = getattr(ctypes.CDLL(None), "__lsan_do_recoverable_leak_check", None)
    if check is None:
        return False
    gc.collect()
    return check() != 0
