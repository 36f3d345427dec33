"""A thread pool building containers: 4 workers each build dicts, lists and
sets and return them; the main thread merges the results.

Several threads allocate at once (the GIL switches between them), so the
tracker's per-thread state and cross-thread frees are exercised. Usage:
python3 threadpool_dicts.py [TASKS]
"""
import concurrent.futures
import sys
import time


def task(k):
    d = {}
    for j in range(400):
        d[f"k{k}-{j}"] = [j, str(j), (j, k)]
    s = {v[1] for v in d.values()}
    return len(d) + len(s), d


def run(tasks):
    total = 0
    merged = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex:
        for n, d in ex.map(task, range(tasks)):
            total += n
            merged.update(d)
            if len(merged) > 20000:
                merged.clear()
    return total


if __name__ == "__main__":
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 900
    t0 = time.perf_counter()
    r = run(tasks)
    print(f"threadpool_dicts tasks={tasks} result={r} loop_s={time.perf_counter() - t0:.3f}")
