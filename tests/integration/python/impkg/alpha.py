# SPDX-License-Identifier: MIT
"""impkg.alpha: imports impkg.gamma, then allocates a scratch buffer it
frees before its import finishes, and keeps another."""

from . import gamma

_scratch = bytearray(3000000)
del _scratch

KEEP = bytearray(2000000)
