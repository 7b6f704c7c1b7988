#pragma once
// `stagebench logits`: the next-token logits of one fixed, seeded prompt, and how far another
// build, device or machine is from them. A check that two kernels compute the same model (x86
// against arm64, CPU against an accelerator), not a speed measurement: nothing here is timed.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/workload.hpp"
#include "scenario/default_engines.hpp"

namespace sb {

struct LogitsOptions {
    // The model, one device set, the threads (0: sb::default_thread_count()) and the rest of
    // llama.cpp's defaults.
    Workload workload;
    int n_prompt = 32;  // the prompt: BOS (when the model has one), then random tokens
    uint64_t seed = 1;  // random_tokens(n_prompt, n_vocab, seed)
};

// What the logits were computed from and with, and the logits themselves.
struct LogitsCapture {
    std::string model_path, model_name;  // name: general.name, else the file name
    uint64_t model_bytes = 0;
    std::string devices;
    std::vector<int32_t> tokens;
    std::vector<float> logits;      // n_vocab values after the last prompt token (unnormalised)
    std::string arch, cpu_variant;  // uname -m; ggml's CPU variant ("" when linked or unknown)
    bool emulated = false;          // made under user-mode emulation (qemu)
};

// Loads the model on the device set (an in-process engine from engines), prefills the prompt
// and keeps the last token's logits. Throws sb::Error(input) for an unusable model or device set.
LogitsCapture capture_logits(const LogitsOptions& o,
                             EngineFactory& engines = default_engine_factory());

// How far x is from the reference ref (the same model and tokens).
struct LogitsDiff {
    double max_abs = 0;     // max |x - ref|
    double rms = 0;         // sqrt(mean (x - ref)^2)
    double ref_scale = 0;   // max |ref|
    double kl = 0;          // KL(softmax(ref) || softmax(x)), nats
    int32_t top1_ref = -1;  // argmax of ref
    int32_t top1 = -1;      // argmax of x
    bool top1_agrees() const { return top1 == top1_ref; }
    // The same top-1 token, kl at most max_kl, and max_abs at most tolerance x max(1,
    // ref_scale). Kernels of the same quantization on other instruction sets (AVX2 against
    // NEON) differ by ~1 % of the largest logit on a q4_0 model with KL ~1e-5 nats, an f32
    // model by ~0.06 % (measured on the tiny preset; README, `logits`).
    bool within(double tolerance, double max_kl) const;
};

// Throws sb::Error(input) when the two do not come from the same model and prompt (vocabulary
// size, tokens), naming what differs.
LogitsDiff compare_logits(const LogitsCapture& ref, const LogitsCapture& x);
// The same for two logit vectors of one position (equal, non-zero sizes).
LogitsDiff diff_logits(std::span<const float> ref, std::span<const float> x);

// The logits document: {"schema": "stagebench-logits", "schema_version": 1, "model": {...},
// "devices", "tokens", "n_vocab", "logits", "top": [{"id", "logit"}] (the 10 largest),
// "system": {"arch", "cpu_variant", "emulated"}}.
nlohmann::json to_json(const LogitsCapture& c);
// Reads one back; throws sb::Error(input) naming the file (source) and the field.
LogitsCapture logits_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace sb
