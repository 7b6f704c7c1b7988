// --junit and compare's regression gates end to end: the real binary, real runs of synthetic
// models, and the XML read back by a real JUnit consumer, Debian's python3-junitparser
// (tests/integration/junit_read.py under /usr/bin/python3; scripts/setup-deps.sh installs it).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_harness.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

// What junitparser read from the file (junit_read.py's JSON); fails the test when it could not.
json junit(const std::string& path) {
    const Proc p = run(
        {"/usr/bin/python3", std::string(SB_SOURCE_DIR) + "/tests/integration/junit_read.py", path},
        120);
    EXPECT_EQ(p.exit_code, 0) << p.err << "\n" << read_file(path);
    return p.exit_code == 0 ? json::parse(p.out) : json{{"suites", json::array()}};
}

const json& case_named(const json& suite, const std::string& name) {
    for (const auto& c : suite["cases"])
        if (c["name"] == name)
            return c;
    ADD_FAILURE() << "no case '" << name << "' in " << suite.dump(1);
    static const json none;
    return none;
}

double number(const json& c, const std::string& property) {
    return std::stod(c["properties"].at(property).get<std::string>());
}

// The one error line's text after "stagebench: error: ".
std::string error_text(const std::string& err) {
    const auto at = err.find("stagebench: error: ");
    if (at == std::string::npos)
        return "";
    const auto end = err.find('\n', at);
    return err.substr(at + 19, end - at - 19);
}

TEST(Junit, RunCasesReadBackByJunitparserWithEveryCharacterOfThePath) {
    TempDir t;
    // A folder name with markup, quotes, a control character and a byte that is not UTF-8.
    const std::string odd = t.file("m<&>\"'\x01\xff");
    fs::create_directories(odd);
    const std::string model = odd + "/tiny.gguf";
    fs::copy_file(tiny_model(), model);
    const std::string xml = t.file("junit.xml"), out = t.file("r.json");
    const Proc p = run_sb({"run", "-m", model, "-p", "16,32", "-n", "4", "-r", "2", "--membw",
                           "off", "--idle", "0", "-q", "--out", out, "--junit", xml});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    const json j = junit(xml);
    ASSERT_EQ(j["suites"].size(), 1u) << j;
    const json& s = j["suites"][0];
    EXPECT_EQ(s["name"], "stagebench run");
    EXPECT_EQ(s["tests"], 2);
    EXPECT_EQ(s["failures"], 0);
    EXPECT_EQ(s["errors"], 0);
    EXPECT_EQ(s["timestamp"], doc["started_at"]);
    EXPECT_EQ(s["properties"]["tool_version"], doc["tool"]["version"]);
    ASSERT_EQ(s["cases"].size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        const json& c = s["cases"][i];
        const json& test = doc["tests"][i];
        EXPECT_EQ(c["name"], "tiny.gguf CPU " + test["config"]["test"].get<std::string>());
        EXPECT_EQ(c["classname"], "stagebench.run");
        EXPECT_TRUE(c["results"].empty()) << c;
        // The figures are the document's, under names with their units.
        for (const std::string stage : {"prefill", "decode"}) {
            EXPECT_DOUBLE_EQ(number(c, stage + "_tokens_per_s_mean"),
                             test[stage]["throughput"]["mean"].get<double>());
            EXPECT_DOUBLE_EQ(number(c, stage + "_tokens_per_s_ci95_lo"),
                             test[stage]["throughput"]["ci95_lo"].get<double>());
            EXPECT_DOUBLE_EQ(number(c, stage + "_tokens_per_s_ci95_hi"),
                             test[stage]["throughput"]["ci95_hi"].get<double>());
            EXPECT_DOUBLE_EQ(number(c, stage + "_robust_tokens_per_s"),
                             test[stage]["robust"]["tokens_per_s"].get<double>());
        }
        EXPECT_EQ(c["properties"]["decode_n_tokens"], "4");
        // The path as XML can hold it: markup and quotes back as they were, the control
        // character as the text \x01, the invalid byte as U+FFFD.
        EXPECT_EQ(c["properties"]["model_path"], t.file("m<&>\"'\\x01\xEF\xBF\xBD") + "/tiny.gguf");
    }
}

TEST(Junit, AnErrorBeforeMeasuringIsOneCaseInErrorWithItsLine) {
    TempDir t;
    const std::string xml = t.file("junit.xml");
    const Proc p =
        run_sb({"run", "-m", t.file("no<such>&model.gguf"), "-p", "8", "-n", "2", "--junit", xml});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(error_lines(p.err), 1u) << p.err;
    const json j = junit(xml);
    ASSERT_EQ(j["suites"].size(), 1u);
    EXPECT_EQ(j["suites"][0]["errors"], 1);
    const json& c = j["suites"][0]["cases"][0];
    EXPECT_EQ(c["name"], "run");
    ASSERT_EQ(c["results"].size(), 1u);
    EXPECT_EQ(c["results"][0]["kind"], "error");
    EXPECT_EQ(c["results"][0]["type"], "input");
    EXPECT_EQ(c["results"][0]["message"], error_text(p.err));
    EXPECT_NE(c["results"][0]["message"].get<std::string>().find("no<such>&model.gguf"),
              std::string::npos);
}

TEST(Junit, AJunitFileThatCannotBeWrittenIsRefusedBeforeMeasuring) {
    TempDir t;
    const Proc p = run_sb({"run", "-m", tiny_model(), "-p", "8", "-n", "2", "--junit",
                           t.file("no/such/dir/junit.xml")});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(error_lines(p.err), 1u) << p.err;
    EXPECT_NE(p.err.find("--junit"), std::string::npos) << p.err;
    EXPECT_EQ(p.err.find("pp8"), std::string::npos) << p.err;  // nothing measured
}

TEST(Junit, AFailedTestKeepsItsErrorAndTheOthersTheirFigures) {
    TempDir t;
    const std::string bad = t.file("bad\"<model>.gguf");
    write_file(bad, "not a GGUF file at all");
    const std::string xml = t.file("junit.xml");
    const Proc p = run_sb({"run", "-m", tiny_model() + "," + bad, "-p", "8", "-n", "2", "-r", "1",
                           "--membw", "off", "--idle", "0", "-q", "--junit", xml});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    const json j = junit(xml);
    ASSERT_EQ(j["suites"].size(), 1u);
    const json& s = j["suites"][0];
    EXPECT_EQ(s["tests"], 2);
    EXPECT_EQ(s["errors"], 1);
    const json& ok = case_named(s, "tiny.gguf CPU pp8+tg2");
    EXPECT_TRUE(ok["results"].empty());
    EXPECT_GT(number(ok, "prefill_tokens_per_s_mean"), 0);
    const json& failed = case_named(s, "bad\"<model>.gguf CPU pp8+tg2");
    ASSERT_EQ(failed["results"].size(), 1u) << failed;
    EXPECT_EQ(failed["results"][0]["kind"], "error");
    EXPECT_EQ(failed["results"][0]["type"], "input");
    EXPECT_NE(failed["results"][0]["message"].get<std::string>().find(bad), std::string::npos)
        << failed;
    EXPECT_EQ(failed["properties"].count("prefill_tokens_per_s_mean"), 0u);
}

// llama.cpp stops the process in the middle of a sweep (its RPC server killed): the last word
// writes the JUnit file with the test that ended and the one that was running, in error.
TEST(Junit, WrittenByTheLastWordWhenLlamaCppStopsTheProcess) {
    TempDir t;
    RpcServer server(t);
    ASSERT_TRUE(server.ready);
    const std::string out = t.file("r.json"), xml = t.file("junit.xml");
    const pid_t run = spawn_bg({stagebench_bin(),
                                "run",
                                "-m",
                                tiny_model(),
                                "-p",
                                "16,32",
                                "-n",
                                "256",
                                "-r",
                                "3",
                                "--rpc",
                                server.endpoint(),
                                "--device",
                                "RPC0",
                                "--membw",
                                "off",
                                "--idle",
                                "0",
                                "--out",
                                out,
                                "--junit",
                                xml,
                                "-q"},
                               t.file("run.log"));
    bool first_done = false;
    for (int i = 0; i < 15000 && !first_done; ++i) {
        try {
            first_done = json::parse(read_file(out))["tests"].size() == 1;
        } catch (...) {
        }
        if (!first_done)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!first_done)
        kill(run, SIGKILL);
    ASSERT_TRUE(first_done) << "the first test did not end within 5 minutes";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server.stop(SIGKILL);
    const int rc = wait_exit(run, 120);
    const std::string err = read_file(t.file("run.log.err"));
    EXPECT_EQ(rc, 1) << err;
    const json j = junit(xml);
    ASSERT_EQ(j["suites"].size(), 1u) << err;
    const json& s = j["suites"][0];
    ASSERT_EQ(s["tests"], 2) << s;
    EXPECT_EQ(s["errors"], 1) << s;
    EXPECT_TRUE(s["cases"][0]["results"].empty()) << s["cases"][0];
    EXPECT_GT(number(s["cases"][0], "prefill_tokens_per_s_mean"), 0);
    ASSERT_EQ(s["cases"][1]["results"].size(), 1u) << s["cases"][1];
    EXPECT_EQ(s["cases"][1]["results"][0]["kind"], "error");
    EXPECT_NE(s["cases"][1]["results"][0]["message"].get<std::string>().find("llama.cpp"),
              std::string::npos)
        << s["cases"][1];
}

TEST(Junit, SustainedRoundsAndTheVerdict) {
    TempDir t;
    const std::string xml = t.file("junit.xml"), out = t.file("s.json");
    const Proc p = run_sb({"sustained", "-m", tiny_model(), "--rounds", "3", "--prompt-tokens", "8",
                           "--max-tokens", "4", "--idle", "0", "-q", "--out", out, "--junit", xml});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    const json j = junit(xml);
    ASSERT_EQ(j["suites"].size(), 2u) << j;
    const json& phase = doc["sustained"]["phases"][0];
    const std::string name = phase["name"];  // "rounds" without background load
    EXPECT_EQ(j["suites"][1]["name"], "stagebench sustained " + name);
    EXPECT_EQ(j["suites"][1]["tests"], 4);  // three rounds and the verdict
    for (int r = 1; r <= 3; ++r) {
        const json& c = case_named(j["suites"][1], "round " + std::to_string(r));
        EXPECT_DOUBLE_EQ(number(c, "decode_tokens_per_s"),
                         phase["rounds"][r - 1]["decode_tps"].get<double>());
        EXPECT_DOUBLE_EQ(number(c, "prefill_tokens_per_s"),
                         phase["rounds"][r - 1]["prefill_tps"].get<double>());
    }
    const json& v = case_named(j["suites"][1], "verdict");
    EXPECT_EQ(v["properties"]["verdict"], phase["across"]["verdict"]);
}

TEST(Junit, ServePointsAgainstARealLlamaServer) {
    TempDir t;
    const std::string xml = t.file("junit.xml"), out = t.file("serve.json");
    const Proc p = run_sb({"serve", "-m", tiny_model(), "--slots", "2", "--concurrency", "1,2",
                           "--requests", "4", "-p", "16", "-n", "4", "--out", out, "--junit", xml},
                          300);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    const json j = junit(xml);
    const json& s = j["suites"][0];
    EXPECT_EQ(s["name"], "stagebench serve");
    EXPECT_EQ(s["tests"], 2);
    for (const std::string name : {"concurrency 1", "concurrency 2"}) {
        const json& c = case_named(s, name);
        const json& pt = doc["serve"]["points"][name == "concurrency 1" ? 0 : 1];
        EXPECT_EQ(c["properties"]["ok"], "4");
        EXPECT_DOUBLE_EQ(number(c, "output_tokens_per_s"), pt["output_tokens_per_s"].get<double>());
        EXPECT_DOUBLE_EQ(number(c, "ttft_median_ms"), pt["ttft"]["median_ms"].get<double>());
    }
}

// ---- compare gates on crafted documents: exact verdicts, no noise --------------------------

std::string junit_fixture(const std::string& name) {
    return std::string(SB_SOURCE_DIR) + "/tests/fixtures/documents/" + name;
}

// run2.json (4 repetitions of pp8+tg4) with its rates replaced by these samples.
std::string crafted_run(const TempDir& t, const std::string& name, std::vector<double> prefill,
                        std::vector<double> decode) {
    json d = json::parse(read_file(junit_fixture("run2.json")));
    for (auto& test : d["tests"]) {
        test["prefill"]["tokens_per_s"] = prefill;
        test["decode"]["tokens_per_s"] = decode;
    }
    const std::string path = t.file(name);
    write_file(path, d.dump(1));
    return path;
}

std::vector<double> scaled(std::vector<double> v, double f) {
    for (auto& x : v)
        x *= f;
    return v;
}

TEST(CompareGates, SlowerBeyondTheThresholdFailsEverywhereItIsReported) {
    TempDir t;
    const std::vector<double> pre{1000, 1002, 998, 1001}, dec{100, 100.2, 99.8, 100.1};
    const std::string base = crafted_run(t, "base.json", pre, dec);
    const std::string slow = crafted_run(t, "slow.json", scaled(pre, 0.5), dec);
    const std::string xml = t.file("junit.xml"), out = t.file("c.json");
    const Proc p =
        run_sb({"compare", base, slow, "--fail-if-slower", "5%", "--junit", xml, "--out", out});
    EXPECT_EQ(p.exit_code, 1) << p.err;
    EXPECT_EQ(error_lines(p.err), 0u) << p.err;
    EXPECT_NE(p.err.find("stagebench: gate fail-if-slower 5%: failed (1 of 3 checks"),
              std::string::npos)
        << p.err;
    // Markdown: the Gates section.
    EXPECT_NE(p.out.find("## Gates"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("| fail-if-slower 5% | pp8+tg4 | prefill | tokens_per_s | B/A | 0.500 | "
                         "failed: B/A's 95% CI [0.499, 0.501] lies wholly below 0.952 |"),
              std::string::npos)
        << p.out;
    // The compare document.
    const json c = json::parse(read_file(out));
    ASSERT_EQ(c["gates"].size(), 1u);
    EXPECT_EQ(c["gates"][0]["verdict"], "failed");
    EXPECT_EQ(c["gates"][0]["checks"][0]["verdict"], "failed");
    EXPECT_EQ(c["gates"][0]["checks"][1]["stage"], "decode");
    EXPECT_EQ(c["gates"][0]["checks"][1]["verdict"], "passed");
    // JUnit: the failed check is a failure, the others pass.
    const json j = junit(xml);
    ASSERT_EQ(j["suites"].size(), 2u);
    const json& g = j["suites"][1];
    EXPECT_EQ(g["name"], "gate fail-if-slower 5%");
    EXPECT_EQ(g["failures"], 1);
    const json& f = case_named(g, "pp8+tg4 prefill tokens_per_s B/A");
    ASSERT_EQ(f["results"].size(), 1u);
    EXPECT_EQ(f["results"][0]["kind"], "failure");
    EXPECT_EQ(f["results"][0]["type"], "gate");
    EXPECT_DOUBLE_EQ(number(f, "ratio"), 0.5);
    EXPECT_TRUE(case_named(g, "pp8+tg4 decode tokens_per_s B/A")["results"].empty());
    // The ratios themselves are in the compare suite, as data.
    const json& r = case_named(j["suites"][0], "pp8+tg4 prefill tokens_per_s B/A");
    EXPECT_DOUBLE_EQ(number(r, "ratio"), c["rows"][0]["ratios"][0]["median"].get<double>());
    EXPECT_DOUBLE_EQ(number(r, "baseline_tokens_per_s_median"), 1000.5);
}

TEST(CompareGates, NoiseStraddlingTheThresholdIsInconclusiveAndPasses) {
    TempDir t;
    // 3 % slower with 10 % noise: the CI straddles 1/1.05.
    const std::vector<double> pre{1000, 1100, 900, 1050}, dec{100, 110, 90, 105};
    const std::string base = crafted_run(t, "base.json", pre, dec);
    const std::string noisy = crafted_run(t, "noisy.json", scaled(pre, 0.97), scaled(dec, 0.97));
    const Proc p = run_sb({"compare", base, noisy, "--fail-if-slower", "5%"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("fail-if-slower 5%: passed (0 of 3 checks with the 95% CI wholly beyond "
                         "the threshold; 3 inconclusive)"),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("inconclusive: the 95% CI ["), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("] straddles 0.952"), std::string::npos) << p.out;
}

TEST(CompareGates, EnergyPerTokenGate) {
    TempDir t;
    json d = json::parse(read_file(junit_fixture("run-telemetry.json")));
    auto set_j = [](json& doc, double f) {
        double x = 0.01;
        for (auto& test : doc["tests"])
            for (const char* stage : {"prefill", "decode"})
                for (auto& w : test["telemetry"][stage]) {
                    w["total"]["j_per_token"] = x * f;
                    x += 0.0001;
                }
    };
    set_j(d, 1.0);
    write_file(t.file("base.json"), d.dump());
    set_j(d, 1.3);
    write_file(t.file("hungry.json"), d.dump());
    const Proc same = run_sb({"compare", t.file("base.json"), t.file("base.json"),
                              "--fail-if-energy", "5%", "-o", "json"});
    EXPECT_EQ(same.exit_code, 0) << same.err;
    const json g = json::parse(same.out)["gates"][0];
    EXPECT_EQ(g["gate"], "fail-if-energy");
    EXPECT_EQ(g["verdict"], "passed");
    EXPECT_EQ(g["checks"].size(), 2u);  // prefill and decode J/token
    const Proc more = run_sb({"compare", t.file("base.json"), t.file("hungry.json"),
                              "--fail-if-energy", "5%", "-o", "json"});
    EXPECT_EQ(more.exit_code, 1) << more.err;
    const json m = json::parse(more.out)["gates"][0];
    EXPECT_EQ(m["verdict"], "failed");
    for (const auto& c : m["checks"]) {
        EXPECT_EQ(c["metric"], "j_per_token");
        EXPECT_EQ(c["verdict"], "failed") << c;
    }
    // Runs without a meter: the gate has nothing to check, says so, and does not fail.
    const Proc none = run_sb({"compare", junit_fixture("run2.json"), junit_fixture("run2.json"),
                              "--fail-if-energy", "5%"});
    EXPECT_EQ(none.exit_code, 0) << none.err;
    EXPECT_NE(none.out.find("- fail-if-energy 5%: not checked (no ratio of its metrics in the "
                            "comparison)"),
              std::string::npos)
        << none.out;
}

TEST(CompareGates, BadThresholdsAreOneUsageLine) {
    for (const std::string bad : {"-3%", "abc", "1e3%", "5", "0%"}) {
        SCOPED_TRACE(bad);
        for (const std::string flag : {"--fail-if-slower", "--fail-if-energy"}) {
            const Proc p = run_sb({"compare", junit_fixture("run.json"), junit_fixture("run2.json"),
                                   flag + "=" + bad});
            EXPECT_EQ(p.exit_code, 2) << p.err;
            EXPECT_EQ(error_lines(p.err), 1u) << p.err;
            EXPECT_NE(p.err.find(flag + ": expected a percentage above 0% (e.g. 5%)"),
                      std::string::npos)
                << p.err;
            EXPECT_TRUE(p.out.empty()) << p.out;
        }
    }
    // As two arguments too.
    const Proc p = run_sb({"compare", junit_fixture("run.json"), junit_fixture("run2.json"),
                           "--fail-if-slower", "-3%"});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(error_lines(p.err), 1u) << p.err;
}

// ---- compare gates on real runs: the end-to-end path, with verdicts no noise can turn ----------

TEST(CompareGates, RealRunsOfAModelAndOneEightTimesDeeper) {
    TempDir t;
    // The same file name, so that the tests match by default: 4 layers, and 32.
    fs::create_directories(t.file("a"));
    fs::create_directories(t.file("b"));
    const std::string small = t.file("a/m.gguf"), deep = t.file("b/m.gguf");
    fs::copy_file(tiny_model(), small);
    const Proc s =
        run_sb({"synth", "--preset", "tiny", "--seed", "7", "--layers", "32", "-o", deep});
    ASSERT_EQ(s.exit_code, 0) << s.err;
    auto measure = [&](const std::string& model, const std::string& out) {
        const Proc p = run_sb({"run", "-m", model, "-p", "64", "-n", "8", "-r", "3", "-t", "1",
                               "--membw", "off", "--idle", "0", "-q", "--out", out});
        EXPECT_EQ(p.exit_code, 0) << p.err;
    };
    measure(small, t.file("a.json"));
    measure(deep, t.file("b.json"));
    // Eight times the layers is far more than twice slower: beyond 100 %.
    const std::string xml = t.file("junit.xml");
    const Proc slower = run_sb({"compare", t.file("a.json"), t.file("b.json"), "--fail-if-slower",
                                "100%", "--junit", xml});
    EXPECT_EQ(slower.exit_code, 1) << slower.err << slower.out;
    const json j = junit(xml);
    ASSERT_EQ(j["suites"].size(), 2u);
    EXPECT_GE(j["suites"][1]["failures"].get<int>(), 1) << j;
    // A document against itself never fails, whatever the noise of its repetitions.
    const Proc same =
        run_sb({"compare", t.file("b.json"), t.file("b.json"), "--fail-if-slower", "5%"});
    EXPECT_EQ(same.exit_code, 0) << same.err << same.out;
}

#ifdef SB_WITH_FLEET
TEST(Junit, FleetRunASuitePerDeviceWithItsOutcome) {
    TempDir t;
    // "here" runs; "broken" runs through a prefix that does not exist.
    write_file(t.file("lab.toml"),
               "name = \"lab\"\n[[device]]\nname = \"here\"\ntransport = "
               "\"local\"\nworkdir = \"" +
                   t.file("w") +
                   "\"\n[[device]]\nname = \"broken\"\ntransport = \"exec\"\n"
                   "prefix = [\"" +
                   t.file("no-such-emulator") + "\"]\nworkdir = \"" + t.file("w2") + "\"\n");
    const std::string xml = t.file("junit.xml");
    const Proc p = run_sb({"fleet",   "run",
                           "--hosts", t.file("lab.toml"),
                           "--db",    t.file("lab.sqlite"),
                           "--junit", xml,
                           "--",      "run",
                           "-m",      tiny_model(),
                           "-p",      "8",
                           "-n",      "2",
                           "-r",      "1",
                           "--membw", "off",
                           "--idle",  "0"},
                          300);
    EXPECT_EQ(p.exit_code, 1) << p.err;
    const json j = junit(xml);
    std::map<std::string, json> by;
    for (const auto& s : j["suites"])
        by[s["properties"]["device"]] = s;
    ASSERT_EQ(by.size(), 2u) << j;
    const json& here = by["here"];
    EXPECT_EQ(here["name"], "fleet lab: here");
    EXPECT_EQ(here["errors"], 0);
    EXPECT_TRUE(case_named(here, "fleet run")["results"].empty());
    EXPECT_GT(number(case_named(here, "tiny.gguf CPU pp8+tg2"), "prefill_tokens_per_s_mean"), 0);
    const json& broken = by["broken"];
    EXPECT_EQ(broken["errors"], 1);
    const json& c = case_named(broken, "fleet run");
    ASSERT_EQ(c["results"].size(), 1u);
    EXPECT_EQ(c["results"][0]["kind"], "error");
    EXPECT_NE(p.err.find("[broken] failed: " + c["results"][0]["message"].get<std::string>()),
              std::string::npos)
        << p.err << c;
}
#endif

}  // namespace
