"""Fixture of test_python_walk.py: one function allocating at one line,
reached back to back from different callers, different lines of one caller
and different depths. The frame of `leaf` then sits at the same address at
the same instruction each time while its callers differ, which a frame walk
that reuses the previous walk's levels must still tell apart."""
A, B, C, D = 110000, 220000, 330000, 440000
N = 40
KEEP = []


def leaf(n):
    return bytearray(n)  # @leaf_alloc


def two_lines():
    for _ in range(N):
        KEEP.append(leaf(A))  # @line_a
        KEEP.append(leaf(B))  # @line_b


def other_caller():
    for _ in range(N):
        KEEP.append(leaf(C))  # @line_c


def deep(k):
    if k:
        return deep(k - 1)  # @deep_rec
    return leaf(D)  # @deep_leaf


def main():
    two_lines()  # @main_two
    other_caller()  # @main_other
    for i in range(N):
        KEEP.append(deep(i % 2))  # @main_deep
    print("ran=1")


main()  # @module_main
