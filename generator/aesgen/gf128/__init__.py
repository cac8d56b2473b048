"""GF(2^128) hash engines: multiply, accumulate, reduce with precomputed powers of H."""
