"""SevenNet (package sevenn) checkpoints -> .fnqm: reader.py finds and loads a checkpoint
with torch alone, fnqm.py lays the network out (../shared/reference/sevenn.md has the math)."""
