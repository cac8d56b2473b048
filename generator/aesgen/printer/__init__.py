"""Printers: compiled Functions to assembler text, one module per ISA syntax."""
