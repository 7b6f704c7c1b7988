// Why a managed llama-server did not start, from its log: the line that says so, never the
// debugger's noise that llama.cpp's abort handler leaves after it.
#include "scenario/llama_server.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "engine/process.hpp"
#include "temp_dir.hpp"

using namespace sb;

namespace {

// Each call writes its own folder's log: ctest runs this file's tests as parallel processes, and
// a name shared among them let one test read another's log.
std::string failure_of(const std::string& log) {
    sbtest::TempDir dir;
    const std::string path = dir.file("llama-server.log");
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
    // ggml's abort without a word of failure: its source location is no reason.
    EXPECT_EQ(failure_of("/src/ggml/src/ggml-backend.cpp:941: pre-allocated tensor (cache_k_l0) "
                         "in a buffer (Vulkan0) that cannot run the operation (NONE)\n"
                         "[Inferior 1 (process 9) detached]\n"),
              "pre-allocated tensor (cache_k_l0) in a buffer (Vulkan0) that cannot run the "
              "operation (NONE)");
}

// A server that ran out of device memory says so as in-process llama.cpp does (device, what
// for, the size, what asks for less), not ggml-vulkan's first line that names an error.
TEST(StartupFailure, OutOfMemoryIsSaidAsRunSaysIt) {
    // The pinned llama-server's own log with -c 16000000 -ngl 99 -dev Vulkan0 -fit off on
    // lavapipe (its lines stamped).
    EXPECT_EQ(failure_of("ggml_vulkan: Device memory allocation of size 4096000000 failed.\n"
                         "ggml_vulkan: No suitable memory type found: ErrorOutOfDeviceMemory\n"
                         "0.00.597.292 E alloc_tensor_range: failed to allocate Vulkan0 buffer of "
                         "size 4096000000\n"
                         "0.00.641.123 E llama_init_from_model: failed to initialize the context: "
                         "failed to allocate buffer for kv cache\n"
                         "0.00.641.155 E cmn  common_init_: failed to create context with model "
                         "'tiny.gguf'\n"
                         "0.00.641.171 E srv    load_model: failed to create_context with model "
                         "'tiny.gguf'\n"
                         "0.00.641.906 E srv  llama_server: exiting due to model loading error\n"),
              "out of memory on Vulkan0 for the KV cache: a buffer of 3906.2 MiB could not be "
              "allocated; try a smaller context, a quantized KV cache (-ctk/-ctv q8_0) or fewer "
              "layers on the device (-ngl)");
    // A line of a megabyte that names an allocation is read as its first 4096 bytes.
    EXPECT_EQ(failure_of("failed to allocate Vulkan0 buffer of size 1048576 " +
                         std::string(1 << 20, 'x') + "\n"),
              "out of memory on Vulkan0: a buffer of 1.0 MiB could not be allocated");
}

TEST(ChildProcess, APeerStartsWithoutLlamaCppsDebuggerBacktrace) {
    sbtest::TempDir dir;
    const std::string log = dir.file("child_env.log");
    {
        ChildProcess p = ChildProcess::spawn({"/usr/bin/env"}, log);
        for (int i = 0; i < 500 && p.running(); ++i)
            usleep(10000);
    }
    std::ifstream f(log);
    const std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(env.find("GGML_NO_BACKTRACE=1"), std::string::npos) << env;
}

namespace {

// A llama-server that never serves: a real child process that never opens its port.
std::string silent_server(const sbtest::TempDir& dir) {
    const std::string path = dir.file("llama-server");
    std::ofstream(path) << "#!/bin/sh\nexec sleep 600\n";
    chmod(path.c_str(), 0755);
    return path;
}

// Removes the log an error names ("... (log PATH)"): a failed start keeps it.
void remove_named_log(const std::string& what) {
    const auto at = what.rfind("(log ");
    if (at != std::string::npos && what.back() == ')')
        std::remove(what.substr(at + 5, what.size() - at - 6).c_str());
}

// Starts a server that never serves on a simulated clock (its pause moves it on) and returns
// the one-line error and the time the start took on that clock.
std::pair<std::string, int64_t> start_never_ready(double timeout_s, int* pauses) {
    sbtest::TempDir dir;
    LlamaServerSpec spec;
    spec.binary = silent_server(dir);
    spec.model = "m.gguf";
    spec.timeout_s = timeout_s;
    int64_t now = 1'000'000'000;
    const int64_t start = now;
    try {
        LlamaServer s(
            spec, nullptr, [&] { return now; },
            [&](int64_t ns) {
                ++*pauses;
                now += ns;
            });
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::runtime);
        const std::string what = e.what();
        remove_named_log(what);
        return {what, now - start};
    }
    ADD_FAILURE() << "a server that never serves was taken as ready";
    return {"", now - start};
}

}  // namespace

// The start's deadline is on the clock the factory gives (the run's): a server that never
// serves ends the wait, with one line, after exactly max(120 s, its timeout) on that clock.
TEST(LlamaServerStart, AServerThatNeverServesFailsAtTheDeadlineOnTheGivenClock) {
    int pauses = 0;
    auto [what, took_ns] = start_never_ready(30, &pauses);
    EXPECT_EQ(took_ns, 120'000'000'000);
    EXPECT_EQ(pauses, 2400);  // its port tried every 50 ms
    EXPECT_EQ(
        what.rfind("llama-server did not become ready within 120 s: it printed nothing (log ", 0),
        0u)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;

    pauses = 0;
    std::tie(what, took_ns) = start_never_ready(300, &pauses);
    EXPECT_EQ(took_ns, 300'000'000'000);
    EXPECT_EQ(what.rfind("llama-server did not become ready within 300 s: ", 0), 0u) << what;
}

// Ctrl-C ends the wait at once, whatever the clock says.
TEST(LlamaServerStart, CtrlCEndsTheWait) {
    sbtest::TempDir dir;
    LlamaServerSpec spec;
    spec.binary = silent_server(dir);
    spec.model = "m.gguf";
    int64_t now = 1'000'000'000;
    int pauses = 0;
    try {
        LlamaServer s(
            spec, nullptr, [&] { return now; },
            [&](int64_t ns) {
                now += ns;
                if (++pauses == 3)
                    request_interrupt();
            });
        ADD_FAILURE() << "the start went on after Ctrl-C";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::runtime);
        const std::string what = e.what();
        EXPECT_EQ(what.rfind("interrupted while llama-server was starting (log ", 0), 0u) << what;
        remove_named_log(what);
    }
    clear_interrupt();
    EXPECT_EQ(pauses, 3);
    EXPECT_EQ(now, 1'150'000'000);
}
