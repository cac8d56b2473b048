"""AES-GCM (NIST SP 800-38D): the mode's skeleton per ISA (x86_64 now)."""
