"""A small Python program with a known memory story, for `tracker run`:
a cache that grows and is never emptied (a leak at the script's end), a
temporary buffer per batch, and a few imports that keep memory.

    tracker run examples/demo.py
"""
import json
import array


class FeatureCache:
    def __init__(self):
        self.rows = []

    def add(self, n):
        self.rows.append(bytearray(n))  # kept: the cache never shrinks


def batch(i):
    tmp = [float(x) for x in range(20000)]  # temporary: freed at return
    return json.dumps(tmp[:10]) + str(i)


def main():
    cache = FeatureCache()
    out = []
    for i in range(50):
        out.append(batch(i))
        cache.add(64 * 1024)
    table = array.array("d", range(100000))  # freed before the end
    del table
    return cache


CACHE = main()
print("demo.py: cached %d rows" % len(CACHE.rows))
