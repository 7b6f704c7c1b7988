#pragma once
// `stagebench fidelity`: does the faster choice compute the same thing? One teacher-forced token
// sequence (the prompt, then n_gen fixed tokens: identical for every variant, so no sampled token
// can make two runs diverge) on every variant (model file x device set x KV cache types), its
// logits kept at the prompt's last position (the prefill stage) and after every decode token,
// compared position by position with the reference variant's: KL divergence (mean, p99, max),
// top-1 agreement, top-k overlap, max and RMS absolute logit error. The speed of the same
// variant is measured in a separate pass on a fresh context, untimed capture first, so logit
// capture never sits inside a timed stage. The variants no other variant beats on both decode
// speed and decode KL form the frontier.
//
// With a text (--text), every variant also evaluates the text in llama-perplexity's windows
// (scenario/perplexity.hpp): its perplexity, and the same distances from the reference over the
// scored positions (the "text" stage). With prompt_logits, the logits of every prompt position
// are kept too (the "prompt" stage; prefill stays the prompt's last position).
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sb {

struct FidelityOptions {
    std::vector<std::string> models;              // -m, a comma list: the quantization axis
    std::vector<std::string> device_sets{"CPU"};  // --device: each a set joined with '+'
    std::vector<std::string> type_k{"f16"}, type_v{"f16"};  // -ctk / -ctv axes
    std::string reference_devices;               // --reference (default: the first device set)
    std::optional<std::string> reference_model;  // --reference-model (default: the first model)
    int n_prompt = 128;
    int n_gen = 32;
    int top_k = 10;
    int reps = 3;  // timed repetitions of the speed pass (median)
    int n_threads = 0;
    uint64_t seed = 1;
    // --prompt-logits: compare every prompt position, not only the last (the "prompt" stage).
    bool prompt_logits = false;
    // --text: the text (its contents) whose perplexity each variant computes; text_path names it.
    std::optional<std::string> text;
    std::string text_path;
    int ctx = 512;    // --ctx: tokens per perplexity window (llama-perplexity's -c)
    int chunks = -1;  // --chunks: at most this many windows (-1: every whole window)
};

// One stage's distance from the reference, over its positions.
struct StageFidelity {
    int positions = 0;
    double kl_mean = 0, kl_p99 = 0, kl_max = 0;
    double top1_agreement = 0;    // fraction of positions with the same argmax
    double topk_overlap = 0;      // mean |top-k ∩ top-k_ref| / k
    double max_abs = 0, rms = 0;  // over every logit of every position
};

struct FidelityVariant {
    std::string model, model_name, devices, type_k, type_v;
    bool reference = false;
    std::optional<double> prefill_tps, decode_tps;  // medians of the speed pass
    StageFidelity prefill, decode;
    std::optional<StageFidelity> prompt;  // --prompt-logits
    std::optional<StageFidelity> text;    // --text: over the scored positions of the windows
    std::optional<double> perplexity, perplexity_error;  // --text
    bool frontier = false;
    std::optional<std::string> error;  // the variant failed (others go on)
};

struct FidelityResult {
    FidelityOptions options;
    std::string reference;  // "model on devices (ctk/ctv)"
    std::vector<int32_t> tokens;
    std::vector<FidelityVariant> variants;
    // --text: the text's tokens (the reference's tokenization), the windows, and the
    // reference's own perplexity (also when the reference is not one of the variants).
    int64_t text_tokens = 0;
    int text_chunks = 0;
    int64_t text_scored = 0;
    std::optional<double> reference_perplexity, reference_perplexity_error;
};

// Throws sb::Error(usage) for options that cannot run (a reference device set not among
// --device, no model, a text shorter than two windows), sb::Error(input) when the reference
// fails, a model's vocabulary differs from the reference's (size, or the text's tokens) or
// cannot tokenize the text; a variant that fails otherwise is recorded with its error.
FidelityResult run_fidelity(const FidelityOptions& o, std::ostream& progress);

nlohmann::json to_json(const FidelityResult& r);
void write_fidelity_markdown(std::ostream& out, const FidelityResult& r);

}  // namespace sb
