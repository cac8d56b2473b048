"""`aesgen tune`: a preset's choices (interleave, GHASH multiply, zmm GCM batch) made by
search, with llvm-mca's model of the preset's CPU as the cost.

space.py says what is searched and on which kernel; search.py compiles each candidate
through the same plan_kernels/KernelSpec path as generation and costs it with llvm-mca
(cached); record.py writes the winners back into the preset file, figures beside them.
Generation reads only the preset file, so it stays deterministic without the search.
"""
