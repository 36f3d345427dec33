"""numpy mixed with Python loops: small and medium arrays built inside Python
loops, converted to lists and back, indexed element by element.

Unlike np_alloc (few large arrays), this mixes numpy's allocations with
Python object traffic at a high rate: tolist(), scalar boxing, fancy
indexing and small temporaries. Usage: python3 np_mixed.py [ITERS]
"""
import sys
import time

import numpy as np


def run(iters):
    rng = np.random.default_rng(1)
    total = 0.0
    for i in range(iters):
        a = rng.random(64 + i % 64)
        lst = a.tolist()                               # boxed floats
        b = np.array([x * 2.0 for x in lst if x > 0.1])
        idx = np.nonzero(b > 1.0)[0]
        c = b[idx] + np.arange(len(idx))
        m = np.outer(a[:16], a[:16])                   # 2 KiB temporaries
        total += float(c.sum()) + float(m.trace()) + sum(float(v) for v in a[:8])
    return total


if __name__ == "__main__":
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    t0 = time.perf_counter()
    r = run(iters)
    print(f"np_mixed iters={iters} result={r:.3f} loop_s={time.perf_counter() - t0:.3f}")
