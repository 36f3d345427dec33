/* SPDX-License-Identifier: MIT
 *
 * cxx_globals.cpp - an ordinary C++ program that leaks nothing: static
 * std::string globals (long enough to live on the heap) and output through
 * std::cout. What it leaves live at exit is libstdc++'s and libc's one-time
 * state (the 72,704-byte emergency exception pool allocated in libstdc++'s
 * initialiser, before the tracker's constructor runs; stdout's buffer): a
 * leak gate must pass it (issue 11).
 */
#include <iostream>
#include <string>

static std::string greeting = "hello from a static std::string long enough for the heap";
static const std::string other(100, 'x');

int main()
{
    std::cout << greeting << " " << other.size() << std::endl;
    return 0;
}
