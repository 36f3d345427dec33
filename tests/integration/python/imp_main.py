# SPDX-License-Identifier: MIT
"""imp_main.py - imports the test package impkg (see impkg/__init__.py for
what each module allocates at import time) for test_python_imports.py."""

import sys

import impkg

sys.stdout.write("impkg=%d\n" % len(impkg.DATA))
