#include "analysis/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
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

// Nanoseconds are integers in a result document.
json scaled_ns(const std::vector<double>& v, double k) {
    json out = json::array();
    for (double x : v)
        out.push_back(std::llround(x * k));
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
                {"ttft_ns", scaled_ns(kTtftNs, ttft_k)}};
}

json doc(const std::string& host, json tests) {
    return json{{"schema", "stagebench.result"},
                {"command", "run"},
                {"started_at", "2026-11-29T10:00:00Z"},
                {"system", {{"hostname", host}, {"cpu_model", "Cortex-X4"}}},
                {"tests", std::move(tests)}};
}

// The inputs as compare gets them: each document read typed, as a file or the store gives it.
std::vector<CompareInput> inputs(std::vector<json> docs) {
    std::vector<CompareInput> in;
    auto labels = default_compare_labels(docs.size());
    for (std::size_t i = 0; i < docs.size(); ++i) {
        const std::string source = "doc" + std::to_string(i) + ".json";
        in.push_back({labels[i], source, from_json<ResultDocument>(docs[i], source)});
    }
    return in;
}

// A row's differs as the compare document writes them.
json differs(const CompareRow& row) {
    CompareResult r;
    r.rows = {row};
    return to_json(r)["rows"][0]["differs"];
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

// Each side shows its median's own interval (median_ci over its repetitions), and on the
// tokens/s rows of run documents the stall-robust rate with its CI and the stall count the test
// recorded; other rows have none.
TEST(Compare, SidesCarryTheMediansIntervalAndTheRobustRateWithStalls) {
    json a = test(config());
    a["decode"]["robust"] = {{"tokens_per_s", 3132.5}, {"ci95_lo", 3100.0}, {"ci95_hi", 3150.0}};
    a["decode"]["stalls"] = {{"tokens", {{"n", 56}, {"indices", {3, 17, 40}}}},
                             {"repetitions", {{"n", 7}, {"indices", json::array()}}}};
    a["prefill"]["robust"] = {{"tokens_per_s", 1000.0}, {"ci95_lo", 995.0}, {"ci95_hi", 1005.0}};
    a["prefill"]["stalls"] = {{"repetitions", {{"n", 7}, {"indices", {2}}}}};
    const json b = test(config(), 1.0, 2.0);
    const CompareResult r = compare_documents(inputs({doc("a", {a}), doc("b", {b})}));
    const CompareRow* dec = nullptr;
    for (const auto& row : r.rows)
        if (row.stage == "decode" && row.metric == "tokens_per_s")
            dec = &row;
    ASSERT_TRUE(dec);
    const MedianCi want = median_ci(kDecode, {}, kSummaryResamples, 42);
    EXPECT_EQ(dec->sides[0].median, want.median);
    EXPECT_EQ(dec->sides[0].median_ci_low, want.ci95_lo);
    EXPECT_EQ(dec->sides[0].median_ci_high, want.ci95_hi);
    ASSERT_TRUE(dec->sides[0].robust);
    const CompareRobust& rb = *dec->sides[0].robust;
    EXPECT_EQ(rb.tokens_per_s, 3132.5);
    EXPECT_EQ(rb.ci_low, 3100.0);
    EXPECT_EQ(rb.ci_high, 3150.0);
    EXPECT_EQ(rb.stalls, 3u);
    EXPECT_EQ(rb.of, 56u);
    EXPECT_EQ(rb.unit, "tokens");
    // B recorded no robust rate: the side has the record with nulls, its stalls 0 of 0.
    ASSERT_TRUE(dec->sides[1].robust);
    EXPECT_FALSE(dec->sides[1].robust->tokens_per_s);
    for (const auto& row : r.rows) {
        if (row.metric == "tokens_per_s" && row.stage == "prefill") {
            ASSERT_TRUE(row.sides[0].robust);
            EXPECT_EQ(row.sides[0].robust->unit, "reps");
            EXPECT_EQ(row.sides[0].robust->of, 7u);
            EXPECT_EQ(row.sides[0].robust->stalls, 1u);
        }
        if (row.stage == "ttft") {
            EXPECT_FALSE(row.sides[0].robust);
        }
    }
    EXPECT_EQ(from_json<CompareResult>(to_json(r), "'c.json'"), r);
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
    EXPECT_EQ(differs(pre)["n_threads"], json({2, 1}));
    EXPECT_EQ(differs(pre)["host"], json({"host-a", "host-b"}));
    EXPECT_FALSE(differs(pre).contains("devices"));
    EXPECT_FALSE(differs(pre).contains("cpu"));
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
    EXPECT_EQ(r.unmatched[0].why, "-p 64 only in B (A: -p 32)");
}

json with_ngl(json cfg, int ngl) {
    cfg["n_gpu_layers"] = ngl;
    return cfg;
}

TEST(Compare, AnOffloadLevelOnlyOneSideHasIsNamedWithWhy) {
    // A swept -ngl 0 and 99; B only -ngl 0 and 33: -ngl joins the key, each side keeps one
    // level the other lacks, and each is named with what the other has.
    const json a =
        doc("h", json::array({test(with_ngl(config(), 0)), test(with_ngl(config(), 99))}));
    const json b =
        doc("h", json::array({test(with_ngl(config(), 0)), test(with_ngl(config(), 33))}));
    CompareResult r = compare_documents(inputs({a, b}));
    EXPECT_EQ(r.rows.size(), 3u);  // -ngl 0 met -ngl 0
    EXPECT_EQ(r.rows[0].test, "pp32+tg8 [n_gpu_layers=0]");
    ASSERT_EQ(r.unmatched.size(), 2u);
    EXPECT_EQ(r.unmatched[0], (CompareUnmatched{"A", "pp32+tg8 [n_gpu_layers=99]",
                                                "-ngl 99 only in A (B: -ngl 0, 33)"}));
    EXPECT_EQ(r.unmatched[1], (CompareUnmatched{"B", "pp32+tg8 [n_gpu_layers=33]",
                                                "-ngl 33 only in B (A: -ngl 0, 99)"}));

    // Three inputs: a baseline test another input lacks is a note with the reason; a test of a
    // non-baseline input is "not in" the baseline (C may have it).
    const json c =
        doc("h", json::array({test(with_ngl(config(), 0)), test(with_ngl(config(), 99))}));
    r = compare_documents(inputs({a, b, c}));
    bool noted = false;
    for (const auto& n : r.notes)
        noted = noted || n == "B has no test matching A's pp32+tg8 [n_gpu_layers=99]: -ngl 99 "
                              "not in B (B: -ngl 0, 33)";
    EXPECT_TRUE(noted);
    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].why, "-ngl 33 not in A (A: -ngl 0, 99)");

    // Every value is on the other side, but not together: the combination is named.
    const json d =
        doc("h", json::array({test(with_ngl(config(2), 0)), test(with_ngl(config(4), 99))}));
    const json e =
        doc("h", json::array({test(with_ngl(config(2), 99)), test(with_ngl(config(4), 0))}));
    r = compare_documents(inputs({d, e}));
    ASSERT_EQ(r.unmatched.size(), 4u);
    EXPECT_EQ(r.unmatched[0].why, "this combination (-t 2, -ngl 0) only in A");

    // One configuration twice in B, once in A: the second is the one left.
    const json twice = doc("h", json::array({test(config()), test(config())}));
    r = compare_documents(inputs({doc("h", json::array({test(config())})), twice}));
    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0],
              (CompareUnmatched{"B", "pp32+tg8 #2", "#2 of an identical configuration: A has 1"}));
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

// Per-repetition stage telemetry as `run` records it (telemetry.<stage>[i].total): jpt[i] J per
// token over `tokens` tokens lasting `seconds`; net of an idle baseline of idle_jpt J per token
// when there is one.
json stage_telemetry(const std::vector<double>& jpt, int tokens, double seconds,
                     std::optional<double> idle_jpt, const std::string& meter) {
    json arr = json::array();
    for (double x : jpt) {
        const json net = idle_jpt ? json(x - *idle_jpt) : json(nullptr);
        arr.push_back({{"duration_ns", std::llround(seconds * 1e9)},
                       {"tokens", tokens},
                       {"total",
                        {{"metric", meter},
                         {"energy_j", x * tokens},
                         {"net_energy_j", idle_jpt ? json((x - *idle_jpt) * tokens) : json()},
                         {"j_per_token", x},
                         {"net_j_per_token", net}}}});
    }
    return arr;
}

const std::vector<double> kPrefillJpt = {0.0050,  0.0051,  0.0049, 0.00505,
                                         0.00495, 0.00502, 0.00498};
const std::vector<double> kDecodeJpt = {0.050, 0.051, 0.049, 0.0505, 0.0495, 0.0502, 0.0498};

// A test with energy k times the reference, each stage lasting 0.1 s.
json with_energy(json t, double k, std::optional<double> idle_jpt = 0.001,
                 const std::string& meter = "rapl.psys.energy_uj") {
    std::vector<double> pre, dec;
    for (double x : kPrefillJpt)
        pre.push_back(x * k);
    for (double x : kDecodeJpt)
        dec.push_back(x * k);
    t["telemetry"] = {{"prefill", stage_telemetry(pre, 32, 0.1, idle_jpt, meter)},
                      {"decode", stage_telemetry(dec, 8, 0.1, idle_jpt, meter)},
                      {"summary", json::object()}};
    return t;
}

const CompareRow* find_row(const CompareResult& r, const std::string& stage,
                           const std::string& metric) {
    for (const auto& x : r.rows)
        if (x.stage == stage && x.metric == metric)
            return &x;
    return nullptr;
}

// A sustained document as compare reads it: one test per round, and the baseline phase's rounds.
json sustained_doc(const std::string& host, const std::vector<double>& decode_tps,
                   const std::vector<double>& decode_jpt = {}) {
    json tests = json::array(), rounds = json::array();
    for (size_t i = 0; i < decode_tps.size(); ++i) {
        tests.push_back(test(config()));
        if (i < decode_jpt.size())
            tests.back()["telemetry"] = {
                {"decode", stage_telemetry({decode_jpt[i]}, 8, 0.1, 0.001, "rapl.psys.energy_uj")}};
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

TEST(Compare, SustainedRoundsPoolTheirEnergyAndLeaveTheLoadedPhaseOut) {
    // Phone: 4 rounds at 0.05 J/token; board: 4 at 0.04. The board's document also has a loaded
    // phase before the unloaded one is found (an odd order, but the rounds' tests follow the
    // phases), whose energy must not be pooled.
    const json phone = sustained_doc("phone", {50, 48, 45, 44}, {0.05, 0.051, 0.049, 0.05});
    json board = sustained_doc("board", {40, 40, 40, 40, 40, 40}, {9, 9, 0.04, 0.041, 0.039, 0.04});
    json& phases = board["sustained"]["phases"];
    json base_rounds = phases[0]["rounds"];
    phases = json::array({{{"name", "loaded"},
                           {"background", "cpu:2"},
                           {"rounds", json::array({base_rounds[0], base_rounds[1]})}},
                          {{"name", "rounds"},
                           {"background", ""},
                           {"rounds", json::array({base_rounds[2], base_rounds[3], base_rounds[4],
                                                   base_rounds[5]})}}});
    const CompareResult r = compare_documents(inputs({phone, board}));
    const CompareRow* dec = find_row(r, "decode", "j_per_token");
    ASSERT_TRUE(dec);
    EXPECT_EQ(dec->test, "pp32+tg8 rounds");
    EXPECT_EQ(dec->sides[0].n, 4u);
    EXPECT_EQ(dec->sides[1].n, 4u);
    EXPECT_NEAR(*dec->sides[1].median, 0.04, 1e-12);
    EXPECT_NEAR(*dec->ratios[0].median, 0.8, 1e-12);
    EXPECT_TRUE(dec->ratios[0].ci_low);
    EXPECT_TRUE(find_row(r, "decode", "net_j_per_token"));
}

TEST(Compare, SustainedRoundsCompareE2ECombinedTokensAndDrain) {
    // Each round's request as the study tables it, and its battery drain (% and %/h).
    auto with_requests = [](json d, double e2e_k, double drain_k) {
        const std::vector<double> e2e = {1.00, 1.02, 0.98, 1.01, 0.99};
        for (std::size_t i = 0; i < e2e.size(); ++i) {
            json& r = d["sustained"]["phases"][0]["rounds"][i];
            r["e2e_s"] = e2e[i] * e2e_k;
            r["combined_tps"] = 40 / (e2e[i] * e2e_k);
            r["battery"] = {{"battery", "battery.battery"},
                            {"span_s", e2e[i] * e2e_k},
                            {"from", "charge_counter"},
                            {"drain_pct", 0.01 * drain_k * (1 + 0.01 * i)},
                            {"drain_pct_per_h", 36 * drain_k * (1 + 0.01 * i)}};
        }
        return d;
    };
    const json phone = with_requests(sustained_doc("phone", {50, 48, 45, 44, 44}), 1, 1);
    const json board = with_requests(sustained_doc("board", {40, 40, 40, 40, 40}), 2, 0.5);
    CompareOptions o;
    o.resamples = 2000;
    o.seed = 3;
    const CompareResult r = compare_documents(inputs({phone, board}), o);
    const CompareRow* e2e = find_row(r, "request", "e2e_s");
    const CompareRow* comb = find_row(r, "request", "combined_tps");
    const CompareRow* drain = find_row(r, "battery", "drain_pct_per_h");
    ASSERT_TRUE(e2e && comb && drain);
    EXPECT_EQ(e2e->sides[0].n, 5u);
    EXPECT_DOUBLE_EQ(*e2e->sides[0].median, 1.00);
    EXPECT_NEAR(*e2e->ratios[0].median, 2.0, 1e-12);
    EXPECT_EQ(e2e->ratios[0].verdict, "slower");  // a longer E2E
    EXPECT_NEAR(*comb->ratios[0].median, 0.5, 1e-12);
    EXPECT_EQ(comb->ratios[0].verdict, "slower");
    std::vector<double> pa, pb;
    for (int i = 0; i < 5; ++i) {
        pa.push_back(36 * (1 + 0.01 * i));
        pb.push_back(18 * (1 + 0.01 * i));
    }
    const RatioCi ci = ratio_of_medians(pb, pa, 2000, 3);
    EXPECT_NEAR(*drain->ratios[0].median, 0.5, 1e-12);
    EXPECT_EQ(*drain->ratios[0].ci_low, ci.lo);
    EXPECT_EQ(*drain->ratios[0].ci_high, ci.hi);
    EXPECT_EQ(drain->ratios[0].verdict, "less drain");
    ASSERT_TRUE(find_row(r, "battery", "drain_pct"));
    // A run document has no request rows: nothing is compared as zero.
    const CompareResult runs = compare_documents(
        inputs({doc("h", json::array({test(config())})), doc("h", json::array({test(config())}))}));
    EXPECT_FALSE(find_row(runs, "request", "e2e_s"));
}

TEST(Compare, BadInputsAreErrors) {
    const json a = doc("h", json::array({test(config())}));
    EXPECT_EQ(kind_of([&] { compare_documents(inputs({a})); }), ErrorKind::usage);
    auto dup = inputs({a, a});
    dup[1].label = "A";
    EXPECT_EQ(kind_of([&] { compare_documents(dup); }), ErrorKind::usage);
    json sustained = {
        {"schema", "stagebench.result"}, {"command", "sustained"}, {"tests", json::array()}};
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
    // A document of the wrong shape never gets here: it is refused where it is read
    // (compare_inputs_test.cpp).
    CompareOptions o;
    o.match = {"nonsense"};
    EXPECT_EQ(kind_of([&] { compare_documents(inputs({a, a}), o); }), ErrorKind::usage);
}

TEST(Compare, EnergyPerTokenNetAndGrossAndPowerHaveTheSameIntervals) {
    const json a = doc("h", json::array({with_energy(test(config()), 1.0)}));
    const json b = doc("h", json::array({with_energy(test(config()), 0.8)}));
    CompareOptions o;
    o.resamples = 3000;
    o.seed = 7;
    const CompareResult r = compare_documents(inputs({a, b}), o);
    // prefill, decode, TTFT; then per stage J, J/token, net J/token and mean power.
    ASSERT_EQ(r.rows.size(), 11u);
    const CompareRow* dec = find_row(r, "decode", "j_per_token");
    ASSERT_TRUE(dec);
    EXPECT_FALSE(dec->higher_is_better);
    EXPECT_DOUBLE_EQ(*dec->sides[0].median, 0.05);
    EXPECT_EQ(dec->sides[1].n, 7u);
    EXPECT_NEAR(*dec->ratios[0].median, 0.8, 1e-12);
    std::vector<double> va(kDecodeJpt), vb;
    for (double x : kDecodeJpt)
        vb.push_back(x * 0.8);
    const RatioCi want = ratio_of_medians(vb, va, 3000, 7);
    EXPECT_EQ(*dec->ratios[0].ci_low, want.lo);
    EXPECT_EQ(*dec->ratios[0].ci_high, want.hi);
    EXPECT_EQ(dec->ratios[0].verdict, "less energy");
    EXPECT_TRUE(dec->differs.empty()) << differs(*dec);

    // Net of the idle baseline (0.001 J/token here): its own samples, its own ratio.
    const CompareRow* net = find_row(r, "decode", "net_j_per_token");
    ASSERT_TRUE(net);
    EXPECT_NEAR(*net->sides[0].median, 0.049, 1e-12);
    EXPECT_NEAR(*net->sides[1].median, 0.039, 1e-12);
    EXPECT_NEAR(*net->ratios[0].median, 0.039 / 0.049, 1e-12);
    EXPECT_EQ(net->ratios[0].verdict, "less energy");

    // Mean power over the stage: energy / duration, in mW (8 tokens x 0.05 J in 0.1 s = 4 W).
    const CompareRow* pw = find_row(r, "decode", "mean_power_mw");
    ASSERT_TRUE(pw);
    EXPECT_NEAR(*pw->sides[0].median, 4000, 1e-9);
    EXPECT_NEAR(*pw->ratios[0].median, 0.8, 1e-12);
    EXPECT_EQ(pw->ratios[0].verdict, "lower power");
    ASSERT_TRUE(find_row(r, "prefill", "j_per_token"));
    EXPECT_NEAR(*find_row(r, "prefill", "j_per_token")->ratios[0].median, 0.8, 1e-12);

    // The stage's energy in J (8 tokens x J/token): its own samples and interval.
    const CompareRow* joules = find_row(r, "decode", "energy_j");
    ASSERT_TRUE(joules);
    EXPECT_NEAR(*joules->sides[0].median, 0.4, 1e-12);
    EXPECT_NEAR(*joules->sides[1].median, 0.32, 1e-12);
    std::vector<double> ja, jb;
    for (double x : kDecodeJpt) {
        ja.push_back(x * 8);
        jb.push_back(x * 0.8 * 8);
    }
    const RatioCi want_j = ratio_of_medians(jb, ja, 3000, 7);
    EXPECT_EQ(*joules->ratios[0].ci_low, want_j.lo);
    EXPECT_EQ(*joules->ratios[0].ci_high, want_j.hi);
    EXPECT_EQ(joules->ratios[0].verdict, "less energy");

    // More energy is worded so.
    const CompareResult back = compare_documents(inputs({b, a}), o);
    EXPECT_EQ(find_row(back, "decode", "j_per_token")->ratios[0].verdict, "more energy");
    // Different meters on the two sides are listed with the row.
    const json c = doc(
        "h",
        json::array({with_energy(test(config()), 0.8, 0.001, "hwmon.ina3221.VDD_IN.power_mw")}));
    const CompareResult meters = compare_documents(inputs({a, c}), o);
    const CompareRow* m = find_row(meters, "decode", "j_per_token");
    ASSERT_TRUE(m);
    EXPECT_EQ(differs(*m)["energy_meter"],
              json({"rapl.psys.energy_uj", "hwmon.ina3221.VDD_IN.power_mw"}));
}

TEST(Compare, EnergyMissingOnASideIsNotCompared) {
    const json a = doc("h", json::array({with_energy(test(config()), 1.0)}));
    const json none = doc("h", json::array({test(config())}));
    CompareResult r = compare_documents(inputs({a, none}));
    EXPECT_EQ(r.rows.size(), 3u);  // tokens/s and TTFT only: missing is not zero
    bool noted = false;
    for (const auto& n : r.notes)
        noted = noted || n.find("B's pp32+tg8 has no energy readings") != std::string::npos;
    EXPECT_TRUE(noted);
    r = compare_documents(inputs({none, a}));
    EXPECT_EQ(r.rows.size(), 3u);

    // Without an idle baseline on one side: gross energy and power, no net rows.
    const json no_idle = doc("h", json::array({with_energy(test(config()), 0.9, std::nullopt)}));
    r = compare_documents(inputs({a, no_idle}));
    EXPECT_TRUE(find_row(r, "decode", "j_per_token"));
    EXPECT_TRUE(find_row(r, "decode", "mean_power_mw"));
    EXPECT_FALSE(find_row(r, "decode", "net_j_per_token"));
    noted = false;
    for (const auto& n : r.notes)
        noted = noted || n.find("B's pp32+tg8 has no idle baseline") != std::string::npos;
    EXPECT_TRUE(noted);

    // Three inputs: the row stands for the two that have readings; the third has n = 0.
    r = compare_documents(
        inputs({a, none, doc("h", json::array({with_energy(test(config()), 2)}))}));
    const CompareRow* dec = find_row(r, "decode", "j_per_token");
    ASSERT_TRUE(dec);
    EXPECT_EQ(dec->sides[1].n, 0u);
    EXPECT_EQ(dec->ratios[0].verdict, "no data");
    EXPECT_NEAR(*dec->ratios[1].median, 2.0, 1e-12);

    // A net energy at or below the idle baseline has no ratio.
    const json idle_eats_all = doc("h", json::array({with_energy(test(config()), 1.0, 0.06)}));
    r = compare_documents(inputs({a, idle_eats_all}));
    ASSERT_TRUE(find_row(r, "decode", "net_j_per_token"));
    EXPECT_EQ(find_row(r, "decode", "net_j_per_token")->ratios[0].verdict, "no data");
}

const std::vector<double> kDrainUah = {480, 490, 470, 485, 475, 482, 478};  // per repetition

// A test whose battery (charge_full 4800000 µAh) loses kDrainUah[i] × k µAh of its charge
// counter over repetition i: its prefill window [i s, i s + 0.1 s], its decode window the next
// 0.1 s, half the charge in each. from: the drain's source the test names.
json with_battery(json t, double k, const std::string& from = "charge_counter") {
    if (!t.contains("telemetry"))
        t["telemetry"] = {{"summary", json::object()}};
    json& tel = t["telemetry"];
    double charge = 3'000'000;
    for (std::size_t i = 0; i < kDrainUah.size(); ++i) {
        const int64_t begin = static_cast<int64_t>(i) * 1'000'000'000;
        const double half = kDrainUah[i] * k / 2;
        for (const char* stage : {"prefill", "decode"}) {
            const bool pre = std::string(stage) == "prefill";
            json& w = tel[stage][i];
            w["begin_ns"] = begin + (pre ? 0 : 100'000'000);
            w["end_ns"] = begin + (pre ? 100'000'000 : 200'000'000);
            w["duration_ns"] = 100'000'000;
            json gauges = json::array();
            if (from == "capacity") {
                gauges.push_back({{"metric", "battery.battery.capacity_pct"},
                                  {"unit", "%"},
                                  {"start", 80 - static_cast<double>(i)},
                                  {"end", 80 - static_cast<double>(i) - (pre ? 0 : 1)}});
            } else {
                gauges.push_back({{"metric", "battery.battery.charge_counter_uah"},
                                  {"unit", "uAh"},
                                  {"start", charge},
                                  {"end", charge - half}});
                gauges.push_back({{"metric", "battery.battery.charge_full_uah"},
                                  {"unit", "uAh"},
                                  {"start", 4'800'000},
                                  {"end", 4'800'000}});
            }
            w["gauges"] = gauges;
            charge -= half;
        }
    }
    tel["battery"] = {{"battery", "battery.battery"}, {"from", from}};
    return t;
}

TEST(Compare, BatteryDrainPerRepetitionWithRatioAndInterval) {
    const json a = doc("h", json::array({with_battery(test(config()), 1.0)}));
    const json b = doc("h", json::array({with_battery(test(config()), 1.5)}));
    CompareOptions o;
    o.resamples = 3000;
    o.seed = 7;
    const CompareResult r = compare_documents(inputs({a, b}), o);
    const CompareRow* pct = find_row(r, "battery", "drain_pct");
    const CompareRow* per_h = find_row(r, "battery", "drain_pct_per_h");
    ASSERT_TRUE(pct && per_h);
    // Repetition i drains kDrainUah[i] of 4800000 µAh in 0.2 s; the median is 480 µAh.
    EXPECT_NEAR(*pct->sides[0].median, 0.01, 1e-12);
    EXPECT_NEAR(*per_h->sides[0].median, 0.01 / 0.2 * 3600, 1e-9);
    EXPECT_NEAR(*per_h->sides[1].median, 1.5 * 180, 1e-9);
    EXPECT_EQ(per_h->sides[0].n, 7u);
    std::vector<double> va, vb;
    for (double x : kDrainUah) {
        va.push_back(x / 4.8e6 * 100 / 0.2 * 3600);
        vb.push_back(x * 1.5 / 4.8e6 * 100 / 0.2 * 3600);
    }
    const RatioCi want = ratio_of_medians(vb, va, 3000, 7);
    EXPECT_NEAR(*per_h->ratios[0].median, 1.5, 1e-12);
    EXPECT_NEAR(*per_h->ratios[0].ci_low, want.lo, 1e-12);
    EXPECT_NEAR(*per_h->ratios[0].ci_high, want.hi, 1e-12);
    EXPECT_EQ(per_h->ratios[0].verdict, "more drain");
    EXPECT_FALSE(per_h->higher_is_better);
    EXPECT_TRUE(per_h->differs.empty()) << differs(*per_h);
    for (const auto& n : r.notes)  // no CV note on a drain
        EXPECT_EQ(n.find("drain"), std::string::npos) << n;

    // The two sides' sources differ: named on the row.
    const json cap = doc("h", json::array({with_battery(test(config()), 1.0, "capacity")}));
    const CompareResult rc = compare_documents(inputs({a, cap}), o);
    const CompareRow* c = find_row(rc, "battery", "drain_pct");
    ASSERT_TRUE(c);
    EXPECT_EQ(differs(*c)["drain_from"], json({"charge_counter", "capacity"}));
    EXPECT_EQ(*c->sides[1].median, 1.0);  // one whole percent per repetition

    // A side without a battery: no row, a note; no battery anywhere: neither.
    const json none = doc("h", json::array({test(config())}));
    const CompareResult rn = compare_documents(inputs({a, none}), o);
    EXPECT_FALSE(find_row(rn, "battery", "drain_pct"));
    bool noted = false;
    for (const auto& n : rn.notes)
        noted = noted || n == "B's pp32+tg8 has no battery drain (no battery, or telemetry off): "
                              "its drain is not compared";
    EXPECT_TRUE(noted);
    const CompareResult r0 = compare_documents(inputs({none, none}), o);
    EXPECT_EQ(r0.rows.size(), 3u);
    EXPECT_TRUE(r0.notes.empty());
}

// A test of an engine behind HTTP (as `run --engine http` writes it) of the model `model`.
json http_test(const std::string& model) {
    json cfg = config();
    cfg["engine"] = "http";
    cfg["devices"] = "HTTP";
    cfg["model_path"] = model;
    return test(cfg, 0.5, 0.9, 1.2);
}

json with_server(json d, const std::string& server) {
    d["engines"] = {{"http", {{"name", "http"}, {"server", server}}}};
    return d;
}

TEST(Compare, MatchAcrossEnginesWhenTheEngineIsLeftOut) {
    const json inproc = doc("h", json::array({test(config())}));
    const json server =
        with_server(doc("h", json::array({http_test("/models/tiny.gguf")})), "llama-server");
    // By default the engine is part of the workload: nothing meets.
    CompareResult r = compare_documents(inputs({inproc, server}));
    EXPECT_TRUE(r.rows.empty());
    EXPECT_EQ(r.unmatched.size(), 2u);

    CompareOptions o;
    o.match = parse_compare_match("m,p,n,d");
    r = compare_documents(inputs({inproc, server}), o);
    ASSERT_EQ(r.rows.size(), 3u);
    EXPECT_TRUE(r.unmatched.empty());
    const auto& pre = row(r, "prefill");
    EXPECT_DOUBLE_EQ(*pre.ratios[0].median, 0.5);
    // The row says what the sides are: engine, the server behind it, the devices.
    EXPECT_EQ(differs(pre)["engine"], json({"llama", "http"}));
    EXPECT_EQ(differs(pre)["server"], json({nullptr, "llama-server"}));
    EXPECT_EQ(differs(pre)["devices"], json({"CPU", "HTTP"}));
    EXPECT_EQ(r.match, (std::vector<std::string>{"model", "n_prompt", "n_gen", "n_depth"}));
    EXPECT_EQ(to_json(r)["match"]["fields"], json({"model", "n_prompt", "n_gen", "n_depth"}));
}

TEST(Compare, AModelAliasMatchesAServersModelNameWithAFile) {
    const json inproc = doc("h", json::array({test(config())}));  // /models/tiny.gguf
    const json ollama = with_server(doc("h", json::array({http_test("tiny:q8")})), "ollama");
    CompareOptions o;
    o.match = parse_compare_match("m,p,n,d");
    EXPECT_TRUE(compare_documents(inputs({inproc, ollama}), o).rows.empty());
    o.model_alias = {{"tiny:q8", "tiny.gguf"}};
    CompareResult r = compare_documents(inputs({inproc, ollama}), o);
    ASSERT_EQ(r.rows.size(), 3u);
    EXPECT_EQ(differs(r.rows[0])["server"], json({nullptr, "ollama"}));
    EXPECT_EQ(differs(r.rows[0])["model_path"], json({"/models/tiny.gguf", "tiny:q8"}));
    EXPECT_NE(r.rows[0].key.find("model=tiny.gguf"), std::string::npos) << r.rows[0].key;
    // An alias may name a whole path too, and both sides may be aliased to a third name.
    o.model_alias = {{"tiny:q8", "tiny"}, {"/models/tiny.gguf", "tiny"}};
    EXPECT_EQ(compare_documents(inputs({inproc, ollama}), o).rows.size(), 3u);
    EXPECT_EQ(to_json(compare_documents(inputs({inproc, ollama}), o))["match"]["model_alias"],
              json({{"/models/tiny.gguf", "tiny"}, {"tiny:q8", "tiny"}}));
}

TEST(Compare, AFieldLeftOutOfTheMatchThatVariesInADocumentStillTellsItsTestsApart) {
    // A ran both engines (run --engine llama,http); B only the server: B meets A's http test.
    const json a = with_server(
        doc("h", json::array({test(config()), http_test("/models/tiny.gguf")})), "llama-server");
    const json b =
        with_server(doc("h", json::array({http_test("/models/tiny.gguf")})), "llama-server");
    CompareOptions o;
    o.match = parse_compare_match("p,n,d");
    const CompareResult r = compare_documents(inputs({a, b}), o);
    ASSERT_EQ(r.rows.size(), 3u);
    EXPECT_EQ(r.rows[0].test, "pp32+tg8 [engine=http, devices=HTTP]");
    EXPECT_DOUBLE_EQ(*row(r, "prefill").ratios[0].median, 1.0);
    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].test, "pp32+tg8 [engine=llama, devices=CPU]");
}

TEST(Compare, MatchAndAliasTextsAreCheckedAsUsage) {
    EXPECT_EQ(parse_compare_match("p,n,d"),
              (std::vector<std::string>{"n_prompt", "n_gen", "n_depth"}));
    EXPECT_EQ(parse_compare_match("model,engine,dev,t,ngl,ub,b,ctk,ctv,fa"),
              (std::vector<std::string>{"model", "engine", "devices", "n_threads", "n_gpu_layers",
                                        "n_ubatch", "n_batch", "type_k", "type_v", "flash_attn"}));
    std::string msg;
    EXPECT_EQ(kind_of([] { parse_compare_match("p,x"); }, &msg), ErrorKind::usage);
    EXPECT_NE(msg.find("'x' is not a configuration field"), std::string::npos) << msg;
    EXPECT_NE(msg.find("n_prompt (p)"), std::string::npos) << msg;
    EXPECT_EQ(kind_of([] { parse_compare_match("p,n_prompt"); }, &msg), ErrorKind::usage);
    EXPECT_NE(msg.find("n_prompt is given twice"), std::string::npos) << msg;
    EXPECT_EQ(kind_of([] { parse_compare_match(""); }), ErrorKind::usage);
    EXPECT_EQ(kind_of([] { parse_compare_match("p,,n"); }), ErrorKind::usage);
    EXPECT_EQ(parse_model_alias("qwen2.5:0.5b=q.gguf"),
              (std::pair<std::string, std::string>{"qwen2.5:0.5b", "q.gguf"}));
    EXPECT_EQ(kind_of([] { parse_model_alias("q.gguf"); }), ErrorKind::usage);
    EXPECT_EQ(kind_of([] { parse_model_alias("=q"); }), ErrorKind::usage);
    EXPECT_EQ(kind_of([] { parse_model_alias("q="); }), ErrorKind::usage);
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
    EXPECT_EQ(keys(j), (std::set<std::string>{"command", "compare_schema_version", "tool_version",
                                              "created_at", "match", "inputs", "rows", "unmatched",
                                              "notes"}));
    EXPECT_EQ(j["match"]["fields"], json(kCompareDefaultMatch));
    EXPECT_EQ(j["match"]["model_alias"], json::object());
    EXPECT_EQ(j["command"], "compare");
    EXPECT_EQ(j["compare_schema_version"], 1);
    EXPECT_EQ(j["tool_version"], "9.9.9");
    EXPECT_EQ(keys(j["inputs"][0]),
              (std::set<std::string>{"label", "source", "command", "host", "cpu", "started_at"}));
    EXPECT_EQ(j["inputs"][1]["source"], "doc1.json");
    const json& r = j["rows"][0];
    EXPECT_EQ(keys(r),
              (std::set<std::string>{"test", "key", "stage", "metric", "higher_is_better",
                                     "differs", "sides", "ratios", "op", "signature", "fused"}));
    EXPECT_TRUE(r["op"].is_null());
    EXPECT_TRUE(r["signature"].is_null());
    EXPECT_EQ(r["differs"]["n_threads"], json({2, 1}));
    EXPECT_EQ(keys(r["sides"][0]),
              (std::set<std::string>{"label", "median", "median_ci_low", "median_ci_high", "cv",
                                     "n", "total", "robust"}));
    EXPECT_TRUE(r["sides"][0]["total"].is_null());
    EXPECT_EQ(keys(r["ratios"][0]),
              (std::set<std::string>{"label", "median", "ci_low", "ci_high", "verdict"}));
    const json unmatched = json::array(
        {{{"label", "B"}, {"test", "pp64+tg8"}, {"why", "-p 64 only in B (A: -p 32)"}}});
    EXPECT_EQ(j["unmatched"], unmatched);
    EXPECT_TRUE(j["notes"].is_array());
}

TEST(Compare, TheDocumentReadsBackAsTheResult) {
    // Rows with every kind of differs value (text, integer, null), energy rows, unmatched tests,
    // notes, the match fields and model aliases.
    const json a = doc("host-a", json::array({with_energy(test(config(2)), 1, 0.001)}));
    const json b = doc("host-b", json::array({with_energy(test(config(1), 0.9, 0.8), 0.8, 0.001),
                                              test(config(1, "CPU", 64))}));
    const json inproc = doc("h", json::array({test(config())}));
    const json server = with_server(doc("h", json::array({http_test("tiny:q8")})), "ollama");
    CompareOptions o;
    o.resamples = 2000;
    o.tool_version = "9.9.9";
    std::vector<CompareResult> results = {compare_documents(inputs({a, b}), o),
                                          compare_documents(inputs({b, a, inproc}), o)};
    o.match = parse_compare_match("m,p,n,d");
    o.model_alias = {{"tiny:q8", "tiny.gguf"}};
    results.push_back(compare_documents(inputs({inproc, server}), o));
    for (const auto& r : results) {
        ASSERT_FALSE(r.rows.empty());
        const json j = to_json(r);
        const CompareResult back = from_json<CompareResult>(j, "c.json");
        EXPECT_EQ(back, r) << j.dump(1);
        EXPECT_EQ(to_json(back), j);
    }
    EXPECT_EQ(differs(results[2].rows[0])["server"], json({nullptr, "ollama"}));
    EXPECT_FALSE(results[1].unmatched.empty());
    EXPECT_FALSE(results[1].notes.empty());  // C has no energy readings
}

TEST(Compare, ReadingACompareDocumentNamesWhatIsWrong) {
    const json a = doc("host-a", json::array({test(config(2))}));
    const json b = doc("host-b", json::array({test(config(1))}));
    const json good = to_json(compare_documents(inputs({a, b})));
    auto error = [](const json& j) {
        std::string msg;
        EXPECT_EQ(kind_of([&] { from_json<CompareResult>(j, "'c.json'"); }, &msg),
                  ErrorKind::input);
        return msg;
    };
    json x = good;
    x["command"] = "run";
    EXPECT_EQ(error(x), "'c.json': command: expected \"compare\", found \"run\"");
    x = good;
    x.erase("compare_schema_version");
    EXPECT_NE(error(x).find("no compare_schema_version"), std::string::npos);
    x = good;
    x["compare_schema_version"] = 2;
    EXPECT_NE(error(x).find("written by a newer stagebench"), std::string::npos) << error(x);
    x = good;
    x["rows"][0]["differs"]["n_threads"][0] = true;
    EXPECT_EQ(error(x),
              "'c.json': rows[0].differs.n_threads[0]: expected a string, an integer "
              "or null, found a boolean");
    x = good;
    x["rows"][0]["sides"][1]["n"] = "7";
    EXPECT_EQ(error(x), "'c.json': rows[0].sides[1].n: expected an integer, found a string");
}

}  // namespace
}  // namespace sb
