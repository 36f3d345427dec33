#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_full_disk.py - the capture's file system fills up mid-run: the
program is not disturbed (same exit status, runs to the end), the tracker
says once on stderr that it stopped and why, and what reached the disk reads
back as a truncated capture. Needs a small tmpfs, so it skips where this
process may not mount one."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, ge, main  # noqa: E402


def test_disk_full(env):
    mnt = env.tmpdir("small")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        raise Skip("cannot mount a tmpfs here")
    try:
        out = os.path.join(mnt, "full.bin")
        prog = env.prog("leaker")
        # leaker N SIZE: N blocks of SIZE bytes, then exit 0; far more events
        # than 256 KiB of capture can hold.
        p = subprocess.run([env.tracker, "run", "-o", out, "--", prog, "300000", "16"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        eq(p.returncode, 0, "program exit status passed through")
        stopped = [l for l in p.stderr.splitlines() if "stopped tracking" in l]
        eq(len(stopped), 1, "one 'stopped tracking' line (stderr: %r)" % p.stderr)
        check("No space left on device" in stopped[0], "names the cause: %r" % stopped[0])
        st = env.stats(out, allow_truncated=True)
        eq(st["truncated"], True, "truncated")
        ge(st["allocations"], 1, "events before the disk filled are readable")
    finally:
        subprocess.run(["umount", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main(globals())
