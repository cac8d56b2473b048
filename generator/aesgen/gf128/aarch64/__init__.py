"""GF(2^128) hash engines on AArch64."""
