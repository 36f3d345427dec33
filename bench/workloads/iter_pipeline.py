"""Iterator pipelines: generators, map/filter, itertools and sorted() chained
over records, as in data-processing scripts.

Mostly short-lived tuples, ints and generator frames (pymalloc), with a
sorted list and a groupby per round. Usage: python3 iter_pipeline.py [ITERS]
"""
import itertools
import operator
import sys
import time


def source(n, seed):
    for i in range(n):
        yield (i, (i * 7919 + seed) % 1000, f"g{i % 10}")


def run(iters):
    total = 0
    for r in range(iters):
        rows = filter(lambda x: x[1] % 3 != 0, source(3000, r))
        rows = map(lambda x: (x[2], x[1] * 2, x[0]), rows)
        ordered = sorted(rows, key=operator.itemgetter(0, 1))
        for key, grp in itertools.groupby(ordered, key=operator.itemgetter(0)):
            total += sum(v for _, v, _ in grp)
        total += sum(1 for _ in itertools.islice(itertools.chain(ordered, ordered), 0, None, 5))
    return total


if __name__ == "__main__":
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 350
    t0 = time.perf_counter()
    r = run(iters)
    print(f"iter_pipeline iters={iters} result={r} loop_s={time.perf_counter() - t0:.3f}")
