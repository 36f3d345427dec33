#!/bin/sh
# SPDX-License-Identifier: MIT
# The bundled example (scripts/setup.sh's last step; tests/integration/
# test_readme_python.py runs it too): records examples/demo (C) and
# examples/demo.py (Python, run as the README says: through the python3 on
# PATH, here a pyenv-like shim that runs subshells and then execs the real
# interpreter, which the capture must name) and writes reports on disk.
#
#   sh scripts/example.sh [BUILD_DIR] [OUT_DIR]     (default: build out)
set -e
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-out}
PY=${EXAMPLE_PYTHON:-/usr/bin/python3}
T=$BUILD/tracker
mkdir -p "$OUT"
"$T" run -q -f -o "$OUT/demo.bin" -- "$BUILD/examples/demo"
"$T" stats "$OUT/demo.bin" >"$OUT/demo-stats.txt"
"$T" stats --json "$OUT/demo.bin" >"$OUT/demo-stats.json"
"$T" leaks "$OUT/demo.bin" >"$OUT/demo-leaks.txt"
"$T" flamegraph --no-progress -f -o "$OUT/demo.html" "$OUT/demo.bin"
# Python with the system interpreter named.
"$T" run -q -f -o "$OUT/demo-py.bin" --python "$PY" examples/demo.py
"$T" leaks "$OUT/demo-py.bin" >"$OUT/demo-py-leaks.txt"
"$T" imports "$OUT/demo-py.bin" >"$OUT/demo-py-imports.txt"
"$T" flamegraph --no-progress -f -o "$OUT/demo-py.html" "$OUT/demo-py.bin"
# Python through a shim, as pyenv installs python3: a bash script that runs
# subshells, then execs the real interpreter in the same pid. `tracker run
# SCRIPT.py` resolves it to the interpreter before tracing: one capture.
mkdir -p "$OUT/shim"
cat >"$OUT/shim/python3" <<SHIM
#!/usr/bin/env bash
set -e
version=\$(echo 3 | cat)
( true )
exec $PY "\$@"
SHIM
chmod +x "$OUT/shim/python3"
PATH="$(cd "$OUT/shim" && pwd):$PATH" "$T" run -q -f -o "$OUT/demo-shim.bin" examples/demo.py
"$T" stats "$OUT/demo-shim.bin" >"$OUT/demo-shim-stats.txt"
"$T" summary "$OUT/demo-shim.bin" >"$OUT/demo-shim-summary.txt"
"$T" flamegraph --no-progress -f -o "$OUT/demo-shim.html" "$OUT/demo-shim.bin"
