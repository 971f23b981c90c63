"""Comparison helpers shared by the tests against reference outputs."""
import numpy as np


def rel(ours, ref):
    """largest absolute difference over the largest reference value"""
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    assert ours.shape == ref.shape
    return np.abs(ours - ref).max() / np.abs(ref).max()
