#include "engine/backends.hpp"

#include "core/crash.hpp"
#include "core/error.hpp"
#include "core/watchdog.hpp"

#include <cstdio>

#include <gtest/gtest.h>

namespace sb {
namespace {

// llama.cpp's RPC client parses host:port at the first ':' and connects over IPv4 only: an
// IPv6 endpoint (which made it stop the process) is one line of bad input before any
// connection, bare or in brackets.
TEST(RpcEndpoint, IPv6AndMalformedEndpointsAreOneLineOfBadInput) {
    const std::pair<const char*, const char*> cases[] = {
        {"::1:50052", "connects over IPv4 only"},
        {"[::1]:50052", "connects over IPv4 only"},
        {"fe80::1%eth0:50052", "connects over IPv4 only"},
        {"50052", "is not host:port"},
        {"127.0.0.1:", "is not host:port"},
    };
    for (const auto& [endpoint, why] : cases) {
        try {
            add_rpc_server(endpoint, 1000);
            ADD_FAILURE() << endpoint << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input) << endpoint;
            const std::string w = e.what();
            EXPECT_NE(w.find(std::string("RPC endpoint '") + endpoint + "'"), std::string::npos)
                << w;
            EXPECT_NE(w.find(why), std::string::npos) << w;
        }
    }
}

// How long an RPC server's registration may take: 15 s, unless STAGEBENCH_RPC_SETUP_S says
// otherwise (a decimal number of seconds, more than 0 to 86400); anything else is one line of
// bad input that names the variable.
TEST(RpcSetupBudget, FifteenSecondsUnlessTheEnvironmentSaysAnotherNumber) {
    EXPECT_EQ(rpc_setup_budget_s(nullptr), 15);
    EXPECT_EQ(rpc_setup_budget_s(""), 15);
    EXPECT_EQ(rpc_setup_budget_s("2"), 2);
    EXPECT_EQ(rpc_setup_budget_s("0.5"), 0.5);
    EXPECT_EQ(rpc_setup_budget_s("86400"), 86400);
    for (const char* bad : {"0", "0.0", "-1", "+2", "1e3", "86400.5", "inf", "nan", "0x10", " 2",
                            "2 ", "2s", "1,5", ".", "2\nx"}) {
        try {
            rpc_setup_budget_s(bad);
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input) << bad;
            const std::string w = e.what();
            EXPECT_EQ(w.rfind("STAGEBENCH_RPC_SETUP_S='", 0), 0u) << w;
            EXPECT_EQ(w.find('\n'), std::string::npos) << w;
        }
    }
}

// llama.cpp's text enters error lines in one place: a message that ends in a newline (ggml's
// GGML_ABORT("...\n"), a log line) or holds several lines no longer splits the one-line error.
TEST(LlamaText, EveryMessageBecomesOneLine) {
    EXPECT_EQ(llama_text_line("Failed to connect to 127.0.0.1:1\n"),
              "Failed to connect to 127.0.0.1:1");
    EXPECT_EQ(llama_text_line("ggml-rpc.cpp:550: RPC handshake failed for x\r\n\n"),
              "ggml-rpc.cpp:550: RPC handshake failed for x");
    EXPECT_EQ(llama_text_line("file.cpp:1: \nggml-hex: graph-compute X is not supported\n"),
              "file.cpp:1: ggml-hex: graph-compute X is not supported");
    EXPECT_EQ(llama_text_line("a\n  b\t\n\nc"), "a b c");
    EXPECT_EQ(llama_text_line("\n\n"), "");
    EXPECT_EQ(llama_text_line("plain"), "plain");
}

TEST(LlamaText, ReasonsLoseTheFunctionNamesAndStayOneLine) {
    EXPECT_EQ(llama_reason("llama_model_load: error loading model: unknown model architecture: "
                           "'bogus'\n"),
              "unknown model architecture: 'bogus'");
    EXPECT_EQ(llama_reason("main: exiting due to model loading error\n"),
              "exiting due to model loading error");
    EXPECT_EQ(llama_reason("Not a name: keeps it\n"), "Not a name: keeps it");
}

// The log record: a message that ends in a newline and one that comes in pieces give the same
// one line.
TEST(LlamaText, TheLogRecordIsOneLine) {
    take_llama_error();
    record_llama_log(4 /* GGML_LOG_LEVEL_ERROR */, "llama_model_load: error loading model: ");
    record_llama_log(5 /* GGML_LOG_LEVEL_CONT */, "bad tensor\n");
    record_llama_log(4, "a later error\n");
    EXPECT_EQ(take_llama_error(), "bad tensor");
    record_llama_log(4, "first line\nsecond line\n\n");
    EXPECT_EQ(take_llama_error(), "first line second line");
    EXPECT_EQ(take_llama_error(), "");
}

// Every error line is kept, each its own line, in order (an out-of-memory reason reads the
// allocator's line and llama.cpp's after it); at most 16, the first ones.
TEST(LlamaText, EveryErrorLineIsKeptInOrderUpToSixteen) {
    take_llama_errors();
    record_llama_log(4, "alloc_tensor_range: failed to allocate Vulkan0 buffer of size ");
    record_llama_log(5, "4096\n");
    record_llama_log(2 /* INFO */, "an info line between\n");
    record_llama_log(5, "a continuation of the info line\n");
    record_llama_log(4,
                     "llama_init_from_model: failed to initialize the context: failed to "
                     "allocate buffer for kv cache\n");
    EXPECT_EQ(take_llama_errors(),
              (std::vector<std::string>{
                  "failed to allocate Vulkan0 buffer of size 4096",
                  "failed to initialize the context: failed to allocate buffer for kv cache"}));
    EXPECT_TRUE(take_llama_errors().empty());
    for (int i = 0; i < 20; ++i)
        record_llama_log(4, ("error " + std::to_string(i) + "\n").c_str());
    const std::vector<std::string> kept = take_llama_errors();
    ASSERT_EQ(kept.size(), 16u);
    EXPECT_EQ(kept.front(), "error 0");
    EXPECT_EQ(kept.back(), "error 15");
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

// The lines GPU backends log of their devices as they start, printed through the pinned
// ggml-vulkan's and ggml-cuda's own format strings (ggml_vk_print_gpu_info, ggml_cuda_init).
TEST(GpuDeviceLine, VulkanAndCudaLinesAreRead) {
    char vk[512];
    std::snprintf(vk, sizeof vk,
                  "ggml_vulkan: %zu = %s (%s) | uma: %d | fp16: %s | bf16: %d | fp4: %d | warp "
                  "size: %zu | shared memory: %d | int dot: %d | matrix cores: %s\n",
                  size_t{1}, "llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe", 1, "1", 0, 0,
                  size_t{8}, 32768, 0, "none");
    auto v = gpu_device_line(vk);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->device, "Vulkan1");
    EXPECT_EQ(v->driver, "llvmpipe");
    EXPECT_EQ(v->details,
              "uma: 1 | fp16: 1 | bf16: 0 | fp4: 0 | warp size: 8 | shared memory: "
              "32768 | int dot: 0 | matrix cores: none");

    char cuda[512];
    std::snprintf(cuda, sizeof cuda,
                  "  Device %d: %s, compute capability %d.%d, VMM: %s, VRAM: %zu MiB\n", 0,
                  "NVIDIA H100 80GB HBM3", 9, 0, "yes", size_t{81079});
    auto c = gpu_device_line(cuda);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->device, "CUDA0");
    EXPECT_FALSE(c->driver);
    EXPECT_EQ(c->details, "compute capability 9.0, VMM: yes, VRAM: 81079 MiB");

    for (const char* other :
         {"ggml_vulkan: Found 1 Vulkan devices:", "ggml_vulkan: 0 = no driver | uma: 1",
          "ggml_vulkan: x = llvmpipe (llvmpipe) | uma: 1", "Device: CPU", "Device 0 NVIDIA",
          "ggml_cuda_init: found 1 CUDA devices (Total VRAM: 81079 MiB):", ""})
        EXPECT_FALSE(gpu_device_line(other)) << other;
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

// A stop's line: llama.cpp's own message without its source location, the watchdog's line as it
// is, a crash named as one (core/crash.hpp), each with what was running.
TEST(LlamaStop, EachKindOfStopIsOneLineWithWhatWasRunning) {
    EXPECT_EQ(describe_llama_stop("ggml.c:12: GGML_ASSERT(x) failed", "CPU", "prefill"),
              "llama.cpp stopped during prefill: GGML_ASSERT(x) failed");
    EXPECT_EQ(describe_llama_stop(std::string(kOverrunMarker) + "decode took over 120 s", "Vulkan0",
                                  "decode"),
              "decode took over 120 s");
    EXPECT_EQ(describe_llama_stop(
                  std::string(kCrashMarker) + "segmentation fault (SIGSEGV) in libvulkan_lvp.so",
                  "Vulkan0", "decode"),
              "crashed during decode: segmentation fault (SIGSEGV) in libvulkan_lvp.so");
    EXPECT_EQ(describe_llama_stop(std::string(kCrashMarker) + "abort (SIGABRT)", "CPU", ""),
              "crashed: abort (SIGABRT)");
}

}  // namespace
}  // namespace sb
