"""Lowerings: a KernelSpec becomes compiled Functions (init, set_iv, xor_stream, wipe)."""
