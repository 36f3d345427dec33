# SPDX-License-Identifier: MIT
"""impkg.gamma: allocates a scratch buffer it frees before its import
finishes, and keeps another."""

_scratch = bytearray(4000000)
del _scratch

KEEP = bytearray(3000000)
