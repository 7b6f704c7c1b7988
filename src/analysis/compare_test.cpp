#include "analysis/compare.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace sb {
namespace {

using nlohmann::json;

json config(int n_threads = 2, const std::string& devices = "CPU", int n_prompt = 32) {
    return json{{"model_path", "/models/tiny.gguf"},
                {"devices", devices},
                {"test", "pp" + std::to_string(n_prompt) + "+tg8"},
                {"n_prompt", n_prompt},
                {"n_gen", 8},
                {"n_depth", 0},
                {"n_threads", n_threads},
                {"n_batch", 2048},
                {"n_ubatch", 512},
                {"n_gpu_layers", 99},
                {"flash_attn", "auto"},
                {"type_k", "f16"},
                {"type_v", "f16"},
                {"engine", "llama"}};
}

json scaled(const std::vector<double>& v, double k) {
    json out = json::array();
    for (double x : v)
        out.push_back(x * k);
    return out;
}

const std::vector<double> kPrefill = {1000, 1010, 990, 1005, 995, 1002, 998};
const std::vector<double> kDecode = {100, 101, 99, 100.5, 99.5, 100.2, 99.8};
const std::vector<double> kTtftNs = {40e6, 40.4e6, 39.6e6, 40.2e6, 39.8e6, 40.1e6, 39.9e6};

// A test whose prefill and decode samples are the reference ones times prefill_k / decode_k
// and whose TTFT is the reference times ttft_k.
json test(const json& cfg, double prefill_k = 1, double decode_k = 1, double ttft_k = 1) {
    return json{{"config", cfg},
                {"status", "ok"},
                {"error", nullptr},
                {"prefill", {{"tokens_per_s", scaled(kPrefill, prefill_k)}}},
                {"decode", {{"tokens_per_s", scaled(kDecode, decode_k)}}},
                {"ttft_ns", scaled(kTtftNs, ttft_k)}};
}

json doc(const std::string& host, json tests) {
    return json{{"command", "run"},
                {"started_at", "2026-11-29T10:00:00Z"},
                {"system", {{"hostname", host}, {"cpu_model", "Cortex-X4"}}},
                {"tests", std::move(tests)}};
}

std::vector<CompareInput> inputs(std::vector<json> docs) {
    std::vector<CompareInput> in;
    auto labels = default_compare_labels(docs.size());
    for (std::size_t i = 0; i < docs.size(); ++i)
        in.push_back({labels[i], "doc" + std::to_string(i) + ".json", std::move(docs[i])});
    return in;
}

const CompareRow& row(const CompareResult& r, const std::string& stage, std::size_t nth = 0) {
    for (const auto& x : r.rows)
        if (x.stage == stage && nth-- == 0)
            return x;
    throw std::runtime_error("no row for " + stage);
}

ErrorKind kind_of(const std::function<void()>& f, std::string* msg = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (msg)
            *msg = e.what();
        return e.kind();
    }
    ADD_FAILURE() << "no sb::Error";
    return ErrorKind::runtime;
}

TEST(Compare, DefaultLabels) {
    EXPECT_EQ(default_compare_labels(3), (std::vector<std::string>{"A", "B", "C"}));
    EXPECT_EQ(default_compare_labels(28)[26], "A2");
}

TEST(Compare, ADocumentWithItselfIsNoDifferenceEverywhere) {
    const json d = doc("h", json::array({test(config())}));
    const CompareResult r = compare_documents(inputs({d, d}));
    ASSERT_EQ(r.rows.size(), 3u);
    for (const auto& x : r.rows) {
        ASSERT_EQ(x.sides.size(), 2u);
        EXPECT_EQ(x.sides[0].median, x.sides[1].median);
        EXPECT_EQ(x.sides[0].n, 7u);
        ASSERT_EQ(x.ratios.size(), 1u);
        EXPECT_EQ(x.ratios[0].label, "B/A");
        EXPECT_DOUBLE_EQ(*x.ratios[0].median, 1.0);
        EXPECT_LT(*x.ratios[0].ci_low, 1.0);
        EXPECT_GT(*x.ratios[0].ci_high, 1.0);
        EXPECT_EQ(x.ratios[0].verdict, "no difference");
        EXPECT_TRUE(x.differs.empty());
    }
    EXPECT_TRUE(r.unmatched.empty());
    EXPECT_TRUE(r.notes.empty());
}

TEST(Compare, KnownRatiosGetTheirVerdictsInTheMetricsDirection) {
    // B: prefill exactly 1.5x, decode exactly 0.5x, TTFT exactly 2x (longer: slower).
    const json a = doc("h", json::array({test(config())}));
    const json b = doc("h", json::array({test(config(), 1.5, 0.5, 2.0)}));
    const CompareResult r = compare_documents(inputs({a, b}));
    const auto& pre = row(r, "prefill");
    EXPECT_EQ(pre.metric, "tokens_per_s");
    EXPECT_TRUE(pre.higher_is_better);
    EXPECT_DOUBLE_EQ(*pre.sides[0].median, 1000);
    EXPECT_DOUBLE_EQ(*pre.sides[1].median, 1500);
    EXPECT_DOUBLE_EQ(*pre.ratios[0].median, 1.5);
    // The bootstrap interval holds the true ratio and excludes 1.
    EXPECT_LT(*pre.ratios[0].ci_low, 1.5);
    EXPECT_GT(*pre.ratios[0].ci_high, 1.5);
    EXPECT_GT(*pre.ratios[0].ci_low, 1.4);
    EXPECT_LT(*pre.ratios[0].ci_high, 1.6);
    EXPECT_EQ(pre.ratios[0].verdict, "faster");

    const auto& dec = row(r, "decode");
    EXPECT_DOUBLE_EQ(*dec.ratios[0].median, 0.5);
    EXPECT_EQ(dec.ratios[0].verdict, "slower");

    const auto& ttft = row(r, "ttft");
    EXPECT_EQ(ttft.metric, "ttft_ms");
    EXPECT_FALSE(ttft.higher_is_better);
    EXPECT_DOUBLE_EQ(*ttft.sides[0].median, 40.0);
    EXPECT_DOUBLE_EQ(*ttft.ratios[0].median, 2.0);
    EXPECT_EQ(ttft.ratios[0].verdict, "slower");

    // A faster TTFT (B half of A) is "faster" although its ratio is below 1.
    const json c = doc("h", json::array({test(config(), 1, 1, 0.5)}));
    EXPECT_EQ(row(compare_documents(inputs({a, c})), "ttft").ratios[0].verdict, "faster");
}

TEST(Compare, IntervalIsTheSeededBootstrapOfTheRawSamples) {
    const json a = doc("h", json::array({test(config())}));
    const json b = doc("h", json::array({test(config(), 1.01, 1, 1)}));
    CompareOptions o;
    o.resamples = 3000;
    o.seed = 9;
    const CompareResult r = compare_documents(inputs({a, b}), o);
    const auto& pre = row(r, "prefill");
    std::vector<double> va(kPrefill), vb;
    for (double x : kPrefill)
        vb.push_back(x * 1.01);
    const RatioCi want = ratio_of_medians(vb, va, 3000, 9);
    EXPECT_EQ(*pre.ratios[0].ci_low, want.lo);
    EXPECT_EQ(*pre.ratios[0].ci_high, want.hi);
    // Reproducible: the same inputs give the same document.
    const CompareResult again = compare_documents(inputs({a, b}), o);
    json j1 = to_json(r), j2 = to_json(again);
    j1.erase("created_at");
    j2.erase("created_at");
    EXPECT_EQ(j1, j2);
}

TEST(Compare, ConstantSamplesGiveAPointInterval) {
    json ta = test(config()), tb = test(config());
    ta["prefill"]["tokens_per_s"] = {100, 100, 100};
    tb["prefill"]["tokens_per_s"] = {150, 150, 150};
    const CompareResult r =
        compare_documents(inputs({doc("h", json::array({ta})), doc("h", json::array({tb}))}));
    const auto& pre = row(r, "prefill");
    EXPECT_DOUBLE_EQ(*pre.ratios[0].ci_low, 1.5);
    EXPECT_DOUBLE_EQ(*pre.ratios[0].ci_high, 1.5);
    EXPECT_EQ(pre.ratios[0].verdict, "faster");
    EXPECT_EQ(pre.sides[0].cv, 0.0);
}

TEST(Compare, DifferentThreadsAreMatchedAndListedAsDiffering) {
    const json a = doc("host-a", json::array({test(config(2))}));
    const json b = doc("host-b", json::array({test(config(1), 0.6, 0.7, 1.5)}));
    const CompareResult r = compare_documents(inputs({a, b}));
    ASSERT_EQ(r.rows.size(), 3u);
    const auto& pre = row(r, "prefill");
    EXPECT_EQ(pre.test, "pp32+tg8");
    EXPECT_EQ(pre.differs["n_threads"], json({2, 1}));
    EXPECT_EQ(pre.differs["host"], json({"host-a", "host-b"}));
    EXPECT_FALSE(pre.differs.contains("devices"));
    EXPECT_FALSE(pre.differs.contains("cpu"));
    EXPECT_EQ(pre.ratios[0].verdict, "slower");
    EXPECT_EQ(r.inputs[1].host, "host-b");
    EXPECT_TRUE(r.unmatched.empty());
}

TEST(Compare, ThreadsJoinTheKeyWhenTheyVaryWithinADocument) {
    // A swept -t 1,2; B measured -t 2 only: B matches A's -t 2 test, A's -t 1 is unmatched.
    const json a = doc("h", json::array({test(config(1), 0.5), test(config(2))}));
    const json b = doc("h", json::array({test(config(2), 1.0)}));
    const CompareResult r = compare_documents(inputs({a, b}));
    ASSERT_EQ(r.rows.size(), 3u);
    EXPECT_NE(r.rows[0].key.find("n_threads=2"), std::string::npos) << r.rows[0].key;
    EXPECT_DOUBLE_EQ(*row(r, "prefill").ratios[0].median, 1.0);
    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].label, "A");
    // The swept field names the row, so rows of one workload can be told apart.
    EXPECT_EQ(r.unmatched[0].test, "pp32+tg8 [n_threads=1]");
    EXPECT_EQ(r.rows[0].test, "pp32+tg8 [n_threads=2]");
    ASSERT_FALSE(r.notes.empty());
    EXPECT_NE(r.notes.back().find("n_threads"), std::string::npos);
}

TEST(Compare, OtherWorkloadsAreUnmatched) {
    const json a = doc("h", json::array({test(config(2, "CPU", 32))}));
    const json b = doc("h", json::array({test(config(2, "CPU", 32)), test(config(2, "CPU", 64))}));
    const CompareResult r = compare_documents(inputs({a, b}));
    EXPECT_EQ(r.rows.size(), 3u);
    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].label, "B");
    EXPECT_EQ(r.unmatched[0].test, "pp64+tg8");
}

TEST(Compare, ThreeInputsGiveTwoRatiosAgainstTheBaseline) {
    const json a = doc("h", json::array({test(config())}));
    const json b = doc("h", json::array({test(config(), 2)}));
    const json c = doc("h", json::array({test(config(), 0.5)}));
    auto in = inputs({a, b, c});
    in[0].label = "cpu";
    const CompareResult r = compare_documents(in);
    const auto& pre = row(r, "prefill");
    ASSERT_EQ(pre.sides.size(), 3u);
    ASSERT_EQ(pre.ratios.size(), 2u);
    EXPECT_EQ(pre.ratios[0].label, "B/cpu");
    EXPECT_EQ(pre.ratios[1].label, "C/cpu");
    EXPECT_DOUBLE_EQ(*pre.ratios[0].median, 2.0);
    EXPECT_DOUBLE_EQ(*pre.ratios[1].median, 0.5);
}

TEST(Compare, CvMoreThanTwiceTheOthersIsNoted) {
    json noisy = test(config());
    noisy["decode"]["tokens_per_s"] = {80, 120, 95, 110, 100, 70, 125};
    const json a = doc("h", json::array({test(config())}));
    const CompareResult r = compare_documents(inputs({a, doc("h", json::array({noisy}))}));
    const auto& dec = row(r, "decode");
    ASSERT_TRUE(dec.sides[0].cv && dec.sides[1].cv);
    EXPECT_GT(*dec.sides[1].cv, 2 * *dec.sides[0].cv);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("pp32+tg8 decode: B's CV"), std::string::npos) << r.notes[0];
    EXPECT_NE(r.notes[0].find("more than 2x A's"), std::string::npos) << r.notes[0];
}

TEST(Compare, MissingAndSingleSamplesHaveNoInterval) {
    json failed = test(config());
    failed["status"] = "failed";
    failed["error"] = "out of memory";
    failed["decode"] = nullptr;
    failed["ttft_ns"] = json::array();
    failed["prefill"]["tokens_per_s"] = {990};
    const json a = doc("h", json::array({test(config())}));
    const CompareResult r = compare_documents(inputs({a, doc("h", json::array({failed}))}));
    EXPECT_EQ(row(r, "prefill").ratios[0].verdict, "too few samples");
    EXPECT_DOUBLE_EQ(*row(r, "prefill").ratios[0].median, 0.99);
    EXPECT_FALSE(row(r, "prefill").ratios[0].ci_low);
    const auto& dec = row(r, "decode");
    EXPECT_EQ(dec.sides[1].n, 0u);
    EXPECT_FALSE(dec.sides[1].median);
    EXPECT_EQ(dec.ratios[0].verdict, "no data");
    EXPECT_FALSE(dec.ratios[0].median);
    bool noted = false;
    for (const auto& n : r.notes)
        noted = noted || n.find("B's pp32+tg8 is failed: out of memory") != std::string::npos;
    EXPECT_TRUE(noted);
}

// A sustained document as compare reads it: one test per round, and the baseline phase's rounds.
json sustained_doc(const std::string& host, const std::vector<double>& decode_tps) {
    json tests = json::array(), rounds = json::array();
    for (size_t i = 0; i < decode_tps.size(); ++i) {
        tests.push_back(test(config()));
        rounds.push_back({{"round", i + 1},
                          {"status", "ok"},
                          {"prefill_tps", 1000.0},
                          {"decode_tps", decode_tps[i]},
                          {"ttft_ms", 40.0}});
    }
    json d = doc(host, tests);
    d["command"] = "sustained";
    d["sustained"] = {{"phases", {{{"name", "baseline"}, {"rounds", rounds}}}}};
    return d;
}

TEST(Compare, SustainedRoundsAreTheSamplesSoCvIsAcrossRounds) {
    // A phone that throttles (50 -> 30 tok/s) against a board that holds 40 tok/s.
    const json phone = sustained_doc("phone", {50, 48, 45, 35, 31, 30, 30, 30});
    const json board = sustained_doc("board", {40, 40.5, 39.5, 40, 40.2, 39.8, 40, 40.1});
    const CompareResult r = compare_documents(inputs({phone, board}));
    const CompareRow& dec = row(r, "decode");
    EXPECT_EQ(dec.test, "pp32+tg8 rounds");
    ASSERT_EQ(dec.sides.size(), 2u);
    EXPECT_EQ(dec.sides[0].n, 8);
    EXPECT_GT(*dec.sides[0].cv, 10 * *dec.sides[1].cv);  // the variation itself differs
    EXPECT_NEAR(*dec.ratios[0].median, 40.0 / 33.0, 0.01);
    bool pooled = false, cv_note = false;
    for (const auto& n : r.notes) {
        pooled =
            pooled || n.find("rounds without background load are the samples") != std::string::npos;
        cv_note = cv_note || n.find("CV") != std::string::npos;
    }
    EXPECT_TRUE(pooled);
    EXPECT_TRUE(cv_note);
}

TEST(Compare, BadInputsAreErrors) {
    const json a = doc("h", json::array({test(config())}));
    EXPECT_EQ(kind_of([&] { compare_documents(inputs({a})); }), ErrorKind::usage);
    auto dup = inputs({a, a});
    dup[1].label = "A";
    EXPECT_EQ(kind_of([&] { compare_documents(dup); }), ErrorKind::usage);
    json sustained = {{"command", "sustained"}, {"tests", json::array()}};
    std::string msg;
    EXPECT_EQ(kind_of([&] { compare_documents(inputs({a, sustained})); }, &msg), ErrorKind::input);
    EXPECT_NE(msg.find("B (doc1.json)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sustained"), std::string::npos) << msg;
    // Rounds without a baseline phase to pool.
    json rounds = doc("h", json::array({test(config()), test(config())}));
    rounds["command"] = "sustained";
    EXPECT_EQ(kind_of([&] { compare_documents(inputs({rounds, a})); }, &msg), ErrorKind::input);
    EXPECT_NE(msg.find("A (doc0.json): the `sustained` document has no baseline rounds"),
              std::string::npos)
        << msg;
    EXPECT_EQ(kind_of(
                  [&] {
                      compare_documents(inputs({json{{"x", 1}}, a}));
                  },
                  &msg),
              ErrorKind::input);
    EXPECT_NE(msg.find("not a stagebench result document"), std::string::npos) << msg;
    EXPECT_EQ(kind_of([&] { compare_documents(inputs({a, json::array()})); }), ErrorKind::input);
}

TEST(Compare, DocumentHasTheAgreedShape) {
    const json a = doc("host-a", json::array({test(config(2))}));
    const json b = doc("host-b", json::array({test(config(1)), test(config(1, "CPU", 64))}));
    CompareOptions o;
    o.tool_version = "9.9.9";
    const json j = to_json(compare_documents(inputs({a, b}), o));
    auto keys = [](const json& x) {
        std::set<std::string> k;
        for (const auto& [key, v] : x.items())
            k.insert(key);
        return k;
    };
    EXPECT_EQ(keys(j),
              (std::set<std::string>{"command", "compare_schema_version", "tool_version",
                                     "created_at", "inputs", "rows", "unmatched", "notes"}));
    EXPECT_EQ(j["command"], "compare");
    EXPECT_EQ(j["compare_schema_version"], 1);
    EXPECT_EQ(j["tool_version"], "9.9.9");
    EXPECT_EQ(keys(j["inputs"][0]),
              (std::set<std::string>{"label", "source", "command", "host", "cpu", "started_at"}));
    EXPECT_EQ(j["inputs"][1]["source"], "doc1.json");
    const json& r = j["rows"][0];
    EXPECT_EQ(keys(r), (std::set<std::string>{"test", "key", "stage", "metric", "higher_is_better",
                                              "differs", "sides", "ratios"}));
    EXPECT_EQ(r["differs"]["n_threads"], json({2, 1}));
    EXPECT_EQ(keys(r["sides"][0]), (std::set<std::string>{"label", "median", "cv", "n"}));
    EXPECT_EQ(keys(r["ratios"][0]),
              (std::set<std::string>{"label", "median", "ci_low", "ci_high", "verdict"}));
    EXPECT_EQ(j["unmatched"], json::parse(R"([{"label": "B", "test": "pp64+tg8"}])"));
    EXPECT_TRUE(j["notes"].is_array());
}

}  // namespace
}  // namespace sb
