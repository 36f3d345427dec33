# SPDX-License-Identifier: MIT
"""sub_parent.py - runs sub_child.py with subprocess.run([sys.executable,
...]): an exec'd interpreter the tracker must follow into a capture of its
own. The parent allocates PARENT_SIZE itself; the child CHILD_SIZE. "@name"
markers: do not reformat."""

import os
import subprocess
import sys

PARENT_SIZE = 1200000
CHILD_SIZE = 3100000

KEPT = []


def parent_work():
    KEPT.append(bytearray(PARENT_SIZE))  # @sub_parent_alloc


def main():
    parent_work()
    child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sub_child.py")
    cp = subprocess.run([sys.executable, child, str(CHILD_SIZE)], check=True)  # @sub_run
    sys.stdout.write("child_rc=%d\n" % cp.returncode)


if __name__ == "__main__":
    main()
