"""AES-GCM-SIV (RFC 8452): the mode's skeleton and its x86-64 layers."""
