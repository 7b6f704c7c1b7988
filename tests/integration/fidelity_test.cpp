// `stagebench fidelity` on the real llama.cpp: teacher-forced logits of every variant against the
// reference, beside their speed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

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

// The tiny preset with a real tokenizer (the pinned tree's Llama SentencePiece vocabulary,
// 32000 tokens), written once per test binary.
const std::string& tiny_spm(const std::string& quant) {
    static TempDir dir;
    static std::map<std::string, std::string> made;
    auto it = made.find(quant);
    if (it != made.end())
        return it->second;
    const std::string path = dir.file("tiny-spm-" + quant + ".gguf");
    Proc p =
        run_sb({"synth", "--preset", "tiny", "--quant", quant, "--vocab", "llama-spm", "-o", path});
    if (p.exit_code != 0)
        throw std::runtime_error("synth failed: " + p.err);
    return made[quant] = path;
}

// A real English text (written for this test), about 700 tokens of the Llama vocabulary.
const char* kText =
    "The lighthouse keeper kept a notebook in which he wrote down, every evening, the state of "
    "the sea, the direction of the wind and the ships that had passed during the day. Most "
    "entries were short. A fishing boat from the harbour, two cargo ships heading north, a "
    "yacht that turned back before the cape. On stormy nights he wrote more, because he could "
    "not sleep and because the light needed him: the lamp had to be trimmed, the clockwork "
    "that turned the lens had to be wound every few hours, and the windows of the lantern room "
    "had to be wiped when the spray reached that high.\n\n"
    "His daughter, who later sold the notebooks to the county museum, said that her father "
    "never thought of them as a diary. They were a record, like the log of a ship, and he "
    "believed that someone would one day need to know exactly when the fog came in on a "
    "particular Tuesday in March. Nobody ever did, as far as she knew. But the museum keeps "
    "them in a glass case near the entrance, open at a page from the winter of the great "
    "storm, when the keeper wrote that the waves broke over the gallery rail and that he "
    "could hear the bell of the wreck buoy even through the closed door.\n\n"
    "Visitors often ask why a lighthouse needed a keeper at all, when the lamp could simply "
    "have been left burning. The answer is that nothing about the old lights was simple. The "
    "oil had to be carried up the stairs in cans, the wicks burned unevenly and smoked the "
    "glass, and the great lens, made of hundreds of pieces of polished glass, had to be "
    "cleaned of soot every morning so that the beam would carry its full distance. A dirty "
    "lens could cost a mile of range, and a mile was the difference between a ship that saw "
    "the warning in time and one that did not.\n\n"
    "When the light was converted to electricity, the keeper stayed on for another ten years. "
    "There was less to do, but the notebooks go on in the same careful hand: the sea, the "
    "wind, the ships. In the last entry he wrote that the weather was fair, that the "
    "automatic lamp had worked without fault through the night, and that he was leaving the "
    "key to the door under the third stone to the left of the step, where the next person "
    "would surely find it. The museum has the key as well. It hangs beside the notebooks, on "
    "a short piece of tarred rope, and the children who visit are allowed to hold it.\n\n"
    "The town has changed a great deal since then. The harbour is full of pleasure boats, "
    "the fish market has become a row of restaurants, and the old rope works is a hotel. "
    "Yet on a clear night the light still turns above the cape, every fifteen seconds, as it "
    "has done for a hundred and forty years, and the ships still count the flashes to know "
    "which coast they are passing.\n";

std::string write_text(const TempDir& t, const std::string& name, const std::string& text) {
    const std::string path = t.file(name);
    std::ofstream(path) << text;
    return path;
}

// llama-perplexity's "Final estimate: PPL = X +/- Y" (its log, on stderr).
double llama_perplexity(const std::string& model, const std::string& text, int ctx) {
    Proc p = run(
        {peer("llama-perplexity"), "-m", model, "-f", text, "-c", std::to_string(ctx), "-t", "2"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    std::smatch m;
    const std::string all = p.out + p.err;
    if (!std::regex_search(all, m, std::regex(R"(Final estimate: PPL = ([0-9.]+))")))
        ADD_FAILURE() << "no final estimate in llama-perplexity's output: " << all;
    return m.empty() ? NAN : std::stod(m[1]);
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

// The perplexity of a text is llama-perplexity's (the peer built from the same tree) on the same
// model, file and context, within 0.1 %: the same tokens, windows and scored positions.
TEST(Fidelity, PerplexityEqualsLlamaPerplexity) {
    TempDir t;
    const std::string text = write_text(t, "keeper.txt", kText);
    for (const char* quant : {"f16", "q4_0"}) {
        json d = fidelity(
            {"-m", tiny_spm(quant), "--device", "CPU", "--text", text, "--ctx", "64", "-t", "2"});
        ASSERT_EQ(d["variants"].size(), 1u) << d;
        const json& v = d["variants"][0];
        const double ours = v["perplexity"]["value"].get<double>();
        const double peer_ppl = llama_perplexity(tiny_spm(quant), text, 64);
        EXPECT_NEAR(ours, peer_ppl, 1e-3 * peer_ppl) << quant;
        // A random-weight model of 32000 tokens: thousands, not 1 (nothing was skipped).
        EXPECT_GT(ours, 1000.0) << quant;
        // The windows: 700-odd tokens in windows of 64, the last 31 positions of each scored.
        const int64_t tokens = d["text"]["tokens"].get<int64_t>();
        EXPECT_EQ(d["text"]["chunks"], tokens / 64);
        EXPECT_EQ(d["text"]["scored"], (tokens / 64) * 31);
        EXPECT_EQ(v["text"]["positions"], (tokens / 64) * 31);
        // Its own reference: the text's logits are exactly the reference's.
        EXPECT_EQ(v["text"]["kl_max"], 0.0);
        EXPECT_EQ(d["text"]["reference_perplexity"]["value"], v["perplexity"]["value"]);
    }
}

// On the text, quantization orders the distance from the f16 reference as on random tokens, and
// --prompt-logits compares every prompt position.
TEST(Fidelity, TextAndPromptStagesAgainstTheF16Reference) {
    TempDir t;
    const std::string text = write_text(t, "keeper.txt", kText);
    json d = fidelity({"-m", tiny_spm("f16") + "," + tiny_spm("q8_0") + "," + tiny_spm("q4_0"),
                       "--device", "CPU", "--text", text, "--ctx", "128", "--prompt-logits"});
    ASSERT_EQ(d["variants"].size(), 3u) << d;
    const json &f16 = d["variants"][0], &q8 = d["variants"][1], &q4 = d["variants"][2];
    EXPECT_EQ(f16["text"]["kl_max"], 0.0);
    EXPECT_EQ(f16["prompt"]["kl_max"], 0.0);
    EXPECT_EQ(f16["prompt"]["positions"], 32);
    EXPECT_GT(q8["text"]["kl_mean"].get<double>(), 0.0);
    EXPECT_GT(q4["text"]["kl_mean"].get<double>(), q8["text"]["kl_mean"].get<double>());
    EXPECT_GT(q4["prompt"]["kl_mean"].get<double>(), q8["prompt"]["kl_mean"].get<double>());
    EXPECT_EQ(q4["prompt"]["positions"], 32);
    // The prompt's last position is the prefill stage's.
    EXPECT_GE(q4["prompt"]["kl_max"].get<double>(), q4["prefill"]["kl_mean"].get<double>());
    EXPECT_EQ(q4["decode"]["positions"], 16);
    EXPECT_NE(q4["perplexity"]["value"], f16["perplexity"]["value"]);
}

// `run --fidelity`: the fidelity columns beside a normal run's speed. The f16 model on CPU is
// the reference's own configuration (KL exactly 0); q4_0 against the f16 reference is farther;
// BLAS against CPU is close, as measured.
TEST(Fidelity, RunFidelityAddsTheColumnsToANormalRun) {
    TempDir t;
    const std::string out = t.file("r.json");
    Proc p = run_sb({"run",
                     "-m",
                     tiny_at("f16") + "," + tiny_at("q4_0"),
                     "--device",
                     "CPU,BLAS",
                     "-p",
                     "32",
                     "-n",
                     "8",
                     "-r",
                     "1",
                     "--fidelity",
                     "--reference-model",
                     tiny_at("f16"),
                     "--telemetry",
                     "off",
                     "--membw",
                     "off",
                     "--out",
                     out});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    // The Markdown table after the rows, and the one line saying how it was measured.
    EXPECT_NE(p.out.find("| test | devices | KV | reference | stage | KL mean |"),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("tiny-f16.gguf on CPU (f16/f16)"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("captured untimed after each test's repetitions"), std::string::npos);
    const json d = json::parse(sbtest::read_file(out));
    ASSERT_EQ(d["tests"].size(), 4u);
    std::map<std::string, json> by;  // "model devices" -> fidelity
    for (const auto& test : d["tests"]) {
        ASSERT_EQ(test["status"], "ok") << test;
        ASSERT_TRUE(test.contains("fidelity")) << test;
        ASSERT_TRUE(test["prefill"].is_object());  // the speed is there as in any run
        const json& f = test["fidelity"];
        EXPECT_EQ(f["reference"], "tiny-f16.gguf on CPU (f16/f16)");
        EXPECT_EQ(f["top_k"], 10);
        EXPECT_TRUE(f["error"].is_null());
        EXPECT_EQ(f["prefill"]["positions"], 1);
        EXPECT_EQ(f["decode"]["positions"], 8);
        const std::string model = test["config"]["model_path"];
        by[std::filesystem::path(model).filename().string() + " " +
           test["config"]["devices"].get<std::string>()] = f;
    }
    const json& same = by.at("tiny-f16.gguf CPU");
    for (const char* stage : {"prefill", "decode"}) {
        EXPECT_EQ(same[stage]["kl_mean"], 0.0) << same;
        EXPECT_EQ(same[stage]["max_abs"], 0.0) << same;
        EXPECT_EQ(same[stage]["top1_agreement"], 1.0) << same;
    }
    const double q4 = by.at("tiny-q4_0.gguf CPU")["decode"]["kl_mean"];
    EXPECT_GT(q4, 0);
    const double blas = by.at("tiny-f16.gguf BLAS")["decode"]["kl_mean"];
    EXPECT_LT(blas, q4) << "BLAS on f16 is closer to the f16 reference than q4_0 weights";
    std::printf("run --fidelity: decode KL q4_0/CPU %.3g, f16/BLAS %.3g, q4_0/BLAS %.3g\n", q4,
                blas, by.at("tiny-q4_0.gguf BLAS")["decode"]["kl_mean"].get<double>());

    // advise speaks of them as of a fidelity document's variants.
    Proc adv = run_sb({"advise", out});
    ASSERT_EQ(adv.exit_code, 0) << adv.err;
    EXPECT_NE(adv.out.find("tiny-q4_0.gguf is "), std::string::npos) << adv.out;
    EXPECT_NE(adv.out.find("to tiny-f16.gguf"), std::string::npos) << adv.out;
    EXPECT_NE(adv.out.find("(the frontier)."), std::string::npos) << adv.out;

    // The CSV has the distances on each stage's row.
    Proc csv = run_sb({"run", "-m", tiny_at("q4_0"), "-p", "16", "-n", "4", "-r", "1", "--fidelity",
                       "--telemetry", "off", "--membw", "off", "-o", "csv", "-q"});
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_NE(csv.out.find(",error,kl_mean,kl_p99,kl_max,top1_agreement,topk_overlap,"
                           "max_abs_logit_error\n"),
              std::string::npos)
        << csv.out;
    // Its own reference (the same file on CPU): every distance 0.
    EXPECT_NE(csv.out.find(",prefill,16,1,ok,"), std::string::npos) << csv.out;
    EXPECT_NE(csv.out.find(",\"\",0,0,0,1,1,0\n"), std::string::npos) << csv.out;

    // Bad input, one line and exit 2, before anything is measured.
    TempDir b;
    Proc other =
        run_sb({"synth", "--preset", "tiny", "--vocab", "llama-spm", "-o", b.file("o.gguf")});
    ASSERT_EQ(other.exit_code, 0) << other.err;
    const std::vector<std::vector<std::string>> bad = {
        {"run", "-m", tiny_at("q4_0"), "--fidelity", "--reference", "GPU7"},
        {"run", "-m", tiny_at("q4_0"), "--fidelity", "--reference-model", b.file("o.gguf")},
        {"run", "-m", tiny_at("q4_0"), "--reference", "CPU"},  // without --fidelity
        {"run", "-m", tiny_at("q4_0"), "--fidelity", "--engine", "http"},
    };
    for (const auto& c : bad) {
        Proc q = run_sb(c);
        EXPECT_EQ(q.exit_code, 2) << c.back() << ": " << q.err;
        EXPECT_EQ(std::count(q.err.begin(), q.err.end(), '\n'), 1) << q.err;
        EXPECT_EQ(q.out, "") << q.out;
    }
}

// report: the speed-against-KL chart of a quant sweep, opened in headless Chromium when it is
// installed (tests/integration/report_check.mjs): one point per variant at the document's
// (decode KL, decode tokens/s), labelled on the chart, the reference's KL 0 on the marked axis
// floor, the frontier's points joined in order of KL; the prefill chart; table and captions.
TEST(Fidelity, ReportDrawsSpeedAgainstKlWithTheFrontier) {
    namespace fs = std::filesystem;
    TempDir t;
    Proc p = run_sb({"fidelity", "-p", "32", "-n", "16", "-r", "2", "-m",
                     tiny_at("f16") + "," + tiny_at("q8_0") + "," + tiny_at("q4_0"), "--device",
                     "CPU", "--out", t.file("f.json")});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(t.file("f.json")));
    const json& vs = doc["fidelity"]["variants"];
    ASSERT_EQ(vs.size(), 3u);
    const fs::path dir = fs::path(SB_BINARY_DIR) / "fidelity_report_test";
    fs::create_directories(dir);
    const std::string html = (dir / "fidelity.html").string();
    Proc r = run_sb({"report", t.file("f.json"), "-o", html});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string page = read_file(html);
    EXPECT_NE(page.find("\"fidelity\""), std::string::npos);
    EXPECT_EQ(page.find("command 'fidelity' is not known"), std::string::npos);

    const std::string dump = t.file("charts.json");
    std::string why;
    std::vector<std::string> check =
        report_check_argv(html, (dir / "fidelity.png").string(), dump, why);
    if (check.empty())
        GTEST_SKIP() << why << ": the page is not opened";
    check.insert(check.end(),
                 {"--expect-chart", "fidelity-decode", "--expect-chart", "fidelity-prefill",
                  "--expect-annotated", "fidelity-decode", "--expect-text",
                  "Fidelity: speed against the distance from tiny-f16.gguf on CPU", "--expect-text",
                  "drawn on the axis floor", "--expect-text",
                  "Red diamonds joined by the line: the frontier"});
    for (const auto& v : vs) {  // the table's rows
        check.push_back("--expect-text");
        check.push_back(v["model_name"].get<std::string>() + " on CPU (f16/f16)");
    }
    Proc ch = run(check, 180);
    std::cout << "fidelity report: " << html << "\n" << ch.out;
    ASSERT_EQ(ch.exit_code, 0) << ch.out << ch.err;

    const json charts = json::parse(read_file(dump));
    auto chart = [&](const std::string& kind) {
        for (const auto& c : charts)
            if (c["doc"] == "d0" && c["kind"] == kind)
                return c;
        ADD_FAILURE() << "no chart " << kind;
        return json::object();
    };
    const json decode = chart("fidelity-decode");
    ASSERT_TRUE(decode.contains("annotations"));
    // KL 0 sits on the floor: the dotted line, below the smallest KL measured by a decade.
    const json& kl0 = decode["annotations"]["kl0"];
    ASSERT_TRUE(kl0["xMin"].is_number()) << decode["annotations"];
    const double floor = kl0["xMin"].get<double>();
    double smallest = INFINITY;
    for (const auto& v : vs)
        if (v["decode"]["kl_mean"].get<double>() > 0)
            smallest = std::min(smallest, v["decode"]["kl_mean"].get<double>());
    ASSERT_TRUE(std::isfinite(smallest)) << "q8_0 and q4_0 differ from f16";
    EXPECT_GT(floor, 0.0);
    EXPECT_LE(floor, smallest / 10);
    EXPECT_GT(floor, smallest / 100);
    // Every variant's point: where the document puts it, in the dataset its frontier flag says,
    // and labelled with its model (the one thing that tells these variants apart).
    std::map<std::string, json> points;  // label -> {x, y, dataset}
    for (const auto& ds : decode["datasets"]) {
        double last_x = 0;
        for (const auto& pt : ds["data"]) {
            points[pt["label"].get<std::string>()] = {
                {"x", pt["x"]}, {"y", pt["y"]}, {"dataset", ds["label"]}};
            if (ds["label"] == "on the frontier") {
                EXPECT_GE(pt["x"].get<double>(), last_x) << "the frontier line goes by KL";
                last_x = pt["x"].get<double>();
            }
        }
    }
    // The points' labels are placed clear of the points by report.js's sbLabels plugin (the
    // places it took: pointLabels).
    std::set<std::string> labels;
    for (const auto& l : decode["pointLabels"])
        labels.insert(l["text"].get<std::string>());
    ASSERT_EQ(points.size(), vs.size()) << decode.dump();
    int frontier = 0;
    for (const auto& v : vs) {
        const std::string label = v["model_name"].get<std::string>();
        SCOPED_TRACE(label);
        ASSERT_TRUE(points.count(label)) << decode.dump();
        const json& pt = points[label];
        const double kl = v["decode"]["kl_mean"].get<double>();
        EXPECT_DOUBLE_EQ(pt["x"].get<double>(), kl > 0 ? kl : floor);
        EXPECT_DOUBLE_EQ(pt["y"].get<double>(), v["decode_tokens_per_s"].get<double>());
        EXPECT_EQ(pt["dataset"],
                  v["frontier"].get<bool>() ? "on the frontier" : "not on the frontier");
        EXPECT_TRUE(labels.count(label)) << "the point's label on the chart";
        frontier += v["frontier"].get<bool>();
    }
    EXPECT_TRUE(vs[0]["reference"]);
    EXPECT_TRUE(vs[0]["frontier"]) << "nothing is closer than the reference";
    EXPECT_DOUBLE_EQ(points["tiny-f16.gguf"]["x"].get<double>(), floor);
    EXPECT_GE(frontier, 1);
    // Prefill: the same variants at their prefill tokens/s.
    const json prefill = chart("fidelity-prefill");
    ASSERT_EQ(prefill["datasets"].size(), 1u);
    const json& pre = prefill["datasets"][0]["data"];
    ASSERT_EQ(pre.size(), vs.size());
    for (size_t i = 0; i < vs.size(); ++i) {
        EXPECT_EQ(pre[i]["label"], vs[i]["model_name"]);
        EXPECT_DOUBLE_EQ(pre[i]["y"].get<double>(), vs[i]["prefill_tokens_per_s"].get<double>());
    }
}

TEST(Fidelity, BadInputIsOneLineAndExitTwo) {
    TempDir t;
    Proc small = run_sb({"synth", "--preset", "tiny", "--quant", "f16", "-o", t.file("x.gguf")});
    ASSERT_EQ(small.exit_code, 0);
    const std::string novocab = t.file("novocab.gguf");
    Proc nv = run_sb({"synth", "--preset", "tiny", "--vocab", "none", "-o", novocab});
    ASSERT_EQ(nv.exit_code, 0) << nv.err;
    const std::vector<std::vector<std::string>> cases = {
        {"fidelity", "-m", tiny_at("q4_0"), "--device", "CPU", "--reference", "BLAS"},
        {"fidelity", "-m", t.file("missing.gguf")},
        {"fidelity", "-m", tiny_at("q4_0"), "-p", "0"},
        {"fidelity", "-m", tiny_at("q4_0"), "--cache-type-k", "q3_x"},
        {"fidelity", "-m", tiny_at("q4_0"), "--reference-model", t.file("none.gguf")},
        // A text too short for two windows of --ctx.
        {"fidelity", "-m", tiny_spm("q4_0"), "--text", write_text(t, "short.txt", "Too short."),
         "--ctx", "64"},
        {"fidelity", "-m", tiny_spm("q4_0"), "--text", t.file("missing.txt")},
        {"fidelity", "-m", tiny_spm("q4_0"), "--text", write_text(t, "bad.txt", "a\xff\xfe b")},
        // A model without a vocabulary cannot tokenize the text.
        {"fidelity", "-m", novocab, "--text", write_text(t, "keeper.txt", kText), "--ctx", "64"},
        {"synth", "--preset", "tiny", "--vocab", "no-such-vocab", "-o", t.file("v.gguf")},
    };
    for (const auto& c : cases) {
        Proc p = run_sb(c);
        EXPECT_EQ(p.exit_code, 2) << c.back() << ": " << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    }
    // Another vocabulary than the reference's, found when the variant loads (after the
    // reference's progress lines): exit 2, the error the one last line.
    Proc p = run_sb({"fidelity", "-m", tiny_spm("q4_0") + "," + tiny_at("q4_0"), "--text",
                     write_text(t, "keeper.txt", kText), "--ctx", "64", "-p", "8", "-n", "2"});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    const std::string last = p.err.substr(p.err.rfind('\n', p.err.size() - 2) + 1);
    EXPECT_EQ(last.rfind("stagebench: error: ", 0), 0u) << p.err;
    EXPECT_NE(last.find("has a vocabulary of 4096 tokens, the reference 32000"), std::string::npos)
        << p.err;
    EXPECT_EQ(p.err.find("error"), p.err.size() - last.size() + 12) << p.err;
}

}  // namespace
