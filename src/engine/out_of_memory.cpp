#include "engine/out_of_memory.hpp"

#include <cstdio>
#include <regex>

#include "ggml-backend.h"

namespace sb {
namespace {

std::string mib(double bytes, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f MiB", decimals, bytes / (1024.0 * 1024.0));
    return buf;
}

// A buffer type of the host's memory: the CPU's own ("CPU", "CPU_Mapped", "CPU_REPACK") or a
// GPU backend's pinned host buffers ("Vulkan_Host", "CUDA_Host").
bool host_buffer(const std::string& name) {
    return name.rfind("CPU", 0) == 0 ||
           (name.size() > 5 && name.compare(name.size() - 5, 5, "_Host") == 0);
}

}  // namespace

std::optional<DeviceMemory> ggml_device_memory(const std::string& device) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(device.c_str());
    if (!dev)
        return std::nullopt;
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    if (total == 0)
        return std::nullopt;
    return DeviceMemory{free, total};
}

std::optional<std::string> out_of_memory_reason(const std::vector<std::string>& errors,
                                                AllocStep step, const DeviceMemoryOf& memory_of) {
    // ggml-alloc's line names the buffer type and the bytes; ggml-cuda's comes first and names
    // the device by its index; llama.cpp's loader names the buffer type it could not allocate.
    // A peer's log is a claim: numbers of bounded length (std::stod never throws on them), a
    // device name of at most 64 characters.
    static const std::regex allocator(
        R"(failed to allocate (\S{1,64}) buffer of size (\d{1,19})\b)");
    static const std::regex cuda(
        R"(allocating (\d{1,12}(?:\.\d{1,6})?) MiB on device (\d{1,4}): cudaMalloc failed)");
    static const std::regex loader(R"(unable to allocate (\S{1,64}) buffer)");
    std::string device;
    std::optional<double> bytes;
    std::string part;
    bool failed = false;
    for (const std::string& line : errors) {
        std::smatch m;
        if (std::regex_search(line, m, allocator)) {
            if (!bytes) {
                device = m[1];
                bytes = std::stod(m[2]);
            }
            failed = true;
        } else if (std::regex_search(line, m, cuda)) {
            if (!bytes) {
                device = "CUDA" + m[2].str();
                bytes = std::stod(m[1]) * 1024.0 * 1024.0;
            }
            failed = true;
        } else if (std::regex_search(line, m, loader)) {
            if (device.empty())
                device = m[1];
            part = "the weights";  // only the model's loader says "unable to allocate"
            failed = true;
        }
        if (part.empty()) {
            if (line.find("failed to allocate buffer for kv cache") != std::string::npos)
                part = "the KV cache";
            else if (line.find("failed to allocate compute") != std::string::npos)
                part = "the compute buffers";
            else if (line.find("failed to allocate output buffer") != std::string::npos)
                part = "the output buffer";
            else if (line.find("failed to allocate buffer for rs cache") != std::string::npos)
                part = "the recurrent state";
            failed = failed || !part.empty();
        }
    }
    if (!failed)
        return std::nullopt;
    if (part.empty() && step == AllocStep::load_model)
        part = "the weights";

    const bool host = device.empty() || host_buffer(device);
    std::string r = "out of memory";
    if (!device.empty())
        r += " on " + device;
    if (!part.empty())
        r += " for " + part;
    if (bytes)
        r += ": a buffer of " + mib(*bytes, 1) + " could not be allocated";
    if (!device.empty() && memory_of) {
        const std::string owner = host ? "CPU" : device;
        if (const auto mem = memory_of(owner))
            r += " (" + (host ? std::string("the host") : owner) + " reports " +
                 mib(static_cast<double>(mem->free_bytes), 0) + " free of " +
                 mib(static_cast<double>(mem->total_bytes), 0) + ")";
    }
    std::string hint;
    if (part == "the weights")
        hint = host ? "a smaller model or quantization"
                    : "fewer layers on the device (-ngl) or a smaller quantization";
    else if (part == "the KV cache")
        hint = host ? "a smaller context or a quantized KV cache (-ctk/-ctv q8_0)"
                    : "a smaller context, a quantized KV cache (-ctk/-ctv q8_0) or fewer "
                      "layers on the device (-ngl)";
    else if (part == "the compute buffers")
        hint = "a smaller micro-batch (-ub) or flash attention (-fa on)";
    else if (part == "the output buffer")
        hint = "a smaller batch (-b)";
    if (!hint.empty())
        r += "; try " + hint;
    return r;
}

}  // namespace sb
