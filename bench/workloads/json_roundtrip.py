"""JSON round trips: build nested records, dumps them, loads them back, compare.

Typical of web/ETL code: many small dicts, lists and strings are created by
the encoder and the decoder (pymalloc), the serialised text is one larger
block (malloc). Usage: python3 json_roundtrip.py [ITERS]
"""
import json
import sys
import time


def record(i):
    return {"id": i, "name": f"user-{i}", "tags": ["a", "b", str(i % 7)],
            "score": i * 0.5, "active": i % 2 == 0,
            "address": {"city": "c" + str(i % 100), "zip": f"{i % 99999:05d}"}}


def run(iters):
    total = 0
    for i in range(iters):
        batch = [record(i * 50 + j) for j in range(50)]
        text = json.dumps(batch)
        back = json.loads(text)
        total += len(text) + (back[-1]["id"] == batch[-1]["id"])
    return total


if __name__ == "__main__":
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    t0 = time.perf_counter()
    r = run(iters)
    print(f"json_roundtrip iters={iters} result={r} loop_s={time.perf_counter() - t0:.3f}")
