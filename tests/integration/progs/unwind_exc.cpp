// SPDX-License-Identifier: MIT
//
// unwind_exc.cpp - allocations while a C++ exception is in flight, for
// test_unwind.py: __cxa_allocate_exception's own malloc, destructors that
// allocate while libgcc's unwinder runs the cleanups (its frames are on the
// stack then), and a catch block that allocates.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

static volatile unsigned long sink;

struct Guard {
    int k;
    ~Guard()
    {
        // Runs during unwinding, under _Unwind_RaiseException's frames.
        std::vector<int> v(16 + (k & 15), k);
        sink += v.size();
    }
};

__attribute__((noinline)) static void thrower(int k, int d)
{
    Guard g{k};
    if (d > 0) {
        thrower(k, d - 1);
        return;
    }
    throw std::runtime_error(std::string(40 + (k & 31), 'x'));
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 100;
    int caught = 0;
    for (int i = 0; i < n; i++) {
        try {
            thrower(i, i % 6);
        } catch (const std::exception &e) {
            std::string copy(e.what()); // allocates in the catch block
            sink += copy.size();
            caught++;
        }
    }
    std::printf("caught=%d\n", caught);
    return 0;
}
