#include "core/document.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/result.hpp"

namespace sb {

using nlohmann::json;

namespace {

// The shapes of the documents, in a small notation read once:
//   "int"  an integer in int64 ("i32": in int32; "u64": 0 to 2^64-1), "num" any number,
//   "str" a string, "bool" a boolean, "any" anything, "obj" any object;
//   a trailing "?" also allows null;
//   {...}  an object whose listed fields, where present, have those shapes ("?": true in it
//          allows null for the object itself); fields not listed are not checked;
//   [S]    an array of S ("?" as a first element allows null for the array);
//   "$name" the shape of that name below, "$name?" the same or null.
// Absent fields are accepted everywhere: older documents lack newer fields.
constexpr const char* kShapes = R"json({
  "summary": {"n": "int", "mean": "num?", "stddev": "num?", "cv": "num?", "min": "num?",
              "median": "num?", "p90": "num?", "p99": "num?", "max": "num?",
              "ci95_lo": "num?", "ci95_hi": "num?", "ci95_half_rel": "num?",
              "outliers": ["int"]},
  "stage": {"n_tokens": "i32", "duration_ns": ["int"], "duration": "$summary",
            "tokens_per_s": ["num"], "throughput": "$summary", "start_ns": ["int"],
            "token_latency_ns": ["int"], "itl": "$summary", "kv_depth_start": "i32"},
  "config": {"model_path": "str", "devices": "str", "test": "str", "n_prompt": "i32",
             "n_gen": "i32", "n_depth": "i32", "n_threads": "i32", "n_batch": "i32",
             "n_ubatch": "i32", "n_gpu_layers": "i32", "flash_attn": "str", "type_k": "str",
             "type_v": "str", "reps": "i32", "target_ci": "num?", "max_reps": "i32",
             "warmup": "bool", "seed": "u64", "engine": "str"},
  "server_timings": {"source": "str", "prompt_n": "int?", "cache_n": "int?",
                     "predicted_n": "int?", "prompt_ns": "int?", "predicted_ns": "int?",
                     "queue_ns": "int?", "load_ns": "int?"},
  "client": {"?": true, "e2e_ns": ["int"], "e2e": "$summary", "tpot_ns": ["int"],
             "tpot": "$summary", "first_content_ns": ["int?"], "first_content": "$summary",
             "prompt_tokens": ["int"], "output_tokens": ["int"], "streamed_tokens": ["int"],
             "chunks": ["int"]},
  "server": {"?": true, "reps": ["$server_timings"], "prefill_tokens_per_s": "$summary",
             "decode_tokens_per_s": "$summary",
             "client_minus_server": {"ttft_minus_prompt_ns": ["int"],
                                     "ttft_minus_prompt": "$summary",
                                     "e2e_minus_total_ns": ["int"],
                                     "e2e_minus_total": "$summary"}},
  "test": {"config": "$config", "status": "str", "error": "str?", "error_kind": "str?",
           "backends": ["str"], "notes": ["str"], "reps_done": "i32", "stopped_by": "str",
           "prefill": "$stage?", "decode": "$stage?", "ttft_ns": ["int"], "ttft": "$summary",
           "roofline": {"decode_bytes_per_token": "num?", "decode_bandwidth_gbps": "num?",
                        "decode_bandwidth_fraction": "num?", "prefill_gflops": "num?"},
           "telemetry": "obj?", "started_ns": "int", "finished_ns": "int",
           "client": "$client", "server": "$server"},
  "model": {"path": "str", "arch": "str", "name": "str?", "gguf_version": "int",
            "file_bytes": "int", "n_params": "int", "n_tensors": "int",
            "file_type_id": "int?", "file_type": "str?", "dominant_type": "str",
            "tensor_types": "obj", "synthetic": "bool", "synthetic_preset": "str?",
            "synthetic_seed": "u64?", "generator": "str?", "n_layers": "int?",
            "n_embd": "int?", "n_head": "int?", "n_head_kv": "int?", "n_ff": "int?",
            "n_ctx_train": "int?", "n_vocab": "int?", "tokenizer": "str?"},
  "warning": {"code": "str", "message": "str", "hint": "str"},
  "result": {"schema": "str", "schema_version": "int", "command": "str", "argv": ["str"],
             "tool": {"name": "str", "version": "str", "build_type": "str"},
             "llama": "obj?", "system": "obj?", "models": ["$model"], "membw": "obj?",
             "started_at": "str", "finished_at": "str", "tests": ["$test"],
             "warnings": ["$warning"], "telemetry": "obj?", "engines": "obj",
             "hybrid": "$hybrid", "sustained": "$sustained", "ops": "$ops"},
  "hybrid_mode": {"samples_ns": ["int"], "summary": "$summary"},
  "speedup": {"speedup": "num?", "ci95_lo": "num?", "ci95_hi": "num?", "verdict": "str"},
  "hybrid": {"prefill_device": "str", "decode_device": "str", "baselines": "bool",
             "memory": "obj",
             "points": [{"n_prompt": "i32", "n_gen": "i32",
                         "tests": {"hybrid": "i32", "prefill_alone": "i32",
                                   "decode_alone": "i32"},
                         "e2e": {"hybrid": "$hybrid_mode", "prefill_alone": "$hybrid_mode",
                                 "decode_alone": "$hybrid_mode"},
                         "transfer": {"bytes": ["int"], "bytes_per_token": "num?",
                                      "duration": "$summary", "duration_ns": ["int"],
                                      "gbps": "num?", "save": "$summary", "save_ns": ["int"],
                                      "restore": "$summary", "restore_ns": ["int"],
                                      "start_ns": ["int"]},
                         "comparison": {"prefill_alone": "$speedup",
                                        "decode_alone": "$speedup"}}],
             "crossover": {"by_n_gen": [{"n_gen": "i32", "hybrid_wins_from_n_prompt": "i32?"}],
                           "by_n_prompt": [{"n_prompt": "i32",
                                            "hybrid_wins_from_n_gen": "i32?"}]}},
  "round": {"round": "i32", "status": "str", "error": "str?", "start_ns": "int",
            "end_ns": "int", "cooldown_s": "num", "ttft_ms": "num?", "prefill_tps": "num?",
            "decode_tps": "num?", "itl_p50_ms": "num?", "itl_p99_ms": "num?",
            "prefill_energy_j": "num?", "decode_energy_j": "num?",
            "decode_j_per_token": "num?", "temp_start_c": "num?", "temp_end_c": "num?",
            "temp_max_c": "num?", "freq": "obj", "cpu_freq_mean_khz": "num?", "ops": "obj?"},
  "sustained": {"config": {"rounds": "i32", "prompt_tokens": "i32", "max_tokens": "i32",
                           "chunk": "i32?", "threads": "i32", "devices": "str",
                           "model": "str", "seed": "u64", "cooldown": "str",
                           "background": "str?", "trace_ops_rounds": ["i32"]},
                "phases": [{"name": "str", "background": "str", "rounds": ["$round"],
                            "across": {"prefill_tps": "$summary", "decode_tps": "$summary",
                                       "ttft_ms": "$summary",
                                       "decode_j_per_token": "$summary",
                                       "first_last_change": "num?",
                                       "throttle_onset_round": "i32?", "onset_basis": "str",
                                       "steady_decode_tps": "num?", "peak_to_steady": "num?",
                                       "freq_onset_round": "i32?",
                                       "time_at_floor": [{"metric": "str", "floor_khz": "num",
                                                          "seconds": "num",
                                                          "fraction": "num"}],
                                       "verdict": "str"}}],
                "slowdown": [{"stage": "str", "ratio": "num?", "ci95_lo": "num?",
                              "ci95_hi": "num?", "no_difference": "bool"}]},
  "tensor": {"name": "str", "type": "str", "ne": ["int"], "contiguous": "bool"},
  "op": {"graph": "i32", "node": "i32", "op": "str", "name": "str", "layer": "i32?",
         "backend": "str", "type": "str", "ne": ["int"], "srcs": ["$tensor"],
         "no_compute": "bool", "op_ns": "num?", "call_ns": "num?",
         "isolated_call_ns": "num?", "op_method": "str?", "start_ns": "int?",
         "end_ns": "int?", "cycles": "int?", "mhz": "num?", "pkts": "int?",
         "start_cycles": "int?"},
  "aggregate": {"count": "i32", "n_no_compute": "i32", "op_ns": "num?", "call_ns": "num?",
                "share": "num?", "call_share": "num?", "call_op_ratio": "num?", "op": "str",
                "backend": "str", "layer": "i32?"},
  "ops_stage": {"stage": "str", "n_tokens": "i32", "kv_depth": "i32", "n_graphs": "i32",
                "traced_reps": "i32", "timeline_rep": "i32?",
                "reconciliation": {"plain_ns": ["int"], "plain_start_ns": ["int"],
                                   "traced_start_ns": ["int"], "plain_median_ns": "num?",
                                   "traced_ns": ["int"], "traced_median_ns": "num?",
                                   "sum_op_ns": "num?", "sum_call_ns": "num?",
                                   "sum_call_compute_ns": "num?", "sum_copy_ns": "num?",
                                   "sched_gap_ns": "num?", "host_ns": "num?",
                                   "overhead_ns": "num?", "overhead_ratio": "num?",
                                   "op_fraction": "num?", "op_within_stage": "bool"},
                "by_op": ["$aggregate"], "by_layer": ["$aggregate"],
                "by_backend": ["$aggregate"], "top": ["int"], "n_splits": "i32",
                "n_copies": "i32", "copy_bytes": "int?", "copy_ns": "num?",
                "splits": [{"graph": "i32", "index": "i32", "backend": "str",
                            "first_node": "i32", "n_nodes": "i32", "n_inputs": "i32",
                            "input_bytes": "int?", "inputs": ["str"], "copy_ns": "num?"}],
                "fallback": [{"op": "str", "backend": "str", "requested": "str",
                              "count": "i32", "call_ns": "num?", "op_ns": "num?",
                              "n_replayed": "i32", "op_ns_replayed": "num?",
                              "op_ns_requested": "num?", "penalty": "num?", "note": "str"}],
                "decomposition": {"?": true,
                                  "parts": [{"name": "str", "ns": "num?", "share": "num?",
                                             "note": "str"}],
                                  "accelerators": ["str"], "dispatch_ns": "obj",
                                  "n_dispatches": "i32", "n_accel_ops": "i32",
                                  "per_op_dispatch_ns": "num?", "traced_tax_ns": "num?",
                                  "n_conversion_ops": "i32", "n_conversion_missing": "i32"},
                "notes": ["str"], "ops": ["$op"]},
  "ops": {"source": "str", "model_path": "str", "devices": "str", "requested": ["str"],
          "backends": ["str"], "n_threads": "i32", "n_prompt": "i32", "n_depth": "i32",
          "replay_copies": "i32", "method": "str", "stages": ["$ops_stage"],
          "import": "obj?"},
  "compare": {"command": "str", "compare_schema_version": "int", "tool_version": "str",
              "created_at": "str",
              "inputs": [{"label": "str", "source": "str", "command": "str?", "host": "str?",
                          "cpu": "str?", "started_at": "str?"}],
              "rows": [{"test": "str", "key": "str", "stage": "str", "metric": "str",
                        "higher_is_better": "bool", "differs": "obj",
                        "sides": [{"label": "str", "median": "num?", "cv": "num?",
                                   "n": "int"}],
                        "ratios": [{"label": "str", "median": "num?", "ci_low": "num?",
                                    "ci_high": "num?", "verdict": "str"}]}],
              "unmatched": [{"label": "str", "test": "str"}], "notes": ["str"]}
})json";

const json& shapes() {
    static const json s = json::parse(kShapes);
    return s;
}

std::string type_name(const json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "an integer";
        case json::value_t::number_float:
            return "a number with a fraction";
        case json::value_t::string:
            return "a string";
        case json::value_t::array:
            return "an array";
        case json::value_t::object:
            return "an object";
        default:
            return "an unusable value";
    }
}

class Checker {
  public:
    explicit Checker(const std::string& source) : source_(source) {}

    void check(const json& v, const json& shape, const std::string& path) {
        if (shape.is_string()) {
            std::string s = shape.get<std::string>();
            const bool nullable = !s.empty() && s.back() == '?';
            if (nullable)
                s.pop_back();
            if (v.is_null()) {
                const bool ref_nullable = s[0] == '$' && shapes().at(s.substr(1)).is_object() &&
                                          shapes().at(s.substr(1)).value("?", false);
                if (!nullable && !ref_nullable && s != "any")
                    fail(path, expected(s), v);
                return;
            }
            if (s[0] == '$') {
                check(v, shapes().at(s.substr(1)), path);
                return;
            }
            check_scalar(v, s, path);
        } else if (shape.is_object()) {
            if (v.is_null() && shape.value("?", false))
                return;
            if (!v.is_object())
                fail(path, "an object", v);
            for (const auto& [key, sub] : shape.items()) {
                if (key == "?")
                    continue;
                auto it = v.find(key);
                if (it != v.end())
                    check(*it, sub, path.empty() ? key : path + "." + key);
            }
        } else if (shape.is_array()) {
            const bool nullable = shape.size() == 2 && shape[0] == "?";
            if (v.is_null() && nullable)
                return;
            if (!v.is_array())
                fail(path, "an array", v);
            const json& item = shape[nullable ? 1 : 0];
            for (std::size_t i = 0; i < v.size(); ++i)
                check(v[i], item, path + "[" + std::to_string(i) + "]");
        }
    }

    [[noreturn]] void fail(const std::string& path, const std::string& want, const json& v) {
        throw input_error(source_ + ": " + (path.empty() ? "the document" : path) + ": expected " +
                          want + ", found " + type_name(v));
    }
    [[noreturn]] void fail_text(const std::string& path, const std::string& why) {
        throw input_error(source_ + ": " + path + ": " + why);
    }

  private:
    static std::string expected(const std::string& s) {
        if (s == "int" || s == "i32" || s == "u64")
            return "an integer";
        if (s == "num")
            return "a number";
        if (s == "str")
            return "a string";
        if (s == "bool")
            return "a boolean";
        if (s == "obj" || s[0] == '$')
            return "an object";
        return "a value";
    }

    void check_scalar(const json& v, const std::string& s, const std::string& path) {
        if (s == "any")
            return;
        if (s == "num") {
            if (!v.is_number())
                fail(path, "a number", v);
            return;
        }
        if (s == "int" || s == "i32" || s == "u64") {
            if (!v.is_number_integer())
                fail(path, "an integer", v);
            if (s == "u64") {
                if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)
                    fail_text(path, "expected an integer of at least 0, found " + v.dump());
                return;
            }
            if (v.is_number_unsigned() &&
                v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail_text(path, "the integer " + v.dump() + " is out of range");
            if (s == "i32") {
                const int64_t x = v.get<int64_t>();
                if (x < std::numeric_limits<int32_t>::min() ||
                    x > std::numeric_limits<int32_t>::max())
                    fail_text(path, "the integer " + v.dump() + " is out of range");
            }
            return;
        }
        if (s == "str") {
            if (!v.is_string())
                fail(path, "a string", v);
            return;
        }
        if (s == "bool") {
            if (!v.is_boolean())
                fail(path, "a boolean", v);
            return;
        }
        if (s == "obj") {
            if (!v.is_object())
                fail(path, "an object", v);
            return;
        }
        throw std::logic_error("document shapes: unknown shape '" + s + "'");
    }

    std::string source_;
};

// A version field: an integer from 1 to what this build reads.
void check_version(Checker& c, const json& doc, const char* field, const std::string& source) {
    auto it = doc.find(field);
    if (it == doc.end())
        return;
    if (!it->is_number_integer())
        c.fail(field, "an integer", *it);
    const int max = max_readable_version(field);
    if (it->is_number_unsigned() ? it->get<uint64_t>() > static_cast<uint64_t>(max)
                                 : it->get<int64_t>() > max)
        throw input_error(source + " was written by a newer stagebench (" + field + " " +
                          it->dump() + "; this build reads up to " + std::to_string(max) +
                          "): use a newer stagebench");
    if (it->is_number_unsigned() ? it->get<uint64_t>() < 1 : it->get<int64_t>() < 1)
        c.fail_text(field, "expected a version of at least 1, found " + it->dump());
}

// Indexes one part of a document keeps into another: they must point at something.
void check_references(Checker& c, const json& doc) {
    const auto tests = doc.find("tests");
    const std::size_t n_tests = tests != doc.end() && tests->is_array() ? tests->size() : 0;
    const auto hybrid = doc.find("hybrid");
    if (hybrid == doc.end() || !hybrid->is_object() || !hybrid->contains("points"))
        return;
    const json& points = (*hybrid)["points"];
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto t = points[i].find("tests");
        if (t == points[i].end())
            continue;
        for (const auto& [mode, idx] : t->items())
            if (idx.is_number_integer() &&
                (idx.get<int64_t>() < 0 || idx.get<uint64_t>() >= n_tests))
                c.fail_text("hybrid.points[" + std::to_string(i) + "].tests." + mode,
                            "test " + idx.dump() + " is not in tests (" + std::to_string(n_tests) +
                                " tests)");
    }
}

}  // namespace

int max_readable_version(const std::string& version_field) {
    if (version_field == "schema_version")
        return kResultSchemaVersion;
    if (version_field == "compare_schema_version")
        return 1;
    if (version_field == "advise_schema_version")
        return 1;
    return 0;
}

json parse_document_text(const std::string& text, const std::string& source) {
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        throw input_error(source + " is not JSON (error at byte " + std::to_string(e.byte) + ")");
    } catch (const json::exception& e) {
        // 1e999 and the like: JSON's grammar, but no double holds them.
        std::string why = e.what();
        if (auto colon = why.rfind("] "); colon != std::string::npos)
            why = why.substr(colon + 2);
        throw input_error(source + " is not usable JSON: " + why);
    }
}

void check_document(const json& doc, const std::string& source) {
    Checker c(source);
    if (!doc.is_object())
        c.fail("", "a JSON object", doc);
    try {
        for (const char* field :
             {"schema_version", "compare_schema_version", "advise_schema_version"})
            check_version(c, doc, field, source);
        const auto schema = doc.find("schema");
        if (schema != doc.end() && !schema->is_string())
            c.fail("schema", "a string", *schema);
        if (schema != doc.end() && *schema == "stagebench.result") {
            c.check(doc, shapes().at("result"), "");
            check_references(c, doc);
        } else if (doc.contains("compare_schema_version"))
            c.check(doc, shapes().at("compare"), "");
    } catch (const Error&) {
        throw;
    } catch (const json::exception& e) {
        // The checks themselves read the document only through type tests; this is a guard.
        throw input_error(source + ": unusable document (" + std::string(e.what()) + ")");
    }
}

json load_document(const std::string& path) {
    const std::string source = "'" + path + "'";
    // Regular files only (a FIFO or a device never blocks the reader), one error line.
    json doc = parse_document_text(read_input_file(path, "document"), source);
    check_document(doc, source);
    return doc;
}

}  // namespace sb
