#include "scenario/fidelity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <span>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/result.hpp"
#include "core/sysinfo.hpp"
#include "engine/workload.hpp"
#include "scenario/fidelity_capture.hpp"
#include "scenario/logits.hpp"
#include "scenario/perplexity.hpp"
#include "scenario/repetition.hpp"

namespace sb {

namespace {

// One variant of the sweep: a model, a device set and KV cache types.
struct Variant {
    std::string model;
    DeviceSet devices;
    KvType type_k = KvType::f16, type_v = KvType::f16;
};

TestConfig config_of(const FidelityOptions& o, const Variant& x) {
    TestConfig c;
    static_cast<Workload&>(c) = o.base;
    c.model_path = x.model;
    c.devices = x.devices;
    c.type_k = x.type_k;
    c.type_v = x.type_v;
    c.n_prompt = o.n_prompt;
    c.n_gen = o.n_gen;
    c.n_threads = threads_or_default(o.base.n_threads);
    c.reps = c.max_reps = o.reps;
    c.seed = o.seed;
    return c;
}

LoadSpec spec_of(const FidelityOptions& o, const Variant& x) {
    LoadSpec spec = load_spec_for(config_of(o, x));
    if (o.text)
        spec.n_ctx = std::max(spec.n_ctx, o.ctx);
    return spec;
}

// The file's name: the quantization axis is several files of one model (one general.name).
std::string model_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

std::string label_of(const Variant& x) {
    return fmt::format("{} on {} ({}/{})", model_name(x.model), x.devices.str(),
                       to_string(x.type_k), to_string(x.type_v));
}

void validate(const FidelityOptions& o) {
    if (o.models.empty())
        throw usage_error("fidelity needs a model (-m)");
    if (o.device_sets.empty() || o.type_k.empty() || o.type_v.empty())
        throw usage_error("fidelity needs a device set and KV cache types");
    if (o.n_prompt < 1 || o.n_gen < 0 || o.top_k < 1 || o.reps < 1)
        throw usage_error("fidelity: -p, -n, --top-k and -r must be positive");
    if (o.text && o.text->empty())
        throw usage_error("--text " + o.text_path + ": the file is empty");
    const DeviceSet ref = o.reference_devices.value_or(o.device_sets[0]);
    if (std::find(o.device_sets.begin(), o.device_sets.end(), ref) == o.device_sets.end()) {
        std::string all;
        for (const auto& d : o.device_sets) {
            if (!all.empty())
                all += ',';
            all += d.str();
        }
        throw usage_error("--reference " + ref.str() + " is not one of --device (" + all + ")");
    }
}

// The text in llama-perplexity's windows: the logits of every scored position handed to each,
// and their negative log-likelihoods.
PerplexitySum text_pass(Engine& e, const std::vector<int32_t>& tokens, const PerplexityPlan& plan,
                        const std::function<void(int pos, std::span<const float>)>& each,
                        const std::function<bool()>& stop) {
    PerplexitySum sum;
    const auto nv = static_cast<size_t>(e.n_vocab());
    std::vector<float> out;
    for (int c = 0; c < plan.n_chunks; ++c) {
        if (stop())
            throw runtime_error("interrupted");
        const std::vector<int32_t> w = window_tokens(tokens, plan, c, e.bos_token());
        out.clear();
        e.evaluate(w, plan.first, out);
        for (int j = 0; j < plan.scored_per_chunk(); ++j) {
            const std::span<const float> l(out.data() + static_cast<size_t>(j) * nv, nv);
            sum.add(token_nll(l, w[static_cast<size_t>(plan.first + j + 1)]));
            each(c * plan.scored_per_chunk() + j, l);
        }
    }
    return sum;
}

// What every variant is compared with: the reference's logits of the forced sequence and, with
// a text, of its scored positions.
struct Reference {
    Variant variant;
    LogitCapture logits;
    std::vector<int32_t> text_tokens;
    PerplexityPlan plan;
    LogitCapture text_logits;
};

Reference capture_reference(RunContext& run, const FidelityOptions& o, FidelitySection& f) {
    Reference ref;
    ref.variant = {o.reference_model.value_or(o.models[0]),
                   o.reference_devices.value_or(o.device_sets[0]), o.type_k[0], o.type_v[0]};
    f.reference = label_of(ref.variant);
    std::unique_ptr<Engine> e = run.engines().make(EngineKind::llama);
    e->load(spec_of(o, ref.variant));
    if (o.text) {
        // Before anything is computed: a text too short for one window is bad input.
        ref.text_tokens = e->tokenize(*o.text, /*add_special=*/true);
        ref.plan = plan_perplexity(static_cast<int64_t>(ref.text_tokens.size()), o.ctx, o.chunks);
        FidelityText t;
        t.path = o.text_path;
        t.tokens = static_cast<int64_t>(ref.text_tokens.size());
        t.n_ctx = ref.plan.n_ctx;
        t.chunks = ref.plan.n_chunks;
        t.scored = ref.plan.scored();
        t.method =
            "llama-perplexity's windows: n_ctx-token windows, the first token the BOS (when "
            "the vocabulary adds one), the second half of each scored; PPL = exp(mean NLL); "
            "the text stage compares the scored positions' logits with the reference's";
        f.text = t;
    }
    // After the checks of the text: bad input stays the only line.
    run.note("fidelity: reference " + f.reference);
    f.tokens = sequence_tokens(o.n_prompt + o.n_gen, e->n_vocab(), o.seed, e->bos_token());
    ref.logits = capture_sequence(*e, f.tokens, o.n_prompt, o.n_gen, o.prompt_logits);
    if (o.text) {
        run.note(fmt::format("fidelity: the text, {} tokens, {} windows of {} ({} tokens scored)",
                             ref.text_tokens.size(), ref.plan.n_chunks, ref.plan.n_ctx,
                             ref.plan.scored()));
        LogitCapture& t = ref.text_logits;
        t.n_vocab = e->n_vocab();
        t.logits.reserve(static_cast<size_t>(ref.plan.scored()) * static_cast<size_t>(t.n_vocab));
        const PerplexitySum sum = text_pass(
            *e, ref.text_tokens, ref.plan,
            [&](int, std::span<const float> l) {
                t.logits.insert(t.logits.end(), l.begin(), l.end());
            },
            [&] { return run.should_stop(); });
        f.text->reference_perplexity = sum.ppl();
        f.text->reference_perplexity_error = sum.ppl_error();
    }
    return ref;
}

// The variant's speed on a fresh context, after its untimed captures: the one repetition loop
// (warm-up, repetitions, stalls and the robust rate's CI) on the engine loaded for it.
void measure_speed(Engine& e, const TestConfig& c, const Clock& clock, FidelityVariant& v) {
    RepetitionOptions ro;
    ro.load = false;  // loaded for the captures, with the context they need
    ro.roofline = false;
    ro.clock = clock;
    const TestResult r = run_repetitions(e, c, {}, std::move(ro));
    if (r.status == Status::failed) {
        v.error = r.error.value_or("the speed pass failed");
        return;
    }
    if (r.prefill) {
        v.prefill_tps_reps = r.prefill->tokens_per_s;
        v.prefill_tps = r.prefill->throughput.median;
    }
    if (r.decode) {
        v.decode_tps_reps = r.decode->tokens_per_s;
        v.decode_tps = r.decode->throughput.median;
    }
}

// bad_input: set when the variant failed on bad input (a model llama.cpp refuses).
FidelityVariant measure_variant(RunContext& run, const FidelityOptions& o, const Reference& ref,
                                const std::vector<int32_t>& tokens, const Variant& x,
                                bool& bad_input) {
    FidelityVariant v;
    v.model = x.model;
    v.model_name = model_name(x.model);
    v.devices = x.devices.str();
    v.type_k = x.type_k;
    v.type_v = x.type_v;
    v.reference = x.model == ref.variant.model && x.devices == ref.variant.devices &&
                  x.type_k == ref.variant.type_k && x.type_v == ref.variant.type_v &&
                  std::find(o.models.begin(), o.models.end(), x.model) != o.models.end();
    run.note("fidelity: " + label_of(x));
    const int P = ref.logits.prompt_positions;
    bool other_vocab = false;
    try {
        std::unique_ptr<Engine> e = run.engines().make(EngineKind::llama);
        e->load(spec_of(o, x));
        if (e->n_vocab() != ref.logits.n_vocab) {
            other_vocab = true;
            throw input_error(fmt::format(
                "{} has a vocabulary of {} tokens, the reference {}: not the same model shape",
                x.model, e->n_vocab(), ref.logits.n_vocab));
        }
        if (o.text) {
            other_vocab = true;  // a model that cannot tokenize is bad input
            if (e->tokenize(*o.text, true) != ref.text_tokens)
                throw input_error(x.model +
                                  " tokenizes the text differently from the reference: not the "
                                  "same vocabulary");
            other_vocab = false;
        }
        const LogitCapture c = capture_sequence(*e, tokens, o.n_prompt, o.n_gen, o.prompt_logits);
        v.prefill = compare_positions(ref.logits, c, P - 1, P, o.top_k);
        v.decode = compare_positions(ref.logits, c, P, P + o.n_gen, o.top_k);
        if (o.prompt_logits)
            v.prompt = compare_positions(ref.logits, c, 0, P, o.top_k);
        if (o.text) {
            StageStats st(o.top_k);
            const PerplexitySum sum = text_pass(
                *e, ref.text_tokens, ref.plan,
                [&](int pos, std::span<const float> l) { st.add(ref.text_logits.at(pos), l); },
                [&] { return run.should_stop(); });
            v.text = st.finish();
            v.perplexity = sum.ppl();
            v.perplexity_error = sum.ppl_error();
        }
        // The distances are measured; the timed pass may be long (-r): say which part runs.
        run.note(fmt::format("fidelity: {}: distances measured; timing {} repetition(s)",
                             label_of(x), o.reps));
        measure_speed(*e, config_of(o, x), run.clock(), v);
    } catch (const Error& err) {
        if (other_vocab)
            throw;  // nothing of this run compares with it: bad input
        v.error = err.what();
        bad_input = err.kind() != ErrorKind::runtime;
    }
    if (v.error)
        run.note("fidelity: " + v.model_name + " on " + v.devices + " failed: " + *v.error);
    return v;
}

}  // namespace

RunResult run_fidelity(const FidelityOptions& o, RunEnv env) {
    validate(o);
    RunSetup setup;
    setup.take(env);
    setup.models = o.models;
    if (o.reference_model && std::find(setup.models.begin(), setup.models.end(),
                                       *o.reference_model) == setup.models.end())
        setup.models.push_back(*o.reference_model);
    setup.rpc_servers = o.rpc_servers;
    setup.device_sets = o.device_sets;
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    setup.terminal = o.progress && Progress::stderr_is_terminal();
    RunContext run(env.doc, setup, env.err, env.listener);
    run.open(threads_or_default(o.base.n_threads));

    FidelitySection f;
    f.n_prompt = o.n_prompt;
    f.n_gen = o.n_gen;
    f.top_k = o.top_k;
    f.reps = o.reps;
    f.seed = o.seed;
    f.prompt_logits = o.prompt_logits;
    f.method =
        "teacher-forced: the same tokens for every variant; logits captured on an untimed pass, "
        "speed measured on a separate pass; KL(reference || variant) in nats";
    // The reference first: its vocabulary and tokens are every variant's. Ctrl-C while it is
    // measured (its text windows stop with "interrupted") leaves nothing to compare with, but
    // the run was interrupted, not given bad input: the document is kept with no variants,
    // marked interrupted. Bad input stays bad input.
    std::optional<Reference> ref;
    try {
        ref = capture_reference(run, o, f);
    } catch (const Error& e) {
        if (!interrupt_requested() || e.kind() != ErrorKind::runtime)
            throw;
        f.interrupted = true;
        run.update([&](ResultDocument& doc) { doc.fidelity = f; });
        return run.finish(Outcome::ok);
    }
    run.update([&](ResultDocument& doc) { doc.fidelity = f; });
    bool failed = false;
    std::optional<std::string> bad;  // the first variant's error that was bad input
    int n_bad = 0, n_run = 0;
    for (const auto& model : o.models)
        for (const auto& dev : o.device_sets)
            for (KvType ctk : o.type_k)
                for (KvType ctv : o.type_v) {
                    if (run.should_stop())
                        break;
                    bool bad_input = false;
                    FidelityVariant v = measure_variant(run, o, *ref, f.tokens,
                                                        Variant{model, dev, ctk, ctv}, bad_input);
                    failed = failed || v.error.has_value();
                    ++n_run;
                    if (bad_input) {
                        ++n_bad;
                        if (!bad)
                            bad = v.error;
                    }
                    run.update([&](ResultDocument& doc) {
                        doc.fidelity->variants.push_back(std::move(v));
                        mark_frontier(doc.fidelity->variants);
                    });
                }
    run.update([&](ResultDocument& doc) { doc.fidelity->interrupted = interrupt_requested(); });
    // A variant that failed on bad input (a model llama.cpp refuses) makes the run bad input,
    // as run's tests do: exit 2 with one line, the other variants measured and kept.
    RunResult r = run.finish(bad ? Outcome::bad_input : failed ? Outcome::failed : Outcome::ok);
    if (bad && !r.error)
        r.error = input_error(*bad + " (" + std::to_string(n_bad) + " of " + std::to_string(n_run) +
                              " variants failed on it" +
                              (n_bad < n_run ? "; the others ran and are kept" : "") + ")");
    return r;
}

}  // namespace sb
