#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_imports.py - `tracker imports` (issue 5) on a script importing
the test package python/impkg/, whose modules import each other and allocate
known bytearrays at import time, some kept and some freed before their
import finishes:

    impkg            keeps 1,000,001 B
      impkg.alpha    allocates 3,000,001 B and frees it, keeps 2,000,001 B
        impkg.gamma  allocates 4,000,001 B and frees it, keeps 3,000,001 B
      impkg.beta     keeps 6,000,001 B (its import of impkg.gamma finds the
                     module imported already: no second node)

`imports --json` nests the modules as they were imported and gives each its
own allocated and live bytes ("live": still allocated when its import
finished) and the cumulative figures of its subtree, within TOL: what the
interpreter allocates itself to import a small module (finding and compiling
it, and CPython's table of interned strings growing when an import crosses
its threshold, some 120 KiB on 3.11). Every figure differs from every other
by at least 1 MB, so a block counted in the wrong module cannot pass.
--hide-imports takes the import machinery's frames out of the stacks."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402
from pyutil import SYS_PY, fixture, need_python, pyrun, report, text  # noqa: E402

TOL = 256 * 1024

# module -> (allocated, live) of its own import, children excluded.
OWN = {
    "impkg": (1000001, 1000001),
    "impkg.alpha": (3000001 + 2000001, 2000001),
    "impkg.gamma": (4000001 + 3000001, 3000001),
    "impkg.beta": (6000001, 6000001),
}
TREE = {"impkg": ["impkg.alpha", "impkg.beta"], "impkg.alpha": ["impkg.gamma"],
        "impkg.gamma": [], "impkg.beta": []}
KEYS = ("module", "allocated_bytes", "live_bytes", "cumulative_allocated_bytes",
        "cumulative_live_bytes", "children")


def cumulative(module, i):
    return OWN[module][i] + sum(cumulative(c, i) for c in TREE[module])


def walk(nodes, depth=0):
    for n in nodes:
        yield n, depth
        yield from walk(n.get("children", []), depth + 1)


def size(module):
    """Modules in the subtree of MODULE."""
    return 1 + sum(size(c) for c in TREE[module])


def near(got, want, what, errors, tol=TOL):
    if not (want <= got <= want + tol):
        errors.append("%s: got %r, expected %r (+ up to %d)" % (what, got, want, tol))


def test_import_tree(env):
    need_python()
    _, out, v = pyrun(env, ["--python", SYS_PY, fixture("imp_main.py")])
    eq(v.get("impkg"), 1000000, "the script ran")
    doc = report(env, "imports", [out])
    check(isinstance(doc, dict) and isinstance(doc.get("imports"), list),
          "imports --json: an object with an \"imports\" list: %r" % str(doc)[:300])
    for n, _ in walk(doc["imports"]):
        missing = [k for k in KEYS if k not in n]
        check(not missing, "import node %r lacks %s" % (n.get("module"), missing))
    top = [n for n in doc["imports"] if n["module"] == "impkg"]
    eq(len(top), 1, "top-level impkg nodes (top level: %s)"
       % [n["module"] for n in doc["imports"]])
    nodes = {}
    for n, depth in walk(top):
        check(n["module"] not in nodes, "%s imported twice in the tree" % n["module"])
        nodes[n["module"]] = n
    eq(sorted(nodes), sorted(OWN), "modules under impkg")
    errors = []
    for m, node in nodes.items():
        eq(sorted(c["module"] for c in node["children"]), sorted(TREE[m]), "children of " + m)
        near(node["allocated_bytes"], OWN[m][0], m + " allocated_bytes", errors)
        near(node["live_bytes"], OWN[m][1], m + " live_bytes", errors)
        near(node["cumulative_allocated_bytes"], cumulative(m, 0),
             m + " cumulative_allocated_bytes", errors, TOL * size(m))
        near(node["cumulative_live_bytes"], cumulative(m, 1), m + " cumulative_live_bytes",
             errors, TOL * size(m))
        check(node["cumulative_allocated_bytes"] == node["allocated_bytes"]
              + sum(c["cumulative_allocated_bytes"] for c in node["children"]),
              "%s: cumulative_allocated_bytes is its own plus its children's" % m)
        check(node["cumulative_live_bytes"] == node["live_bytes"]
              + sum(c["cumulative_live_bytes"] for c in node["children"]),
              "%s: cumulative_live_bytes is its own plus its children's" % m)
    if errors:
        raise AssertionError("\n  ".join(["%d import figures out of range:" % len(errors)]
                                          + errors))
    t = text(env, "imports", [out])
    for m in OWN:
        check(m in t, "%s in the text report:\n%s" % (m, t))



def is_import_machinery(f):
    return (f.get("file") or "").startswith("<frozen importlib") or \
        (f.get("file") or "").endswith(("importlib/_bootstrap.py",
                                         "importlib/_bootstrap_external.py"))


def test_hide_imports(env):
    """--hide-imports: the import machinery's frames leave every stack; the
    module bodies (<module> of each impkg file) and the bytes stay."""
    need_python()
    _, out, _ = pyrun(env, ["--python", SYS_PY, fixture("imp_main.py")])
    keep = {"impkg/beta.py": 6000001, "impkg/__init__.py": 1000001}
    for opts in ([], ["--hide-imports"]):
        leaks = report(env, "leaks", ["-n", "0"] + opts + [out])
        for path, size in keep.items():
            g = [x for x in leaks if x["bytes"] == size and any(
                f["function"] == "<module>" and (f["file"] or "").endswith(path)
                for f in x["stack"])]
            eq(len(g), 1, "%s: leak of %d bytes in %s" % (opts, size, path))
            machinery = [f for f in g[0]["stack"] if is_import_machinery(f)]
            if opts:
                eq([(f["function"], f["file"]) for f in machinery], [],
                   "%s: import machinery frames in %s's stack" % (opts, path))
            else:
                check(machinery, "the import machinery's frames in %s's stack by default" % path)
        s = report(env, "summary", opts + ["-n", "0", out])
        rows = [r for r in s["locations"] if is_import_machinery(r)]
        if opts:
            eq(rows, [], "summary rows of the import machinery with --hide-imports")
        else:
            check(rows, "summary rows of the import machinery by default")


if __name__ == "__main__":
    sys.exit(main(globals()))
