#!/bin/sh
# First command of the README: install, build, and record the bundled example.
# Ends with a report on disk and prints where it is.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
[ -d build ] || meson setup build --buildtype=release >/dev/null
ninja -C build
# The C and Python examples (Python also through a pyenv-like shim), reports on disk.
sh scripts/example.sh build out
cat out/demo-stats.txt
echo
echo "setup: capture written to $(pwd)/out/demo.bin"
echo "setup: report written to $(pwd)/out/demo.html (flamegraph and memory timeline; open it in a browser)"
echo "setup: totals in out/demo-stats.txt (JSON: out/demo-stats.json), leaks in out/demo-leaks.txt"
echo "setup: Python example: out/demo-py.html, leaks in out/demo-py-leaks.txt, memory by import in out/demo-py-imports.txt"
echo "setup: Python through a pyenv-like shim (out/shim/python3): out/demo-shim.html, out/demo-shim-summary.txt"
