#pragma once
// Command-line spellings of llama.cpp context parameters, shared by the engine and the
// profiler (both may include llama.h). Unknown spellings throw sb::Error(usage).
#include <string>

#include "core/error.hpp"
#include "ggml.h"
#include "llama.h"

namespace sb {

// "f16", "q8_0", ... as ggml names its types.
inline ggml_type parse_cache_type(const std::string& s) {
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char* name = ggml_type_name(static_cast<ggml_type>(t));
        if (name && s == name)
            return static_cast<ggml_type>(t);
    }
    throw usage_error("unknown KV cache type '" + s + "' (e.g. f16, q8_0, q4_0)");
}

// auto | on | off (also 1 | 0).
inline llama_flash_attn_type parse_flash_attn(const std::string& s) {
    if (s == "auto")
        return LLAMA_FLASH_ATTN_TYPE_AUTO;
    if (s == "on" || s == "1")
        return LLAMA_FLASH_ATTN_TYPE_ENABLED;
    if (s == "off" || s == "0")
        return LLAMA_FLASH_ATTN_TYPE_DISABLED;
    throw usage_error("flash attention must be auto, on or off, not '" + s + "'");
}

}  // namespace sb
