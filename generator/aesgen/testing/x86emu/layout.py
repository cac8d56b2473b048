"""The address-space layout the program, the handlers and the machine share: where data and
regions are mapped, the gap between them, the pseudo addresses of instructions."""
from __future__ import annotations

# Address-space layout: nothing below LOW_LIMIT is ever mapped (NULL and small pointers
# fault); read-only data of the program first, then the heap of allocated regions.
LOW_LIMIT = 0x10000
GAP = 256                     # unmapped bytes at least between two regions
CODE_BASE = 0x7F00_0000_0000  # pseudo addresses of instructions (return addresses)
CODE_STRIDE = 16
SENTINEL = 0x7EEE_DEAD_BEE0   # the return address of Machine.call: `ret` to it ends the run
