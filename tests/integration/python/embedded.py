# SPDX-License-Identifier: MIT
"""embedded.py - run by tests/integration/progs/embed_python.c, a C program
that embeds the interpreter through the shared libpython: from_main() is
called from the program's main thread, from_c_thread() from a pthread of its
own that enters Python with PyGILState_Ensure. Both allocate at the same line
of inner(), with different sizes. "@name" markers: do not reformat."""

MAIN_SIZE = 1100000
THREAD_SIZE = 1900000

KEPT = []


def inner(n):
    KEPT.append(bytearray(n))  # @embed_inner


def from_main():
    inner(MAIN_SIZE)  # @embed_main_call


def from_c_thread():
    inner(THREAD_SIZE)  # @embed_thread_call
