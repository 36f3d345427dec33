# SPDX-License-Identifier: MIT
"""impkg.beta: keeps one buffer; its import of impkg.gamma finds the module
already imported by impkg.alpha."""

from . import gamma

KEEP = bytearray(6000000)
