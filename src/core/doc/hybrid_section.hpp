#pragma once
// The "hybrid" section of a result document (`stagebench hybrid`, scenario/hybrid.hpp): prefill
// on one device set, the sequence state moved, decode on another, compared point by point with
// each device set alone. Its tests are in ResultDocument::tests; a point refers to them by
// index. Times in ns on the sb::now_ns clock, sizes in bytes.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device_set.hpp"
#include "core/doc/json_in.hpp"
#include "core/stats.hpp"

namespace sb {

// What holding the model for both device sets costs. Process RSS counts host memory only.
struct HybridMemory {
    std::optional<int64_t> rss_before_bytes;  // before either engine loaded
    std::vector<std::string> load_order;      // "prefill", "decode" in the order they loaded
    std::optional<int64_t> rss_growth_prefill_engine_bytes, rss_growth_decode_engine_bytes;
    std::optional<uint64_t> weight_bytes_prefill_engine, weight_bytes_decode_engine;
    std::string note;
};

// The state transfer of every repetition of the hybrid mode at one point, in order.
struct HybridTransfer {
    std::vector<int64_t> start_ns, duration_ns, save_ns, restore_ns, bytes;
    Summary duration, save, restore;  // of duration_ns, save_ns, restore_ns
    // Absent from the JSON when nullopt (no transfer measured; a zero median).
    std::optional<double> bytes_per_token;  // the last transfer's bytes / n_prompt
    std::optional<double> gbps;             // the last transfer's bytes / median duration (B/ns)
};

// The end-to-end time of every repetition of one mode (prefill + transfer + decode).
struct HybridModeSamples {
    std::vector<int64_t> samples_ns;
    Summary summary;
};

// The hybrid against one mode alone: alone / hybrid, a ratio of medians with its bootstrap 95%
// CI. verdict: "hybrid faster", "hybrid slower" or "no difference" (the CI contains 1).
struct HybridSpeedup {
    std::optional<double> speedup, ci95_lo, ci95_hi;
    std::string verdict;
};

struct HybridPoint {
    int n_prompt = 0, n_gen = 0;
    // Mode ("hybrid", "prefill_alone", "decode_alone") -> index into ResultDocument::tests.
    std::map<std::string, int> tests;
    HybridTransfer transfer;
    std::map<std::string, HybridModeSamples> e2e;     // by mode; modes that ran
    std::map<std::string, HybridSpeedup> comparison;  // "prefill_alone", "decode_alone"
};

// From which length on the hybrid keeps winning against both modes alone, along one axis with
// the other fixed; nullopt: not within the sweep.
struct HybridCrossoverByGen {
    int n_gen = 0;
    std::optional<int> hybrid_wins_from_n_prompt;
};
struct HybridCrossoverByPrompt {
    int n_prompt = 0;
    std::optional<int> hybrid_wins_from_n_gen;
};
struct HybridCrossover {
    std::vector<HybridCrossoverByGen> by_n_gen;
    std::vector<HybridCrossoverByPrompt> by_n_prompt;
};

struct HybridSection {
    DeviceSet prefill_device, decode_device;
    bool baselines = true;  // the modes alone ran too
    HybridMemory memory;
    std::vector<HybridPoint> points;
    std::optional<HybridCrossover> crossover;  // absent before the first point
};

// {"prefill_device", "decode_device", "baselines", "memory", "points": [{"n_prompt", "n_gen",
// "tests", "transfer", "e2e": {mode: {"samples_ns", "summary"}}, "comparison": {mode:
// {"speedup", "ci95_lo", "ci95_hi", "verdict"}}}], "crossover": {"by_n_gen", "by_n_prompt"}}.
nlohmann::json to_json(const HybridMemory&);
nlohmann::json to_json(const HybridTransfer&);
nlohmann::json to_json(const HybridPoint&);
nlohmann::json to_json(const HybridCrossover&);
nlohmann::json to_json(const HybridSection&);

void read(const JsonIn&, HybridMemory&);
void read(const JsonIn&, HybridTransfer&);
void read(const JsonIn&, HybridModeSamples&);
void read(const JsonIn&, HybridSpeedup&);
void read(const JsonIn&, HybridPoint&);
void read(const JsonIn&, HybridCrossoverByGen&);
void read(const JsonIn&, HybridCrossoverByPrompt&);
void read(const JsonIn&, HybridCrossover&);
void read(const JsonIn&, HybridSection&);

}  // namespace sb
