"""Emit a generated set: compile kernels, count their instructions, render and write files."""
