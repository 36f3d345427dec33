#!/bin/sh
# Applies .clang-format to the C sources (src/, include/, bench/, examples/).
# Test programs are left alone: their tests find expected line numbers by
# marker comments, which reformatting would move. --check only reports.
cd "$(dirname "$0")/.."
files=$(git ls-files 'src/*.c' 'src/*.h' 'include/*.h' 'bench/*.c' 'examples/*.c')
if [ "${1:-}" = "--check" ]; then
    # shellcheck disable=SC2086
    clang-format --dry-run --Werror $files
else
    # shellcheck disable=SC2086
    clang-format -i $files
fi
