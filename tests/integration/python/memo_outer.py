"""The same inner frames under two outer call sites, back to back
(test_python_memo_outer.py): leaf() and mid() run at the same instructions
every time and only the outermost frame's line differs, so that a walk's
inner levels all match the previous walk's and only the outermost one moved
(py_stack.c hashes levels from the outermost one that changed inwards)."""
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
A, B = 100000, 200000
keep = []


def leaf(n):
    return bytearray(n)  # @leaf_alloc


def mid(n):
    return leaf(n)  # @mid_call


for i in range(N):
    if i % 2 == 0:
        keep.append(mid(A))  # @outer_a
    else:
        keep.append(mid(B))  # @outer_b
print("ran=1")
