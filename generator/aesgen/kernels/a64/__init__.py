"""AArch64 CTR kernels: the skeleton (ctr_kernel.py) and its round engines (engines.py)."""
