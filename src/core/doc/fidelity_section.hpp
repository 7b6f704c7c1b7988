#pragma once
// The "fidelity" section of a result document (`stagebench fidelity`, scenario/fidelity.hpp):
// one teacher-forced token sequence on every variant (model file x device set x KV cache
// types), its logits compared position by position with the reference variant's, beside the
// variant's tokens/s from a separate timed pass. KL divergences are KL(reference || variant) in
// nats; agreements and overlaps are fractions (1 = 100 %). The frontier: the variants no other
// variant beats on both decode tokens/s and decode KL.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"
#include "core/enums.hpp"

namespace sb {

// One stage's distance from the reference, over its positions.
struct StageFidelity {
    int positions = 0;
    double kl_mean = 0, kl_p99 = 0, kl_max = 0;
    double top1_agreement = 0;    // fraction of positions with the same argmax
    double topk_overlap = 0;      // mean |top-k ∩ top-k_ref| / k
    double max_abs = 0, rms = 0;  // over every logit of every position
};

struct FidelityVariant {
    std::string model, model_name, devices;
    KvType type_k = KvType::f16, type_v = KvType::f16;  // in JSON their spellings
    bool reference = false;
    std::optional<double> prefill_tps, decode_tps;          // medians of the speed pass
    std::vector<double> prefill_tps_reps, decode_tps_reps;  // its repetitions, in order
    StageFidelity prefill, decode;        // absent from the JSON when error is set
    std::optional<StageFidelity> prompt;  // --prompt-logits: every prompt position
    std::optional<StageFidelity> text;    // --text: the scored positions of the windows
    std::optional<double> perplexity, perplexity_error;  // --text (llama-perplexity's +/-)
    bool frontier = false;
    std::optional<std::string> error;  // the variant failed (others go on)
};

// --text: the text whose perplexity every variant computed, in llama-perplexity's windows
// (scenario/perplexity.hpp).
struct FidelityText {
    std::string path;
    int64_t tokens = 0;  // the reference's tokenization, the BOS included
    int n_ctx = 0;       // tokens per window
    int chunks = 0;      // windows evaluated
    int64_t scored = 0;  // tokens scored: chunks x (n_ctx - n_ctx / 2 - 1)
    std::optional<double> reference_perplexity, reference_perplexity_error;
    std::string method;
};

struct FidelitySection {
    std::string reference;  // "model on devices (ctk/ctv)"
    int n_prompt = 0, n_gen = 0, top_k = 0, reps = 0;
    uint64_t seed = 0;
    std::vector<int32_t> tokens;  // the teacher-forced sequence: the prompt, then n_gen tokens
    std::string method;           // how it was measured, in words
    std::vector<FidelityVariant> variants;
    bool prompt_logits = false;        // variants carry the prompt stage
    std::optional<FidelityText> text;  // --text
    // Ctrl-C ended the run: the variants measured before it are kept (the one running then
    // with the repetitions it finished), the others are missing.
    bool interrupted = false;
};

// `run --fidelity` and `hybrid --fidelity`: one test's (or hybrid mode's) distance from its
// reference (the test's model, or --reference-model, on the reference devices with f16 KV),
// teacher-forced as in `fidelity` and captured on an untimed pass after the timed repetitions.
struct TestFidelity {
    std::string reference;  // "model on devices (f16/f16)"
    int top_k = 0;
    std::optional<StageFidelity> prefill, decode;  // decode absent for -n 0, both with error
    std::optional<std::string> error;              // the capture failed (the timing stands)
};

// Marks the frontier: a variant that ran is on it when no other is at least as fast in decode
// and at least as close (decode KL), and strictly better in one.
void mark_frontier(std::vector<FidelityVariant>& variants);

// "model_name on devices (ctk/ctv)": a variant's name in tables and sentences.
std::string variant_label(const FidelityVariant& v);

// {"reference", "n_prompt", "n_gen", "top_k", "reps", "seed", "tokens", "method", "variants":
// [{"model", "model_name", "devices", "type_k", "type_v", "reference", "prefill_tokens_per_s",
// "decode_tokens_per_s", "prefill_tokens_per_s_reps", "decode_tokens_per_s_reps", "frontier",
// "error", "prefill": {"positions", "kl_mean", "kl_p99", "kl_max", "top1_agreement",
// "topk_overlap", "max_abs", "rms"}, "decode": {...}, "prompt": {...} (--prompt-logits),
// "text": {...}, "perplexity": {"value", "error"} (--text)}], "prompt_logits", "text": {"path",
// "tokens", "n_ctx", "chunks", "scored", "reference_perplexity": {"value", "error"}, "method"}
// (--text), "interrupted"}.
nlohmann::json to_json(const StageFidelity&);
nlohmann::json to_json(const FidelityVariant&);
nlohmann::json to_json(const FidelitySection&);
nlohmann::json to_json(const FidelityText&);
// {"reference", "top_k", "prefill": {...}, "decode": {...}, "error"}: the stages where measured.
nlohmann::json to_json(const TestFidelity&);

void read(const JsonIn&, StageFidelity&);
void read(const JsonIn&, FidelityVariant&);
void read(const JsonIn&, FidelitySection&);
void read(const JsonIn&, FidelityText&);
void read(const JsonIn&, TestFidelity&);

}  // namespace sb
