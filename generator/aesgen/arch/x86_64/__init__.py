"""x86-64: byte-exact moves of short pieces, without byte loops."""
