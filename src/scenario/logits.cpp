#include "scenario/logits.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "core/error.hpp"
#include "core/result.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "engine/workload.hpp"
#include "model/inspect.hpp"
#include "scenario/repetition.hpp"

namespace sb {

LogitsCapture capture_logits(const LogitsOptions& o, EngineFactory& engines) {
    const std::string& path = o.workload.model_path;
    const ModelInfo info = inspect_model(path);
    TestConfig c;
    static_cast<Workload&>(c) = o.workload;
    c.n_prompt = o.n_prompt;
    c.n_gen = 0;
    const std::unique_ptr<Engine> e = engines.make(EngineKind::llama);
    e->load(load_spec_for(c));
    LogitsCapture out;
    out.model_path = path;
    out.model_name = info.name.value_or(std::filesystem::path(path).filename().string());
    out.model_bytes = info.file_bytes;
    out.devices = o.workload.devices.str();
    out.tokens = sequence_tokens(o.n_prompt, e->n_vocab(), o.seed, e->bos_token());
    e->prefill(out.tokens);
    const auto l = e->last_logits();
    out.logits.assign(l.begin(), l.end());
    const SystemInfo sys = read_system_info();
    out.arch = sys.arch;
    out.emulated = sys.emulated.value_or(false);
    out.cpu_variant = build_info().cpu_variant.value_or("");
    return out;
}

bool LogitsDiff::within(double tolerance, double max_kl) const {
    return top1_agrees() && kl <= max_kl && max_abs <= tolerance * std::max(1.0, ref_scale);
}

namespace {

int32_t argmax(std::span<const float> v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// log(sum exp(v)), computed from the maximum so that no term overflows.
double log_sum_exp(std::span<const float> v) {
    const double m = *std::max_element(v.begin(), v.end());
    double s = 0;
    for (float x : v)
        s += std::exp(static_cast<double>(x) - m);
    return m + std::log(s);
}

}  // namespace

LogitsDiff compare_logits(const LogitsCapture& ref, const LogitsCapture& x) {
    if (ref.logits.size() != x.logits.size())
        throw input_error("the logits are of different vocabularies (" +
                          std::to_string(ref.logits.size()) + " and " +
                          std::to_string(x.logits.size()) + " entries): not the same model");
    if (ref.tokens != x.tokens)
        throw input_error(
            "the logits are of different prompts (other tokens: another -p, "
            "--seed or vocabulary)");
    if (ref.logits.empty())
        throw input_error("no logits to compare");
    return diff_logits(ref.logits, x.logits);
}

LogitsDiff diff_logits(std::span<const float> ref, std::span<const float> x) {
    LogitsDiff d;
    double sq = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double diff = static_cast<double>(x[i]) - ref[i];
        d.max_abs = std::max(d.max_abs, std::abs(diff));
        d.ref_scale = std::max(d.ref_scale, std::abs(static_cast<double>(ref[i])));
        sq += diff * diff;
    }
    d.rms = std::sqrt(sq / static_cast<double>(ref.size()));
    const double lse_ref = log_sum_exp(ref), lse_x = log_sum_exp(x);
    for (size_t i = 0; i < ref.size(); ++i) {
        const double lp = ref[i] - lse_ref, lq = x[i] - lse_x;
        d.kl += std::exp(lp) * (lp - lq);
    }
    d.kl = std::max(0.0, d.kl);  // rounding can leave -1e-17 for identical inputs
    d.top1_ref = argmax(ref);
    d.top1 = argmax(x);
    return d;
}

nlohmann::json to_json(const LogitsCapture& c) {
    std::vector<int32_t> order(c.logits.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t k = std::min<size_t>(10, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int32_t a, int32_t b) { return c.logits[a] > c.logits[b]; });
    nlohmann::json top = nlohmann::json::array();
    for (size_t i = 0; i < k; ++i)
        top.push_back({{"id", order[i]}, {"logit", c.logits[order[i]]}});
    return {
        {"schema", "stagebench-logits"},
        {"schema_version", 1},
        {"model", {{"path", c.model_path}, {"name", c.model_name}, {"bytes", c.model_bytes}}},
        {"devices", c.devices},
        {"tokens", c.tokens},
        {"n_vocab", c.logits.size()},
        {"logits", c.logits},
        {"top", top},
        {"system", {{"arch", c.arch}, {"cpu_variant", c.cpu_variant}, {"emulated", c.emulated}}}};
}

LogitsCapture logits_from_json(const nlohmann::json& j, const std::string& source) {
    auto bad = [&](const std::string& what) { return input_error("'" + source + "': " + what); };
    if (!j.is_object() || j.value("schema", "") != "stagebench-logits")
        throw bad("not a logits document (stagebench logits --out)");
    if (!j.contains("schema_version") || !j["schema_version"].is_number_integer() ||
        j["schema_version"].get<int64_t>() != 1)
        throw bad("schema_version: expected 1");
    LogitsCapture c;
    try {
        c.model_path = j.at("model").at("path").get<std::string>();
        c.model_name = j.at("model").at("name").get<std::string>();
        c.devices = j.at("devices").get<std::string>();
        c.tokens = j.at("tokens").get<std::vector<int32_t>>();
        for (const auto& v : j.at("logits")) {
            if (!v.is_number())
                throw bad("logits: expected numbers, found " + std::string(v.type_name()));
            c.logits.push_back(v.get<float>());
        }
        if (j.contains("system") && j["system"].is_object()) {
            c.arch = j["system"].value("arch", "");
            c.cpu_variant = j["system"].value("cpu_variant", "");
            c.emulated = j["system"].value("emulated", false);
        }
    } catch (const nlohmann::json::exception& e) {
        throw bad(std::string("a field is missing or of the wrong type (") + e.what() + ")");
    }
    if (c.logits.empty())
        throw bad("logits: empty");
    return c;
}

}  // namespace sb
