#include "report/junit.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "analysis/compare_gate.hpp"

namespace sb {
namespace {

std::string xml(const JunitReport& r) {
    std::ostringstream out;
    write_junit(out, r);
    return out.str();
}

TEST(JunitEscape, MarkupCharactersAreEntities) {
    EXPECT_EQ(xml_text(R"(a<b>&"c"'d')"), "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;");
    EXPECT_EQ(xml_attribute("]]>"), "]]&gt;");
}

TEST(JunitEscape, WhiteSpaceSurvivesAttributeNormalisation) {
    EXPECT_EQ(xml_attribute("a\tb\nc\rd"), "a&#9;b&#10;c&#13;d");
    EXPECT_EQ(xml_text("a\tb\nc\rd"), "a\tb\nc\rd");
}

TEST(JunitEscape, CharactersXmlCannotHoldAreWrittenAsText) {
    EXPECT_EQ(xml_text(std::string("a\0b", 3)), "a\\x00b");
    EXPECT_EQ(xml_text("\x01\x1b[31m\x7f"), "\\x01\\x1B[31m\x7f");
    EXPECT_EQ(xml_attribute("x\xEF\xBF\xBEy\xEF\xBF\xBFz"), "x\\uFFFEy\\uFFFFz");
}

TEST(JunitEscape, InvalidUtf8BecomesReplacementCharacters) {
    // A lone continuation byte, a truncated sequence and an overlong '/' (C0 AF).
    EXPECT_EQ(xml_text("m\x80odel\xE2\x82"), "m\xEF\xBF\xBDodel\xEF\xBF\xBD");
    EXPECT_EQ(xml_attribute("/\xC0\xAF"), "/\xEF\xBF\xBD\xEF\xBF\xBD");
    // Valid multi-byte text is kept as it is.
    EXPECT_EQ(xml_text("µs → ×"), "µs → ×");
}

// A passed case with its name, class, time and properties (the rest as a default case).
JunitCase a_case(std::string name, std::string classname, std::optional<double> time_s,
                 std::vector<JunitProperty> properties = {}) {
    JunitCase c;
    c.name = std::move(name);
    c.classname = std::move(classname);
    c.time_s = time_s;
    c.properties = std::move(properties);
    return c;
}

TEST(JunitWriter, CountsAndElements) {
    JunitCase ok = a_case("tiny.gguf CPU pp32", "stagebench.run", 1.25,
                          {{"prefill_tokens_per_s_mean", "100"}});
    JunitCase failed = a_case("tiny.gguf RPC0 pp32", "stagebench.run", std::nullopt);
    failed.outcome = JunitOutcome::error;
    failed.message = "RPC0: connection <refused>";
    failed.type = "runtime";
    failed.text = failed.message;
    JunitCase gate = a_case("g", "stagebench.gate", 0.5);
    gate.outcome = JunitOutcome::failure;
    gate.message = "slower";
    gate.type = "gate";
    JunitCase skipped = a_case("s", "c", std::nullopt);
    skipped.outcome = JunitOutcome::skipped;
    skipped.message = "not checked";
    skipped.system_out = "why\n";
    JunitSuite a{"stagebench run",          "2026-12-06T18:00:00Z", "host&1",
                 {{"tool_version", "0.9"}}, {ok, failed},           "warning: x\n"};
    JunitSuite b{"gates", "", "", {}, {gate, skipped}, ""};
    EXPECT_EQ(xml({"stagebench run", {a, b}}),
              R"(<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="stagebench run" tests="4" failures="1" errors="1" skipped="1" time="1.750">
  <testsuite name="stagebench run" tests="2" failures="0" errors="1" skipped="0" time="1.250" timestamp="2026-12-06T18:00:00Z" hostname="host&amp;1">
    <properties>
      <property name="tool_version" value="0.9"/>
    </properties>
    <testcase name="tiny.gguf CPU pp32" classname="stagebench.run" time="1.250">
      <properties>
        <property name="prefill_tokens_per_s_mean" value="100"/>
      </properties>
    </testcase>
    <testcase name="tiny.gguf RPC0 pp32" classname="stagebench.run">
      <error message="RPC0: connection &lt;refused&gt;" type="runtime">RPC0: connection &lt;refused&gt;</error>
    </testcase>
    <system-out>warning: x
</system-out>
  </testsuite>
  <testsuite name="gates" tests="2" failures="1" errors="0" skipped="1" time="0.500">
    <testcase name="g" classname="stagebench.gate" time="0.500">
      <failure message="slower" type="gate"/>
    </testcase>
    <testcase name="s" classname="c">
      <skipped message="not checked"/>
      <system-out>why
</system-out>
    </testcase>
  </testsuite>
</testsuites>
)");
}

TEST(JunitWriter, NumbersAreLocaleFreeAndExact) {
    EXPECT_EQ(junit_number("x", 61.5).value, "61.5");
    EXPECT_EQ(junit_number("x", 0.1).value, "0.1");
    EXPECT_EQ(junit_number("x", 1234567.0).value, "1234567");
    EXPECT_EQ(junit_number("x", 1e-05).value, "1e-05");
}

const JunitProperty* prop(const JunitCase& c, const std::string& name) {
    for (const auto& p : c.properties)
        if (p.name == name)
            return &p;
    return nullptr;
}

TestResult measured(const std::string& model, int n_threads, std::vector<double> prefill_tps) {
    TestResult t;
    t.config.model_path = model;
    t.config.devices = DeviceSet("CPU");
    t.config.n_prompt = 32;
    t.config.n_gen = 0;
    t.config.n_threads = n_threads;
    t.reps_done = static_cast<int>(prefill_tps.size());
    t.started_ns = 1'000'000'000;
    t.finished_ns = 3'500'000'000;
    StageResult s;
    s.n_tokens = 32;
    s.tokens_per_s = prefill_tps;
    s.throughput = summarize(prefill_tps);
    t.prefill = s;
    t.stopped_by = StopReason::reps;
    return t;
}

TEST(JunitOfDocument, ACasePerTestWithItsFiguresAndErrors) {
    ResultDocument doc;
    doc.command = "run";
    doc.tool_version = "0.9.0";
    doc.started_at = "2026-12-06T18:00:00Z";
    doc.argv = {"stagebench", "run", "-m", "/m/<tiny>.gguf"};
    doc.tests.push_back(measured("/m/<tiny>.gguf", 2, {100, 110, 120}));
    doc.tests.push_back(measured("/m/<tiny>.gguf", 4, {}));
    doc.tests[1].prefill.reset();
    record_failure(doc.tests[1], "llama.cpp: \"decode\" failed <&>", ErrorKind::runtime);
    doc.tests.push_back(measured("/m/<tiny>.gguf", 8, {}));
    doc.tests[2].prefill.reset();
    record_interrupted(doc.tests[2]);
    const JunitReport r = junit_of_document(doc);
    ASSERT_EQ(r.suites.size(), 1u);
    const JunitSuite& s = r.suites[0];
    EXPECT_EQ(s.name, "stagebench run");
    EXPECT_EQ(s.timestamp, "2026-12-06T18:00:00Z");
    ASSERT_EQ(s.cases.size(), 3u);
    const JunitCase& c = s.cases[0];
    // n_threads differs among the tests: it joins the names.
    EXPECT_EQ(c.name, "<tiny>.gguf CPU pp32 n_threads=2");
    EXPECT_EQ(c.classname, "stagebench.run");
    EXPECT_EQ(c.time_s, 2.5);
    EXPECT_EQ(c.outcome, JunitOutcome::passed);
    ASSERT_TRUE(prop(c, "prefill_tokens_per_s_mean"));
    EXPECT_EQ(prop(c, "prefill_tokens_per_s_mean")->value, "110");
    EXPECT_EQ(prop(c, "prefill_n_tokens")->value, "32");
    EXPECT_EQ(prop(c, "model_path")->value, "/m/<tiny>.gguf");
    EXPECT_EQ(prop(c, "n_threads")->value, "2");
    EXPECT_TRUE(prop(c, "prefill_tokens_per_s_ci95_lo"));
    EXPECT_TRUE(prop(c, "prefill_tokens_per_s_ci95_hi"));
    EXPECT_FALSE(prop(c, "decode_tokens_per_s_mean"));    // not measured: absent, not 0
    EXPECT_FALSE(prop(c, "prefill_j_per_token_median"));  // no meter: absent
    const JunitCase& f = s.cases[1];
    EXPECT_EQ(f.outcome, JunitOutcome::error);
    EXPECT_EQ(f.type, "runtime");
    EXPECT_EQ(f.message, "llama.cpp: \"decode\" failed <&>");
    EXPECT_EQ(s.cases[2].outcome, JunitOutcome::error);
    EXPECT_EQ(s.cases[2].type, "interrupted");
    const std::string x = xml(r);
    EXPECT_NE(
        x.find(
            R"(<error message="llama.cpp: &quot;decode&quot; failed &lt;&amp;&gt;" type="runtime">)"),
        std::string::npos)
        << x;
    EXPECT_NE(x.find(R"(<property name="argv" value="stagebench run -m /m/&lt;tiny&gt;.gguf"/>)"),
              std::string::npos);
}

TEST(JunitOfDocument, EnergyMediansWhereMeasured) {
    ResultDocument doc;
    doc.command = "run";
    doc.tests.push_back(measured("tiny.gguf", 2, {100, 110}));
    TestTelemetry tel;
    StageEnergySummary e;
    e.j_per_token.median = 0.25;
    e.energy_j.median = 8.0;
    e.total_metric = "energy_psys_uj";
    tel.summary["prefill"] = e;
    doc.tests[0].telemetry = tel;
    const JunitCase c = junit_of_document(doc).suites[0].cases[0];
    EXPECT_EQ(c.name, "tiny.gguf CPU pp32");
    EXPECT_EQ(prop(c, "prefill_j_per_token_median")->value, "0.25");
    EXPECT_EQ(prop(c, "prefill_energy_j_median")->value, "8");
    EXPECT_EQ(prop(c, "prefill_energy_meter")->value, "energy_psys_uj");
    EXPECT_FALSE(prop(c, "prefill_net_j_per_token_median"));
}

TEST(JunitOfError, OneCaseInError) {
    const std::string x = xml(junit_of_error("run", "model 'a<b>.gguf': no such file", "input"));
    EXPECT_NE(x.find(R"(tests="1" failures="0" errors="1")"), std::string::npos);
    EXPECT_NE(
        x.find(R"(<error message="model &apos;a&lt;b&gt;.gguf&apos;: no such file" type="input">)"),
        std::string::npos)
        << x;
}

TEST(JunitOfCompare, RatiosAsPropertiesGatesAsFailures) {
    CompareResult r;
    r.inputs.resize(2);
    r.inputs[0].label = "A";
    r.inputs[0].source = "base.json";
    r.inputs[1].label = "B";
    r.inputs[1].source = "new.json";
    CompareRow row;
    row.test = "pp32";
    row.stage = "prefill";
    row.metric = "tokens_per_s";
    row.sides.resize(2);
    row.sides[0].label = "A";
    row.sides[0].median = 100.0;
    row.sides[1].label = "B";
    row.sides[1].median = 62.0;
    row.ratios = {CompareRatio{"B/A", 0.62, 0.60, 0.64, "slower"}};
    r.rows = {row};
    r.gates = evaluate_gates(r, {{"fail-if-slower", 0.05}, {"fail-if-energy", 0.05}});
    const JunitReport j = junit_of_compare(r);
    ASSERT_EQ(j.suites.size(), 3u);
    const JunitCase& c = j.suites[0].cases.at(0);
    EXPECT_EQ(c.name, "pp32 prefill tokens_per_s B/A");
    EXPECT_EQ(prop(c, "baseline_tokens_per_s_median")->value, "100");
    EXPECT_EQ(prop(c, "tokens_per_s_median")->value, "62");
    EXPECT_EQ(prop(c, "ratio")->value, "0.62");
    EXPECT_EQ(prop(c, "ratio_ci95_lo")->value, "0.6");
    EXPECT_EQ(prop(c, "ratio_ci95_hi")->value, "0.64");
    EXPECT_EQ(prop(c, "verdict")->value, "slower");
    EXPECT_EQ(c.outcome, JunitOutcome::passed);  // a ratio is data; the gate decides
    EXPECT_EQ(j.suites[1].name, "gate fail-if-slower 5%");
    const JunitCase& g = j.suites[1].cases.at(0);
    EXPECT_EQ(g.outcome, JunitOutcome::failure);
    EXPECT_EQ(g.type, "gate");
    EXPECT_EQ(g.message,
              "fail-if-slower 5%: failed: B/A's 95% CI [0.600, 0.640] lies wholly below 0.952");
    EXPECT_EQ(prop(g, "limit")->value, "0.9523809523809523");
    EXPECT_EQ(j.suites[2].name, "gate fail-if-energy 5%");
    EXPECT_EQ(j.suites[2].cases.at(0).outcome, JunitOutcome::skipped);
    EXPECT_EQ(j.suites[2].cases.at(0).message,
              "fail-if-energy 5%: not checked (no ratio of its metrics in the comparison)");
}

}  // namespace
}  // namespace sb
