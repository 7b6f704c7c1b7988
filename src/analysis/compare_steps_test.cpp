#include "analysis/compare_steps.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

using nlohmann::json;

const CompareStage& stage(const std::vector<CompareStage>& v, const std::string& name,
                          const std::string& metric) {
    for (const auto& s : v)
        if (s.name == name && s.metric == metric)
            return s;
    throw std::runtime_error("no stage " + name + " " + metric);
}

CompareInput step_input(const std::string& label, const json& doc) {
    return {label, label + ".json", from_json<ResultDocument>(doc, label + ".json")};
}

CompareValue integer(int64_t v) {
    return v;
}

CompareValue text(const std::string& v) {
    return v;
}

// ---- collecting ----

TEST(CompareCollect, TestsAreTypedAndASustainedDocumentIsItsPooledRounds) {
    const json run = {
        {"schema", "stagebench.result"},
        {"command", "run"},
        {"system", {{"hostname", "h"}, {"cpu_model", "c"}}},
        {"engines", {{"http", {{"server", "ollama"}}}}},
        {"tests",
         {{{"config", {{"n_prompt", 8}, {"n_gen", 0}, {"engine", "http"}}},
           {"status", "failed"},
           {"error", "boom"},
           {"prefill", {{"tokens_per_s", {10.0, 12.0}}}},
           {"ttft_ns", {2000000}},
           {"telemetry",
            {{"decode",
              {{{"duration_ns", 2000000000},
                {"total", {{"energy_j", 3.0}, {"j_per_token", 0.5}, {"metric", "rapl"}}}}}}}}}}}};
    std::vector<std::string> notes;
    const auto docs = collect_compare_docs({step_input("A", run)}, notes);
    ASSERT_EQ(docs.size(), 1u);
    const CompareDoc& d = docs[0];
    EXPECT_EQ(d.info.command, "run");
    EXPECT_EQ(d.info.host, "h");
    EXPECT_EQ(d.info.cpu, "c");
    EXPECT_EQ(d.http_server, "ollama");
    ASSERT_EQ(d.tests.size(), 1u);
    const CompareTest& t = d.tests[0];
    EXPECT_EQ(t.name, "pp8");
    EXPECT_EQ(t.config.at("n_prompt"), integer(8));
    EXPECT_EQ(t.config.at("n_gen"), integer(0));
    EXPECT_EQ(t.config.at("flash_attn"), text("auto"));  // the default of a field the test lacks
    EXPECT_EQ(t.config.count("model"), 0u);
    EXPECT_EQ(t.status, "failed");
    EXPECT_EQ(t.error, "boom");
    EXPECT_EQ(t.prefill_tps, (std::vector<double>{10, 12}));
    EXPECT_TRUE(t.decode_tps.empty());
    EXPECT_EQ(t.ttft_ns, std::vector<double>{2e6});
    ASSERT_EQ(t.decode_windows.size(), 1u);
    EXPECT_EQ(t.decode_windows[0].duration_ns, 2e9);
    EXPECT_EQ(t.decode_windows[0].energy_j, 3);
    EXPECT_EQ(t.decode_windows[0].net_j_per_token, std::nullopt);
    EXPECT_EQ(t.decode_windows[0].metric, "rapl");
    EXPECT_TRUE(notes.empty());

    // Rounds of the loaded phase come first among the tests and are left out.
    auto round_test = [](double j) {
        return json{{"config", {{"n_prompt", 8}, {"n_gen", 4}}},
                    {"telemetry", {{"decode", {{{"total", {{"j_per_token", j}}}}}}}}};
    };
    const json sus = {{"schema", "stagebench.result"},
                      {"command", "sustained"},
                      {"tests", {round_test(9), round_test(1), round_test(2), round_test(3)}},
                      {"sustained",
                       {{"phases",
                         {{{"background", "cpu:1"}, {"rounds", {json::object()}}},
                          {{"background", ""},
                           {"rounds",
                            {{{"decode_tps", 5.0}, {"ttft_ms", 2.0}},
                             {{"status", "failed"}, {"decode_tps", 99.0}},
                             {{"decode_tps", 7.0}}}}}}}}}};
    const auto s = collect_compare_docs({step_input("S", sus)}, notes);
    ASSERT_EQ(s[0].tests.size(), 1u);
    const CompareTest& p = s[0].tests[0];
    EXPECT_EQ(p.name, "pp8+tg4 rounds");
    EXPECT_EQ(p.status, "ok");
    EXPECT_EQ(p.decode_tps, (std::vector<double>{5, 7}));
    EXPECT_EQ(p.ttft_ns, std::vector<double>{2e6});
    ASSERT_EQ(p.decode_windows.size(), 2u);
    EXPECT_EQ(p.decode_windows[0].j_per_token, 1);
    EXPECT_EQ(p.decode_windows[1].j_per_token, 3);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0],
              "S (S.json) is a sustained run: its 2 rounds without background load are the "
              "samples, so its CV is the variation across rounds");
}

// ---- matching ----

// A test whose configuration holds the fields given (absent: null).
CompareTest with_config(const std::map<std::string, CompareValue>& config,
                        const std::string& name = "t") {
    CompareTest t;
    t.name = name;
    for (const auto& f : kCompareKeyFields)
        if (std::string(f.name) != "model") {
            const auto it = config.find(f.name);
            t.config[f.name] = it == config.end() ? CompareValue() : it->second;
        }
    return t;
}

TEST(CompareMatch, KeysTakeTheMatchFieldsAndTheAliasedModelName) {
    const std::map<std::string, std::string> alias = {{"qwen:0.5b", "q.gguf"}};
    const CompareMatcher m{{"model", "n_prompt", "flash_attn"}, &alias};
    const CompareTest file = with_config({{"model_path", text("/m/q.gguf")},
                                          {"n_prompt", integer(32)},
                                          {"flash_attn", text("auto")}});
    const CompareTest tag =
        with_config({{"model_path", text("qwen:0.5b")}, {"n_prompt", integer(32)}});
    EXPECT_EQ(m.base_key(file), "model=q.gguf,n_prompt=32,flash_attn=auto");
    EXPECT_EQ(m.base_key(tag), "model=q.gguf,n_prompt=32,flash_attn=null");
    EXPECT_EQ(m.value(with_config({}), "model"), CompareValue());
    EXPECT_EQ(compare_value_text(integer(-3)), "-3");
    EXPECT_EQ(compare_value_text(CompareValue()), "null");
}

TEST(CompareMatch, AFieldThatVariesWithinADocumentSplitsTheKeyAndTheName) {
    auto t = [](int threads, const std::string& devices) {
        return with_config(
            {{"n_prompt", integer(8)}, {"n_threads", integer(threads)}, {"devices", text(devices)}},
            "pp8");
    };
    const std::map<std::string, std::string> none;
    const CompareMatcher m{{"n_prompt"}, &none};
    std::vector<CompareDoc> docs(2);
    docs[0].tests = {t(1, "CPU"), t(2, "CPU"), t(2, "CPU")};
    docs[1].tests = {t(4, "GPU")};
    // Threads vary within the first document; devices differ only between documents.
    const auto split = compare_split_fields(m, docs);
    EXPECT_EQ(split, std::vector<std::string>{"n_threads"});
    const auto e = compare_entries(docs, m, split);
    ASSERT_EQ(e.size(), 2u);
    ASSERT_EQ(e[0].size(), 3u);
    EXPECT_EQ(e[0][0].key, "n_prompt=8,n_threads=1");
    EXPECT_EQ(e[0][0].name, "pp8 [n_threads=1]");
    EXPECT_EQ(e[0][2].key, "n_prompt=8,n_threads=2,#2");
    EXPECT_EQ(e[0][2].name, "pp8 [n_threads=2] #2");
    EXPECT_EQ(e[0][2].test, &docs[0].tests[2]);
    EXPECT_EQ(e[1][0].key, "n_prompt=8,n_threads=4");
}

// ---- per-row statistics ----

TEST(CompareRows, SamplesInTheRowsUnit) {
    CompareTest test;
    test.prefill_tps = {10, 12};
    test.ttft_ns = {2e6, 4e6};
    test.decode_windows = {{2e9, 3.0, 0.5, std::nullopt, "rapl"},
                           {0, 1.0, std::nullopt, std::nullopt, std::nullopt}};
    EXPECT_EQ(compare_samples(test, stage(kCompareStages, "prefill", "tokens_per_s")),
              (std::vector<double>{10, 12}));
    EXPECT_EQ(compare_samples(test, stage(kCompareStages, "ttft", "ttft_ms")),
              (std::vector<double>{2, 4}));
    EXPECT_TRUE(compare_samples(test, stage(kCompareStages, "decode", "tokens_per_s")).empty());
    EXPECT_EQ(compare_samples(test, stage(kCompareEnergyStages, "decode", "j_per_token")),
              std::vector<double>{0.5});
    EXPECT_TRUE(
        compare_samples(test, stage(kCompareEnergyStages, "decode", "net_j_per_token")).empty());
    // 3 J over 2 s; the zero-length repetition has no power.
    EXPECT_EQ(compare_samples(test, stage(kCompareEnergyStages, "decode", "mean_power_mw")),
              std::vector<double>{1500});
    EXPECT_EQ(compare_energy_meter(test, "decode"), text("rapl"));
    EXPECT_EQ(compare_energy_meter(test, "prefill"), CompareValue());
}

TEST(CompareRows, EachSideSummarisedAndEachOtherSideRatioedToTheBaseline) {
    const CompareStage& ttft = stage(kCompareStages, "ttft", "ttft_ms");
    CompareOptions opts;
    const CompareRow r =
        compare_row(ttft, {"A", "B", "C", "D"}, {{10, 10, 10}, {20, 20, 20}, {30}, {}}, opts);
    EXPECT_EQ(r.stage, "ttft");
    EXPECT_EQ(r.metric, "ttft_ms");
    EXPECT_FALSE(r.higher_is_better);
    ASSERT_EQ(r.sides.size(), 4u);
    EXPECT_EQ(r.sides[1].median, 20);
    EXPECT_EQ(r.sides[1].cv, 0);
    EXPECT_EQ(r.sides[3].n, 0u);
    EXPECT_EQ(r.sides[3].median, std::nullopt);
    ASSERT_EQ(r.ratios.size(), 3u);
    // Constant samples: a point interval at 2, above 1, and a longer TTFT is slower.
    EXPECT_EQ(r.ratios[0].label, "B/A");
    EXPECT_EQ(r.ratios[0].median, 2);
    EXPECT_EQ(r.ratios[0].ci_low, 2);
    EXPECT_EQ(r.ratios[0].ci_high, 2);
    EXPECT_EQ(r.ratios[0].verdict, "slower");
    EXPECT_EQ(r.ratios[1].median, 3);
    EXPECT_EQ(r.ratios[1].ci_low, std::nullopt);
    EXPECT_EQ(r.ratios[1].verdict, "too few samples");
    EXPECT_EQ(r.ratios[2].median, std::nullopt);
    EXPECT_EQ(r.ratios[2].verdict, "no data");
}

TEST(CompareRows, ACvMoreThanTheFactorTimesTheOtherIsNoted) {
    CompareRow row;
    row.test = "pp8";
    row.stage = "decode";
    row.metric = "j_per_token";
    auto side = [](const char* label, std::optional<double> cv) {
        CompareSide s;
        s.label = label;
        s.median = 1.0;
        s.cv = cv;
        s.n = 3;
        return s;
    };
    row.sides = {side("A", 0.01), side("B", 0.05), side("C", 0.015), side("D", {})};
    EXPECT_EQ(compare_cv_notes(row, {}),
              std::vector<std::string>{"pp8 decode j_per_token: B's CV (5.0%) is more than 2x "
                                       "A's (1.0%)"});
    row.metric = "tokens_per_s";
    row.sides[0].cv = 0.2;
    EXPECT_EQ(compare_cv_notes(row, {}),
              (std::vector<std::string>{"pp8 decode: A's CV (20.0%) is more than 2x B's (5.0%)",
                                        "pp8 decode: A's CV (20.0%) is more than 2x C's (1.5%)"}));
}

TEST(CompareRows, NoCvNoteWhenBothCvsAreBelowTheFloor) {
    CompareRow row;
    row.test = "pp8";
    row.stage = "decode";
    row.metric = "tokens_per_s";
    CompareSide a, b;
    a.label = "A";
    b.label = "B";
    a.median = b.median = 1.0;
    a.n = b.n = 3;
    a.cv = 0.0001;  // both print as 0.0 %: no finding, however large their ratio
    b.cv = 0.0004;
    row.sides = {a, b};
    EXPECT_TRUE(compare_cv_notes(row, {}).empty());
    row.sides[1].cv = 0.02;  // 2.0 % against 0.0 %: a finding
    EXPECT_EQ(compare_cv_notes(row, {}),
              std::vector<std::string>{"pp8 decode: B's CV (2.0%) is more than 2x A's (0.0%)"});
}

}  // namespace
}  // namespace sb
