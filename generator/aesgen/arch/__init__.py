"""The ISA layers mode skeletons are written over (one folder an architecture)."""
