#!/bin/sh
# Installs the Debian 12 packages tracker needs to build and test.
# Shared by setup.sh and test.sh; safe to run again.
set -e
# npm only when none is on PATH: NodeSource's nodejs bundles it and conflicts with Debian's.
PKGS="meson ninja-build pkg-config gcc g++ libunwind-dev liblz4-dev libzstd-dev libjemalloc-dev libgoogle-perftools-dev \
libcmocka-dev libdw-dev libelf-dev zlib1g-dev python3 python3-dev python3-numpy valgrind perl \
libpython3.11-testsuite strace \
golang-go chromium nodejs clang-format\
$(command -v npm >/dev/null 2>&1 || echo ' npm')"
# python3-torch (about 1 GB installed, ~35 s to install) is the real ML
# workload the Python tests and bench/ measure; TRACKER_WITH_TORCH=0 skips
# it, and its test then skips.
[ "${TRACKER_WITH_TORCH:-1}" = 1 ] && PKGS="$PKGS python3-torch"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
