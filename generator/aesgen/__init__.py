"""aesgen: a code generator for AES-CTR kernels (x86-64 now, AArch64 planned).

Stages, one sub-package each: ``model`` (the Python AES oracle), ``dsl`` and ``isa`` (kernel
builder and instruction tables), ``passes`` (the ordered compile pipeline), ``printer`` (GNU
assembler text), ``kernels`` (lowerings of a kernel spec), ``emit`` (files of a generated set).
"""

__version__ = "0.1.0"
