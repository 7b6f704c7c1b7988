// `--db`, `db` and `compare` end to end: the real binary, real runs of a tiny synthetic model.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_harness.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

// Real run documents, measured once for the whole file: two with one thread (the second into a
// results store), one with two threads.
struct Runs {
    TempDir dir;
    std::string t1a, t1b, t2, db;
    Proc stored;  // the run that went into the store
};

Proc run_doc(const std::string& threads, const std::string& out,
             const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"run", "-m", tiny_model(), "-p",      "32",  "-n",    "8", "-r",
                                  "5",   "-t", threads,      "--membw", "off", "--out", out, "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_sb(args);
}

const Runs& runs() {
    static Runs r = [] {
        Runs x;
        x.t1a = x.dir.file("t1a.json");
        x.t1b = x.dir.file("t1b.json");
        x.t2 = x.dir.file("t2.json");
        x.db = x.dir.file("results.sqlite");
        // No telemetry: energy rows would join these comparisons on a host with a
        // whole-system meter (RAPL psys, a discharging battery).
        if (Proc p = run_doc("1", x.t1a, {"--telemetry", "off"}); p.exit_code != 0)
            throw std::runtime_error("run failed: " + p.err);
        x.stored = run_doc("1", x.t1b, {"--db", x.db, "--telemetry", "off"});
        if (Proc p = run_doc("2", x.t2, {"--telemetry", "off"}); p.exit_code != 0)
            throw std::runtime_error("run failed: " + p.err);
        return x;
    }();
    return r;
}

json compare_json(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"compare"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"-o", "json"});
    Proc p = run_sb(args);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return json::parse(p.out);
}

void expect_sane_ratio(const json& q) {
    ASSERT_TRUE(q["median"].is_number()) << q;
    ASSERT_TRUE(q["ci_low"].is_number()) << q;
    ASSERT_TRUE(q["ci_high"].is_number()) << q;
    const double m = q["median"], lo = q["ci_low"], hi = q["ci_high"];
    EXPECT_GT(lo, 0);
    EXPECT_LE(lo, m);
    EXPECT_LE(m, hi);
    const std::string v = q["verdict"];
    EXPECT_TRUE(v == "no difference" || v == "faster" || v == "slower") << v;
    EXPECT_EQ(v == "no difference", lo <= 1 && 1 <= hi) << q;
}

TEST(StoreCompare, ADocumentComparedWithItselfIsNoDifference) {
    const json c = compare_json({runs().t1a, runs().t1a});
    EXPECT_EQ(c["command"], "compare");
    ASSERT_EQ(c["rows"].size(), 3u);  // prefill, decode, TTFT
    for (const auto& row : c["rows"]) {
        EXPECT_EQ(row["test"], "pp32+tg8");
        EXPECT_EQ(row["sides"][0]["n"], 5);
        EXPECT_EQ(row["ratios"][0]["median"], 1.0);
        EXPECT_EQ(row["ratios"][0]["verdict"], "no difference");
        EXPECT_TRUE(row["differs"].empty());
    }
    Proc md = run_sb({"compare", runs().t1a, runs().t1a});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| pp32+tg8 | prefill t/s |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| 1.000 | ["), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("no difference"), std::string::npos) << md.out;

    // The HTML section: the comparison first, then the inputs' own sections, one page.
    TempDir t;
    Proc html = run_sb({"compare", runs().t1a, runs().t1a, "--html", t.file("c.html")});
    ASSERT_EQ(html.exit_code, 0) << html.err;
    EXPECT_EQ(html.out, md.out);
    const std::string page = sbtest::read_file(t.file("c.html"));
    EXPECT_NE(page.find("stagebench compare"), std::string::npos);
    EXPECT_NE(page.find("B/A"), std::string::npos);
    EXPECT_NE(page.find("A: " + runs().t1a), std::string::npos);
}

TEST(StoreCompare, TwoRunsOfOneConfigReportASaneInterval) {
    const json c = compare_json({runs().t1a, runs().t1b});
    ASSERT_EQ(c["rows"].size(), 3u);
    for (const auto& row : c["rows"]) {
        EXPECT_TRUE(row["differs"].empty()) << row["differs"];
        for (const auto& s : row["sides"]) {
            EXPECT_EQ(s["n"], 5);
            EXPECT_GT(s["median"].get<double>(), 0);
        }
        expect_sane_ratio(row["ratios"][0]);
    }
    EXPECT_TRUE(c["unmatched"].empty());
}

TEST(StoreCompare, TwoThreadsAgainstOneShowTheRatioAndWhatDiffers) {
    TempDir t;
    const std::string out = t.file("cmp.json");
    Proc p = run_sb({"compare", runs().t2, runs().t1a, "--label", "t2", "--label", "t1", "-o",
                     "json", "--out", out});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json c = json::parse(p.out);
    EXPECT_EQ(json::parse(read_file(out)), c);
    EXPECT_EQ(c["inputs"][0]["label"], "t2");
    EXPECT_EQ(c["inputs"][1]["source"], runs().t1a);
    ASSERT_EQ(c["rows"].size(), 3u);
    for (const auto& row : c["rows"]) {
        EXPECT_EQ(row["differs"]["n_threads"], json({2, 1}));
        EXPECT_EQ(row["ratios"][0]["label"], "t1/t2");
        expect_sane_ratio(row["ratios"][0]);
    }
    Proc md = run_sb({"compare", runs().t2, runs().t1a});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("n_threads: 2 / 1"), std::string::npos) << md.out;
    Proc csv = run_sb({"compare", runs().t2, runs().t1a, "-o", "csv"});
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_EQ(line_count(csv.out), 4u) << csv.out;  // header + 3 stages
}

TEST(StoreCompare, RunIntoTheStoreThenExportEqualsTheOutDocument) {
    const Runs& r = runs();
    ASSERT_EQ(r.stored.exit_code, 0) << r.stored.err;
    EXPECT_NE(r.stored.err.find("stored as #1 in " + r.db), std::string::npos) << r.stored.err;
    EXPECT_EQ(r.stored.out.find("stored"), std::string::npos);

    Proc exp = run_sb({"db", "export", "1", "--db", r.db});
    ASSERT_EQ(exp.exit_code, 0) << exp.err;
    EXPECT_EQ(json::parse(exp.out), json::parse(read_file(r.t1b)));
    EXPECT_EQ(exp.out, read_file(r.t1b));  // byte for byte, as --out wrote it

    TempDir t;
    Proc to_file = run_sb({"db", "export", "1", "--db", r.db, "--out", t.file("e.json")});
    ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
    EXPECT_TRUE(to_file.out.empty());
    EXPECT_EQ(read_file(t.file("e.json")), read_file(r.t1b));

    Proc list = run_sb({"db", "list", "--db", r.db, "-o", "json"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    const json l = json::parse(list.out);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0]["id"], 1);
    EXPECT_EQ(l[0]["command"], "run");
    EXPECT_EQ(l[0]["n_tests"], 1);
    Proc md = run_sb({"db", "list", "--db", r.db});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| 1 | "), std::string::npos) << md.out;

    Proc show = run_sb({"db", "show", "1", "--db", r.db});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_NE(show.out.find("## #1: run"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("| pp32+tg8 | CPU | 1 | ok | 5 |"), std::string::npos) << show.out;

    // A stored document is an operand of compare.
    const json c = compare_json({"db:1", r.t1b, "--db", r.db});
    EXPECT_EQ(c["inputs"][0]["source"], "db:1");
    EXPECT_EQ(c["rows"][0]["ratios"][0]["verdict"], "no difference");
}

TEST(StoreCompare, SustainedRunsCompareTheirVariationAcrossRounds) {
    TempDir t;
    for (const char* f : {"s1.json", "s2.json"}) {
        Proc s = run_sb({"sustained", "-m", tiny_model(), "--rounds", "3", "--prompt-tokens", "32",
                         "--max-tokens", "8", "-t", "1", "--telemetry", "off", "--out", t.file(f),
                         "-q"});
        ASSERT_EQ(s.exit_code, 0) << s.err;
    }
    Proc c = run_sb({"compare", t.file("s1.json"), t.file("s2.json"), "-o", "json"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const json cmp = json::parse(c.out);
    // prefill, decode, TTFT, and the request's E2E and combined tokens/s per round.
    ASSERT_EQ(cmp["rows"].size(), 5u) << c.out;
    EXPECT_EQ(cmp["rows"][3]["metric"], "e2e_s");
    EXPECT_EQ(cmp["rows"][4]["metric"], "combined_tps");
    for (const auto& row : cmp["rows"]) {
        EXPECT_EQ(row["test"], "pp32+tg8 rounds");
        EXPECT_EQ(row["sides"][0]["n"], 3);  // one sample per round
        EXPECT_TRUE(row["sides"][1]["cv"].is_number());
        EXPECT_TRUE(row["ratios"][0]["ci_low"].is_number());
    }
    EXPECT_NE(cmp["notes"].dump().find("variation across rounds"), std::string::npos);
}

TEST(StoreCompare, RunsWithTelemetryCompareTheirEnergyWithAnInterval) {
    // A Jetson's INA3221 rails from a fixture tree: VDD_IN is the whole-system meter.
    TempDir t;
    const fs::path root = t.path / "sys";
    fs::copy(fs::path(SB_SOURCE_DIR) / "tests/fixtures/telemetry/jetson-ina3221/sys", root,
             fs::copy_options::recursive);
    for (const char* f : {"e1.json", "e2.json"}) {
        Proc p = run_doc("1", t.file(f),
                         {"--sysfs-root", root.string(), "--telemetry", "on", "--telemetry-hz",
                          "100", "--idle", "0"});
        ASSERT_EQ(p.exit_code, 0) << p.err;
    }
    const json c = compare_json({t.file("e1.json"), t.file("e2.json")});
    bool saw_decode = false, saw_power = false;
    for (const auto& row : c["rows"]) {
        const std::string metric = row["metric"];
        EXPECT_NE(metric, "net_j_per_token") << "no idle baseline was measured: " << row;
        if (metric == "j_per_token" || metric == "mean_power_mw") {
            SCOPED_TRACE(row.dump());
            EXPECT_EQ(row["higher_is_better"], false);
            EXPECT_EQ(row["sides"][0]["n"], 5);
            EXPECT_EQ(row["sides"][1]["n"], 5);
            EXPECT_GT(row["sides"][0]["median"].get<double>(), 0);
            const json& q = row["ratios"][0];
            ASSERT_TRUE(q["ci_low"].is_number());
            ASSERT_TRUE(q["ci_high"].is_number());
            EXPECT_LE(q["ci_low"].get<double>(), q["median"].get<double>());
            EXPECT_LE(q["median"].get<double>(), q["ci_high"].get<double>());
            const std::string v = q["verdict"];
            EXPECT_TRUE(v == "no difference" || v == "less energy" || v == "more energy" ||
                        v == "lower power" || v == "higher power")
                << v;
            saw_decode = saw_decode || (metric == "j_per_token" && row["stage"] == "decode");
            saw_power = saw_power || metric == "mean_power_mw";
        }
    }
    EXPECT_TRUE(saw_decode) << c.dump(1);
    EXPECT_TRUE(saw_power) << c.dump(1);
    Proc md = run_sb({"compare", t.file("e1.json"), t.file("e2.json")});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| pp32+tg8 | decode J/token |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| pp32+tg8 | decode mean W |"), std::string::npos) << md.out;
}

TEST(StoreCompare, AnInProcessAndALlamaServerRunOfOneModelMeetByMatch) {
    // No --url: stagebench starts build/peers/llama-server on 127.0.0.1 for the model.
    TempDir t;
    const std::string http = t.file("http.json");
    Proc p = run_sb(
        {"run", "-m", tiny_model(), "--engine", "http", "-p",          "32",  "-n",    "8",  "-r",
         "5",   "-t", "1",          "--membw",  "off",  "--telemetry", "off", "--out", http, "-q"},
        300);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    // By default the engine is part of the workload: the two never meet.
    json c = compare_json({runs().t1a, http});
    EXPECT_TRUE(c["rows"].empty()) << c.dump(1);
    EXPECT_EQ(c["unmatched"].size(), 2u);

    c = compare_json({runs().t1a, http, "--match", "m,p,n,d"});
    ASSERT_EQ(c["rows"].size(), 3u) << c.dump(1);
    EXPECT_TRUE(c["unmatched"].empty());
    EXPECT_EQ(c["match"]["fields"], json({"model", "n_prompt", "n_gen", "n_depth"}));
    for (const auto& row : c["rows"]) {
        EXPECT_EQ(row["differs"]["engine"], json({"llama", "http"})) << row;
        EXPECT_EQ(row["differs"]["server"], json({nullptr, "llama-server"})) << row;
        EXPECT_EQ(row["sides"][1]["n"], 5);
        expect_sane_ratio(row["ratios"][0]);
    }
    Proc md = run_sb({"compare", runs().t1a, http, "--match", "m,p,n,d"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("Matched by: model, n_prompt, n_gen, n_depth"), std::string::npos)
        << md.out;
    EXPECT_NE(md.out.find("engine: llama / http"), std::string::npos) << md.out;
}

TEST(StoreCompare, BadInputsAreOneLineAndExit2) {
    TempDir t;
    const std::string not_json = t.file("not.json");
    std::ofstream(not_json) << "this is not json\n";
    const std::vector<std::vector<std::string>> cases = {
        {"compare", runs().t1a, t.file("missing.json")},
        {"compare", runs().t1a, not_json},
        {"compare", runs().t1a, "db:42", "--db", runs().db},
        {"compare", runs().t1a, "db:1"},
        {"compare", runs().t1a, "db:1", "--db", t.file("missing.sqlite")},
        {"db", "show", "42", "--db", runs().db},
        {"db", "list", "--db", not_json},
        {"run", "-m", tiny_model(), "-p", "8", "-n", "2", "-r", "1", "--db", not_json},
        {"compare", runs().t1a, runs().t1b, "--match", "p,x"},
        {"compare", runs().t1a, runs().t1b, "--match", "p,p"},
        {"compare", runs().t1a, runs().t1b, "--model-alias", "tiny.gguf"},
        {"compare", runs().t1a, runs().t1b, "--model-alias", "a=b", "--model-alias", "a=c"},
    };
    for (const auto& args : cases) {
        Proc p = run_sb(args);
        std::string cmd;
        for (const auto& a : args)
            cmd += a + " ";
        EXPECT_EQ(p.exit_code, 2) << cmd << p.err;
        EXPECT_EQ(line_count(p.err), 1u) << cmd << p.err;
        EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << cmd << p.err;
        EXPECT_TRUE(p.out.empty()) << cmd << p.out;
    }
    EXPECT_NE(run_sb({"compare", runs().t1a, not_json}).err.find("is not JSON"), std::string::npos);
    EXPECT_NE(run_sb({"compare", runs().t1a, "db:42", "--db", runs().db})
                  .err.find("no document "
                            "#42"),
              std::string::npos);
}

}  // namespace

namespace {

// The tiny model with f16 weights: BLAS takes 25 of its 29 prefill mat-muls (q4_0 weights sit in
// CPU_REPACK buffers BLAS cannot use), so CPU against BLAS differs shape by shape.
const std::string& tiny_f16() {
    static TempDir dir;
    static std::string path = [] {
        std::string p = dir.file("tiny-f16.gguf");
        Proc r = run_sb({"synth", "--preset", "tiny", "--seed", "7", "--quant", "f16", "-o", p});
        if (r.exit_code != 0)
            throw std::runtime_error("synth failed: " + r.err);
        return p;
    }();
    return path;
}

// The computing MUL_MAT records of a stage of an ops document.
std::vector<json> mat_muls(const json& doc, const std::string& stage) {
    std::vector<json> out;
    for (const auto& st : doc["ops"]["stages"])
        if (st["stage"] == stage)
            for (const auto& r : st["ops"])
                if (r["op"] == "MUL_MAT" && !r["no_compute"].get<bool>())
                    out.push_back(r);
    return out;
}

// A node's tensors as a signature writes them: "f16 256×768, f32 256×32 → f32 768×32"
// (type and dims, trailing 1s left out).
std::string shape_text(const json& r) {
    auto one = [](const json& t) {
        std::vector<int64_t> ne = t["ne"].get<std::vector<int64_t>>();
        while (ne.size() > 1 && ne.back() == 1)
            ne.pop_back();
        std::string dims;
        for (std::size_t i = 0; i < ne.size(); ++i)
            dims += (i ? "×" : "") + std::to_string(ne[i]);
        return t["type"].get<std::string>() + " " + dims;
    };
    std::string s;
    for (const auto& src : r["srcs"])
        s += (s.empty() ? "" : ", ") + one(src);
    return s + " → " + one(r);
}

// How many samples compare takes from a shape's records: one when every timed record's op
// time was replayed (isolated_call_ns set), else one per record.
std::size_t replayed_samples(const std::vector<json>& recs) {
    bool replayed = !recs.empty();
    for (const auto& r : recs)
        if (!r.contains("isolated_call_ns") || r["isolated_call_ns"].is_null())
            replayed = false;
    return replayed ? 1 : recs.size();
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

// `compare` of a CPU and a BLAS `ops` document: one row per MUL_MAT shape (its weight's role
// and the tensors' types and shapes) with its own ratio and CI, the op type rolled up over
// them, and every node accounted for (matched or listed, never dropped).
TEST(StoreCompare, OpsDocumentsOfCpuAndBlasCompareOneRowPerMulMatShape) {
    TempDir t;
    const std::string cpu = t.file("cpu.json"), blas = t.file("blas.json");
    for (const auto& [device, out] : {std::pair{"CPU", cpu}, std::pair{"BLAS", blas}}) {
        Proc p = run_sb({"ops", "-m", tiny_f16(), "-p", "32", "-t", "1", "--device", device,
                         "--reps", "2", "--plain-reps", "2", "--replay", "4", "--out", out, "-q"});
        ASSERT_EQ(p.exit_code, 0) << p.err;
    }
    const json a = json::parse(read_file(cpu)), b = json::parse(read_file(blas));
    const json c = compare_json({cpu, blas, "--label", "CPU", "--label", "BLAS"});
    EXPECT_EQ(c["match"]["fields"], json::array({"stage", "op", "signature"}));
    for (const char* stage : {"prefill", "decode"}) {
        SCOPED_TRACE(stage);
        // The roles the CPU document's mat-mul weights give: one row per role and shape.
        std::set<std::string> roles;
        const std::vector<json> mm = mat_muls(a, stage);
        ASSERT_EQ(mm.size(), 29u);  // 7 per layer of 4, and the output (tied: token_embd)
        for (const auto& r : mm) {
            std::string w = r["srcs"][0]["name"];
            if (w.rfind("blk.", 0) == 0)
                w = w.substr(w.find('.', 4) + 1);
            roles.insert(w.substr(0, w.rfind(".weight")));
        }
        EXPECT_EQ(roles, (std::set<std::string>{"attn_q", "attn_k", "attn_v", "attn_output",
                                                "ffn_gate", "ffn_up", "ffn_down", "token_embd"}));
        std::size_t shape_rows = 0, nodes = 0;
        std::set<std::string> row_roles;
        const json* total = nullptr;
        for (const auto& row : c["rows"]) {
            if (row["stage"] != stage || row["op"] != "MUL_MAT")
                continue;
            if (row["metric"] == "op_total_us")
                total = &row;
            if (row["metric"] != "op_us" || row["signature"].is_null())
                continue;
            ++shape_rows;
            const std::string role = row["signature"]["role"];
            row_roles.insert(role);
            ASSERT_EQ(row["ratios"].size(), 1u);
            const json& q = row["ratios"][0];
            const std::size_t n_cpu = row["sides"][0]["n"], n_blas = row["sides"][1]["n"];

            // The side's median is the median of exactly its role's records of its shape (the
            // last layer of a prefill computes only the token whose logits are asked for), and
            // the ratio is of those medians.
            const std::string shape = row["signature"]["shape"];
            auto of_row = [&](const json& r) {
                const std::string w = r["srcs"][0]["name"];
                return (w.find("." + role + ".weight") != std::string::npos ||
                        w == role + ".weight") &&
                       shape_text(r) == shape;
            };
            std::vector<double> va, vb;
            std::vector<json> ra, rb;
            for (const auto& r : mm)
                if (of_row(r)) {
                    va.push_back(r["op_ns"].get<double>() / 1e3);
                    ra.push_back(r);
                }
            for (const auto& r : mat_muls(b, stage))
                if (of_row(r)) {
                    vb.push_back(r["op_ns"].get<double>() / 1e3);
                    rb.push_back(r);
                }
            // A side's samples: its records, or one where the shape's op time was replayed (one
            // measurement copied to every node; which method a shape gets depends on how its
            // traced calls compare with the dispatch, so it differs from run to run).
            ASSERT_EQ(replayed_samples(ra), n_cpu) << role;
            ASSERT_EQ(replayed_samples(rb), n_blas) << role;
            nodes += ra.size();
            EXPECT_NEAR(row["sides"][0]["median"].get<double>(), median_of(va), 1e-9) << role;
            EXPECT_NEAR(q["median"].get<double>(), median_of(vb) / median_of(va), 1e-9) << role;
            if (n_cpu >= 2 && n_blas >= 2) {
                // Four layers: its own bootstrap interval, and the median's on each side.
                expect_sane_ratio(q);
                EXPECT_TRUE(row["sides"][0]["median_ci_low"].is_number()) << row;
                EXPECT_LE(row["sides"][0]["median_ci_low"].get<double>(),
                          row["sides"][0]["median"].get<double>());
            } else {
                // The one output node, or a shape whose op time was replayed on a side.
                const bool copies = (replayed_samples(ra) == 1 && ra.size() > 1) ||
                                    (replayed_samples(rb) == 1 && rb.size() > 1);
                EXPECT_EQ(q["verdict"], copies ? "no CI: a replayed op time is one measurement"
                                               : "too few samples")
                    << role;
            }
        }
        EXPECT_EQ(row_roles, roles);
        // One row per role and shape: the last layer of a prefill has its own shapes (one
        // token's rows after the attention).
        std::set<std::pair<std::string, std::string>> role_shapes;
        for (const auto& r : mm) {
            std::string w = r["srcs"][0]["name"];
            if (w.rfind("blk.", 0) == 0)
                w = w.substr(w.find('.', 4) + 1);
            role_shapes.insert({w.substr(0, w.rfind(".weight")), shape_text(r)});
        }
        EXPECT_EQ(shape_rows, role_shapes.size());
        EXPECT_EQ(nodes, mm.size()) << "every CPU node is in a shape's row";
        // The roll-up: the summed op time of the matched nodes, side by side.
        ASSERT_TRUE(total) << "no MUL_MAT total in " << stage;
        double sum = 0;
        for (const auto& r : mm)
            sum += r["op_ns"].get<double>() / 1e3;
        EXPECT_NEAR((*total)["sides"][0]["total"].get<double>(), sum, 1e-6 * sum);
        EXPECT_TRUE((*total)["sides"][0]["median"].is_null());
        expect_sane_ratio((*total)["ratios"][0]);
    }
    // The Markdown: one line per shape, each with its ratio.
    Proc md = run_sb({"compare", cpu, blas, "--label", "CPU", "--label", "BLAS"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| MUL_MAT | prefill Σ op µs | Σ "), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| MUL_MAT ffn_down: f16 768×256, f32 768×32 → f32 256×32 | prefill "
                          "op µs | "),
              std::string::npos)
        << md.out;
    EXPECT_NE(md.out.find("| MUL_MAT attn_q: f16 256×256, f32 256 → f32 256 | decode op µs | "),
              std::string::npos)
        << md.out;
    EXPECT_NE(md.out.find("Matched by: stage, op, signature"), std::string::npos) << md.out;
}

// `advise` of two run documents measured under different load: the mixed conditions are named
// (on stderr and first in the advice) before anything is predicted from them together, and no
// stage of any assignment is predicted at 0 ms, however far beyond the measured prompts.
TEST(StoreCompare, AdviseOfDocumentsFromDifferentConditionsWarnsAndPredictsNoStageAtZero) {
    TempDir t;
    const std::string quiet = t.file("quiet.json"), loaded = t.file("loaded.json");
    ASSERT_EQ(run_doc("1", quiet, {"--telemetry", "off"}).exit_code, 0);
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "64", "-n", "8", "-r", "3", "-t", "1",
                     "--membw", "off", "--telemetry", "off", "--out", loaded, "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    // The load each recorded, as a busy and a quiet machine write it (this machine's own load is
    // whatever the other builds make it).
    json q = json::parse(read_file(quiet)), l = json::parse(read_file(loaded));
    q["system"]["loadavg_1m"] = 0.1;
    l["system"]["loadavg_1m"] = 7.5;
    for (json* d : {&q, &l}) {
        json kept = json::array();
        for (const auto& w : (*d)["warnings"])
            if (w["code"] != "other_load")
                kept.push_back(w);
        (*d)["warnings"] = kept;
    }
    // Under load the longer prompt ran slower per token than the short one did quiet: the line
    // through the two falls, and extended to pp4096 it would reach 0.
    for (auto& v : l["tests"][0]["prefill"]["tokens_per_s"])
        v = v.get<double>() / 10;
    l["tests"][0]["prefill"]["duration"]["median"] =
        l["tests"][0]["prefill"]["duration"]["median"].get<double>() * 10;
    std::ofstream(quiet) << q.dump();
    std::ofstream(loaded) << l.dump();
    Proc a = run_sb({"advise", quiet, loaded, "--prompt", "4096", "--gen", "256", "-o", "json"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_NE(a.err.find("warning: the documents the ranking and predictions combine were "
                         "measured under different conditions (load: "),
              std::string::npos)
        << a.err;
    const json adv = json::parse(a.out);
    ASSERT_EQ(adv["warnings"].size(), 1u);
    EXPECT_EQ(adv["warnings"][0]["code"], "mixed_conditions");
    ASSERT_FALSE(adv["predictions"].empty());
    for (const auto& pred : adv["predictions"])
        for (const auto& x : pred["assignments"]) {
            EXPECT_GT(x["prefill_ns"].get<double>(), 0) << x;
            EXPECT_GT(x["decode_ns"].get<double>(), 0) << x;
            EXPECT_FALSE(x["extrapolated"].empty()) << "pp4096 lies beyond the measured prompts";
        }
    Proc md = run_sb({"advise", quiet, loaded, "--prompt", "4096", "--gen", "256"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    const auto warn = md.out.find("**Warning (mixed_conditions):**");
    const auto predicted = md.out.find("### Predicted end to end");
    ASSERT_NE(warn, std::string::npos) << md.out;
    ASSERT_NE(predicted, std::string::npos) << md.out;
    EXPECT_LT(warn, predicted) << "the warning comes before the predictions";
    EXPECT_NE(md.out.find("beyond the measured prompts 32–64"), std::string::npos) << md.out;
}

// `compare` and `db show` carry the stall-robust rate with its median's CI and the stall count.
TEST(StoreCompare, CompareAndDbShowCarryTheRobustRateAndStalls) {
    const json c = compare_json({runs().t1a, runs().t2});
    bool decode = false;
    for (const auto& row : c["rows"]) {
        if (row["metric"] != "tokens_per_s")
            continue;
        for (const auto& s : row["sides"]) {
            ASSERT_TRUE(s["robust"].is_object()) << row;
            EXPECT_GT(s["robust"]["tokens_per_s"].get<double>(), 0);
            EXPECT_GE(s["robust"]["ci_low"].get<double>(), 0);
            EXPECT_EQ(s["robust"]["unit"], row["stage"] == "decode" ? "tokens" : "reps");
            EXPECT_EQ(s["robust"]["of"].get<int>(), row["stage"] == "decode" ? 5 * 8 : 5);
            EXPECT_LE(s["median_ci_low"].get<double>(), s["median"].get<double>());
            EXPECT_GE(s["median_ci_high"].get<double>(), s["median"].get<double>());
        }
        decode = decode || row["stage"] == "decode";
        // The robust rate is the document's own.
        const json doc = json::parse(read_file(runs().t1a));
        EXPECT_EQ(row["sides"][0]["robust"]["tokens_per_s"],
                  doc["tests"][0][row["stage"].get<std::string>()]["robust"]["tokens_per_s"]);
    }
    EXPECT_TRUE(decode);
    Proc md = run_sb({"compare", runs().t1a, runs().t2});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| A robust t/s [95% CI] | stalls A |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("/40 tokens |"), std::string::npos) << md.out;
    Proc show = run_sb({"db", "show", "1", "--db", runs().db});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_NE(show.out.find("prefill robust t/s [95% CI] | prefill stalls |"), std::string::npos)
        << show.out;
    EXPECT_NE(show.out.find("/5 reps |"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("/40 tokens |"), std::string::npos) << show.out;
}
