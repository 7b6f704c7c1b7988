// `stagebench explain` end to end: the real binary, the real llama.cpp in-process and a real
// llama-server on loopback (started by explain as the README shows, or by the test for --url),
// and the fault server for a server that is not llama-server. Which setting explains how much
// of the gap at what accuracy is a benchmark (bench/explain_attribution.sh); these tests assert
// what every run must hold, with a micro-batch 16 times smaller than the bench's, whose cost
// is far beyond any noise.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli_harness.hpp"
#include "engine/http_client.hpp"
#include "engine/llama_engine.hpp"
#include "engine/process.hpp"
#include "engine/text_generation.hpp"
#include "fault_server.hpp"
#include "scenario/repetition.hpp"

namespace {

using namespace sbtest;
using nlohmann::json;
namespace fs = std::filesystem;

const json* measure(const json& doc, const std::string& id) {
    for (const auto& m : doc["explain"]["measures"])
        if (m["id"] == id)
            return &m;
    return nullptr;
}

void expect_stat_with_ci(const json& st, const std::string& what) {
    ASSERT_TRUE(st["median_ns"].is_number()) << what << ": " << st;
    ASSERT_TRUE(st["ci95_lo_ns"].is_number()) << what << ": " << st;
    ASSERT_TRUE(st["ci95_hi_ns"].is_number()) << what << ": " << st;
    EXPECT_GT(st["median_ns"].get<double>(), 0) << what;
    EXPECT_GE(st["ci95_lo_ns"].get<double>(), 0) << what << ": a time has no negative bound";
    EXPECT_LE(st["ci95_lo_ns"].get<double>(), st["median_ns"].get<double>()) << what;
    EXPECT_GE(st["ci95_hi_ns"].get<double>(), st["median_ns"].get<double>()) << what;
}

void expect_difference_with_ci(const json& p, const std::string& what) {
    ASSERT_TRUE(p["ns"].is_number()) << what << ": " << p;
    ASSERT_TRUE(p["ci95_lo_ns"].is_number()) << what << ": " << p;
    ASSERT_TRUE(p["ci95_hi_ns"].is_number()) << what << ": " << p;
    EXPECT_LE(p["ci95_lo_ns"].get<double>(), p["ci95_hi_ns"].get<double>()) << what;
}

// One explain run against a real llama-server whose micro-batch is 32 (the bench's: 512): the
// document's levels, differences and parts, then what every output of it holds (Markdown,
// --db, db show, compare, report in Chromium, --trace).
TEST(Explain, NamesTheMicroBatchAsTheLargestPartOfThePrefillGap) {
    TempDir t;
    const std::string out = t.file("e.json"), db = t.file("r.sqlite"), trace = t.file("e.trace");
    // Threads and devices as the server has them by default or is told, so that the micro-batch
    // and the context (llama-server's 2048 cells per slot) are the settings that differ.
    Proc p = run_sb({"explain",
                     "-m",
                     tiny_model(),
                     "-p",
                     "256",
                     "-n",
                     "8",
                     "-r",
                     "3",
                     "-t",
                     "1",
                     "--device",
                     "CPU+BLAS",
                     "--server-args",
                     "-ub 32 -t 1",
                     "--concurrency",
                     "2",
                     "--replay",
                     "4",
                     "--out",
                     out,
                     "--db",
                     db,
                     "--trace",
                     trace},
                    1200);
    std::cout << p.out << "\n" << p.err << "\n";
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    const json& e = doc["explain"];
    EXPECT_EQ(doc["command"], "explain");
    EXPECT_EQ(e["server_kind"], "llama-server");
    EXPECT_TRUE(e["settings_read"].get<bool>());
    EXPECT_EQ(e["server_args"], json::array({"-ub", "32", "-t", "1"}));

    // Every level measured in every round, each stage's median with its CI.
    for (const char* id : {"ops", "graph", "generation", "server", "served@2"}) {
        const json* m = measure(doc, id);
        ASSERT_NE(m, nullptr) << id;
        EXPECT_EQ((*m)["runs"].size(), 3u) << id;
        EXPECT_EQ((*m)["n_failed"], 0) << id << ": " << (*m)["runs"];
        for (const char* stage : {"prefill", "decode"})
            expect_stat_with_ci((*m)[stage], std::string(id) + " " + stage);
    }
    // Each round ran every measure, forward then backward.
    std::set<int> sequences;
    for (const auto& m : e["measures"])
        for (const auto& r : m["runs"])
            sequences.insert(r["sequence"].get<int>());
    EXPECT_EQ(sequences.size(), 3 * e["order"].size());

    // The settings: the micro-batch from the arguments, the threads from the startup log, the
    // context from /props; each that differs measured alone.
    std::map<std::string, json> settings;
    for (const auto& s : e["settings"])
        settings[s["name"]] = s;
    EXPECT_EQ(settings["n_ubatch"]["server"], "32");
    EXPECT_EQ(settings["n_ubatch"]["bench"], "512");
    EXPECT_EQ(settings["n_ubatch"]["measure"], "graph+n_ubatch");
    EXPECT_EQ(settings["threads"]["server"], "1");
    EXPECT_EQ(settings["threads"]["source"], "startup log");
    EXPECT_FALSE(settings["threads"]["differs"].get<bool>());
    EXPECT_EQ(settings["n_ctx"]["source"], "/props");
    ASSERT_NE(measure(doc, "graph+n_ubatch"), nullptr);
    EXPECT_EQ((*measure(doc, "graph+n_ubatch"))["config"]["n_ubatch"], 32);

    // Each step between levels and each part of the gap, with a CI.
    for (const char* stage : {"prefill", "decode"}) {
        int steps = 0;
        for (const auto& s : e["steps"])
            if (s["stage"] == stage) {
                expect_difference_with_ci(s,
                                          std::string(stage) + " " + s["name"].get<std::string>());
                ++steps;
            }
        EXPECT_EQ(steps, 4) << "ops>graph>generation>server, served@2-server";
    }
    double gap = 0, sum = 0, largest = 0;
    std::string largest_name;
    for (const auto& part : e["parts"]) {
        if (part["stage"] != "prefill")
            continue;
        expect_difference_with_ci(part, part["name"]);
        if (part["kind"] == "gap") {
            gap = part["ns"].get<double>();
            continue;
        }
        sum += part["ns"].get<double>();
        if (part["ns"].get<double>() > largest) {
            largest = part["ns"].get<double>();
            largest_name = part["name"];
        }
    }
    EXPECT_GT(gap, 0);
    EXPECT_NEAR(sum, gap, 1e-6 * gap) << "the parts add up to the gap";
    EXPECT_EQ(largest_name, "n_ubatch");
    ASSERT_EQ(e["verdicts"].size(), 2u);
    EXPECT_NE(e["verdicts"][0].get<std::string>().find("of the gap is micro-batch (-ub): 32 on "
                                                       "the server against 512"),
              std::string::npos)
        << e["verdicts"][0];
    // Markdown on stdout: the waterfall and the verdict.
    EXPECT_NE(p.out.find("### Where the gap between the bench and the server goes"),
              std::string::npos);
    EXPECT_NE(p.out.find("| micro-batch (-ub): 32 on the server against 512 | +"),
              std::string::npos);

    // --db and db show.
    EXPECT_NE(p.err.find("stored as #1"), std::string::npos) << p.err;
    Proc show = run_sb({"db", "show", "1", "--db", db});
    EXPECT_EQ(show.exit_code, 0) << show.err;
    EXPECT_NE(show.out.find("Where the gap between the bench and the server goes"),
              std::string::npos)
        << show.out;

    // --trace: a track per level.
    const json tr = json::parse(read_file(trace));
    std::set<std::string> tracks;
    for (const auto& ev : tr["traceEvents"])
        if (ev.value("ph", "") == "M" && ev.value("name", "") == "thread_name")
            tracks.insert(ev["args"]["name"].get<std::string>());
    for (const char* name : {"level 1: ops", "level 2: graph", "level 2: graph+n_ubatch",
                             "level 3: generation", "level 4: server", "level 5: served@2"})
        EXPECT_EQ(tracks.count(name), 1u) << name;

    // compare of two explain documents: level by level.
    const std::string b = t.file("b.json");
    fs::copy_file(out, b);
    Proc c = run_sb({"compare", out, b, "-o", "json"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const json cmp = json::parse(c.out);
    bool server_row = false;
    for (const auto& row : cmp["rows"])
        if (row["test"] == "server" && row["stage"] == "prefill") {
            server_row = true;
            EXPECT_EQ(row["ratios"][0]["verdict"], "no difference");
        }
    EXPECT_TRUE(server_row) << c.out;

    // report: the waterfall charts in Chromium, every label shown, none clipped or overlapping.
    const fs::path dir = fs::path(SB_BINARY_DIR) / "explain_test";
    fs::create_directories(dir);
    const std::string html = (dir / "explain.html").string();
    Proc r = run_sb({"report", out, "-o", html});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string why;
    std::vector<std::string> check =
        report_check_argv(html, (dir / "explain.png").string(), t.file("charts.json"), why);
    ASSERT_FALSE(check.empty()) << why;
    for (const char* kind : {"explain-waterfall-prefill", "explain-waterfall-decode"})
        for (const char* opt : {"--expect-chart", "--expect-labels-fit"}) {
            check.push_back(opt);
            check.push_back(kind);
        }
    for (const char* text : {"prefill: time to the first token", "micro-batch (-ub)",
                             "Settings: the bench against the server"}) {
        check.push_back("--expect-text");
        check.push_back(text);
    }
    Proc ch = sbtest::run(check, 180);
    std::cout << "report: " << html << "\n" << ch.out;
    EXPECT_EQ(ch.exit_code, 0) << ch.out << ch.err;
    // The chart's bars are the waterfall of the document: the bench, each part from where the
    // one before ended, the server.
    const json charts = json::parse(read_file(t.file("charts.json")));
    bool drawn = false;
    for (const auto& chart : charts) {
        if (chart["kind"] != "explain-waterfall-prefill")
            continue;
        drawn = true;
        const json& bars = chart["datasets"][0]["data"];
        const double base = (*measure(doc, "graph"))["prefill"]["median_ns"].get<double>() / 1e6;
        const double top = (*measure(doc, "server"))["prefill"]["median_ns"].get<double>() / 1e6;
        EXPECT_NEAR(bars.front()[1].get<double>(), base, 1e-9);
        EXPECT_NEAR(bars.back()[1].get<double>(), top, 1e-9);
        EXPECT_EQ(chart["labels"].size(), bars.size());
    }
    EXPECT_TRUE(drawn);
}

// Starts a streamed answer of n one-token chunks, 1 ms apart; the caller sends the last message.
void stream_tokens(FaultConn& c, int n) {
    c.begin_chunked(200, "text/event-stream");
    for (int i = 0; i < n; ++i) {
        c.sleep_ms(1);
        c.chunk(sse_text(" t"));
    }
}

// A server that is not llama-server (the fault server, speaking OpenAI's streamed completions)
// gets levels 4 and 5 and the remainder, with a line saying its settings could not be read.
TEST(Explain, ANotLlamaServerIsMeasuredWithoutItsSettings) {
    FaultServer server([&](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        const int n = req.json().value("max_tokens", 1);
        stream_tokens(c, n);
        c.chunk(sse_final(64, n));
        c.end_chunked();
    });
    TempDir t;
    Proc p = run_sb({"explain", "-m", tiny_model(), "--url", server.url(), "-p", "64", "-n", "4",
                     "-r", "2", "-t", "1", "--no-ops", "--concurrency", "2", "-o", "json"},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(p.out);
    const json& e = doc["explain"];
    EXPECT_FALSE(e["settings_read"].get<bool>());
    EXPECT_EQ(e["server_kind"], "openai-compatible");
    bool line = false;
    for (const auto& f : e["findings"])
        line = line || f["message"].get<std::string>().find("settings could not be read") !=
                           std::string::npos;
    EXPECT_TRUE(line) << e["findings"];
    for (const auto& s : e["settings"]) {
        EXPECT_TRUE(s["server"].is_null()) << s;
        EXPECT_TRUE(s["measure"].is_null()) << s;
    }
    for (const char* id : {"server", "served@2"}) {
        ASSERT_NE(measure(doc, id), nullptr);
        EXPECT_EQ((*measure(doc, id))["n_failed"], 0) << (*measure(doc, id))["runs"];
    }
    bool remainder = false;
    for (const auto& part : e["parts"])
        remainder = remainder || (part["kind"] == "remainder" && part["ns"].is_number());
    EXPECT_TRUE(remainder);
    // The Markdown says so too.
    Proc md = run_sb({"explain", "-m", tiny_model(), "--url", server.url(), "-p", "64", "-n", "2",
                      "-r", "1", "-t", "1", "--no-ops", "-q"},
                     600);
    EXPECT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("its settings could not be read"), std::string::npos) << md.out;
}

// A server that claims 10^12 prompt tokens (usage and its timings) for a 64-token prompt is not
// believed, as serve and run --engine http do not believe it: the counts are left out with a
// note, and the levels are measured.
TEST(Explain, AServersClaimOfTenToTheTwelveTokensIsNotBelieved) {
    FaultServer server([&](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        const int n = req.json().value("max_tokens", 1);
        stream_tokens(c, n);
        const json usage{
            {"object", "text_completion"},
            {"choices", json::array()},
            {"usage",
             {{"prompt_tokens", 1000000000000LL}, {"completion_tokens", n}, {"total_tokens", n}}},
            {"timings",
             {{"prompt_n", 1000000000000LL},
              {"prompt_ms", 1.0},
              {"predicted_n", 1000000000000LL},
              {"predicted_ms", 1.0}}}};
        c.chunk("data: " + usage.dump() + "\n\ndata: [DONE]\n\n");
        c.end_chunked();
    });
    Proc p = run_sb({"explain", "-m", tiny_model(), "--url", server.url(), "-p", "64", "-n", "4",
                     "-r", "1", "-t", "1", "--no-ops", "--concurrency", "2", "-o", "json", "-q"},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(p.out);
    for (const char* id : {"server", "served@2"}) {
        const json* m = measure(doc, id);
        ASSERT_NE(m, nullptr) << id;
        EXPECT_EQ((*m)["n_failed"], 0) << (*m)["runs"];
        for (const auto& r : (*m)["runs"]) {
            EXPECT_TRUE(r["prompt_tokens"].is_null()) << r;
            if (r["server"].is_object()) {
                EXPECT_TRUE(r["server"]["prompt_n"].is_null()) << r;
                EXPECT_TRUE(r["server"]["predicted_n"].is_null()) << r;
            }
            for (const auto& c : r["clients"])
                EXPECT_TRUE(c["prompt_tokens"].is_null()) << c;
        }
    }
    bool noted = false;
    for (const auto& r : (*measure(doc, "server"))["runs"])
        for (const auto& n : r["notes"])
            noted = noted || n.get<std::string>().find(
                                 "the server claims 1000000000000 prompt "
                                 "tokens (usage)") != std::string::npos;
    EXPECT_TRUE(noted) << (*measure(doc, "server"))["runs"];
}

// Bad input is one line and exit 2, before anything is measured (no document written).
TEST(Explain, BadInputIsOneLineAndExitTwoBeforeAnythingIsMeasured) {
    TempDir t;
    auto expect_bad = [&](const std::vector<std::string>& extra, const std::string& words,
                          const char* n_prompt = "64") {
        const std::string out = t.file("bad.json");
        std::vector<std::string> args{"explain", "-m", tiny_model(), "-p",       n_prompt, "-n",
                                      "4",       "-r", "1",          "--no-ops", "--out",  out};
        args.insert(args.end(), extra.begin(), extra.end());
        Proc p = run_sb(args, 300);
        EXPECT_EQ(p.exit_code, 2) << words << ": " << p.err;
        EXPECT_NE(p.err.find(words), std::string::npos) << p.err;
        EXPECT_FALSE(p.err.find("round 1/") != std::string::npos) << "nothing measured";
        EXPECT_FALSE(fs::exists(out)) << words;
    };
    // A dead server.
    const int port = sb::free_loopback_port();
    expect_bad({"--url", "http://127.0.0.1:" + std::to_string(port)}, "127.0.0.1");
    // Server flags the graph level would be measured with, out of range: before the server is
    // asked anything, not after the levels before it were measured.
    expect_bad({"--url", "http://127.0.0.1:" + std::to_string(port), "--server-args", "-t 999999"},
               "--server-args: -t 999999: expected 1..");
    // A workload larger than the server's context (llama.cpp pads -c to 256 cells).
    expect_bad({"--server-args", "-c 256"}, "does not fit the server's context of 256 tokens",
               "512");
    // A flag llama-server does not know: it does not start.
    expect_bad({"--server-args", "--no-such-flag"}, "invalid argument: --no-such-flag");
    // A model the server does not serve: a llama-server of another model at --url.
    const std::string other = t.file("other.gguf");
    ASSERT_EQ(run_sb({"synth", "--preset", "tiny", "--layers", "2", "-o", other}).exit_code, 0);
    const int sp = sb::free_loopback_port();
    const pid_t pid =
        spawn_bg({peer("llama-server"), "-m", other, "--host", "127.0.0.1", "--port",
                  std::to_string(sp), "-c", "512", "-np", "1", "-t", "1", "--no-webui"},
                 t.file("server.log"));
    ASSERT_TRUE(sb::wait_for_port("127.0.0.1", sp, 60000));
    bool ready = false;
    sb::HttpClient health("http://127.0.0.1:" + std::to_string(sp), sb::HttpTimeouts{2000, 2000});
    for (int i = 0; i < 600 && !ready; ++i) {
        try {
            ready = health.get("/health").status == 200;
        } catch (const sb::Error&) {
        }
        if (!ready)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(ready) << read_file(t.file("server.log"));
    expect_bad({"--url", "http://127.0.0.1:" + std::to_string(sp)}, "serves another model");
    signal_and_wait(pid, SIGTERM);
    // A prompt shorter than the chat template itself.
    expect_bad({}, "is shorter than a one-word chat prompt", "4");
    // Usage: a single generated token has no time per token after the first.
    Proc one = run_sb({"explain", "-m", tiny_model(), "-n", "1"});
    EXPECT_EQ(one.exit_code, 2) << one.err;
}

// Level 3's loop, in-process: the prompt the template and tokenizer make, exactly n tokens
// generated, none of them an end-of-generation or banned token, the clock in order.
TEST(Explain, TheApplicationLoopGeneratesWhatItIsAsked) {
    sb::TestConfig c;
    c.model_path = tiny_model();
    c.n_prompt = 64;
    c.n_gen = 8;
    c.n_threads = 1;
    sb::LlamaEngine e;
    e.load(sb::load_spec_for(c));
    const sb::ChatPrompter p(e);
    EXPECT_NE(p.template_used().find("chatml"), std::string::npos) << p.template_used();
    const std::string prompt = p.apply("hello there");
    EXPECT_EQ(prompt, "<|im_start|>user\nhello there<|im_end|>\n<|im_start|>assistant\n");
    sb::SamplerSettings s;
    s.banned = p.non_utf8_tokens();
    const sb::TextGeneration g = sb::generate_text(e, p, "hello there", 8, s, 7);
    EXPECT_EQ(g.prompt_tokens, static_cast<int64_t>(p.tokenize(prompt).size()));
    EXPECT_EQ(g.output_tokens, 8);
    EXPECT_LE(g.start_ns, g.first_token_ns);
    EXPECT_LE(g.first_token_ns, g.end_ns);
    EXPECT_FALSE(g.text.empty());
    // The same seed draws the same text; banned tokens never come.
    const sb::TextGeneration again = sb::generate_text(e, p, "hello there", 8, s, 7);
    EXPECT_EQ(again.text, g.text);
    EXPECT_THROW(sb::generate_text(e, p, "x", 0, s, 7), sb::Error);
}

}  // namespace
