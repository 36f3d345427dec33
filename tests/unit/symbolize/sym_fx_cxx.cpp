// SPDX-License-Identifier: MIT
//
// sym_fx_cxx.cpp - fixture of test_symbolize: a member function of a class
// template in a namespace allocates (833 ints = 3332 bytes), so its frame
// must come out demangled as trk_fx::Pool<int>::grab(unsigned long).
#include <cstdlib>

namespace trk_fx {
template <typename T> struct Pool {
    T *grab(std::size_t n)
    {
        return static_cast<T *>(std::malloc(n * sizeof(T))); /* LINE:cxx_alloc */
    }
};
} // namespace trk_fx

void *volatile sym_fx_sink;

int main()
{
    trk_fx::Pool<int> pool;
    sym_fx_sink = pool.grab(833); /* LINE:cxx_call */
    std::free(sym_fx_sink);
    return 0;
}
