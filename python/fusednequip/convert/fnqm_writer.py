"""Write a .fnqm file (docs/model-format.md): one line of JSON, then the named arrays as .npy
records (float64, C order) in the order the header's "arrays" list gives."""
import io
import json

import numpy as np

FORMAT = "fusednequip-model"
VERSION = 1  # the version a file needs: 2 for radial_basis.envelope, 3 for
# spherical_harmonics.normalize and modalities


class FnqmModel:
    """Collects the header and the arrays; array(name, values) returns the name to put in the
    header."""

    def __init__(self):
        self.header = {"format": FORMAT, "version": VERSION}
        self._arrays = []

    def array(self, name, values):
        values = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
        if any(n == name for n, _ in self._arrays):
            raise ValueError(f"array {name} added twice")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"array {name} has non-finite values")
        self._arrays.append((name, values))
        return name

    def has(self, name):
        return any(n == name for n, _ in self._arrays)

    def get(self, name):
        return next(v for n, v in self._arrays if n == name)

    def write(self, path):
        header = dict(self.header)
        header["arrays"] = [{"name": n, "shape": list(v.shape)} for n, v in self._arrays]
        line = json.dumps(header, separators=(",", ":"))
        assert "\n" not in line
        with open(path, "wb") as f:
            f.write(line.encode() + b"\n")
            for _, v in self._arrays:
                buf = io.BytesIO()
                np.save(buf, v, allow_pickle=False)
                f.write(buf.getvalue())
