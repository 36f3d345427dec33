// SPDX-License-Identifier: MIT
//
// tls_dtor_cxx.cpp - allocation in C++ thread_local destructors, which run
// from __call_tls_dtors at thread exit, before pthread key destructors and
// possibly after a preload's own thread teardown hooks. Each of T threads
// constructs a thread_local Holder. With ALLOC=1 its constructor mallocs KS
// bytes, and its destructor frees them and leaks one more block of KS bytes;
// with ALLOC=0 it allocates nothing. The object is constructed in both modes
// because glibc itself callocs a small record for every registered
// thread_local destructor: that cost must cancel out of the difference.
//
// Per thread, ALLOC=1 minus ALLOC=0: 2 allocations, 1 free, KS leaked.
//
// usage: tls_dtor_cxx T ALLOC KS
#include <cstdlib>
#include <pthread.h>
#include <unistd.h>

static unsigned long long ks = 1000;
static void *volatile sink_ptr;

static int use_alloc;

struct Holder {
    char *mine;
    Holder() : mine(use_alloc ? static_cast<char *>(std::malloc(ks)) : nullptr) {}
    ~Holder()
    {
        if (!use_alloc)
            return;
        char *leak = static_cast<char *>(std::malloc(ks));
        if (!mine || !leak)
            _exit(99);
        leak[0] = 1;
        sink_ptr = leak;
        std::free(mine);
    }
};

thread_local Holder holder;

static void *worker(void *)
{
    sink_ptr = &holder; // odr-use: constructs it and registers the destructor
    return nullptr;
}

int main(int argc, char **argv)
{
    unsigned long t = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 8;
    use_alloc = argc > 2 ? std::atoi(argv[2]) : 1;
    ks = argc > 3 ? std::strtoull(argv[3], nullptr, 0) : 1000;
    for (unsigned long i = 0; i < t; i++) {
        pthread_t tid;
        if (pthread_create(&tid, nullptr, worker, nullptr))
            return 98;
        pthread_join(tid, nullptr);
    }
    return 0;
}
