"""One Python line, two native paths, back to back (test_python_memo.py):
bytearray(n) and bytes(n) called from the same instruction of leaf(), so
that every Python frame of the two allocations is the same and only the
native frames between the evaluation loop and malloc differ."""
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
A, B = 100000, 200000
MAKERS = (bytearray, bytes)
keep = []


def leaf(make, n):
    return make(n)  # @leaf_alloc


for i in range(N):
    keep.append(leaf(MAKERS[i % 2], A if i % 2 == 0 else B))
print("ran=1")
