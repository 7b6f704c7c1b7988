#pragma once
// Stage results made of chosen samples, for the tests of the loop's statistics (test-only).
#include <cstdint>
#include <optional>
#include <vector>

#include "core/result.hpp"

namespace sb::test {

// A prefill stage of n repetitions of `tokens` tokens taking the given durations.
inline StageResult prefill_of(int tokens, const std::vector<int64_t>& durations_ns) {
    StageResult s;
    s.n_tokens = tokens;
    for (int64_t d : durations_ns) {
        s.duration_ns.push_back(d);
        s.tokens_per_s.push_back(tokens * 1e9 / d);
    }
    return s;
}

// A decode stage of `reps` repetitions of n tokens, each ~1 ms (with a little jitter); the
// token at index stall_at (if any) takes stall_ns instead.
inline DecodeResult decode_of(int reps, int n, std::optional<size_t> stall_at, int64_t stall_ns) {
    DecodeResult d;
    d.n_tokens = n;
    for (int r = 0; r < reps; ++r) {
        int64_t total = 0;
        for (int i = 0; i < n; ++i) {
            const size_t idx = d.token_latency_ns.size();
            const int64_t lat =
                stall_at && idx == *stall_at ? stall_ns : 1'000'000 + (i % 7) * 5'000;
            d.token_latency_ns.push_back(lat);
            total += lat;
        }
        d.duration_ns.push_back(total);
        d.token_latency_counts.push_back(n);
        d.tokens_per_s.push_back(n * 1e9 / total);
    }
    return d;
}

}  // namespace sb::test
