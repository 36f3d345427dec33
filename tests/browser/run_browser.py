#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_browser.py - runs one browser test (a test_*.js file) of the
flamegraph page: checks that Node.js and Debian's chromium are here (exit 77,
meson's "skipped", when either is not), installs playwright-core once into a
cache inside the build directory (npm's registry is reachable in CI; no
browser is ever downloaded: the tests drive /usr/bin/chromium), then runs the
script with node.

usage: run_browser.py --test FILE.js --tracker T --preload LIB --progdir DIR
                      --npm CACHE_DIR --artifacts DIR
"""

import argparse
import fcntl
import os
import shutil
import subprocess
import sys

SKIP = 77
# playwright-core 1.5x+ needs Node 20; Debian 12's own nodejs is 18, for
# which 1.49 (Node >= 18) is the newest that runs.
PLAYWRIGHT_NODE20 = "playwright-core@1.65.1"
PLAYWRIGHT_NODE18 = "playwright-core@1.49.1"


def playwright_version():
    try:
        out = subprocess.run(["node", "--version"], stdout=subprocess.PIPE, text=True,
                             timeout=30).stdout.strip()
        major = int(out.lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        major = 20
    return PLAYWRIGHT_NODE20 if major >= 20 else PLAYWRIGHT_NODE18
CHROMIUM = "/usr/bin/chromium"


def ensure_playwright(cache):
    """Installs playwright-core under cache (once; a lock serialises tests
    that start together). Returns the module directory."""
    mod = os.path.join(cache, "node_modules", "playwright-core")
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(os.path.join(mod, "package.json")):
            return mod
        npm = shutil.which("npm")
        if not npm:
            sys.exit("npm not found: install it (scripts/deps.sh does) to fetch playwright-core")
        env = dict(os.environ)
        # Never let the package fetch a browser of its own.
        env["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
        pkg = playwright_version()
        r = subprocess.run([npm, "install", "--prefix", cache, "--no-audit", "--no-fund",
                            "--loglevel=error", pkg],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                           timeout=300)
        if r.returncode != 0 or not os.path.isdir(mod):
            sys.exit("npm install %s failed:\n%s" % (pkg, r.stdout))
    return mod


def main():
    ap = argparse.ArgumentParser()
    for a in ("--test", "--tracker", "--preload", "--progdir", "--npm", "--artifacts"):
        ap.add_argument(a, required=True)
    a = ap.parse_args()
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        print("skip: node is not installed")
        return SKIP
    if not os.access(CHROMIUM, os.X_OK):
        print("skip: %s is not installed" % CHROMIUM)
        return SKIP
    mod = ensure_playwright(os.path.abspath(a.npm))
    name = os.path.splitext(os.path.basename(a.test))[0]
    work = os.path.join(os.path.abspath(a.progdir), "work-" + name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.makedirs(a.artifacts, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACKER_") and k != "LD_PRELOAD"}
    env.update({
        "TRK_PLAYWRIGHT": mod,
        "TRK_CHROMIUM": CHROMIUM,
        "TRK_TRACKER": os.path.abspath(a.tracker),
        "TRK_PRELOAD": os.path.abspath(a.preload),
        "TRK_PROGDIR": os.path.abspath(a.progdir),
        "TRK_WORK": work,
        "TRK_ARTIFACTS": os.path.abspath(a.artifacts),
    })
    return subprocess.run([node, a.test], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
