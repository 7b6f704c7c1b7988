#include "core/crash.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

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

// An exception nothing caught, as std::terminate's handler names it: its type and its what().
TEST(Crash, AnUncaughtExceptionIsNamedByItsTypeAndItsMessage) {
    EXPECT_EQ(uncaught_description(std::make_exception_ptr(std::runtime_error("device lost"))),
              "an exception nothing caught (std::runtime_error): device lost");
    struct NotAnException {};
    EXPECT_EQ(uncaught_description(std::make_exception_ptr(NotAnException{}))
                  .rfind("an exception nothing caught (", 0),
              0u);
    EXPECT_EQ(uncaught_description(std::make_exception_ptr(42)),
              "an exception nothing caught (int)");
    EXPECT_EQ(uncaught_description(nullptr), "std::terminate called without an exception");
}

// The handlers reach the caller's function from a fault on any thread: a write through a null
// pointer here, an exception nothing caught on a thread of its own (as a GPU backend's).
[[noreturn]] void print_and_exit(const char* description) {
    std::fprintf(stderr, "crash: %s\n", description);
    std::_Exit(3);
}

TEST(CrashDeathTest, AFaultOrAnExceptionNothingCaughtReachesTheHandler) {
    EXPECT_EXIT(
        {
            install_crash_handlers(print_and_exit);
            int* volatile null = nullptr;  // not known to be null: a real store, a real fault
            *null = 0;
        },
        ::testing::ExitedWithCode(3),
        "crash: segmentation fault \\(SIGSEGV\\) in stagebench itself");
    EXPECT_EXIT(
        {
            install_crash_handlers(print_and_exit);
            std::thread([] { throw std::runtime_error("device lost"); }).join();
        },
        ::testing::ExitedWithCode(3),
        "crash: an exception nothing caught \\(std::runtime_error\\): device lost");
    // A signal another process sent (kill -SEGV) is said as such: no instruction faulted.
    EXPECT_EXIT(
        {
            install_crash_handlers(print_and_exit);
            const pid_t parent = getpid();
            if (fork() == 0) {
                kill(parent, SIGSEGV);
                std::_Exit(0);
            }
            for (;;)
                pause();
        },
        ::testing::ExitedWithCode(3),
        "crash: segmentation fault \\(SIGSEGV\\) sent by process [0-9]+");
}

}  // namespace
}  // namespace sb
