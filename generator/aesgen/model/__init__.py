"""Plain-Python reference models used only as test oracles.

``aes`` is a readable FIPS-197 AES plus OpenSSL-style CTR mode; ``face`` holds
the FACE round-reuse algebra (Park & Lee, TCHES, section 4).  Nothing here is
used to compute values for generated kernels.
"""
