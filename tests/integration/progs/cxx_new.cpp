// SPDX-License-Identifier: MIT
//
// cxx_new.cpp - every form of C++ operator new/delete, REPS times, with sizes
// test_allocators.py knows: plain, array, nothrow, aligned (align_val_t),
// aligned array, aligned nothrow, and sized / aligned sized delete. Aligned
// sizes are multiples of their alignment so that libstdc++ (which rounds the
// size up for aligned_alloc) requests exactly what is written here.
//
// Built twice: against the shared libstdc++ and with -static-libstdc++; in
// both, operator new ends in a call to the C allocator through the PLT.
//
// usage: cxx_new REPS
#include <cstdlib>
#include <new>

struct alignas(64) A64 {
    char b[128];
};
static_assert(sizeof(A64) == 128, "A64 is 128 bytes");

static void *volatile sink_ptr;

int main(int argc, char **argv)
{
    unsigned long reps = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 1;
    for (unsigned long r = 0; r < reps; r++) {
        int *i = new int(5); // 4 bytes
        sink_ptr = i;
        delete i;

        char *a = new char[100]; // 100, no array cookie for char
        sink_ptr = a;
        delete[] a;

        int *n = new (std::nothrow) int; // 4
        sink_ptr = n;
        delete n;

        char *na = new (std::nothrow) char[50]; // 50
        sink_ptr = na;
        delete[] na;

        A64 *al = new A64; // aligned new, 128 at 64
        sink_ptr = al;
        delete al;

        A64 *ala = new A64[2]; // aligned new[], 256 at 64 (trivial dtor: no cookie)
        sink_ptr = ala;
        delete[] ala;

        void *p = ::operator new(1000);
        sink_ptr = p;
        ::operator delete(p, static_cast<std::size_t>(1000)); // sized delete

        void *q = ::operator new[](2000);
        sink_ptr = q;
        ::operator delete[](q, static_cast<std::size_t>(2000)); // sized delete[]

        void *ra = ::operator new(512, std::align_val_t(256));
        sink_ptr = ra;
        ::operator delete(ra, static_cast<std::size_t>(512), std::align_val_t(256));

        void *s = ::operator new[](1024, std::align_val_t(128), std::nothrow);
        sink_ptr = s;
        ::operator delete[](s, std::align_val_t(128), std::nothrow);

        void *t = ::operator new(24, std::nothrow);
        sink_ptr = t;
        ::operator delete(t, std::nothrow);
    }
    return 0;
}
