// SPDX-License-Identifier: MIT
//
// cxx_string.cpp - heap blocks made inside libstdc++.so: std::string's
// constructor is an explicit instantiation there (extern template), so the
// innermost frame of these blocks, once operator new is hidden, is
// libstdc++'s _M_create / _M_construct, and the first stack of the run
// has a libstdc++ frame innermost. test_pprof_main.py checks that pprof's
// main binary is still this program.
//
// usage: cxx_string N    (N strings of 1000 + i bytes, kept; prints kept=N)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static std::string first;
static std::vector<std::string> *volatile kept;

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 10;
    first = std::string(4000, 'x'); // the run's first block: made in libstdc++
    kept = new std::vector<std::string>();
    kept->reserve((size_t)n);
    for (int i = 0; i < n; i++)
        kept->emplace_back((size_t)(1000 + i), 'y');
    std::printf("kept=%zu\nfirst=%zu\n", kept->size(), first.size());
    return 0;
}
