#pragma once
// The run context: what every measuring command does around its measurements, in one place.
// It owns, for one result document:
//   - setup before anything is measured: the models described (doc.models), RPC servers added,
//     device names checked; bad input throws here, before the first measurement;
//   - the engines: the factory the run's engines come from (engine/engine_factory.hpp);
//   - telemetry: the sampler, the idle baseline, the per-test stage records, the run's record;
//   - warnings: the machine's and the models' (system_warnings, model_warnings) and a stall
//     warning per test;
//   - save-as-you-go: the document written to --out after every test (or point, or round) and
//     once at the end, the one place a measuring command saves it;
//   - the last word: while tests run, a stop inside llama.cpp (or the stage watchdog's end,
//     core/watchdog.hpp) records them as failed next to the ones before, saves, and hands the
//     document to the command (RunSetup::on_last_word: stdout, the store);
//   - progress (scenario/progress.hpp) on the error stream: every line a run prints.
// Runners measure and hand each finished test to end_test(); listeners (the CLI's reporter)
// hear about it. Runners print nothing themselves and return the document with the run's
// outcome (RunResult); only the CLI turns the outcome into an exit code.
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/last_word.hpp"
#include "core/result.hpp"
#include "engine/engine_factory.hpp"
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
    // The tests a sweep will measure, before begin (a runner that knows them says so).
    virtual void plan(const std::vector<TestConfig>& tests) {}
    virtual void begin(const ResultDocument& doc) {}
    virtual void test_done(const ResultDocument& doc, const TestResult& test) {}
    virtual void end(const ResultDocument& doc) {}
};

// What a command gives a runner beside the runner's options: the document to fill, where
// progress goes, who hears of tests, where engines come from, the clock, and what to do with
// the document when llama.cpp stops the process.
struct RunEnv {
    RunEnv(ResultDocument start, std::ostream& err_stream)
        : doc(std::move(start)), err(err_stream) {}
    ResultDocument doc;  // as new_document(command, argv) made it
    std::ostream& err;   // progress and notes (never results)
    RunListener* listener = nullptr;
    // null: the real engines (scenario/default_engines.hpp), waiting on the run's clock.
    EngineFactory* engines = nullptr;
    // The clock of the run's own readings (test start and end, progress, the repetition loop
    // between the engine's timestamps): sb::now_ns, or a fake engine's timeline in tests.
    Clock clock = now_ns;
    // How the run waits on that clock (a cool-down): sb::sleep_ns, or the fake timeline's.
    Pause pause = sleep_ns;
    // The wall clock beside it, read only to place what others stamped with the wall clock (a
    // --telemetry-log's lines) on the run's clock: sb::wall_ns, or the fake timeline plus an
    // offset in tests.
    Clock wall_clock = wall_ns;
    // After the last word recorded the running work as failed and saved the document: keep it
    // where the command keeps documents (-o json on stdout, --db). Optional; it must not throw
    // nor call into llama.cpp.
    std::function<void(const ResultDocument&)> on_last_word;
};

// What a runner hands back: the document it measured and how the run went.
struct RunResult {
    ResultDocument doc;
    Outcome outcome = Outcome::ok;
    // An error that stopped the run after it began measuring (an --out that could not be
    // written, during the run or at the end): doc holds what was measured; the command keeps it
    // (the store) and then reports the error.
    std::optional<Error> error;
};

struct RunSetup {
    // GGUF files to describe in doc.models (inspect_model). A file that cannot be used is bad
    // input (thrown) unless keep_unusable_models: then only when every model is unusable, and
    // the others' tests still run while unusable_model() names the error for its own tests.
    std::vector<std::string> models;
    bool keep_unusable_models = false;
    std::vector<std::string> rpc_servers;  // host:port, added as RPC0, RPC1...
    std::vector<DeviceSet> device_sets;    // sets whose names must exist
    TelemetryChoice telemetry{TelemetryMode::off, "/sys", 10, 0, {}};
    std::optional<std::string> out_path;  // --out
    bool progress = true;                 // progress on the error stream (false: -q)
    bool terminal = false;                // the error stream is a terminal (lines in place)
    EngineFactory* engines = nullptr;     // null: the real engines, on clock and pause
    // The run's clock, how it waits on it and the wall clock beside it (RunEnv's); the
    // sampler, the telemetry log, the default engines' servers and the runners read and wait
    // on these.
    Clock clock = now_ns;
    Pause pause = sleep_ns;
    Clock wall_clock = wall_ns;
    std::function<void(const ResultDocument&)> on_last_word;  // RunEnv::on_last_word

    // The parts of env that reach the context (engines, clocks, pause, last word).
    void take(const RunEnv& env) {
        engines = env.engines;
        clock = env.clock;
        pause = env.pause;
        wall_clock = env.wall_clock;
        on_last_word = env.on_last_word;
    }
};

// How a test runs within the context, beyond its config. Every member is optional.
struct RunningTest {
    // The test so far (what it measured), for the last word; null: its config alone, nothing
    // measured.
    std::function<TestResult()> so_far;
    // The devices whose servers a stop may be about (default: the config's devices).
    std::optional<DeviceSet> devices;
    // Called by the last word (under the document's lock) with the test as it recorded it
    // (failed) and the document, before the save: a section that keeps it too (a round).
    std::function<void(const TestResult&, ResultDocument&)> on_failed;
    // Its telemetry stages' prefix (default: "test<index>/", its index in doc.tests).
    std::optional<std::string> stage_prefix;
    // How its progress line names it (default: the test's name and its repetitions).
    std::optional<ProgressStep> step;
    // The runner reports the test itself: end_test adds no stall warning and prints no failure
    // line for it.
    bool own_report = false;
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
    EngineFactory& engines() { return *engines_; }
    const Clock& clock() const { return setup_.clock; }
    // Lets ns pass on that clock (RunSetup::pause): a runner's waits between measurements.
    void pause(int64_t ns) const { setup_.pause(ns); }
    // A line for people above the progress lines ("stagebench: " + line).
    void note(const std::string& line) { progress_.note(line); }
    // The error that makes model path unusable (keep_unusable_models), if any.
    const Error* unusable_model(const std::string& path) const;

    // Opens telemetry (sb::Error for a bad choice), adds the machine's warnings for the most
    // threads any test uses and the models' warnings, writes the document a first time
    // (sb::Error when --out cannot take it: nothing was measured yet) and tells the listener
    // the run begins.
    void open(int max_threads);
    // The sampler, or null when nothing is sampled.
    Sampler* sampler() { return sampling_ ? tel_.get() : nullptr; }
    // Reads the telemetry log (--telemetry-log) again, waiting until it has a line past now,
    // so that the stages that ended are covered by it. No-op without a log. end_test and
    // finish call it; a runner that reads stage windows before end_test calls it first.
    void sync_telemetry_log();
    // The idle baseline (telemetry.idle_s, before any model is loaded: net energy is what
    // inference adds) and the start of sampling.
    void start();

    // The number of tests (or points, rounds) the run will measure, for the progress line's
    // estimate.
    void plan(size_t n_tests) { progress_.set_total(static_cast<double>(n_tests)); }

    // A test begins: from here until its end_test a stop inside llama.cpp records it as failed
    // (with what running.so_far says it measured). Several may run at once (hybrid's
    // interleaved modes); they end in the order they began. Returns the hooks the loop reports
    // through: stage markers to telemetry (under a prefix of the test's index in doc.tests),
    // activity to the last word and the progress line.
    SweepHooks begin_test(const TestConfig& config, RunningTest running = {});
    // The oldest running test ended: its telemetry and stall warning are added, a failure is
    // noted on the error stream, it joins doc.tests, the document is saved and the listener
    // hears of it.
    const TestResult& end_test(TestResult r);
    // The last word's line names the running work so ("hybrid point pp512+tg128") instead of
    // its first test; cleared when no test runs.
    void name_running(std::string label);

    // The name of a test's line in the progress display: its devices, with " (HTTP)" for a
    // server.
    static std::string device_label(const TestConfig& c);

    // Whether the run should stop before its next test: interrupted (Ctrl-C) or a save failed.
    bool should_stop() const;

    // Saves the document to --out: a progress save (the document so far) or the final one.
    // Progress saves never cost what grows into the workload: every save writes the whole
    // document, whose size grows with the run, so one waits until ten times the last save's
    // cost has passed since it ended (saves take at most about a tenth of the run; the last
    // word and the final save always write). Once the run opened, a progress save that fails
    // stops the run (should_stop) and its error reaches the result; before, and for the final
    // save, it throws.
    void save(DocumentSave how = DocumentSave::progress);
    // Changes the document under the last word's lock (a section the last word reads), then
    // saves it (progress), whenever the last save was: a milestone is never held back.
    void update(const std::function<void(ResultDocument&)>& change);

    // After the last test: telemetry kept in the document, finished_at, the listener's end,
    // then the final save (after the report: an output that fails now costs no result) and a
    // note when the run was interrupted. Returns the document (moved out of doc) with the
    // outcome of its tests, worsened to at least at_least, and the error of a failed save.
    RunResult finish(Outcome at_least = Outcome::ok);

  private:
    std::optional<std::string> last_word(const std::string& message);

    ResultDocument& doc_;
    RunSetup setup_;
    std::ostream& err_;
    RunListener* listener_;
    std::unique_ptr<EngineFactory> own_engines_;  // the default engines, when setup has none
    EngineFactory* engines_ = nullptr;
    Progress progress_;
    std::map<std::string, Error> unusable_;
    std::unique_ptr<TelemetryLogFeed> log_feed_;  // before tel_: the sampler owns its source
    std::unique_ptr<Sampler> tel_;
    bool sampling_ = false;
    bool opened_ = false;
    std::optional<Error> save_error_;
    // The running tests, for the last word; doc_mu_ keeps the last word from reading the
    // document while this thread changes it between tests.
    struct Running {
        TestConfig config;
        RunningTest how;
        std::string prefix;  // its telemetry stages' prefix
        int64_t since_ns = 0;
    };
    // A progress save is skipped until ten times the last save's cost has passed since it
    // ended (on the run's clock).
    int64_t last_save_ns_ = 0, last_save_cost_ns_ = 0;
    std::timed_mutex doc_mu_;
    std::deque<Running> running_;
    std::string running_label_;
    std::atomic<const char*> activity_{""};
    std::unique_ptr<LastWordScope> last_word_;
};

}  // namespace sb
