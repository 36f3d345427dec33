# SPDX-License-Identifier: MIT
"""impkg - a test package with known import-time allocations; the tree and
the sizes are in test_python_imports.py."""

from . import alpha
from . import beta

DATA = bytearray(1000000)
