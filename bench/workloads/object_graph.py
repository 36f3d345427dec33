"""Object graphs: class instances linked into trees, walked, partly dropped.

Instances with __dict__, __slots__ objects, parent/child lists and a dict
index; every round replaces part of the graph, so frees follow allocations
by a few rounds (a mid-lived heap, not a pure churn). Usage:
python3 object_graph.py [ITERS]
"""
import sys
import time


class Node:
    def __init__(self, key, parent):
        self.key = key
        self.parent = parent
        self.children = []
        self.attrs = {"k": key}


class Leaf:
    __slots__ = ("key", "value")

    def __init__(self, key, value):
        self.key = key
        self.value = value


def build(root_key, fanout, depth):
    root = Node(root_key, None)
    level = [root]
    for _ in range(depth):
        nxt = []
        for n in level:
            for j in range(fanout):
                c = Node(n.key * fanout + j, n)
                c.children.append(Leaf(j, str(j)))
                n.children.append(c)
                nxt.append(c)
        level = nxt
    return root


def walk(n):
    total = 0
    stack = [n]
    while stack:
        x = stack.pop()
        total += 1
        if isinstance(x, Node):
            stack.extend(x.children)
    return total


def run(iters):
    forest = {}
    total = 0
    for i in range(iters):
        forest[i % 16] = build(i, 4, 4)          # replaces a graph built 16 rounds ago
        total += walk(forest[i % 16])
    return total


if __name__ == "__main__":
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    t0 = time.perf_counter()
    r = run(iters)
    print(f"object_graph iters={iters} result={r} loop_s={time.perf_counter() - t0:.3f}")
