#pragma once
// The workload's typed settings (core/workload.hpp) as llama.cpp's context parameters, shared by
// the engine and the profiler (both may include llama.h).
#include "core/enums.hpp"
#include "core/error.hpp"
#include "ggml.h"
#include "llama.h"

namespace sb {

// The ggml type of a KV cache type: the one whose ggml name is its spelling ("f16", "q8_0").
// Throws sb::Error(runtime) should ggml not know it (a llama.cpp without the type).
inline ggml_type cache_type(KvType t) {
    const std::string name = to_string(t);
    for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
        const char* n = ggml_type_name(static_cast<ggml_type>(i));
        if (n && name == n)
            return static_cast<ggml_type>(i);
    }
    throw runtime_error("this llama.cpp has no ggml type '" + name + "'");
}

inline llama_flash_attn_type flash_attn_type(FlashAttn f) {
    switch (f) {
        case FlashAttn::on:
            return LLAMA_FLASH_ATTN_TYPE_ENABLED;
        case FlashAttn::off:
            return LLAMA_FLASH_ATTN_TYPE_DISABLED;
        case FlashAttn::automatic:
            break;
    }
    return LLAMA_FLASH_ATTN_TYPE_AUTO;
}

}  // namespace sb
