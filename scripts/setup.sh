#!/bin/sh
# First command of the README: install, build, and record the bundled example.
# Ends with a report on disk and prints where it is.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
[ -d build ] || meson setup build --buildtype=release >/dev/null
ninja -C build
mkdir -p out
./build/tracker run -f -o out/demo.bin -- ./build/examples/demo
./build/tracker stats out/demo.bin | tee out/demo-stats.txt
./build/tracker stats --json out/demo.bin > out/demo-stats.json
./build/tracker leaks out/demo.bin > out/demo-leaks.txt
./build/tracker flamegraph -f -o out/demo.html out/demo.bin
# The same for Python, with the system interpreter.
./build/tracker run -f -o out/demo-py.bin --python /usr/bin/python3 examples/demo.py
./build/tracker leaks out/demo-py.bin > out/demo-py-leaks.txt
./build/tracker imports out/demo-py.bin > out/demo-py-imports.txt
./build/tracker flamegraph -f -o out/demo-py.html out/demo-py.bin
echo
echo "setup: capture written to $(pwd)/out/demo.bin"
echo "setup: report written to $(pwd)/out/demo.html (flamegraph and memory timeline; open it in a browser)"
echo "setup: totals in out/demo-stats.txt (JSON: out/demo-stats.json), leaks in out/demo-leaks.txt"
echo "setup: Python example: out/demo-py.html, leaks in out/demo-py-leaks.txt, memory by import in out/demo-py-imports.txt"
