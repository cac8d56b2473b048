"""``aesgen calibrate``: measure a CPU core's facts (latency and throughput per instruction
class, store forwarding, loads and stores a cycle, shared AES/CLMUL pipes) on the host.

microbench.py generates, compiles and runs the timed loops and turns ticks into cycles;
report.py prints them beside a model and llvm-mca and writes a model file (uarch.py).
"""
