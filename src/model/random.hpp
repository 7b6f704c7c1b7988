#pragma once
// The seeded random numbers of synthetic models: every row of every tensor from its own seed
// (seed, tensor name hash, row), so a file does not depend on batching or threads.
#include <cmath>
#include <cstdint>
#include <string_view>

namespace sb::synth_random {

inline uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

inline uint64_t fnv1a(std::string_view s) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char c : s)
        h = (h ^ c) * 0x100000001B3ull;
    return h;
}

// The state a row starts from.
inline uint64_t row_state(uint64_t seed, uint64_t tensor_hash, int64_t row) {
    uint64_t state = seed ^ (tensor_hash * 0x9E3779B97F4A7C15ull);
    state ^= splitmix64(state) + static_cast<uint64_t>(row) * 0xD1B54A32D192ED03ull;
    return state;
}

// Fills n values of one row, approximately normal with mean 0 and the given standard
// deviation: the Irwin-Hall sum of four 16-bit uniforms (mean 2, variance 1/3), which costs one
// 64-bit random number per value.
inline void fill_row(float* out, int64_t n, uint64_t seed, uint64_t tensor_hash, int64_t row,
                     float stddev) {
    uint64_t state = row_state(seed, tensor_hash, row);
    const float scale = stddev * std::sqrt(3.0f) / 65536.0f;
    for (int64_t i = 0; i < n; ++i) {
        const uint64_t r = splitmix64(state);
        const auto sum = static_cast<int64_t>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) +
                                              ((r >> 32) & 0xFFFF) + (r >> 48));
        // sum + 2 (half-unit offsets) - 2 * 65536 (the mean), scaled.
        out[i] = static_cast<float>(sum + 2 - 2 * 65536) * scale;
    }
}

}  // namespace sb::synth_random
