"""The kernel-building DSL: registers, operands, and a builder with an explicit context."""
