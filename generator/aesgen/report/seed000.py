"""Figures quoted from seed 000 (Park & Lee, "FACE: Fast AES CTR mode Encryption Techniques
based on the Reuse of Repetitive Data", TCHES), for printing beside ours. Not measured here.
"""
from __future__ import annotations

# Section 1 and 5.1: instructions "up to round 2", existing code vs FACE.
UP_TO_ROUND_2 = {
    "table": {"base": 128, "face": 12, "base_source": "OpenSSL"},
    "bitsliced": {"base": 618, "face": 74, "base_source": "[KS09]"},
    "aesni": {"base": 6, "face": 3, "base_source": "Crypto++ (3 AES + 3 key loads)"},
}

# Table 2: test environment 3, where the AES-NI figures of Table 3 below were measured.
TEST_ENV_3 = "Intel Core i7 8700K, 3.7 GHz (seed 000 Table 2, test environment 3)"

# Table 3, test environment 3, AES-NI "4 x 1" rows: cycles/byte by size then key bits.
SIZES = (1024, 4096, 20480, 40960)
TABLE3_AESNI_4X1 = {
    "Crypto++": {1024: (0.551, 0.669, 0.767), 4096: (0.547, 0.642, 0.758),
                 20480: (0.537, 0.636, 0.745), 40960: (0.531, 0.622, 0.739)},
    "FACE R1": {1024: (0.513, 0.607, 0.706), 4096: (0.494, 0.586, 0.698),
                20480: (0.483, 0.581, 0.684), 40960: (0.473, 0.573, 0.677)},
    "FACE R2": {1024: (0.450, 0.547, 0.638), 4096: (0.441, 0.533, 0.636),
                20480: (0.442, 0.539, 0.624), 40960: (0.434, 0.539, 0.625)},
}
# Our kernel that plays each row's part.
OUR_ROW = {"Crypto++": "face-none", "FACE R1": "face-r1", "FACE R2": "face-r2"}

# Table 4, test environment 3, AES-NI set-up cycles (128/192/256-bit keys).
TABLE4_AESNI_SETUP = {"Crypto++": (145, 173, 212), "FACE R1": (680, 749, 783),
                      "FACE R2": (7568, 7628, 7618)}
