// SPDX-License-Identifier: MIT
//
// cxx_forms.cpp - each of the 8 operator new and 12 operator delete forms,
// REPS times, called explicitly so that every mangled entry point is used:
// 12 allocations and 12 frees per repetition, sizes known to
// test_cxx_alloc.py. Built against libstdc++ alone and linked with jemalloc
// and tcmalloc, which define operator new/delete of their own.
//
// First a throwing new that cannot succeed: std::bad_alloc must reach the
// program through the tracker's hook, and recording must go on afterwards
// (the hook's guard is cleared while the exception unwinds). Prints
// "bad_alloc=1" when it was caught.
//
// usage: cxx_forms REPS
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

static void *volatile sink_ptr;

int main(int argc, char **argv)
{
    unsigned long reps = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 1;
    const std::align_val_t al = std::align_val_t(64);
    int caught = 0;
    try {
        sink_ptr = ::operator new(SIZE_MAX / 2);
    } catch (const std::bad_alloc &) {
        caught = 1;
    }
    std::printf("bad_alloc=%d\n", caught);
    for (unsigned long r = 0; r < reps; r++) {
        void *p;
        p = ::operator new(11); // new
        sink_ptr = p;
        ::operator delete(p);
        p = ::operator new[](12); // new[]
        sink_ptr = p;
        ::operator delete[](p);
        p = ::operator new(13, std::nothrow); // new
        sink_ptr = p;
        ::operator delete(p, std::nothrow);
        p = ::operator new[](14, std::nothrow); // new[]
        sink_ptr = p;
        ::operator delete[](p, std::nothrow);
        p = ::operator new(128, al); // new
        sink_ptr = p;
        ::operator delete(p, al);
        p = ::operator new[](192, al); // new[]
        sink_ptr = p;
        ::operator delete[](p, al);
        p = ::operator new(256, al, std::nothrow); // new
        sink_ptr = p;
        ::operator delete(p, al, std::nothrow);
        p = ::operator new[](320, al, std::nothrow); // new[]
        sink_ptr = p;
        ::operator delete[](p, al, std::nothrow);
        p = ::operator new(15); // new
        sink_ptr = p;
        ::operator delete(p, static_cast<std::size_t>(15));
        p = ::operator new[](16); // new[]
        sink_ptr = p;
        ::operator delete[](p, static_cast<std::size_t>(16));
        p = ::operator new(384, al); // new
        sink_ptr = p;
        ::operator delete(p, static_cast<std::size_t>(384), al);
        p = ::operator new[](448, al); // new[]
        sink_ptr = p;
        ::operator delete[](p, static_cast<std::size_t>(448), al);
    }
    return 0;
}
