// `stagebench fidelity` on the real llama.cpp: teacher-forced logits of every variant against the
// reference, beside their speed.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace {

using namespace sbtest;
using nlohmann::json;

// The tiny preset at one weight type, written once per test binary.
const std::string& tiny_at(const std::string& quant) {
    static TempDir dir;
    static std::map<std::string, std::string> made;
    auto it = made.find(quant);
    if (it != made.end())
        return it->second;
    const std::string path = dir.file("tiny-" + quant + ".gguf");
    Proc p = run_sb({"synth", "--preset", "tiny", "--quant", quant, "-o", path});
    if (p.exit_code != 0)
        throw std::runtime_error("synth failed: " + p.err);
    return made[quant] = path;
}

json fidelity(const std::vector<std::string>& args) {
    std::vector<std::string> a = {"fidelity", "-p", "32", "-n", "16", "-r", "1", "-o", "json"};
    a.insert(a.end(), args.begin(), args.end());
    Proc p = run_sb(a);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    if (p.exit_code != 0)
        return json();
    // A result document like any other, its measurement in the fidelity section.
    const json doc = json::parse(p.out);
    EXPECT_EQ(doc["schema"], "stagebench.result");
    EXPECT_EQ(doc["command"], "fidelity");
    EXPECT_TRUE(doc["system"].is_object());
    EXPECT_TRUE(doc["llama"].is_object());
    EXPECT_TRUE(doc["tests"].empty());
    return doc["fidelity"];
}

// The same model on the same CPU kernels twice: exactly the same logits.
TEST(Fidelity, CpuAgainstCpuIsExactlyTheSame) {
    json d = fidelity({"-m", tiny_at("q4_0"), "--device", "CPU,CPU"});
    ASSERT_EQ(d["variants"].size(), 2u) << d;
    for (const auto& v : d["variants"]) {
        for (const char* stage : {"prefill", "decode"}) {
            EXPECT_EQ(v[stage]["kl_mean"], 0.0) << v;
            EXPECT_EQ(v[stage]["kl_max"], 0.0) << v;
            EXPECT_EQ(v[stage]["max_abs"], 0.0) << v;
            EXPECT_EQ(v[stage]["top1_agreement"], 1.0) << v;
            EXPECT_EQ(v[stage]["topk_overlap"], 1.0) << v;
        }
        EXPECT_EQ(v["decode"]["positions"], 16);
        EXPECT_EQ(v["prefill"]["positions"], 1);
        EXPECT_GT(v["decode_tokens_per_s"].get<double>(), 0);
        EXPECT_GT(v["prefill_tokens_per_s"].get<double>(), 0);
        EXPECT_EQ(v["decode_tokens_per_s_reps"].size(), 1u);  // -r 1
        EXPECT_EQ(v["decode_tokens_per_s_reps"][0], v["decode_tokens_per_s"]);
    }
    EXPECT_TRUE(d["variants"][0]["reference"]);
    EXPECT_EQ(d["tokens"].size(), 48u);  // the prompt and the 16 forced tokens
    EXPECT_EQ(d["n_prompt"], 32);
    EXPECT_EQ(d["n_gen"], 16);
}

// --out writes the same result document that -o json prints; it reads back (report, compare)
// and names every model, the reference model included.
TEST(Fidelity, OutWritesAResultDocumentWithTheModels) {
    TempDir t;
    Proc p = run_sb({"fidelity", "-p", "8", "-n", "4", "-r", "1", "-m", tiny_at("q8_0"),
                     "--reference-model", tiny_at("f16"), "--out", t.file("f.json")});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("| tiny-q8_0.gguf | CPU | f16/f16 |"), std::string::npos) << p.out;
    const json doc = json::parse(read_file(t.file("f.json")));
    EXPECT_EQ(doc["command"], "fidelity");
    ASSERT_EQ(doc["models"].size(), 2u);
    EXPECT_EQ(doc["models"][0]["path"], tiny_at("q8_0"));
    EXPECT_EQ(doc["models"][1]["path"], tiny_at("f16"));
    EXPECT_EQ(doc["fidelity"]["reference"], "tiny-f16.gguf on CPU (f16/f16)");
    ASSERT_EQ(doc["fidelity"]["variants"].size(), 1u);
    EXPECT_FALSE(doc["fidelity"]["variants"][0]["reference"]);
    EXPECT_GT(doc["fidelity"]["variants"][0]["decode"]["kl_mean"].get<double>(), 0.0);
}

// Quantization as an axis against the f16 reference: KL grows as the weights lose bits.
TEST(Fidelity, QuantizationOrdersTheDistanceFromTheF16Reference) {
    json d = fidelity(
        {"-m", tiny_at("f16") + "," + tiny_at("q8_0") + "," + tiny_at("q4_0"), "--device", "CPU"});
    ASSERT_EQ(d["variants"].size(), 3u) << d;
    const json &f16 = d["variants"][0], &q8 = d["variants"][1], &q4 = d["variants"][2];
    EXPECT_EQ(f16["decode"]["kl_mean"], 0.0);
    EXPECT_GT(q8["decode"]["kl_mean"].get<double>(), 0.0);
    EXPECT_GT(q4["decode"]["kl_mean"].get<double>(), q8["decode"]["kl_mean"].get<double>());
    EXPECT_GT(q4["prefill"]["kl_mean"].get<double>(), q8["prefill"]["kl_mean"].get<double>());
    EXPECT_LT(q4["decode"]["top1_agreement"].get<double>(), 1.0);
    EXPECT_GT(q4["decode"]["max_abs"].get<double>(), q8["decode"]["max_abs"].get<double>());
    // The frontier holds the reference: nothing is closer.
    EXPECT_TRUE(f16["frontier"]);
}

// BLAS against CPU (stated as measured in the README): a small distance. Top-1 is not asserted:
// a random-weight model's logits have near-ties that a 1e-8 KL can flip.
TEST(Fidelity, BlasAgainstCpuIsClose) {
    json d = fidelity({"-m", tiny_at("f16"), "--device", "CPU,BLAS"});
    ASSERT_EQ(d["variants"].size(), 2u) << d;
    const json& blas = d["variants"][1];
    ASSERT_EQ(blas["devices"], "BLAS");
    EXPECT_LT(blas["decode"]["kl_max"].get<double>(), 1e-5) << blas;
    EXPECT_GT(blas["decode"]["kl_max"].get<double>(), 0.0) << blas;  // other kernels
}

// End to end through the store: two fidelity runs stored with --db, listed, compared variant by
// variant (CPU against CPU: the same logits, so every distance row is "the same"), advised on.
TEST(Fidelity, DocumentsGoThroughTheStoreCompareAndAdvise) {
    TempDir t;
    const std::string db = t.file("r.sqlite");
    for (int i = 0; i < 2; ++i) {
        Proc p = run_sb({"fidelity", "-p", "8", "-n", "4", "-r", "2", "-m", tiny_at("q8_0"),
                         "--device", "CPU,BLAS", "--db", db});
        ASSERT_EQ(p.exit_code, 0) << p.err;
        EXPECT_NE(p.err.find("stored as #" + std::to_string(i + 1)), std::string::npos) << p.err;
    }
    Proc list = run_sb({"db", "list", "--db", db});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    EXPECT_NE(list.out.find("| 2 | "), std::string::npos) << list.out;
    EXPECT_NE(list.out.find(" | fidelity | "), std::string::npos) << list.out;
    Proc show = run_sb({"db", "show", "1", "--db", db});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_NE(show.out.find("| tiny-q8_0.gguf | BLAS | f16/f16 |"), std::string::npos) << show.out;

    Proc cmp = run_sb({"compare", "db:1", "db:2", "--db", db, "-o", "json"});
    ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
    const json c = json::parse(cmp.out);
    int kl_rows = 0, speed_rows = 0;
    for (const auto& row : c["rows"]) {
        if (row["metric"] == "kl_mean") {
            ++kl_rows;
            EXPECT_EQ(row["ratios"][0]["verdict"], "the same") << row;
        }
        speed_rows += row["metric"] == "tokens_per_s";
    }
    EXPECT_EQ(kl_rows, 4);     // prefill and decode of CPU and of BLAS
    EXPECT_EQ(speed_rows, 4);  // likewise
    EXPECT_TRUE(c["unmatched"].empty()) << c["unmatched"];

    Proc adv = run_sb({"advise", "db:1", "--db", db, "-o", "json"});
    ASSERT_EQ(adv.exit_code, 0) << adv.err;
    const json a = json::parse(adv.out);
    ASSERT_GE(a["sentences"].size(), 1u) << a;
    EXPECT_EQ(a["sentences"][0].get<std::string>().rfind("BLAS is ", 0), 0u) << a["sentences"];
}

TEST(Fidelity, BadInputIsOneLineAndExitTwo) {
    TempDir t;
    Proc small = run_sb({"synth", "--preset", "tiny", "--quant", "f16", "-o", t.file("x.gguf")});
    ASSERT_EQ(small.exit_code, 0);
    const std::vector<std::vector<std::string>> cases = {
        {"fidelity", "-m", tiny_at("q4_0"), "--device", "CPU", "--reference", "BLAS"},
        {"fidelity", "-m", t.file("missing.gguf")},
        {"fidelity", "-m", tiny_at("q4_0"), "-p", "0"},
        {"fidelity", "-m", tiny_at("q4_0"), "--cache-type-k", "q3_x"},
        {"fidelity", "-m", tiny_at("q4_0"), "--reference-model", t.file("none.gguf")},
    };
    for (const auto& c : cases) {
        Proc p = run_sb(c);
        EXPECT_EQ(p.exit_code, 2) << c.back() << ": " << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    }
}

}  // namespace
