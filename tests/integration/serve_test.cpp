// `stagebench serve` against a real llama-server (started as the README shows, by serve itself
// with -m FILE) and against the fault server. The speed of concurrency against one client is a
// benchmark (bench/serve_concurrency.sh); these tests assert what every run must hold.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_harness.hpp"
#include "engine/http_client.hpp"
#include "engine/llama_engine.hpp"
#include "engine/process.hpp"
#include "engine/text_generation.hpp"
#include "fault_server.hpp"
#include "scenario/llama_server.hpp"

namespace {

using namespace sbtest;
using nlohmann::json;
namespace fs = std::filesystem;

TEST(Serve, ClosedLoopOnARealLlamaServerWithFourSlots) {
    TempDir t;
    Proc p = run_sb({"serve", "-m", tiny_model(), "--slots", "4", "--concurrency", "1,4",
                     "--requests", "8", "-p", "16", "-n", "8", "--slo", "ttft=60s,tpot=60s", "-o",
                     "json", "--out", t.file("serve.json")},
                    300);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(p.out);
    // A result document like every command's, with the serve section.
    EXPECT_EQ(doc["schema"], "stagebench.result");
    EXPECT_EQ(doc["command"], "serve");
    EXPECT_TRUE(doc["system"].is_object());
    EXPECT_TRUE(doc["llama"].is_object());
    ASSERT_EQ(doc["models"].size(), 1u);
    EXPECT_EQ(doc["models"][0]["path"], tiny_model());
    EXPECT_EQ(doc["engines"]["http"]["server"], "llama-server");
    EXPECT_EQ(doc["engines"]["http"]["started_by_stagebench"], true);
    const json& d = doc["serve"];
    EXPECT_EQ(d["slots"], 4);
    EXPECT_EQ(d["n_prompt"], 16);
    EXPECT_EQ(d["slo_ms"]["ttft"], 60000.0);
    const json saved = json::parse(read_file(t.file("serve.json")));
    EXPECT_EQ(saved["serve"]["points"].size(), 2u);
    EXPECT_EQ(saved, doc);  // --out holds what -o json printed
    ASSERT_EQ(d["points"].size(), 2u);
    for (const auto& pt : d["points"]) {
        EXPECT_EQ(pt["mode"], "concurrency");
        ASSERT_EQ(pt["requests"].size(), 8u);
        EXPECT_EQ(pt["ok"], 8);
        for (const auto& r : pt["requests"]) {
            EXPECT_TRUE(r["error"].is_null()) << r;
            EXPECT_EQ(r["output_tokens"], 8) << r;
            EXPECT_GT(r["ttft_ns"].get<double>(), 0);
            EXPECT_GE(r["e2e_ns"].get<double>(), r["ttft_ns"].get<double>());
        }
        EXPECT_GT(pt["output_tokens_per_s"].get<double>(), 0);
        EXPECT_FALSE(pt["ttft"]["p99_ms"].is_null());
        EXPECT_LE(pt["ttft"]["median_ms"].get<double>(), pt["ttft"]["p99_ms"].get<double>());
        // A minute of SLO: every request meets it, goodput is the request rate.
        EXPECT_EQ(pt["meeting_slo"], 8);
        EXPECT_DOUBLE_EQ(pt["goodput_per_s"].get<double>(), pt["request_per_s"].get<double>());
        EXPECT_FALSE(pt["client_cpu_pct"].is_null());
    }
    // Four clients were in flight at once: some request was sent before another ended.
    bool overlapped = false;
    const json& four = d["points"][1]["requests"];
    for (const auto& a : four)
        for (const auto& b : four)
            overlapped =
                overlapped || (a["index"] != b["index"] &&
                               a["send_ns"].get<int64_t>() <
                                   b["send_ns"].get<int64_t>() + b["e2e_ns"].get<int64_t>() &&
                               a["send_ns"].get<int64_t>() >= b["send_ns"].get<int64_t>());
    EXPECT_TRUE(overlapped);
}

// Requests that fail (a 500, a dropped connection) are recorded with their errors; the others
// and the point's statistics stand; the exit code says something failed.
TEST(Serve, FailedRequestsAreRecordedAndTheRestStands) {
    std::atomic<int> n{0};
    FaultServer server([&](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        // The measured requests ask for 4 tokens; the prompt calibration before the clock
        // asks for fewer and is answered well.
        const int k = req.json().value("max_tokens", 1) == 4 ? n++ : 0;
        if (k % 4 == 1) {
            c.reply(500, "application/json", R"({"error":"overloaded"})");
            return;
        }
        if (k % 4 == 3) {
            c.begin_chunked(200, "text/event-stream");
            c.chunk(sse_text("half"));
            return;  // the connection closes mid-stream
        }
        c.begin_chunked(200, "text/event-stream");
        for (int i = 0; i < 4; ++i)
            c.chunk(sse_text("t"));
        c.chunk(sse_final(8, 4));
        c.end_chunked();
    });
    Proc p = run_sb({"serve", "--url", server.url(), "--concurrency", "2", "--requests", "8", "-p",
                     "8", "-n", "4", "-o", "json"});
    EXPECT_EQ(p.exit_code, 1) << p.err;
    json d = json::parse(p.out);
    EXPECT_TRUE(d["serve"]["url"].is_string());
    EXPECT_EQ(d["models"][0]["url"], server.url());
    const json& pt = d["serve"]["points"][0];
    ASSERT_EQ(pt["requests"].size(), 8u);
    EXPECT_EQ(pt["ok"].get<int>() + pt["errors"].get<int>(), 8);
    EXPECT_GE(pt["errors"].get<int>(), 2);
    EXPECT_GE(pt["ok"].get<int>(), 2);
    EXPECT_DOUBLE_EQ(pt["error_rate"].get<double>(), pt["errors"].get<double>() / 8);
    int with_error = 0;
    for (const auto& r : pt["requests"])
        with_error += !r["error"].is_null();
    EXPECT_EQ(with_error, pt["errors"].get<int>());
    EXPECT_FALSE(pt["ttft"]["median_ms"].is_null());
    EXPECT_NE(p.err.find("failed: "), std::string::npos) << p.err;
}

TEST(Serve, OpenLoopRecordsEveryRequestAtItsRate) {
    FaultServer server([&](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        c.begin_chunked(200, "text/event-stream");
        for (int i = 0; i < 2; ++i)
            c.chunk(sse_text("t"));
        c.chunk(sse_final(8, 2));
        c.end_chunked();
    });
    Proc p = run_sb({"serve", "--url", server.url(), "--rate", "200,inf", "--requests", "6", "-p",
                     "8", "-n", "2", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json d = json::parse(p.out)["serve"];
    ASSERT_EQ(d["points"].size(), 2u);
    EXPECT_EQ(d["points"][0]["mode"], "rate");
    EXPECT_EQ(d["points"][0]["value"], 200.0);
    EXPECT_EQ(d["points"][1]["value"], "inf");
    EXPECT_EQ(d["points"][1]["requests"].size(), 6u);
    EXPECT_EQ(d["points"][1]["ok"], 6);
    // The Markdown table, a row per point.
    Proc md = run_sb({"serve", "--url", server.url(), "--rate", "200,inf", "--requests", "2", "-p",
                      "8", "-n", "2"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| rate 200 | 2 | 0 |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| rate inf | 2 | 0 |"), std::string::npos) << md.out;
}

TEST(Serve, BadInputIsOneLineAndExitTwo) {
    const std::vector<std::vector<std::string>> cases = {
        {"serve", "--url", "http://127.0.0.1:9", "--requests", "2"},  // neither sweep
        {"serve", "--url", "http://127.0.0.1:9", "--concurrency", "1", "--rate", "1"},
        {"serve", "--url", "http://127.0.0.1:9", "--rate", "0"},
        {"serve", "--url", "http://127.0.0.1:9", "--rate", "fast"},
        {"serve", "--url", "http://127.0.0.1:9", "--concurrency", "1", "--slo", "ttft=soon"},
        {"serve", "--concurrency", "1"},
        {"serve", "-m", "/nonexistent.gguf", "--concurrency", "1"},
        {"serve", "--url", "http://127.0.0.1:9", "--concurrency", "1"},  // nothing listens
    };
    for (const auto& c : cases) {
        Proc p = run_sb(c);
        EXPECT_EQ(p.exit_code, 2) << c.back() << ": " << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    }
}

// Reported like everything else: two real serve runs (4 and 1 slots) into one store, listed
// and shown by `db`, compared point by point, drawn by `report` (in headless Chromium when it
// is installed) and traced with one track per concurrent request lane.
TEST(Serve, StoredComparedReportedAndTraced) {
    TempDir t;
    const std::string db = t.file("store.sqlite");
    auto serve = [&](const std::string& slots, const std::string& name) {
        Proc p = run_sb({"serve",
                         "-m",
                         tiny_model(),
                         "--slots",
                         slots,
                         "--concurrency",
                         "1,2",
                         "--requests",
                         "4",
                         "-p",
                         "16",
                         "-n",
                         "4",
                         "--slo",
                         "ttft=60s,tpot=60s",
                         "--db",
                         db,
                         "--out",
                         t.file(name + ".json"),
                         "--trace",
                         t.file(name + ".trace.json")},
                        300);
        EXPECT_EQ(p.exit_code, 0) << p.err;
        EXPECT_NE(p.err.find("stored as #"), std::string::npos) << p.err;
        return json::parse(read_file(t.file(name + ".json")));
    };
    const json a = serve("2", "a");
    const json b = serve("1", "b");
    ASSERT_EQ(a["serve"]["points"].size(), 2u);
    ASSERT_EQ(b["serve"]["points"].size(), 2u);

    // db: listed as serve documents, shown with their points.
    Proc list = run_sb({"db", "list", "--db", db, "-o", "json"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    const json entries = json::parse(list.out);
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0]["command"], "serve");
    EXPECT_EQ(entries[1]["command"], "serve");
    Proc show = run_sb({"db", "show", "--db", db, "1"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_NE(show.out.find("| concurrency 1 | 4 | 0 |"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("| concurrency 2 | 4 | 0 |"), std::string::npos) << show.out;
    Proc exported = run_sb({"db", "export", "--db", db, "2"});
    EXPECT_EQ(json::parse(exported.out)["serve"], b["serve"]);

    // compare: the matching points side by side, ratios of the stored values.
    Proc cmp = run_sb({"compare", "db:1", "db:2", "--db", db, "-o", "json"});
    ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
    const json c = json::parse(cmp.out);
    int rows = 0;
    for (const auto& row : c["rows"]) {
        for (int i = 0; i < 2; ++i) {
            const json& pa = a["serve"]["points"][i];
            const json& pb = b["serve"]["points"][i];
            const std::string label = "concurrency " + std::to_string(i + 1);
            if (row["test"] != label)
                continue;
            EXPECT_EQ(row["differs"]["slots"], json({2, 1})) << row;
            if (row["metric"] == "output_tokens_per_s") {
                ++rows;
                EXPECT_EQ(row["sides"][0]["median"], pa["output_tokens_per_s"]);
                EXPECT_DOUBLE_EQ(row["ratios"][0]["median"].get<double>(),
                                 pb["output_tokens_per_s"].get<double>() /
                                     pa["output_tokens_per_s"].get<double>());
                EXPECT_EQ(row["ratios"][0]["verdict"], "no CI: one value");
            }
            if (row["stage"] == "ttft" && row["metric"] == "median_ms") {
                ++rows;
                EXPECT_DOUBLE_EQ(row["sides"][1]["median"].get<double>(),
                                 pb["ttft"]["median_ms"].get<double>());
                EXPECT_EQ(row["sides"][1]["n"], 4);
                EXPECT_FALSE(row["ratios"][0]["ci_low"].is_null());
            }
        }
    }
    EXPECT_EQ(rows, 4);
    EXPECT_TRUE(c["unmatched"].empty());
    Proc md = run_sb({"compare", t.file("a.json"), t.file("b.json")});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| concurrency 2 | TTFT median ms |"), std::string::npos) << md.out;
    // Sweeps with no point in common: one line, exit 2.
    json rates = b;
    for (auto& p : rates["serve"]["points"])
        p["mode"] = "rate";
    std::ofstream(t.file("rates.json")) << rates.dump();
    Proc none = run_sb({"compare", t.file("a.json"), t.file("rates.json")});
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
    EXPECT_NE(none.err.find("no serve point is in two inputs"), std::string::npos) << none.err;

    // trace: every request a slice on a lane; concurrency 2 never needs a third lane.
    const json tr = json::parse(read_file(t.file("a.trace.json")));
    int requests = 0;
    std::set<int> lanes;
    for (const auto& e : tr["traceEvents"]) {
        if (e["ph"] == "X" && e.value("cat", "") == "request") {
            ++requests;
            lanes.insert(e["tid"].get<int>());
        }
    }
    EXPECT_EQ(requests, 8);
    EXPECT_EQ(lanes, (std::set<int>{100, 101}));

    // report: the page with the curve and the percentile bars, checked in Chromium when there.
    Proc out = run_sb({"compare", t.file("a.json"), t.file("b.json"), "-o", "json", "--out",
                       t.file("compare.json")});
    ASSERT_EQ(out.exit_code, 0) << out.err;
    const fs::path dir = fs::path(SB_BINARY_DIR) / "serve_report_test";
    fs::create_directories(dir);
    const std::string html = (dir / "serve.html").string();
    Proc r =
        run_sb({"report", t.file("a.json"), t.file("b.json"), t.file("compare.json"), "-o", html});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string page = read_file(html);
    EXPECT_NE(page.find("\"serve\""), std::string::npos);
    const std::string dump = t.file("charts.json");
    std::string why;
    std::vector<std::string> check =
        report_check_argv(html, (dir / "serve.png").string(), dump, why);
    if (check.empty())
        GTEST_SKIP() << why << ": the page is not opened";
    check.insert(check.end(),
                 {"--expect-annotated", "serve-curve", "--expect-text", "TTFT 60000 ms"});
    for (const char* kind : {"serve-curve", "serve-percentiles-ttft", "serve-percentiles-tpot",
                             "serve-percentiles-e2e", "compare-ratios"}) {
        check.push_back("--expect-chart");
        check.push_back(kind);
    }
    Proc ch = run(check, 180);
    std::cout << "serve report: " << html << "\n" << ch.out;
    ASSERT_EQ(ch.exit_code, 0) << ch.out << ch.err;
    // The curve is the document's: per point (output tokens/s, TTFT median) of the first input.
    const json charts = json::parse(read_file(dump));
    bool found = false;
    for (const auto& chart : charts) {
        if (chart["doc"] != "d0" || chart["kind"] != "serve-curve")
            continue;
        found = true;
        const json& ds = chart["datasets"][0];
        EXPECT_EQ(ds["label"], "TTFT p50 (ms)");
        ASSERT_EQ(ds["data"].size(), 2u);
        for (int i = 0; i < 2; ++i) {
            EXPECT_DOUBLE_EQ(ds["data"][i]["x"].get<double>(),
                             a["serve"]["points"][i]["output_tokens_per_s"].get<double>());
            EXPECT_DOUBLE_EQ(ds["data"][i]["y"].get<double>(),
                             a["serve"]["points"][i]["ttft"]["median_ms"].get<double>());
        }
    }
    EXPECT_TRUE(found);

    // Points of nearly one throughput (a saturated server under load: 2.6675 and 2.6875 tok/s,
    // as a run of this test on the busy VM measured) spread over the curve's x axis instead of
    // crowding its middle: the axis is padded by at most their span (report.js renderServe).
    json close = a;
    json& points = close["serve"]["points"];
    for (size_t i = 0; i < points.size(); ++i)
        points[i]["output_tokens_per_s"] = 2.6675 + 0.02 * static_cast<double>(i);
    write_file(t.file("close.json"), close.dump());
    const std::string close_html = (dir / "serve-close.html").string();
    Proc rc = run_sb({"report", t.file("close.json"), "-o", close_html});
    ASSERT_EQ(rc.exit_code, 0) << rc.err;
    std::vector<std::string> close_check = report_check_argv(
        close_html, (dir / "serve-close.png").string(), t.file("close-charts.json"), why);
    close_check.insert(close_check.end(), {"--expect-chart", "serve-curve"});
    Proc cc = run(close_check, 180);
    EXPECT_EQ(cc.exit_code, 0) << cc.out << cc.err;
}

}  // namespace

// The requests that came back with no tokens in the serve benches (README, "Which client"),
// explained. The tiny random model sometimes keeps emitting one byte token (<0xCD>, the first
// byte of a two-byte UTF-8 character) that never completes a character; llama-server holds
// back text that ends in an incomplete character, so it streams only its final message,
// whose usage claims every token. Nothing reached the client: no first-token time, a failed
// request (as vLLM's serving benchmark fails one), now with the reason in its line. This
// prompt (serve's request 7 of the third point of the bench's sweep, captured on the wire) does
// it on the default tiny model alone, on a llama-server with one slot: not the client, not
// concurrency.
namespace {

const std::string& tiny_seed1() {
    static TempDir dir;
    static const std::string path = [] {
        const std::string p = dir.file("tiny-seed1.gguf");
        Proc r = run_sb({"synth", "--preset", "tiny", "--seed", "1", "-o", p});
        if (r.exit_code != 0)
            throw std::runtime_error("synth failed: " + r.err);
        return p;
    }();
    return path;
}

const std::string kNoTextReached =
    "the server streamed no tokens, though its final message claims 16 generated (usage): none "
    "of their text reached the stream (llama-server holds back text that ends in an incomplete "
    "UTF-8 character)";

}  // namespace

TEST(Serve, ARequestWhoseTextNeverReachesTheStreamSaysWhy) {
    sb::LlamaServerSpec spec;
    spec.binary = sb::find_peer_program("llama-server");
    ASSERT_FALSE(spec.binary.empty());
    spec.model = tiny_seed1();
    spec.threads = 1;
    spec.n_ctx = 256;
    sb::LlamaServer server(spec, {}, sb::now_ns, sb::sleep_ns);
    sb::HttpPrompt prompt;
    // A prompt whose greedy continuation is byte tokens only, on this tiny model (found by
    // sending seeded random prompts to llama-server until one came back without text).
    prompt.tokens = {1,    1738, 1857, 3013, 2805, 594,  2717, 1137, 1274, 3240, 3999,
                     1831, 302,  1735, 1960, 1440, 3805, 1979, 3848, 771,  3121, 3705,
                     2541, 1831, 447,  2552, 2813, 1534, 688,  1509, 2533, 2399};
    prompt.n_tokens = 32;
    prompt.exact = true;
    try {
        server.engine().generate("", prompt, 16, 8);
        ADD_FAILURE() << "the request streamed tokens";
    } catch (const sb::Error& e) {
        EXPECT_NE(std::string(e.what()).find(kNoTextReached), std::string::npos) << e.what();
    }
    // What it generated, greedily, as llama.cpp in this process computes it: the same byte
    // token every time, whose text alone is no UTF-8 (llama-server cannot even answer the
    // request whole: its output parser refuses the bytes).
    sb::LlamaEngine e;
    sb::LoadSpec ls;
    ls.model_path = tiny_seed1();
    ls.n_ctx = 256;
    ls.n_threads = 1;
    e.load(ls);
    e.prefill(prompt.tokens);
    std::set<int> ids;
    for (int i = 0; i < 16; ++i) {
        const auto l = e.last_logits();
        const int id = static_cast<int>(std::max_element(l.begin(), l.end()) - l.begin());
        ids.insert(id);
        e.decode_step(id);
    }
    ASSERT_EQ(ids.size(), 1u) << "the same token every time";
    sb::HttpClient c(server.url(), sb::HttpTimeouts{10000, 60000});
    const sb::HttpResponse d = c.post_json("/detokenize", json{{"tokens", {*ids.begin()}}});
    EXPECT_EQ(json::parse(d.body)["content"], "\xEF\xBF\xBD");  // a lone byte: U+FFFD
}

// The bench's sweep on a llama-server that serve starts, on the model whose bytes failed
// requests 14 of concurrency 1 and 8 of concurrency 16 at every slot count (above): serve bans
// the synthetic model's tokens whose text is not UTF-8 on its own (a logit bias in every
// request, as explain does), so every request completes, and the document says so.
TEST(Serve, TheBenchSweepCompletesEveryRequestOnTheSyntheticModel) {
    for (const char* slots : {"2", "16"}) {
        SCOPED_TRACE(slots);
        Proc p = run_sb({"serve", "-m", tiny_seed1(), "--slots", slots, "--concurrency", "1,4,16",
                         "--requests", "32", "-p", "32", "-n", "16", "-o", "json"},
                        600);
        ASSERT_EQ(p.exit_code, 0) << p.err;
        const json doc = json::parse(p.out);
        for (const auto& pt : doc["serve"]["points"]) {
            EXPECT_EQ(pt["ok"], 32) << pt["value"];
            for (const auto& r : pt["requests"])
                EXPECT_TRUE(r["error"].is_null()) << r;
        }
        ASSERT_EQ(doc["serve"]["notes"].size(), 1u) << doc["serve"];
        EXPECT_NE(doc["serve"]["notes"][0].get<std::string>().find(
                      "the model is synthetic: the 128 tokens whose text is not UTF-8 on its own "
                      "are never drawn (a logit bias in every request)"),
                  std::string::npos)
            << doc["serve"]["notes"];
    }
}

// The README's serve line (serve -m model.gguf --slots 4 --concurrency 1,4 --slo ttft=500ms)
// on the tiny preset: every request completes (it failed 2 of 16 with the model's bytes), and
// the Markdown says which tokens were banned.
TEST(Serve, TheReadmesServeLineRunsCleanOnTheTinyPreset) {
    Proc p = run_sb({"serve", "-m", tiny_seed1(), "--slots", "4", "--concurrency", "1,4", "--slo",
                     "ttft=500ms"},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.err.find("failed:"), std::string::npos) << p.err;
    EXPECT_NE(p.out.find("| concurrency 1 | 16 | 0 |"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("| concurrency 4 | 16 | 0 |"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("\nnote: the model is synthetic: the 128 tokens"), std::string::npos)
        << p.out;
}

// The issue's own case, `serve -m tiny.gguf --slots 2 --concurrency 1,2 --requests 8` on the
// default tiny model (synth's seed 1), fails request 0 of concurrency 2 in every run, and with
// --slots 1 as well. Its prompt (the ninth serve builds: seed 1 x 1000003 + 9, 128 tokens, 64
// generated, seed 1) on a one-slot llama-server alone fails the same way: greedily the model
// emits byte tokens that never form UTF-8, here inside the text, and llama-server's output
// parser refuses the whole output. The request is the model's, not the client's or the slots'.
TEST(Serve, TheIssuesTwoPointSweepFailsOnTheModelsBytesAlone) {
    sb::LlamaServerSpec spec;
    spec.binary = sb::find_peer_program("llama-server");
    ASSERT_FALSE(spec.binary.empty());
    spec.model = tiny_seed1();
    spec.n_ctx = 256;  // as serve -m sizes it for one slot: 128 + 64 + 64
    sb::LlamaServer server(spec, {}, sb::now_ns, sb::sleep_ns);
    const sb::HttpPrompt prompt = server.engine().make_prompt("", 128, 1000003 + 9);
    ASSERT_TRUE(prompt.exact);
    ASSERT_EQ(prompt.tokens.size(), 128u);
    try {
        server.engine().generate("", prompt, 64, 1);
        ADD_FAILURE() << "the request succeeded";
    } catch (const sb::Error& e) {
        EXPECT_NE(std::string(e.what()).find("the server reported an error in the stream: The "
                                             "model produced output that does not match the "
                                             "expected Content-only format"),
                  std::string::npos)
            << e.what();
    }
    // The same 64 tokens in this process: their text holds bytes that are no UTF-8 (the server
    // detokenizes each such byte as U+FFFD), before other text.
    sb::LlamaEngine e;
    sb::LoadSpec ls;
    ls.model_path = tiny_seed1();
    ls.n_ctx = 256;
    e.load(ls);
    e.prefill(prompt.tokens);
    std::vector<int> ids;
    for (int i = 0; i < 64; ++i) {
        const auto l = e.last_logits();
        ids.push_back(static_cast<int>(std::max_element(l.begin(), l.end()) - l.begin()));
        e.decode_step(ids.back());
    }
    sb::HttpClient c(server.url(), sb::HttpTimeouts{10000, 60000});
    const std::string text =
        json::parse(c.post_json("/detokenize", json{{"tokens", ids}}).body)["content"];
    const auto bad = text.find("\xEF\xBF\xBD");
    ASSERT_NE(bad, std::string::npos) << text;
    EXPECT_LT(bad + 3, text.size()) << "the bytes are inside the text, not only at its end";
    // The same request to a llama-server whose requests ban the model's tokens that are not
    // UTF-8 on their own (what serve -m and run --engine http send for a synthetic model):
    // all 64 tokens stream.
    spec.banned_tokens = sb::non_utf8_tokens(tiny_seed1());
    EXPECT_FALSE(spec.banned_tokens.empty());
    for (int id : ids)
        if (std::find(spec.banned_tokens.begin(), spec.banned_tokens.end(), id) !=
            spec.banned_tokens.end()) {
            sb::LlamaServer banned(spec, {}, sb::now_ns, sb::sleep_ns);
            const sb::Generation g = banned.engine().generate("", prompt, 64, 1);
            EXPECT_EQ(sb::compute_timing(g).n_out, 64);
            return;
        }
    ADD_FAILURE() << "none of the tokens generated is one of those banned";
}

// An API key given to the llama-server serve or explain starts (--server-args "--api-key K")
// reaches no message, no document (its argv included) and no store: K is found nowhere.
TEST(Serve, AnApiKeyInServerArgsIsNeverWrittenAnywhere) {
    const std::string key = "K3y-0f-th1s-t3st";
    const std::vector<std::vector<std::string>> commands = {
        {"serve", "-m", tiny_model(), "--server-args", "-c 512 --api-key " + key, "--concurrency",
         "1", "--requests", "2", "-p", "8", "-n", "2", "--idle", "0"},
        {"serve", "-m", tiny_model(), "--server-args=--api-key=" + key, "--concurrency", "1",
         "--requests", "2", "-p", "8", "-n", "2", "--idle", "0"},
        {"explain", "-m", tiny_model(), "--server-args", "--api-key '" + key + "'", "-p", "64",
         "-n", "2", "-r", "1", "--no-ops"}};
    int documents = 0;
    for (const auto& c : commands) {
        SCOPED_TRACE(c[0] + " " + c[4]);
        TempDir t;
        std::vector<std::string> args = c;
        const std::string out = t.file("doc.json"), db = t.file("store.sqlite");
        args.insert(args.end(), {"--out", out, "--db", db, "-o", "json"});
        const Proc p = run_sb(args, 300);
        EXPECT_TRUE(p.exit_code == 0 || p.exit_code == 1 || p.exit_code == 2) << p.err;
        EXPECT_EQ(p.out.find(key), std::string::npos) << p.out.substr(0, 2000);
        EXPECT_EQ(p.err.find(key), std::string::npos) << p.err;
        // llama-server refuses --api-key=K (its error line quotes it): nothing is measured.
        if (!fs::exists(out))
            continue;
        ++documents;
        EXPECT_EQ(read_file(out).find(key), std::string::npos);
        if (fs::exists(db)) {
            EXPECT_EQ(read_file(db).find(key), std::string::npos);
            const Proc exported = run_sb({"db", "export", "1", "--db", db});
            EXPECT_EQ(exported.out.find(key), std::string::npos);
        }
        // The redacted words are kept, so the reader sees a key was given.
        EXPECT_NE(read_file(out).find("--api-key"), std::string::npos);
    }
    EXPECT_EQ(documents, 2);
}
