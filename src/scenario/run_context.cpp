#include "scenario/run_context.hpp"

#include <chrono>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "model/inspect.hpp"

namespace sb {

RunContext::RunContext(ResultDocument& doc, RunSetup setup, std::ostream& err,
                       RunListener* listener)
    : doc_(doc),
      setup_(std::move(setup)),
      err_(err),
      listener_(listener),
      progress_(err, setup_.progress, setup_.terminal, now_ns) {
    std::optional<Error> first;
    for (const auto& path : setup_.models) {
        try {
            doc_.models.push_back(to_json(inspect_model(path)));
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::runtime || !setup_.keep_unusable_models)
                throw;
            unusable_.emplace(path, e);
            if (!first)
                first = e;
        }
    }
    // When no model can be used, the command fails before anything runs.
    if (first && doc_.models.empty())
        throw *first;
    for (const auto& ep : setup_.rpc_servers)
        add_rpc_server(ep);
    std::vector<std::string> names;
    for (const auto& d : setup_.device_sets)
        for (auto& n : split_device_set(d))
            names.push_back(std::move(n));
    if (!names.empty())
        check_device_names(names);
}

RunContext::~RunContext() = default;

const Error* RunContext::unusable_model(const std::string& path) const {
    auto it = unusable_.find(path);
    return it == unusable_.end() ? nullptr : &it->second;
}

void RunContext::save(DocumentSave how) {
    if (setup_.out_path)
        write_document(doc_, *setup_.out_path, how);
}

void RunContext::open(int max_threads) {
    // Progress lines of the telemetry setup go through the progress reporter's stream.
    tel_ = open_telemetry(setup_.telemetry, err_, setup_.progress);
    sampling_ = tel_ && has_sources(*tel_);
    for (auto& w : system_warnings(read_system_info(), max_threads))
        doc_.warnings.push_back(w);
    for (auto& w : model_warnings(doc_.models))
        doc_.warnings.push_back(w);
    save();
    // llama.cpp may stop the process inside a test (an RPC server that dies), and the stage
    // watchdog may end it: the last word records that test as failed next to the ones before.
    last_word_ = std::make_unique<LastWordScope>(
        [this](const std::string& message) -> std::optional<std::string> {
            std::unique_lock<std::timed_mutex> lock(doc_mu_, std::chrono::seconds(5));
            if (!is_running_.load() || !lock.owns_lock() || !running_)
                return std::nullopt;
            TestResult r;
            r.config = *running_;
            record_failure(r,
                           describe_llama_stop(message, running_->devices.str(), activity_.load()),
                           std::nullopt);
            r.started_ns = running_since_ns_.load();
            r.finished_ns = now_ns();
            doc_.tests.push_back(r);
            doc_.finished_at = utc_timestamp();
            save();
            return "test " + r.config.test_name() + " on " + r.config.devices.str() +
                   " failed: " + *r.error + "; " + std::to_string(doc_.tests.size() - 1) +
                   " earlier test(s) kept" +
                   (setup_.out_path ? " in " + *setup_.out_path : std::string());
        });
    if (listener_)
        listener_->begin(doc_);
}

void RunContext::start() {
    if (!sampling_)
        return;
    if (setup_.telemetry.idle_s > 0) {
        progress_.note(
            fmt::format("measuring the idle baseline ({:g} s)", setup_.telemetry.idle_s));
        tel_->measure_idle(static_cast<int64_t>(setup_.telemetry.idle_s * 1e9));
    }
    tel_->start();
}

SweepHooks RunContext::begin_test(const TestConfig& config) {
    {
        std::lock_guard<std::timed_mutex> lock(doc_mu_);
        running_ = config;
    }
    stage_prefix_ = "test" + std::to_string(doc_.tests.size()) + "/";
    activity_.store("");
    running_since_ns_.store(now_ns());
    is_running_.store(true);

    SweepHooks hooks;
    if (sampling_)
        hooks.stage_marker = [this](const std::string& stage, bool begin,
                                    std::optional<int64_t> tokens) {
            tel_->mark(stage_prefix_ + stage, begin, tokens);
        };
    // The test, repetition and stage for the progress line; kept by copy so the hooks do not
    // depend on the caller's config.
    auto step = std::make_shared<ProgressStep>();
    step->test = config.test_name();
    const std::string device =
        config.engine == EngineKind::http ? config.devices.str() + " (HTTP)" : config.devices.str();
    hooks.activity = [this, step, device](const char* what) {
        activity_.store(what);
        step->stage = what;
        progress_.step(device, *step);
    };
    hooks.repetition = [step](int rep, int reps) {
        step->rep = rep;
        step->reps = reps;
    };
    hooks.progress = [this](const std::string& line) { progress_.note(line); };
    return hooks;
}

const TestResult& RunContext::end_test(TestResult r) {
    std::lock_guard<std::timed_mutex> lock(doc_mu_);
    is_running_.store(false);
    running_.reset();
    progress_.done(r.config.engine == EngineKind::http ? r.config.devices.str() + " (HTTP)"
                                                       : r.config.devices.str());
    if (sampling_)
        r.telemetry = test_telemetry(*tel_, stage_prefix_);
    if (auto w = stall_warning(r))
        doc_.warnings.push_back(*w);
    if (r.status == Status::failed)
        progress_.note("test " + r.config.test_name() + " on " + r.config.devices.str() +
                       " failed: " + r.error.value_or(""));
    doc_.tests.push_back(std::move(r));
    doc_.finished_at = utc_timestamp();
    save();
    progress_.advance();
    if (listener_)
        listener_->test_done(doc_, doc_.tests.back());
    return doc_.tests.back();
}

void RunContext::finish() {
    finish_telemetry(tel_.get(), doc_);
    doc_.finished_at = utc_timestamp();
    if (listener_)
        listener_->end(doc_);
    save(DocumentSave::final);
    if (interrupt_requested())
        err_ << "stagebench: interrupted; " << doc_.tests.size() << " test(s) kept"
             << (setup_.out_path ? " in " + *setup_.out_path : std::string()) << "\n";
}

}  // namespace sb
