#include "report/store_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace sb {
namespace {

using nlohmann::json;

TEST(StoreReport, ListHasOneRowPerDocument) {
    std::vector<StoredEntry> e(1);
    e[0].id = 3;
    e[0].stored_at = "2026-11-29T10:00:00Z";
    e[0].command = "run";
    e[0].host = "pi5";
    e[0].models = {"tiny.gguf", "other.gguf"};
    e[0].n_tests = 2;
    e[0].device = "bench-pi";
    e[0].content_hash = "ab12";
    std::ostringstream out;
    write_store_list_markdown(out, e);
    EXPECT_NE(out.str().find("| 3 | 2026-11-29T10:00:00Z | run | - | pi5 | - | - | tiny.gguf, "
                             "other.gguf | 2 |"),
              std::string::npos)
        << out.str();
    const json j = store_list_json(e);
    EXPECT_EQ(j[0]["id"], 3);
    EXPECT_TRUE(j[0]["cpu"].is_null());
    EXPECT_EQ(j[0]["models"][1], "other.gguf");
    EXPECT_EQ(j[0]["device"], "bench-pi");
    EXPECT_TRUE(j[0]["llama_commit"].is_null());
    EXPECT_EQ(j[0]["content_hash"], "ab12");
}

TEST(StoreReport, ShowSummarisesTheTestsMedians) {
    const ResultDocument doc = from_json<ResultDocument>(json::parse(R"({
        "schema": "stagebench.result", "command": "run", "started_at": "2026-11-29T10:00:00Z",
        "system": {"hostname": "pi5", "cpu_model": "Cortex-A76", "os": "Debian 12"},
        "tool": {"version": "0.1.0", "build_type": "Release"}, "llama": {"tag": "b7588"},
        "models": [{"path": "/m/tiny.gguf", "name": null}],
        "tests": [{"config": {"test": "pp32+tg8", "n_prompt": 32, "n_gen": 8, "devices": "CPU",
                              "n_threads": 0},
                   "status": "ok", "reps_done": 5,
                   "prefill": {"throughput": {"median": 1234.567},
                               "robust": {"tokens_per_s": 1240.0, "ci95_lo": 1230.5,
                                          "ci95_hi": 1250.25},
                               "stalls": {"repetitions": {"n": 5, "indices": [3]}}},
                   "decode": {"throughput": {"median": 98.7},
                              "robust": {"tokens_per_s": 3132.5, "ci95_lo": 3100,
                                         "ci95_hi": 3150},
                              "stalls": {"tokens": {"n": 40, "indices": [1, 9, 30]}}},
                   "ttft": {"median": 41500000}}]})"));
    std::ostringstream out;
    write_document_summary_markdown(out, 4, doc);
    const std::string s = out.str();
    EXPECT_NE(s.find("## #4: run"), std::string::npos) << s;
    EXPECT_NE(s.find("pi5, Cortex-A76, Debian 12"), std::string::npos) << s;
    EXPECT_NE(s.find("- models: /m/tiny.gguf"), std::string::npos) << s;
    // The robust figure with its median's interval and the stalls beside each median.
    EXPECT_NE(s.find("| pp32+tg8 | CPU | auto | ok | 5 | 1234.57 | 1240.00 [1230.50, 1250.25] | "
                     "1/5 reps | 98.70 | 3132.50 [3100.00, 3150.00] | 3/40 tokens | 41.50 |"),
              std::string::npos)
        << s;

    std::ostringstream none;
    ResultDocument sustained;
    sustained.command = "sustained";
    write_document_summary_markdown(none, 5, sustained);
    EXPECT_NE(none.str().find("No tests in this document"), std::string::npos) << none.str();
}

}  // namespace
}  // namespace sb
