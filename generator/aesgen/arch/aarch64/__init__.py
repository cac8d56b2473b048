"""AArch64: the general-purpose side the mode skeletons are written over (scalar.py)."""
