#pragma once
// `stagebench fidelity`: does the faster choice compute the same thing? One teacher-forced token
// sequence (the prompt, then n_gen fixed tokens: identical for every variant, so no sampled token
// can make two runs diverge) on every variant (model file x device set x KV cache types), its
// logits kept at the prompt's last position (the prefill stage) and after every decode token,
// compared position by position with the reference variant's: KL divergence (mean, p99, max),
// top-1 agreement, top-k overlap, max and RMS absolute logit error. The speed of the same
// variant is measured in a separate pass on a fresh context, untimed capture first, so logit
// capture never sits inside a timed stage: the one repetition loop (scenario/repetition.hpp,
// with its warm-up), on random tokens. The variants no other variant beats on both decode
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

#include "core/doc/fidelity_section.hpp"
#include "core/workload.hpp"
#include "scenario/run_context.hpp"

namespace sb {

struct FidelityOptions {
    // What every variant shares (threads, batch sizes, flash attention); its model, devices and
    // KV cache types are the axes below.
    Workload base;
    std::vector<std::string> models;            // -m, a comma list: the quantization axis
    std::vector<DeviceSet> device_sets{"CPU"};  // --device
    std::vector<KvType> type_k{KvType::f16}, type_v{KvType::f16};  // -ctk / -ctv axes
    std::optional<DeviceSet> reference_devices;  // --reference (default: the first device set)
    std::optional<std::string> reference_model;  // --reference-model (default: the first model)
    int n_prompt = 128;
    int n_gen = 32;
    int top_k = 10;
    int reps = 3;  // timed repetitions of the speed pass (median)
    uint64_t seed = 1;
    // --prompt-logits: compare every prompt position, not only the last (the "prompt" stage).
    bool prompt_logits = false;
    // --text: the text (its contents) whose perplexity each variant computes; text_path names it.
    std::optional<std::string> text;
    std::string text_path;
    int ctx = 512;    // --ctx: tokens per perplexity window (llama-perplexity's -c)
    int chunks = -1;  // --chunks: at most this many windows (-1: every whole window)
    std::vector<std::string> rpc_servers;  // host:port
    std::optional<std::string> out_path;   // the result document, saved after every variant
    bool progress = true;
};

// Runs every variant into env.doc's fidelity section (core/doc/fidelity_section.hpp) through a
// RunContext (the models described, RPC servers added, device names checked, saved as it
// goes). Throws sb::Error(usage) for options that cannot run (a reference device set not among
// --device, no model, a text shorter than two windows), sb::Error(input) when the reference
// fails, a model's vocabulary differs from the reference's (size, or the text's tokens) or
// cannot tokenize the text; a variant that fails otherwise is recorded with its error (the
// outcome: failed; bad_input with RunResult::error naming the first such error and how many
// variants it cost when it failed on bad input, e.g. a model llama.cpp refuses to load).
RunResult run_fidelity(const FidelityOptions& o, RunEnv env);

}  // namespace sb
