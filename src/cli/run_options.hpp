#pragma once
// Command-line options shared by `run` and `demo` (the test matrix and output choices).
#include <CLI/CLI.hpp>
#include <memory>

#include "cli/telemetry_log_option.hpp"
#include "report/reporter.hpp"
#include "scenario/run_command.hpp"

namespace sb::cli {

struct RunArgs {
    RunOptions run;
    std::string target_ci;  // "2%" or "0.02"
    bool no_warmup = false;
    bool quiet = false;
    // The typed options as given, parsed once by finish_run_args.
    std::vector<std::string> devices{"CPU"}, flash_attn{"auto"}, type_k{"f16"}, type_v{"f16"};
    std::vector<std::string> engines{"llama"};
    std::string api = "openai";
    std::string telemetry = "auto";
    TelemetryLogArgs telemetry_log;
};

// Each text as an E (enum_from_text: sb::Error(usage) naming flag for another).
template <SpelledEnum E>
std::vector<E> enums_of(const std::vector<std::string>& texts, const char* flag) {
    std::vector<E> out;
    for (const auto& t : texts)
        out.push_back(enum_from_text<E>(t, flag));
    return out;
}
std::vector<DeviceSet> device_sets_of(const std::vector<std::string>& texts);

// Adds the matrix options (-p, -n, -d, -t, -b, --ubatch-size, --device, ...) to cmd.
void add_matrix_options(CLI::App* cmd, RunArgs& a);
// Adds -o, --out, --membw, --rpc, -q.
void add_output_options(CLI::App* cmd, RunArgs& a);
// Adds --engine, --url, --api, --timeout (engines behind HTTP).
void add_engine_options(CLI::App* cmd, RunArgs& a);
// Adds --fidelity, --reference, --reference-model, --top-k (scenario/run_fidelity.hpp).
void add_fidelity_options(CLI::App* cmd, RunFidelityOptions& f);
// Applies the derived options (target CI, warmup, progress, the typed options given as text)
// and checks the matrix (check_matrix). Throws sb::Error(usage).
void finish_run_args(RunArgs& a);
// A run's listener that streams the rows of a reporter (report/reporter.hpp) as tests
// complete: the runner hands over tests, the CLI picks how they are printed.
class ReporterListener : public RunListener {
  public:
    ReporterListener(OutputFormat format, std::ostream& out);
    void plan(const std::vector<TestConfig>& tests) override { reporter_->plan(tests); }
    void begin(const ResultDocument& doc) override { reporter_->begin(doc); }
    void test_done(const ResultDocument& doc, const TestResult& t) override {
        reporter_->test_done(doc, t);
    }
    void end(const ResultDocument& doc) override { reporter_->end(doc); }

  private:
    std::unique_ptr<Reporter> reporter_;
};

// Checks the values of a test matrix against each other, before anything is read or measured:
// no empty comma list, every test's context within kMaxTokens (flag_checks.hpp), --max-reps
// not below -r, the token latencies a test keeps within kMaxTokenSamples. Throws
// sb::Error(usage) naming the flags.
void check_matrix(const MatrixSpec& m);

}  // namespace sb::cli
