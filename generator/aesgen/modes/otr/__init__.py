"""AES-OTR (specs/aes-otr.md): the skeleton (skeleton.py) and its x86-64 layers."""
