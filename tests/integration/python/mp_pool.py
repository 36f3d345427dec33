# SPDX-License-Identifier: MIT
"""mp_pool.py - a multiprocessing Pool of two workers with the start method
given as the first argument (fork, spawn or forkserver) maps work() over
TASKS equal sizes. Each task keeps its block in the worker's KEPT list, so
that a worker's blocks are live to its end. "@name" markers: do not
reformat."""

import multiprocessing
import sys

TASKS = 4
SIZE = 2600000     # bytearray: SIZE + 1 bytes per task

KEPT = []


def work(n):
    KEPT.append(bytearray(n))  # @pool_work
    return len(KEPT)


def main(method):
    ctx = multiprocessing.get_context(method)
    pool = ctx.Pool(2)
    done = pool.map(work, [SIZE] * TASKS, chunksize=1)
    pool.close()
    pool.join()
    sys.stdout.write("tasks=%d\n" % len(done))


if __name__ == "__main__":
    main(sys.argv[1])
