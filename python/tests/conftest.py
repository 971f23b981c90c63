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
    """Exit 77 (CTest: skipped) when every test was skipped, e.g. no model directory."""
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    if rep and exitstatus == 0 and rep.stats.get("skipped") and not rep.stats.get("passed"):
        session.exitstatus = 77
