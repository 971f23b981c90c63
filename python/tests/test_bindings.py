"""The enum copies in fusednequip/_lib.py match core/include/fnq.h."""
import os
import re

from fusednequip import _lib


def _header(repo_root):
    return open(os.path.join(repo_root, "core", "include", "fnq.h")).read()


def _enum(text, name):
    body = re.search(r"enum %s \{(.*?)\};" % name, text, re.S).group(1)
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"(FNQ_\w+)\s*=\s*(-?\d+)", body)}


def test_enums_match_header(repo_root):
    text = _header(repo_root)
    for cname, prefix, py in [("fnq_status", "FNQ_STATUS_", _lib.Status),
                              ("fnq_dtype", "FNQ_DTYPE_", _lib.DType),
                              ("fnq_device", "FNQ_DEVICE_", _lib.Device)]:
        c = {k[len(prefix):]: v for k, v in _enum(text, cname).items()}
        p = {m.name: int(m.value) for m in py}
        assert c == p, f"{cname}: header {c} vs python {p}"


def test_abi_version_matches_header(repo_root):
    m = re.search(r"#define FNQ_ABI_VERSION (\d+)", _header(repo_root))
    assert int(m.group(1)) == _lib.ABI_VERSION == _lib.lib.fnq_abi_version()
