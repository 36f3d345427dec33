# SPDX-License-Identifier: MIT
"""sub_child.py - the child of sub_parent.py: keeps one bytearray of the
size given as its argument until the end of the script and prints its pid.
"@name" markers: do not reformat."""

import os
import sys

KEPT = []


def child_work(n):
    KEPT.append(bytearray(n))  # @sub_child_alloc


if __name__ == "__main__":
    child_work(int(sys.argv[1]))
    sys.stdout.write("child_pid=%d\n" % os.getpid())
