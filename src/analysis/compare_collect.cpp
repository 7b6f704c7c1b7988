#include <cstring>

#include "analysis/compare_steps.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

const std::vector<CompareKeyField> kCompareKeyFields = {
    {"model", "m"},          {"n_prompt", "p"},  {"n_gen", "n"},     {"n_depth", "d"},
    {"n_batch", "b"},        {"n_ubatch", "ub"}, {"type_k", "ctk"},  {"type_v", "ctv"},
    {"flash_attn", "fa"},    {"engine", ""},     {"devices", "dev"}, {"n_threads", "t"},
    {"n_gpu_layers", "ngl"}, {"model_path", ""}};

namespace {

std::optional<std::string> str_field(const json& j, const char* key) {
    const json& v = json_field(j, key);
    return v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
}

std::optional<double> num_field(const json& j, const char* key) {
    const json& v = json_field(j, key);
    return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}

// The numbers of an array (other elements skipped); none when not an array.
std::vector<double> numbers(const json& arr) {
    std::vector<double> v;
    if (!arr.is_array())
        return v;
    for (const auto& x : arr)
        if (x.is_number())
            v.push_back(x.get<double>());
    return v;
}

// The stage windows of telemetry.<stage>: their whole-system readings (the "total" of each).
std::vector<CompareWindow> windows(const json& occ) {
    std::vector<CompareWindow> v;
    if (!occ.is_array())
        return v;
    for (const auto& o : occ) {
        const json& total = json_field(o, "total");
        v.push_back({num_field(o, "duration_ns"), num_field(total, "energy_j"),
                     num_field(total, "j_per_token"), num_field(total, "net_j_per_token"),
                     str_field(total, "metric")});
    }
    return v;
}

CompareTest test_of(const json& t) {
    CompareTest c;
    const json& cfg = json_field(t, "config");
    c.name = str_field(cfg, "test").value_or("?");
    for (const auto& f : kCompareKeyFields)
        if (std::strcmp(f.name, "model") != 0)
            c.config[f.name] = json_field(cfg, f.name);
    c.status = str_field(t, "status");
    c.error = str_field(t, "error");
    c.prefill_tps = numbers(json_field(json_field(t, "prefill"), "tokens_per_s"));
    c.decode_tps = numbers(json_field(json_field(t, "decode"), "tokens_per_s"));
    c.ttft_ns = numbers(json_field(t, "ttft_ns"));
    const json& tel = json_field(t, "telemetry");
    c.prefill_windows = windows(json_field(tel, "prefill"));
    c.decode_windows = windows(json_field(tel, "decode"));
    return c;
}

// A sustained document compares as one test: the rounds of its unloaded phase are the samples,
// so a side's CV is its variation across rounds (the loaded phase's background differs from
// device to device and is left out). Each round is also a test of the document, in the order of
// the phases and rounds; their per-stage telemetry is pooled the same way. Throws
// sb::Error(input) when no round completed.
CompareTest pooled_rounds(const json& doc, const std::string& who,
                          std::vector<std::string>& notes) {
    const json& tests = json_field(doc, "tests");
    // The phase without background load ("rounds", or "baseline" beside a "loaded" one), and
    // the index of its first round's test.
    const json* phase = nullptr;
    std::size_t first_test = 0;
    for (const auto& ph : json_field(json_field(doc, "sustained"), "phases")) {
        if (phase)
            break;
        if (str_field(ph, "background").value_or("").empty())
            phase = &ph;
        else if (const json& r = json_field(ph, "rounds"); r.is_array())
            first_test += r.size();
    }
    if (!phase || !tests.is_array() || tests.empty())
        throw input_error(who + ": the `sustained` document has no baseline rounds to compare");
    CompareTest out = test_of(tests[0]);
    out.name += " rounds";
    out.status = "ok";
    out.error.reset();
    out.prefill_tps.clear();
    out.decode_tps.clear();
    out.ttft_ns.clear();
    out.prefill_windows.clear();
    out.decode_windows.clear();
    const json& rounds = json_field(*phase, "rounds");
    // Round k's test is tests[first_test + k] when the document holds a test per round.
    const bool tests_per_round = rounds.is_array() && tests.size() >= first_test + rounds.size();
    std::size_t k = 0;
    for (const auto& r : rounds) {
        const std::size_t index = first_test + k++;
        if (str_field(r, "status").value_or("ok") != "ok")
            continue;
        if (auto x = num_field(r, "prefill_tps"))
            out.prefill_tps.push_back(*x);
        if (auto x = num_field(r, "decode_tps"))
            out.decode_tps.push_back(*x);
        if (auto x = num_field(r, "ttft_ms"))
            out.ttft_ns.push_back(*x * 1e6);
        if (tests_per_round) {
            const json& tel = json_field(tests[index], "telemetry");
            for (auto& w : windows(json_field(tel, "prefill")))
                out.prefill_windows.push_back(w);
            for (auto& w : windows(json_field(tel, "decode")))
                out.decode_windows.push_back(w);
        }
    }
    if (out.decode_tps.empty() && out.prefill_tps.empty())
        throw input_error(who + ": the `sustained` document has no completed baseline round");
    notes.push_back(who + " is a sustained run: its " + std::to_string(out.decode_tps.size()) +
                    " rounds without background load are the samples, so its CV is the "
                    "variation across rounds");
    return out;
}

CompareDoc doc_of(const CompareInput& in, std::vector<std::string>& notes) {
    const std::string who = in.label + " (" + in.source + ")";
    const json& d = in.doc;
    if (!d.is_object() || !json_field(d, "tests").is_array())
        throw input_error(who + " is not a stagebench result document (no \"tests\" array)");
    const json& tests = json_field(d, "tests");
    for (std::size_t i = 0; i < tests.size(); ++i)
        if (!tests[i].is_object())
            throw input_error(who + ": .tests[" + std::to_string(i) + "] is " +
                              json_type_words(tests[i]) + ", expected an object");
    CompareDoc c;
    const auto command = str_field(d, "command");
    if (command == "sustained") {
        c.tests.push_back(pooled_rounds(d, who, notes));
    } else {
        for (const auto& t : tests)
            c.tests.push_back(test_of(t));
    }
    if (c.tests.empty())
        throw input_error(who + ": the `" + command.value_or("?") +
                          "` document has no tests to compare; compare reads run and demo "
                          "documents");
    const json& sys = json_field(d, "system");
    c.host = json_field(sys, "hostname");
    c.cpu = json_field(sys, "cpu_model");
    c.info = {in.label,
              in.source,
              command,
              str_field(sys, "hostname"),
              str_field(sys, "cpu_model"),
              str_field(d, "started_at")};
    c.http_server = str_field(json_field(json_field(d, "engines"), "http"), "server");
    return c;
}

}  // namespace

std::vector<CompareDoc> collect_compare_docs(const std::vector<CompareInput>& inputs,
                                             std::vector<std::string>& notes) {
    std::vector<CompareDoc> docs;
    for (const auto& in : inputs)
        docs.push_back(doc_of(in, notes));
    return docs;
}

}  // namespace sb
