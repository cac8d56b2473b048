"""Instruction tables, one data file per ISA, and the form matching that checks operand kinds."""
