#pragma once
// A device that ran out of memory, as llama.cpp's error lines tell it, made into one reason a
// user can act on: which device, for what (the weights, the KV cache, the compute buffers),
// how much it asked for and how much the device has, and what asks for less.
//
// llama.cpp says it in two or three lines: the allocator's ("failed to allocate Vulkan0 buffer
// of size 4096065536", or CUDA's "allocating 1234.00 MiB on device 0: cudaMalloc failed: out
// of memory") and then what it was for ("failed to allocate buffer for kv cache", "unable to
// allocate CUDA0 buffer" while loading, "failed to allocate compute pp buffers").
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sb {

// What llama.cpp was doing when the allocation failed, where its lines do not say what the
// buffer was for.
enum class AllocStep {
    load_model,      // llama_model_load_from_file: the weights
    create_context,  // llama_init_from_model: the KV cache, the output and compute buffers
    unknown,         // a peer's log (llama-server's)
};

struct DeviceMemory {
    uint64_t free_bytes = 0, total_bytes = 0;
};
// A device's memory by its ggml name ("Vulkan0", "CUDA0", "CPU"); nullopt where unknown.
using DeviceMemoryOf = std::function<std::optional<DeviceMemory>(const std::string& device)>;
// ggml's own figures for the device of that name (ggml_backend_dev_memory).
std::optional<DeviceMemory> ggml_device_memory(const std::string& device);

// "out of memory on Vulkan0 for the KV cache: a buffer of 3906.3 MiB could not be allocated
// (Vulkan0 reports 2048.0 MiB free of 2048.0 MiB); try a smaller context, a quantized KV cache
// (-ctk/-ctv q8_0) or fewer layers on the device (-ngl)"; nullopt when no line says that an
// allocation failed. `errors` are take_llama_errors()'s lines.
std::optional<std::string> out_of_memory_reason(
    const std::vector<std::string>& errors, AllocStep step,
    const DeviceMemoryOf& memory_of = ggml_device_memory);

}  // namespace sb
