// `stagebench logits` with the real llama.cpp: the same model and prompt give the same logits
// on the same build, an edited reference is caught (exit 1, one line), and a document that is
// not a logits document or another prompt is bad input (exit 2).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

using nlohmann::json;
using namespace sbtest;

namespace {

TEST(Logits, TheSameBuildGivesTheSameLogitsAndAnEditIsCaught) {
    TempDir t;
    const std::string ref = t.file("ref.json");
    Proc p = run_sb({"logits", "-m", tiny_model(), "-p", "24", "-t", "1", "--out", ref});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(ref));
    ASSERT_EQ(doc["n_vocab"], doc["logits"].size());
    ASSERT_EQ(doc["tokens"].size(), 24u);

    p = run_sb(
        {"logits", "-m", tiny_model(), "-p", "24", "-t", "2", "--against", ref, "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json a = json::parse(p.out)["against"];
    EXPECT_EQ(a["max_abs"], 0.0) << a.dump();  // the same kernels; threads split rows only
    EXPECT_EQ(a["kl"], 0.0);
    EXPECT_EQ(a["within"], true);

    // One logit moved by a tenth of the largest: beyond the default 5 %.
    json edited = doc;
    const double scale = std::abs(doc["top"][0]["logit"].get<double>());
    edited["logits"][7] = edited["logits"][7].get<double>() + 0.1 * std::max(1.0, scale);
    const std::string bad = t.file("edited.json");
    std::ofstream(bad) << edited.dump();
    p = run_sb({"logits", "-m", tiny_model(), "-p", "24", "--against", bad});
    EXPECT_EQ(p.exit_code, 1) << p.err;
    EXPECT_EQ(line_count(p.err), 1u) << p.err;
    EXPECT_EQ(p.err.rfind("stagebench: error: the logits differ from '" + bad, 0), 0u) << p.err;
    EXPECT_NE(p.out.find("| NO |"), std::string::npos) << p.out;
}

TEST(Logits, AnotherPromptOrNotALogitsDocumentIsBadInput) {
    TempDir t;
    const std::string ref = t.file("ref.json");
    ASSERT_EQ(run_sb({"logits", "-m", tiny_model(), "-p", "8", "--out", ref}).exit_code, 0);
    Proc p = run_sb({"logits", "-m", tiny_model(), "-p", "8", "--seed", "2", "--against", ref});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(line_count(p.err), 1u) << p.err;
    EXPECT_NE(p.err.find("different prompts"), std::string::npos) << p.err;
    p = run_sb({"logits", "-m", tiny_model(), "--against", tiny_model()});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(line_count(p.err), 1u) << p.err;
}

}  // namespace
