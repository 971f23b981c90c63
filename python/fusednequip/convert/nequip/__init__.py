"""NequIP: 0.5/0.6 deployed files (classic.py) and >= 0.7 packages and checkpoints
(current.py), laid out by what both share (common.py)."""
