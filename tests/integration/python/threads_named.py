# SPDX-License-Identifier: MIT
"""threads_named.py - two threading.Thread workers named "worker-a" and
"worker-b" allocate blocks of sizes nothing else asks for, interleaved
(a barrier starts them together and each switches threads between blocks),
and keep them until the interpreter's teardown, so that every block is a
leak of its own thread at its own line. "@name" markers: do not reformat."""

import threading
import time

ROUNDS = 20
A_SIZE = 330000    # bytearray: A_SIZE + 1 bytes each
B_ITEMS = 40000    # list: 8 * B_ITEMS bytes each

KEPT_A = []
KEPT_B = []
start = threading.Barrier(2)


def work_a(n):
    start.wait()
    for _ in range(ROUNDS):
        KEPT_A.append(bytearray(n))  # @thread_a_alloc
        time.sleep(0)


def work_b(n):
    start.wait()
    for _ in range(ROUNDS):
        KEPT_B.append([None] * n)  # @thread_b_alloc
        time.sleep(0)


def main():
    ta = threading.Thread(target=work_a, args=(A_SIZE,), name="worker-a")
    tb = threading.Thread(target=work_b, args=(B_ITEMS,), name="worker-b")
    ta.start()
    tb.start()
    ta.join()
    tb.join()


if __name__ == "__main__":
    main()
