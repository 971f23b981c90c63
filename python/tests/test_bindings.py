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


def test_model_and_context_collected_together(repo_root):
    """A model and its context that become garbage in one collection (a reference cycle) are
    freed context first: the context reads its model while being freed. Before, the weakref
    finalizers ran in the order of the collector's list, here the model's first
    (AddressSanitizer in scripts/test-sanitize.sh: heap-use-after-free in fnq_ctx_free)."""
    import gc

    from fusednequip import Context, Model
    path = os.path.join(repo_root, "tests", "fixtures", "nequip", "classic_l1_parity_2sp.fnqm")
    gc.collect()
    gc.disable()    # no automatic collection in between: both objects in one list, model first
    try:
        model = Model(path)
        ctx = Context(model, device="cpu")
        cycle = [model, ctx]
        cycle.append(cycle)
        del model, ctx, cycle
        gc.collect()
    finally:
        gc.enable()
