#include "core/crash.hpp"

#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace sb {
namespace {

// The crash names its signal and the file the faulting instruction belongs to: a shared
// library by its base name, the binary itself as stagebench's own code, and memory no loaded
// file holds (code generated at run time) as such.
TEST(Crash, TheDescriptionNamesTheSignalAndWhereTheInstructionWas) {
    EXPECT_EQ(std::string(crash_description(
                  SIGSEGV, reinterpret_cast<const void*>(
                               static_cast<size_t (*)(const char*)>(&std::strlen)))),
              "segmentation fault (SIGSEGV) in libc.so.6");
    EXPECT_EQ(
        std::string(crash_description(SIGILL, reinterpret_cast<const void*>(&crash_description))),
        "illegal instruction (SIGILL) in stagebench itself");
    const auto heap = std::make_unique<char[]>(64);
    EXPECT_EQ(std::string(crash_description(SIGBUS, heap.get())),
              "bus error (SIGBUS) at an address outside every loaded library (code made at run "
              "time, such as a driver's compiled shader)");
    EXPECT_EQ(std::string(crash_description(SIGFPE, nullptr)),
              "arithmetic fault (SIGFPE) at an unknown address");
    EXPECT_EQ(std::string(crash_description(SIGABRT, heap.get())),
              "abort (SIGABRT): an exception nothing caught or a failed check (see the lines "
              "above)");
}

}  // namespace
}  // namespace sb
