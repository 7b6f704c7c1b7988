#include "scenario/run_fidelity.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "engine/backends.hpp"
#include "engine/workload.hpp"
#include "model/inspect.hpp"
#include "scenario/repetition.hpp"

namespace sb {

namespace {

// The reference's test: the test's workload on the reference devices with llama.cpp's
// defaults otherwise (f16 KV, flash attention auto, the default batch), from an empty cache.
TestConfig reference_config(const TestConfig& c, const std::string& model,
                            const DeviceSet& devices) {
    TestConfig r;
    r.model_path = model;
    r.devices = devices;
    r.n_prompt = c.n_prompt;
    r.n_gen = c.n_gen;
    r.n_threads = c.n_threads;
    r.seed = c.seed;
    return r;
}

std::string file_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

}  // namespace

RunFidelity::Key RunFidelity::key_of(const TestConfig& c) const {
    return {o_.reference_model.value_or(c.model_path), c.n_prompt, c.n_gen, c.seed, c.n_threads};
}

void RunFidelity::prepare(const std::vector<TestConfig>& tests, EngineFactory& engines,
                          Progress& progress) {
    if (!o_.enabled)
        return;
    if (o_.top_k < 1)
        throw usage_error("--top-k must be at least 1");
    check_device_names(split_device_set(o_.reference_devices.str()));
    // A reference model must share each test model's vocabulary: checked from the files' own
    // metadata before anything runs.
    if (o_.reference_model) {
        const auto ref_vocab = inspect_model(*o_.reference_model).n_vocab;
        std::set<std::string> seen;
        for (const auto& c : tests) {
            if (c.engine != EngineKind::llama || !seen.insert(c.model_path).second)
                continue;
            const auto v = inspect_model(c.model_path).n_vocab;
            if (ref_vocab && v && *ref_vocab != *v)
                throw input_error(fmt::format(
                    "--reference-model {} has a vocabulary of {} tokens, {} of {}: not the same "
                    "model shape",
                    *o_.reference_model, *ref_vocab, c.model_path, *v));
        }
    }
    std::unique_ptr<Engine> e = engines.make(EngineKind::llama);
    for (const auto& c : tests) {
        if (c.engine != EngineKind::llama || interrupt_requested())
            continue;
        const Key k = key_of(c);
        if (refs_.count(k))
            continue;
        const TestConfig rc = reference_config(c, std::get<0>(k), o_.reference_devices);
        Reference ref;
        ref.label =
            fmt::format("{} on {} (f16/f16)", file_name(rc.model_path), o_.reference_devices.str());
        try {
            e->load(load_spec_for(rc));
            ref.tokens =
                sequence_tokens(rc.n_prompt + rc.n_gen, e->n_vocab(), rc.seed, e->bos_token());
            ref.logits = capture_sequence(*e, ref.tokens, rc.n_prompt, rc.n_gen, false);
        } catch (const Error& err) {
            if (err.kind() == ErrorKind::runtime && !interrupt_requested())
                throw input_error("the fidelity reference " + ref.label +
                                  " cannot run: " + err.what());
            throw;
        }
        // After the capture: a reference that cannot run leaves its error the only line.
        progress.note(fmt::format("fidelity reference {}: pp{}+tg{} captured", ref.label,
                                  rc.n_prompt, rc.n_gen));
        refs_.emplace(k, std::move(ref));
    }
}

const RunFidelity::Reference* RunFidelity::reference_of(const TestConfig& c, TestResult& r) const {
    if (!o_.enabled || r.status != Status::ok || c.engine != EngineKind::llama)
        return nullptr;
    const auto it = refs_.find(key_of(c));
    if (it == refs_.end())
        return nullptr;
    r.fidelity.emplace();
    r.fidelity->reference = it->second.label;
    r.fidelity->top_k = o_.top_k;
    return &it->second;
}

void RunFidelity::measure(
    const Engine& vocab_of, TestResult& r,
    const std::function<LogitCapture(const std::vector<int32_t>&)>& capture) const {
    const Reference* ref = reference_of(r.config, r);
    if (!ref)
        return;
    const TestConfig& c = r.config;
    const int32_t n_vocab = vocab_of.n_vocab();  // the engine holds the test's model
    if (n_vocab != ref->logits.n_vocab) {
        r.fidelity->error =
            fmt::format("{} has a vocabulary of {} tokens, the reference {}: not comparable",
                        c.model_path, n_vocab, ref->logits.n_vocab);
        return;
    }
    try {
        const LogitCapture x = capture(ref->tokens);
        r.fidelity->prefill = compare_positions(ref->logits, x, 0, 1, o_.top_k);
        if (c.n_gen > 0)
            r.fidelity->decode = compare_positions(ref->logits, x, 1, 1 + c.n_gen, o_.top_k);
    } catch (const Error& err) {
        r.fidelity->error = std::string("the logit capture failed: ") + err.what();
    }
}

void RunFidelity::check(Engine& e, TestResult& r) const {
    measure(e, r, [&](const std::vector<int32_t>& tokens) {
        return capture_sequence(e, tokens, r.config.n_prompt, r.config.n_gen, false);
    });
}

void RunFidelity::check_transferred(Engine& pre, Engine& dec, TestResult& r) const {
    measure(pre, r, [&](const std::vector<int32_t>& tokens) {
        return capture_transferred(pre, dec, tokens, r.config.n_prompt, r.config.n_gen);
    });
}

}  // namespace sb
