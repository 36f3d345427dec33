# SPDX-License-Identifier: MIT
"""alloc_sites.py - Python allocation sites of known sizes for test_python.py.

Runs as a script, as `-m alloc_sites` and through `-c "import alloc_sites;
alloc_sites.main()"`. The tests find the expected lines through the "@name"
marker comments, so lines may move; keep one marker per line and do not
reformat. Sizes are chosen so that each site makes exactly one malloc of a
size nothing else in the interpreter asks for:

  bytearray(n)       n + 1 bytes (the buffer; the object is pymalloc's)
  [None] * n         8 n bytes (the item array)
  b"\\x01" * n       n + 33 bytes from PyObject_Malloc (pymalloc below 512)
  bytes(n)           n + 33 bytes from PyObject_Calloc
  _trkext.alloc_block(n)  malloc(n) in the C extension (tests/integration/python/trkext.c)

What is appended to KEPT lives until interpreter teardown: a leak by the rule
"still live when the script's code has finished". temporary() runs first and
frees its blocks at once: never a leak, and not live at the peak (which is
at the end, when all the kept blocks are).
"""

import sys

try:
    import _trkext
except ImportError:
    _trkext = None

BA_KEEP = 3000000
LIST_KEEP = 200000
METHOD_KEEP = 2200000
EXT_KEEP = 2500000
BA_TEMP = 1700000
EXT_TEMP = 1300000
SMALL = 100

KEPT = []


def make_bytearray(n):
    return bytearray(n)  # @ba_alloc


def make_list(n):
    return [None] * n  # @list_alloc


def ext_alloc(n):
    return _trkext.alloc_block(n)  # @ext_alloc


def small_objects(n):
    one = b"\x01"
    KEPT.append(one * n)  # @small_malloc
    KEPT.append(bytes(n))  # @small_calloc


class Holder:
    def grow(self, n):
        self.buf = bytearray(n)  # @method_alloc


def temporary():
    t = bytearray(BA_TEMP)  # @ba_temp
    del t
    if _trkext is not None:
        e = _trkext.alloc_block(EXT_TEMP)  # @ext_temp
        del e


def main():
    temporary()  # @main_temp
    KEPT.append(make_bytearray(BA_KEEP))  # @main_ba
    KEPT.append(make_list(LIST_KEEP))  # @main_list
    h = Holder()
    h.grow(METHOD_KEEP)  # @main_method
    KEPT.append(h)
    if _trkext is not None:
        KEPT.append(ext_alloc(EXT_KEEP))  # @main_ext
    small_objects(SMALL)  # @main_small
    sys.stdout.write("code_file=%s\next=%d\n" % (main.__code__.co_filename, _trkext is not None))
    sys.stdout.flush()


if __name__ == "__main__":
    main()  # @module_main
