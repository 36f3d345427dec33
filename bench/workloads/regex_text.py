"""Regex over text: tokenise generated log lines, count words, rewrite them.

re.findall/finditer/sub create match objects, lists and many short strings;
the Counter grows a dict. Usage: python3 regex_text.py [ITERS]
"""
import collections
import re
import sys
import time

LINE = re.compile(r"(?P<ts>\d+:\d+:\d+) (?P<lvl>[A-Z]+) (?P<msg>.*)")
WORD = re.compile(r"[a-z]+")
NUM = re.compile(r"\d+")


def text(i):
    return "\n".join(f"{i % 24:02d}:{j % 60:02d}:{(i + j) % 60:02d} "
                     f"{('INFO', 'WARN', 'ERROR')[j % 3]} request {i * 100 + j} served "
                     f"in {j % 17} ms for user{j % 13} path /api/v{j % 3}/items"
                     for j in range(100))


def run(iters):
    counts = collections.Counter()
    total = 0
    for i in range(iters):
        t = text(i)
        for m in LINE.finditer(t):
            counts[m.group("lvl")] += 1
            counts.update(WORD.findall(m.group("msg")))
        total += len(NUM.sub("#", t))
    return total + len(counts)


if __name__ == "__main__":
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    t0 = time.perf_counter()
    r = run(iters)
    print(f"regex_text iters={iters} result={r} loop_s={time.perf_counter() - t0:.3f}")
