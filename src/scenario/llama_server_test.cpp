// Why a managed llama-server did not start, from its log: the line that says so, never the
// debugger's noise that llama.cpp's abort handler leaves after it.
#include "scenario/llama_server.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "engine/process.hpp"

using namespace sb;

namespace {

std::string failure_of(const std::string& log) {
    const std::string path = ::testing::TempDir() + "llama_server_test.log";
    std::ofstream(path) << log;
    return startup_failure(path);
}

}  // namespace

TEST(StartupFailure, AnAssertionIsQuotedNotTheDebuggersLastLine) {
    EXPECT_EQ(
        failure_of("main: loading model\n"
                   "/src/ggml/src/ggml.c:1461: GGML_ASSERT(wtype != GGML_TYPE_COUNT) failed\n"
                   "[New LWP 4242]\n"
                   "[Thread debugging using libthread_db enabled]\n"
                   "Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\".\n"
                   "0x00007f0c1d2e in __GI___wait4 () at ../sysdeps/wait4.c:30\n"
                   "#0  0x00007f0c1d2e in __GI___wait4 ()\n"
                   "#1  0x00007f0c1d2f in ggml_print_backtrace ()\n"
                   "[Inferior 1 (process 4241) detached]\n"),
        "GGML_ASSERT(wtype != GGML_TYPE_COUNT) failed");
}

TEST(StartupFailure, AnErrorLineComesFirstElseTheLastLineThatIsNotADebuggers) {
    EXPECT_EQ(failure_of("a\nllama_model_load: error loading model: bad tensor\nb failed\n"),
              "bad tensor");
    EXPECT_EQ(failure_of("loading\nterminate called without an active exception\n"
                         "[Inferior 1 (process 9) detached]\n"),
              "terminate called without an active exception");
    EXPECT_EQ(failure_of(""), "it printed nothing");
}

TEST(ChildProcess, APeerStartsWithoutLlamaCppsDebuggerBacktrace) {
    const std::string log = ::testing::TempDir() + "child_env.log";
    std::remove(log.c_str());
    {
        ChildProcess p = ChildProcess::spawn({"/usr/bin/env"}, log);
        for (int i = 0; i < 500 && p.running(); ++i)
            usleep(10000);
    }
    std::ifstream f(log);
    const std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(env.find("GGML_NO_BACKTRACE=1"), std::string::npos) << env;
}
