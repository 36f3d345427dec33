"""Fixture of test_python_lines.py (test_code_reused): a function compiled
again and again, its code object and line table freed (gc.collect) and the
next ones allocated at the same addresses, with tables of the same length
and first line but different lines: every other pair of rounds has a blank
line at the top, so the function's lines are one further down. Round r
calls f(1) when there is no blank line (the 100,000-byte site, line 3) and
f(0) when there is (the 200,000-byte site, line 5). A line cursor kept from
the previous object at that address would step from there in the new table
and give line 4."""
import gc
import sys

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
KEEP = []
for i in range(ROUNDS):
    blank = (i // 2) % 2
    src = ("def f(w):\n" + "\n" * blank +
           "    if w:\n"
           "        return bytearray(100000)\n"
           "    return bytearray(200000)\n")
    ns = {}
    exec(compile(src, "gen_reuse.py", "exec"), ns)
    KEEP.append(ns["f"](1 - blank))
    del ns
    gc.collect()
print("ran=1")
