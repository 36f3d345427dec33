"""Fixture of test_python_lines.py: one code object allocating at many
lines, reached in every order a per-code line cursor could get wrong:
forward through a long body, backward (a loop's jump, a late line then an
early one), a generator resumed at alternate yields, recursion (the same
code at different lines in frames alive together) and two threads running
the same code at once. Every site allocates its own size, so a stale line
shows as bytes at the wrong line (each site's own, exactly: the list that
keeps them grows in keep()). The long body's filler is written at test time
(test_python_lines.py expands each @filler line into 400 statements)."""
import sys
import threading

KEEP = []
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20


def keep(x):
    KEEP.append(x)  # the list's growth lands here, at no site's line


def sz(site):
    return 100000 + 1000 * site


def long_body(which):
    if which == 0:
        keep(bytearray(sz(1)))  # @early
    x = 0  # @filler: test_python_lines.py writes x = 0 .. x = 399 here
    if which == 1:
        keep(bytearray(sz(2)))  # @middle
    x = 0  # @filler: test_python_lines.py writes x = 0 .. x = 399 here
    if which == 2:
        keep(bytearray(sz(3)))  # @late
    return which


def loop():
    i = 0
    while i < N:
        keep(bytearray(sz(4)))  # @loop_a
        keep(bytearray(sz(5)))  # @loop_b
        i += 1


def gen():
    while True:
        yield bytearray(sz(6))  # @gen_a
        yield bytearray(sz(7))  # @gen_b


def rec(k):
    keep(bytearray(sz(8)))  # @rec_pre
    if k:
        rec(k - 1)  # @rec_call
    keep(bytearray(sz(9)))  # @rec_post


def worker(site_order):
    for _ in range(N):
        for w in site_order:
            long_body(w)  # @worker_call


def main():
    for _ in range(N):
        for w in (0, 1, 2):
            long_body(w)  # @fwd
        for w in (2, 1, 0):
            long_body(w)  # @back
    loop()
    g = gen()
    for _ in range(2 * N):
        KEEP.append(next(g))  # @gen_next
    for _ in range(N):
        rec(3)  # @rec_top
    ts = [threading.Thread(target=worker, args=(o,)) for o in ((2, 0, 1), (1, 2, 0))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("ran=1")


main()
