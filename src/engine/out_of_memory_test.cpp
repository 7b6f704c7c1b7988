#include "engine/out_of_memory.hpp"

#include <gtest/gtest.h>

#include <map>

namespace sb {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// The figures a device reports, by name, for the reason's memory clause.
DeviceMemoryOf devices(std::map<std::string, DeviceMemory> known) {
    return [known](const std::string& name) -> std::optional<DeviceMemory> {
        const auto it = known.find(name);
        return it == known.end() ? std::nullopt : std::optional(it->second);
    };
}

// The lines the pinned llama.cpp logged when lavapipe could not hold a 16M-cell KV cache
// (take_llama_errors() gives them without the function names).
TEST(OutOfMemory, AKvCacheTooLargeForTheGpuNamesTheDeviceTheSizeAndWhatAsksForLess) {
    const std::vector<std::string> lines = {
        "failed to allocate Vulkan0 buffer of size 4096065536",
        "failed to initialize the context: failed to allocate buffer for kv cache"};
    EXPECT_EQ(out_of_memory_reason(lines, AllocStep::create_context,
                                   devices({{"Vulkan0", {2048 * kMiB, 2048 * kMiB}}})),
              "out of memory on Vulkan0 for the KV cache: a buffer of 3906.3 MiB could not be "
              "allocated (Vulkan0 reports 2048 MiB free of 2048 MiB); try a smaller context, a "
              "quantized KV cache (-ctk/-ctv q8_0) or fewer layers on the device (-ngl)");
    // A device whose memory ggml does not know: the rest stands.
    EXPECT_EQ(out_of_memory_reason(lines, AllocStep::create_context, devices({})),
              "out of memory on Vulkan0 for the KV cache: a buffer of 3906.3 MiB could not be "
              "allocated; try a smaller context, a quantized KV cache (-ctk/-ctv q8_0) or fewer "
              "layers on the device (-ngl)");
}

// ggml-cuda's line comes first, with the device's index and MiB; the allocator's after it has
// the buffer type and the exact bytes, which win. Loading: the weights.
TEST(OutOfMemory, CudaWeightsThatDoNotFitAskForFewerLayers) {
    const std::vector<std::string> lines = {
        "allocating 70000.00 MiB on device 0: cudaMalloc failed: out of memory",
        "failed to allocate CUDA0 buffer of size 73400320000", "unable to allocate CUDA0 buffer"};
    EXPECT_EQ(out_of_memory_reason(lines, AllocStep::load_model,
                                   devices({{"CUDA0", {60000 * kMiB, 81079 * kMiB}}})),
              "out of memory on CUDA0 for the weights: a buffer of 70000.0 MiB could not be "
              "allocated (CUDA0 reports 60000 MiB free of 81079 MiB); try fewer layers on the "
              "device (-ngl) or a smaller quantization");
    // ggml-cuda's line alone still names the device and the size.
    EXPECT_EQ(out_of_memory_reason({lines[0]}, AllocStep::load_model, devices({})),
              "out of memory on CUDA0 for the weights: a buffer of 70000.0 MiB could not be "
              "allocated; try fewer layers on the device (-ngl) or a smaller quantization");
}

// The host's buffers (CPU, CPU_REPACK, a GPU backend's pinned _Host memory) report the CPU
// device's memory as the host's, and offloading fewer layers is no remedy for them.
TEST(OutOfMemory, HostBuffersReportTheHostsMemoryAndNoOffloadHint) {
    const auto host = devices({{"CPU", {1000 * kMiB, 24105 * kMiB}}});
    EXPECT_EQ(out_of_memory_reason({"failed to allocate CPU buffer of size 32768000000",
                                    "failed to allocate buffer for kv cache"},
                                   AllocStep::create_context, host),
              "out of memory on CPU for the KV cache: a buffer of 31250.0 MiB could not be "
              "allocated (the host reports 1000 MiB free of 24105 MiB); try a smaller context or "
              "a quantized KV cache (-ctk/-ctv q8_0)");
    EXPECT_EQ(
        out_of_memory_reason({"unable to allocate CPU_REPACK buffer"}, AllocStep::load_model, host),
        "out of memory on CPU_REPACK for the weights (the host reports 1000 MiB free of "
        "24105 MiB); try a smaller model or quantization");
    EXPECT_EQ(out_of_memory_reason({"failed to allocate Vulkan_Host buffer of size 1048576",
                                    "failed to allocate output buffer of size 1.00 MiB"},
                                   AllocStep::create_context, host),
              "out of memory on Vulkan_Host for the output buffer: a buffer of 1.0 MiB could not "
              "be allocated (the host reports 1000 MiB free of 24105 MiB); try a smaller batch "
              "(-b)");
}

// The compute buffers (the graph's scratch, which grows with the micro-batch and, without
// flash attention, with the context).
TEST(OutOfMemory, ComputeBuffersAskForASmallerMicroBatch) {
    EXPECT_EQ(out_of_memory_reason({"failed to allocate CUDA0 buffer of size 2147483648",
                                    "failed to initialize the context: failed to allocate compute "
                                    "pp buffers"},
                                   AllocStep::create_context, devices({})),
              "out of memory on CUDA0 for the compute buffers: a buffer of 2048.0 MiB could not "
              "be allocated; try a smaller micro-batch (-ub) or flash attention (-fa on)");
    // llama.cpp's own line alone is still an out-of-memory reason, without a device.
    EXPECT_EQ(out_of_memory_reason({"failed to allocate compute tg buffers"},
                                   AllocStep::create_context, devices({})),
              "out of memory for the compute buffers; try a smaller micro-batch (-ub) or flash "
              "attention (-fa on)");
}

// A peer's log (llama-server's): the loader's line says the weights whatever the step; the
// allocator's line alone says the device and the size, and no remedy it cannot know.
TEST(OutOfMemory, WithoutTheStepTheLinesAloneSayWhatFor) {
    EXPECT_EQ(out_of_memory_reason({"unable to allocate CUDA0 buffer"}, AllocStep::unknown, {}),
              "out of memory on CUDA0 for the weights; try fewer layers on the device (-ngl) or a "
              "smaller quantization");
    EXPECT_EQ(out_of_memory_reason({"failed to allocate Vulkan0 buffer of size 1048576"},
                                   AllocStep::unknown, {}),
              "out of memory on Vulkan0: a buffer of 1.0 MiB could not be allocated");
}

// A peer's log is a claim: numbers too long to be sizes and names too long to be devices are
// not read (and never throw).
TEST(OutOfMemory, ALogsNumbersAndNamesAreBounded) {
    const std::string digits(400, '9');
    EXPECT_EQ(out_of_memory_reason({"failed to allocate CUDA0 buffer of size " + digits},
                                   AllocStep::unknown, {}),
              std::nullopt);
    EXPECT_EQ(out_of_memory_reason({"allocating . MiB on device 0: cudaMalloc failed: oom",
                                    "allocating 1" + digits +
                                        " MiB on device 0: cudaMalloc "
                                        "failed"},
                                   AllocStep::unknown, {}),
              std::nullopt);
    EXPECT_EQ(out_of_memory_reason({"unable to allocate " + std::string(200, 'x') + " buffer"},
                                   AllocStep::unknown, {}),
              std::nullopt);
}

// Any other failure is not this reason: the caller keeps llama.cpp's first line.
TEST(OutOfMemory, OtherFailuresAreNotOutOfMemory) {
    EXPECT_EQ(out_of_memory_reason({}, AllocStep::load_model, devices({})), std::nullopt);
    EXPECT_EQ(out_of_memory_reason({"unknown model architecture: 'bogus'"}, AllocStep::load_model,
                                   devices({})),
              std::nullopt);
    EXPECT_EQ(out_of_memory_reason({"n_ctx_seq (4096) > n_ctx_train (2048)"},
                                   AllocStep::create_context, devices({})),
              std::nullopt);
}

}  // namespace
}  // namespace sb
