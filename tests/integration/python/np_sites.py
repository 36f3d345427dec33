# SPDX-License-Identifier: MIT
"""np_sites.py - numpy arrays of known sizes at known lines, kept until the
end of the script (test_python_numpy.py). The data buffer of an array of N
elements of E bytes is one malloc (calloc for zeros) of exactly N * E bytes
from numpy's C code. "@name" markers: do not reformat."""

import sys

import numpy as np

KEPT = []


def arrays():
    KEPT.append(np.ones((256, 256)))  # @np_ones
    KEPT.append(np.zeros(100000, dtype=np.int32))  # @np_zeros
    KEPT.append(np.empty((300, 1000), dtype=np.uint8))  # @np_empty
    KEPT.append(KEPT[0] * 2.0)  # @np_mul


if __name__ == "__main__":
    arrays()
    sys.stdout.write("numpy=%s\n" % np.__version__)
