// SPDX-License-Identifier: MIT
//
// leak_cxx_static.cpp - a C++ program that loses nothing: static
// std::string globals on the heap, std::cout, the runtime's own one-time
// allocations (test_leak_classes.py: --fail-on-leak must pass).
#include <iostream>
#include <string>

static std::string greeting = "a static string long enough to live on the heap";
std::string filler(1000, 'x');

int main()
{
    static std::string local_static(500, 'y');
    std::cout << greeting.size() + filler.size() + local_static.size() << std::endl;
    return 0;
}
