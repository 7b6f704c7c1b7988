#pragma once
// What the store's tests share (header only): a small run document and the message of a
// thrown sb::Error. For tests only.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/doc/json_in.hpp"
#include "core/error.hpp"
#include "core/result.hpp"

namespace sbtest {

// A run document of one test (pp32+tg8 on "/m/tiny.gguf", CPU, 2 threads) on host, its prefill
// median prefill_median t/s and its decode median 50.5 t/s, as its JSON text would hold it.
inline nlohmann::json store_doc_json(const std::string& host, double prefill_median,
                                     const std::string& command = "run",
                                     const std::string& started_at = "2026-11-29T09:30:00Z") {
    using nlohmann::json;
    return json{{"schema", "stagebench.result"},
                {"command", command},
                {"tool", {{"name", "stagebench"}, {"version", "0.1.0"}}},
                {"llama", {{"tag", "b7588"}, {"commit", "0123456789ab"}}},
                {"system", {{"hostname", host}, {"cpu_model", "Cortex-X4"}}},
                {"models", {{{"path", "/m/tiny.gguf"}, {"name", nullptr}}}},
                {"started_at", started_at},
                {"tests",
                 {{{"config",
                    {{"test", "pp32+tg8"},
                     {"n_prompt", 32},
                     {"n_gen", 8},
                     {"model_path", "/m/tiny.gguf"},
                     {"devices", "CPU"},
                     {"n_threads", 2}}},
                   {"status", "ok"},
                   {"prefill", {{"throughput", {{"median", prefill_median}}}}},
                   {"decode", {{"throughput", {{"median", 50.5}}}}}}}}};
}

// store_doc_json, typed.
inline sb::ResultDocument store_doc(const std::string& host, double prefill_median,
                                    const std::string& command = "run",
                                    const std::string& started_at = "2026-11-29T09:30:00Z") {
    return sb::from_json<sb::ResultDocument>(
        store_doc_json(host, prefill_median, command, started_at), "doc");
}

// The message of the sb::Error f throws ("" when it throws none), its kind into *kind.
inline std::string error_of(const std::function<void()>& f, sb::ErrorKind* kind = nullptr) {
    try {
        f();
    } catch (const sb::Error& e) {
        if (kind)
            *kind = e.kind();
        return e.what();
    }
    return "";
}

}  // namespace sbtest
