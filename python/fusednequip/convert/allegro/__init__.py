"""Allegro (nequip-allegro >= 0.8): read the weights out of a package or checkpoint
(reader.py), write them as .fnqm (fnqm.py)."""
