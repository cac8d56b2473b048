"""AES-CTR as a mode skeleton: what every CTR kernel does the same way, whatever computes its
rounds and whatever instruction set it is written in (skeleton.py)."""
