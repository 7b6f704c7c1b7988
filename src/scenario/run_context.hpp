#pragma once
// The run context: what every measuring command does around its measurements, in one place.
// It owns, for one result document:
//   - setup before anything is measured: the models described (doc.models), RPC servers added,
//     device names checked; bad input throws here, before the first measurement;
//   - telemetry: the sampler, the idle baseline, the per-test stage records, the run's record;
//   - warnings: the machine's and the models' (system_warnings, model_warnings) and a stall
//     warning per test;
//   - save-as-you-go: the document written to --out after every test and once at the end;
//   - the last word: while a test runs, a stop inside llama.cpp (or the stage watchdog's end,
//     core/watchdog.hpp) records that test as failed next to the ones before it;
//   - progress (scenario/progress.hpp) on the error stream.
// Runners measure and hand each finished test to end_test(); listeners (the CLI's reporter)
// hear about it. Runners print nothing themselves.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/last_word.hpp"
#include "core/result.hpp"
#include "scenario/progress.hpp"
#include "scenario/stage_sweep.hpp"
#include "scenario/telemetry_setup.hpp"
#include "telemetry/sampler.hpp"

namespace sb {

// Who hears about a run as it goes: the CLI's reporter streams rows from here. Every call is
// made between tests, never inside a measurement.
class RunListener {
  public:
    virtual ~RunListener() = default;
    virtual void begin(const ResultDocument& doc) {}
    virtual void test_done(const ResultDocument& doc, const TestResult& test) {}
    virtual void end(const ResultDocument& doc) {}
};

struct RunSetup {
    // GGUF files to describe in doc.models (inspect_model). A file that cannot be used is bad
    // input (thrown) unless keep_unusable_models: then only when every model is unusable, and
    // the others' tests still run while unusable_model() names the error for its own tests.
    std::vector<std::string> models;
    bool keep_unusable_models = false;
    std::vector<std::string> rpc_servers;  // host:port, added as RPC0, RPC1...
    std::vector<std::string> device_sets;  // '+'-joined sets whose names must exist
    TelemetryChoice telemetry{"off", "/sys", 10, 0};
    std::optional<std::string> out_path;  // --out
    bool progress = true;                 // progress on the error stream (false: -q)
    bool terminal = false;                // the error stream is a terminal (lines in place)
};

class RunContext {
  public:
    // Setup: models, RPC servers, device names. Throws sb::Error for bad input. doc, err and
    // listener (may be null) must outlive the context.
    RunContext(ResultDocument& doc, RunSetup setup, std::ostream& err, RunListener* listener);
    ~RunContext();
    RunContext(const RunContext&) = delete;
    RunContext& operator=(const RunContext&) = delete;

    ResultDocument& doc() { return doc_; }
    Progress& progress() { return progress_; }
    // The error that makes model path unusable (keep_unusable_models), if any.
    const Error* unusable_model(const std::string& path) const;

    // Opens telemetry (sb::Error for a bad choice), adds the machine's warnings for the most
    // threads any test uses and the models' warnings, writes the document a first time and
    // tells the listener the run begins.
    void open(int max_threads);
    // The sampler, or null when nothing is sampled.
    Sampler* sampler() { return sampling_ ? tel_.get() : nullptr; }
    // The idle baseline (telemetry.idle_s, before any model is loaded: net energy is what
    // inference adds) and the start of sampling.
    void start();

    // The number of tests the run will measure, for the progress line's estimate.
    void plan(size_t n_tests) { progress_.set_total(static_cast<double>(n_tests)); }

    // A test begins: from here until end_test a stop inside llama.cpp records config as failed.
    // Returns the hooks the loop reports through: stage markers to telemetry (under a prefix of
    // the test's index), activity to the last word and the progress line.
    SweepHooks begin_test(const TestConfig& config);
    // A test ended: its telemetry and stall warning are added, a failure is noted on the error
    // stream, it joins doc.tests, the document is saved and the listener hears of it.
    const TestResult& end_test(TestResult r);

    // After the last test: telemetry kept in the document, finished_at, the listener's end,
    // then the final save (after the report: an output that fails now costs no result) and a
    // note when the run was interrupted.
    void finish();

    void save(DocumentSave how = DocumentSave::progress);

  private:
    ResultDocument& doc_;
    RunSetup setup_;
    std::ostream& err_;
    RunListener* listener_;
    Progress progress_;
    std::map<std::string, Error> unusable_;
    std::unique_ptr<Sampler> tel_;
    bool sampling_ = false;
    // The running test, for the last word; doc_mu_ keeps the last word from reading the
    // document while this thread changes it between tests.
    std::timed_mutex doc_mu_;
    std::optional<TestConfig> running_;
    std::atomic<bool> is_running_{false};
    std::atomic<const char*> activity_{""};
    std::atomic<int64_t> running_since_ns_{0};
    std::string stage_prefix_;
    std::unique_ptr<LastWordScope> last_word_;
};

}  // namespace sb
