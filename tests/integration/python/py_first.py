# SPDX-License-Identifier: MIT
"""py_first.py - Python-first attribution for test_python_first.py: native
code under a Python line (the _trkext extension's malloc) is owned by that
line by default and shown under it with --native; a native thread's block
(no Python frame on its stack) keeps its native frames. Lines are found
through the "@name" markers: keep one per line, do not reformat."""

import sys

import _trkext

try:
    import pfsite  # written by the test under a site-packages directory
except ImportError:
    pfsite = None

EXT_KEEP = 6100000
BA_KEEP = 5300000
NATIVE_KEEP = 4700000
SITE_KEEP = 3900000

KEPT = []


def ext_alloc(n):
    return _trkext.alloc_block(n)  # @pf_ext


def make_bytearray(n):
    return bytearray(n)  # @pf_ba


def main():
    KEPT.append(ext_alloc(EXT_KEEP))  # @pf_main_ext
    KEPT.append(make_bytearray(BA_KEEP))  # @pf_main_ba
    _trkext.native_thread_block(NATIVE_KEEP)  # @pf_native
    if pfsite is not None:
        KEPT.append(pfsite.grow(SITE_KEEP))  # @pf_site
    sys.stdout.write("ran=1\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()  # @pf_module
