// The text formats users keep (CSV, Markdown, the compare and advice documents, the HTML
// report's data) byte for byte as the reporters wrote them before they were driven by field
// tables and typed analysis results: tests/fixtures/report/golden/ holds what commit 485c255
// printed for the fixture documents (tests/fixtures/documents) and the documents built here
// (see tests/fixtures/report/golden/README.md). A change of format shows up here first; when it
// is meant, rerun with SB_GOLDEN_UPDATE=1 and say so in the commit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/advise.hpp"
#include "analysis/compare.hpp"
#include "analysis/mode_parts.hpp"
#include "core/document.hpp"
#include "core/json_util.hpp"
#include "report/advise_report.hpp"
#include "report/compare_report.hpp"
#include "report/html_data.hpp"
#include "report/modes_report.hpp"
#include "report/ops_report.hpp"
#include "report/reporter.hpp"
#include "report/sensors_report.hpp"

namespace sb {
namespace {

using nlohmann::json;

std::string fixtures() {
    return std::string(SB_SOURCE_DIR) + "/tests/fixtures";
}

std::string golden(const std::string& name) {
    std::ifstream f(fixtures() + "/report/golden/" + name, std::ios::binary);
    EXPECT_TRUE(f) << "no golden file " << name;
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// text is what the golden file name holds. With SB_GOLDEN_UPDATE=1 in the environment the file
// is rewritten with text instead (for a format change that is meant; the diff shows it).
void expect_golden(const std::string& text, const std::string& name) {
    const char* update = std::getenv("SB_GOLDEN_UPDATE");
    if (update && std::string(update) == "1") {
        std::ofstream(fixtures() + "/report/golden/" + name, std::ios::binary) << text;
        return;
    }
    EXPECT_EQ(text, golden(name)) << name;
}

ResultDocument doc(const std::string& name) {
    return load_result_document(fixtures() + "/documents/" + name);
}

// What run.json's tests look like with `run --fidelity`: one test with its distances, one whose
// capture failed; an error text that needs quoting.
ResultDocument fidelity_run() {
    ResultDocument d = doc("run.json");
    StageFidelity p{1, 1e-4, 2e-4, 3e-4, 1.0, 0.9, 0.5, 0.1};
    StageFidelity q{8, 2.5e-3, 7e-3, 9e-3, 0.875, 0.8, 1.25, 0.3};
    d.tests[0].fidelity = TestFidelity{"tiny on CPU (f16/f16)", 5, p, q, std::nullopt};
    d.tests[1].fidelity =
        TestFidelity{"tiny on CPU (f16/f16)", 5, std::nullopt, std::nullopt, "logits, \"bad\""};
    d.tests[0].error = "a, \"quoted\"\nerror";
    return d;
}

// Two modes of two rounds; a mode name and an error that need quoting, a run without a decode.
ResultDocument modes_doc() {
    ResultDocument d;
    d.command = "decompose";
    ModesSection s;
    s.source = "processes";
    s.model_path = "/m/tiny.gguf";
    s.devices = "CPU";
    s.n_prompt = 32;
    s.n_gen = 8;
    s.rounds = 2;
    s.stages = {"prefill", "decode"};
    s.time_basis = "stage wall time";
    for (const char* name : {"cpu", "npu, fast"}) {
        Mode m;
        m.name = name;
        m.env.push_back({"GGML_X", name});
        for (int r = 0; r < 2; ++r) {
            ModeRun run;
            run.round = r;
            run.sequence = r * 2 + (m.name == "cpu" ? 0 : 1);
            run.stage_ns["prefill"] = 1.5e6 * (r + 1);
            if (r == 0)
                run.stage_ns["decode"] = 2.25e6;
            run.exit_code = r == 0 ? 0 : 3;
            if (r == 1)
                run.error = "exit 3, \"oops\"";
            m.runs.push_back(run);
        }
        s.modes.push_back(m);
    }
    summarize_modes(s);
    d.modes = s;
    return d;
}

std::string printed(OutputFormat f, const ResultDocument& d) {
    std::ostringstream o;
    print_document(f, d, o);
    return o.str();
}

TEST(ReportGolden, RunCsvAndMarkdownAreAsBefore) {
    for (const char* name : {"run.json", "run2.json", "run-telemetry.json", "hybrid.json",
                             "hybrid-current.json", "sustained.json", "sustained-traced.json"}) {
        const ResultDocument d = doc(name);
        expect_golden(printed(OutputFormat::csv, d), std::string(name) + ".csv");
        expect_golden(printed(OutputFormat::md, d), std::string(name) + ".md");
    }
    const ResultDocument f = fidelity_run();
    expect_golden(printed(OutputFormat::csv, f), "fidelity-run.csv");
    expect_golden(printed(OutputFormat::md, f), "fidelity-run.md");
}

TEST(ReportGolden, OpsAndModesAreAsBefore) {
    for (const char* name : {"ops.json", "decompose.json", "import.json"}) {
        const ResultDocument d = doc(name);
        for (auto f : {OutputFormat::csv, OutputFormat::md}) {
            std::ostringstream o;
            print_ops_document(d, f, o);
            expect_golden(o.str(), std::string(name) + ".ops." + to_string(f));
        }
        std::ostringstream o;
        print_ops_document(d, OutputFormat::md, o, 3, true);
        expect_golden(o.str(), std::string(name) + ".ops.brief.md");
    }
    const ResultDocument m = modes_doc();
    for (auto f : {OutputFormat::csv, OutputFormat::md}) {
        std::ostringstream o;
        print_modes_document(m, f, o);
        expect_golden(o.str(), std::string("modes.") + to_string(f));
    }
}

CompareResult compared(std::vector<std::string> names) {
    std::vector<CompareInput> in;
    const auto labels = default_compare_labels(names.size());
    for (std::size_t i = 0; i < names.size(); ++i)
        in.push_back({labels[i], names[i], doc(names[i])});
    CompareResult r = compare_documents(in);
    r.created_at = "2026-01-01T00:00:00Z";
    r.tool_version = "golden";
    return r;
}

TEST(ReportGolden, CompareIsAsBefore) {
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"compare-run", {"run.json", "run2.json"}},
        {"compare-run3", {"run.json", "run2.json", "run-telemetry.json"}},
        {"compare-ops", {"ops.json", "decompose.json"}},
        {"compare-sustained", {"sustained.json", "sustained-traced.json"}}};
    for (const auto& [name, docs] : cases) {
        const CompareResult r = compared(docs);
        for (auto f : {OutputFormat::csv, OutputFormat::md, OutputFormat::json}) {
            std::ostringstream o;
            write_compare(o, r, f);
            expect_golden(o.str(), name + "." + to_string(f));
        }
        expect_golden(dump_json(compare_view(r), 1), name + ".view.json");
        // The compare document reads back as the result it was written from.
        EXPECT_EQ(from_json<CompareResult>(to_json(r), name), r) << name;
    }
}

TEST(ReportGolden, AdviceIsAsBefore) {
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"advise-run-hybrid", {"run.json", "run2.json", "hybrid.json", "hybrid-current.json"}},
        {"advise-ops", {"ops.json", "decompose.json", "import.json"}},
        {"advise-sustained", {"run.json", "sustained.json", "sustained-traced.json"}}};
    for (const auto& [name, docs] : cases) {
        std::vector<AdviseInput> in;
        for (const auto& d : docs)
            in.push_back({d, doc(d)});
        const Advice a = advise(in, {});
        expect_golden(dump_json(to_json(a), 2), name + ".json");
        std::ostringstream o;
        write_advice_markdown(a, o);
        expect_golden(o.str(), name + ".md");
        EXPECT_EQ(from_json<Advice>(to_json(a), name), a) << name;
    }
}

TEST(ReportGolden, HtmlViewIsAsBeforeWithTheStageTable) {
    std::vector<ReportInput> in;
    for (const char* name : {"run.json", "run-telemetry.json", "hybrid.json", "ops.json",
                             "decompose.json", "sustained.json", "import.json"})
        in.push_back(ReportInput::of(name, doc(name)));
    in.push_back(ReportInput::of("modes", modes_doc()));
    in.push_back(ReportInput::of("fidelity-run", fidelity_run()));
    in.push_back(load_report_input(fixtures() + "/report/compare.json"));
    in.back().source = "compare.json";  // not the checkout's path
    json v = report_view(in);
    // Added since: every document with tests has the table of every field of every stage.
    for (auto& d : v["documents"]) {
        const bool tests = d.contains("summary");
        EXPECT_EQ(d.contains("stages"), tests) << d["source"];
        d.erase("stages");
    }
    expect_golden(dump_json(v, 1), "report-view.json");
}

TEST(ReportGolden, SensorsMarkdownIsAsBefore) {
    SensorsReport r;
    r.duration_ns = 1'500'000'000;
    r.hz = 10;
    TelemetrySource s;
    s.name = "rapl|pkg";
    s.source_class = "rapl";
    s.properties = {{"path", "/sys/x"}, {"zone", "a|b"}};
    r.sources.push_back(s);
    r.classes.push_back({"rapl", 1, "found"});
    r.classes.push_back({"nvml", 0, "no libnvidia-ml"});
    r.current.push_back({"rapl.package-0.energy_uj", "uJ", 12345.678});
    r.current.push_back({"rpi.throttled_flags", "bits", 327685});
    r.current.push_back({"thermal.x.temp_mc", "mC", std::nullopt});
    r.window.push_back(
        SensorWindow{"rapl.package-0", "counter", 12.5, 8333.3, 9000, {}, {}, {}, {}, {}});
    r.window.push_back(
        SensorWindow{"cpu0", "", {}, {}, {}, 41000, 52500, 600000, 2400000, 1800000});
    r.warnings.push_back({"stale", "a stale sensor", "check it"});
    std::ostringstream o;
    write_sensors_markdown(o, r);
    expect_golden(o.str(), "sensors.md");
    expect_golden(dump_json(to_json(r), 2), "sensors.json");
}

}  // namespace
}  // namespace sb
