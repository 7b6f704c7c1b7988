#include "scenario/run_context.hpp"

#include <chrono>

#include <fmt/format.h>

#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "model/inspect.hpp"
#include "scenario/default_engines.hpp"
#include "scenario/repetition.hpp"

namespace sb {

RunContext::RunContext(ResultDocument& doc, RunSetup setup, std::ostream& err,
                       RunListener* listener)
    : doc_(doc),
      setup_(std::move(setup)),
      err_(err),
      listener_(listener),
      progress_(err, setup_.progress, setup_.terminal, setup_.clock ? setup_.clock : now_ns) {
    if (!setup_.clock)
        setup_.clock = now_ns;
    if (!setup_.pause)
        setup_.pause = sleep_ns;
    if (!setup_.wall_clock)
        setup_.wall_clock = wall_ns;
    // Without a factory of the command's, the real engines, whose waits (the start of a server
    // stagebench starts) are on the run's clock.
    if (!setup_.engines)
        own_engines_ = make_default_engine_factory(setup_.clock, setup_.pause);
    engines_ = setup_.engines ? setup_.engines : own_engines_.get();
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
        for (auto& n : split_device_set(d.str()))
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
    if (!setup_.out_path || (save_error_ && how == DocumentSave::progress))
        return;
    if (!opened_ || how == DocumentSave::final) {
        write_document(doc_, *setup_.out_path, how);
        return;
    }
    const int64_t t = setup_.clock();
    if (last_save_ns_ > 0 && t - last_save_ns_ < 10 * last_save_cost_ns_)
        return;
    // In the middle of a run a failed save stops it; what was measured stays in the document,
    // which the command then keeps elsewhere (the store) before it reports the error.
    try {
        write_document(doc_, *setup_.out_path, how);
        last_save_ns_ = setup_.clock();
        last_save_cost_ns_ = last_save_ns_ - t;
    } catch (const Error& e) {
        save_error_ = e;
        progress_.notice("saving " + *setup_.out_path + " failed: " + e.what() +
                         "; the run stops after this test");
    }
}

void RunContext::update(const std::function<void(ResultDocument&)>& change) {
    {
        std::lock_guard<std::timed_mutex> lock(doc_mu_);
        change(doc_);
        doc_.finished_at = utc_timestamp();
        // A section's milestone (a point, a round, a variant) is on disk when update returns:
        // the rate limit of test saves does not hold it back.
        last_save_ns_ = 0;
    }
    save();
}

bool RunContext::should_stop() const {
    return interrupt_requested() || save_error_.has_value();
}

void RunContext::open(int max_threads) {
    // Progress lines of the telemetry setup go through the progress reporter.
    if (setup_.telemetry.log)
        log_feed_ = std::make_unique<TelemetryLogFeed>(
            *setup_.telemetry.log, LogClocks{setup_.clock, setup_.pause, setup_.wall_clock});
    // The sampler stamps its samples and stage marks on the run's clock, the axis of the
    // tests' own times (a sustained phase's start, a traced pass's window).
    tel_ = open_telemetry(setup_.telemetry, progress_, setup_.clock, setup_.pause, log_feed_.get());
    sampling_ = tel_ && has_sources(*tel_);
    for (auto& w : system_warnings(read_system_info(), max_threads))
        doc_.warnings.push_back(w);
    for (auto& w : model_warnings(doc_.models))
        doc_.warnings.push_back(w);
    save();
    opened_ = true;
    // llama.cpp may stop the process inside a test (an RPC server that dies), and the stage
    // watchdog may end it: the last word records the running tests as failed next to the ones
    // before.
    last_word_ = std::make_unique<LastWordScope>(
        [this](const std::string& message) { return last_word(message); });
    if (listener_)
        listener_->begin(doc_);
}

std::optional<std::string> RunContext::last_word(const std::string& message) {
    std::unique_lock<std::timed_mutex> lock(doc_mu_, std::chrono::seconds(5));
    if (!lock.owns_lock() || running_.empty())
        return std::nullopt;
    const Running& lead = running_.front();
    const DeviceSet devices = lead.how.devices.value_or(lead.config.devices);
    const std::string error = describe_llama_stop(message, devices.str(), activity_.load());
    const size_t earlier = doc_.tests.size();
    for (const auto& run : running_) {
        TestResult r;
        if (run.how.so_far) {
            r = run.how.so_far();
            finish_result(r);
        } else {
            r.config = run.config;
        }
        record_failure(r, error, std::nullopt);
        if (r.started_ns == 0)
            r.started_ns = run.since_ns;
        r.finished_ns = setup_.clock();
        if (run.how.on_failed)
            run.how.on_failed(r, doc_);
        doc_.tests.push_back(std::move(r));
    }
    doc_.finished_at = utc_timestamp();
    if (setup_.out_path) {
        try {
            write_document(doc_, *setup_.out_path, DocumentSave::progress);
        } catch (const std::exception&) {
            // The process is going down: the command's own keeping (below) still runs.
        }
    }
    if (setup_.on_last_word)
        setup_.on_last_word(doc_);
    const std::string what = !running_label_.empty() ? running_label_
                                                     : "test " + lead.config.test_name() + " on " +
                                                           lead.config.devices.str();
    return what + " failed: " + error + "; " + std::to_string(earlier) + " earlier test(s) kept" +
           (setup_.out_path ? " in " + *setup_.out_path : std::string());
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

std::string RunContext::device_label(const TestConfig& c) {
    return c.engine == EngineKind::http ? c.devices.str() + " (HTTP)" : c.devices.str();
}

SweepHooks RunContext::begin_test(const TestConfig& config, RunningTest running) {
    Running run;
    run.config = config;
    run.how = std::move(running);
    run.since_ns = setup_.clock();
    {
        std::lock_guard<std::timed_mutex> lock(doc_mu_);
        run.prefix = run.how.stage_prefix.value_or(
            "test" + std::to_string(doc_.tests.size() + running_.size()) + "/");
        running_.push_back(run);
    }
    activity_.store("");

    SweepHooks hooks;
    if (sampling_)
        hooks.stage_marker = [this, prefix = run.prefix](const std::string& stage, bool begin,
                                                         std::optional<int64_t> tokens) {
            tel_->mark(prefix + stage, begin, tokens);
        };
    // The test, repetition and stage for the progress line; kept by copy so the hooks do not
    // depend on the caller's config.
    auto step = std::make_shared<ProgressStep>();
    step->test = config.test_name();
    if (run.how.step)
        *step = *run.how.step;
    const std::string device = device_label(config);
    hooks.activity = [this, step, device](const char* what) {
        activity_.store(what);
        step->stage = what;
        progress_.step(device, *step);
    };
    if (!run.how.step)
        hooks.repetition = [step](int rep, int reps) {
            step->rep = rep;
            step->reps = reps;
        };
    hooks.progress = [this](const std::string& line) { progress_.note(line); };
    return hooks;
}

void RunContext::name_running(std::string label) {
    std::lock_guard<std::timed_mutex> lock(doc_mu_);
    running_label_ = std::move(label);
}

const TestResult& RunContext::end_test(TestResult r) {
    std::string prefix;
    bool own_report = false;
    {
        std::lock_guard<std::timed_mutex> lock(doc_mu_);
        if (!running_.empty()) {
            prefix = running_.front().prefix;
            own_report = running_.front().how.own_report;
            running_.pop_front();
        }
        if (running_.empty())
            running_label_.clear();
    }
    if (!own_report)
        progress_.done(device_label(r.config));
    if (sampling_ && !prefix.empty()) {
        sync_telemetry_log();
        r.telemetry = test_telemetry(*tel_, prefix);
    }
    if (auto w = own_report ? std::nullopt : stall_warning(r))
        doc_.warnings.push_back(*w);
    if (r.status == Status::failed && !own_report)
        progress_.note("test " + r.config.test_name() + " on " + r.config.devices.str() +
                       " failed: " + r.error.value_or(""));
    {
        std::lock_guard<std::timed_mutex> lock(doc_mu_);
        doc_.tests.push_back(std::move(r));
        doc_.finished_at = utc_timestamp();
    }
    save();
    progress_.advance();
    if (listener_)
        listener_->test_done(doc_, doc_.tests.back());
    return doc_.tests.back();
}

void RunContext::sync_telemetry_log() {
    if (log_feed_ && tel_)
        log_feed_->sync(*tel_, setup_.clock());
}

RunResult RunContext::finish(Outcome at_least) {
    {
        std::lock_guard<std::timed_mutex> lock(doc_mu_);
        running_.clear();
    }
    last_word_.reset();
    if (log_feed_ && tel_) {
        sync_telemetry_log();
        // The log read to the end: every test's windows again, with its rows in place.
        std::lock_guard<std::timed_mutex> lock(doc_mu_);
        for (auto& t : doc_.tests)
            if (t.telemetry)
                t.telemetry = retimed_test_telemetry(*tel_, *t.telemetry);
    }
    finish_telemetry(tel_.get(), doc_);
    if (log_feed_ && doc_.telemetry) {
        for (auto& w : log_feed_->warnings(doc_.telemetry->stages)) {
            doc_.telemetry->warnings.push_back(w);
            doc_.warnings.push_back(w);
        }
    }
    doc_.finished_at = utc_timestamp();
    if (listener_)
        listener_->end(doc_);
    RunResult out;
    out.error = save_error_;
    if (!out.error) {
        try {
            save(DocumentSave::final);
        } catch (const Error& e) {
            out.error = e;
        }
    }
    const bool interrupted = interrupt_requested();
    if (interrupted) {
        const std::string where =
            setup_.out_path && !out.error ? " in " + *setup_.out_path : std::string();
        progress_.notice(doc_.tests.empty() ? "interrupted; what was measured is kept" + where
                                            : "interrupted; " + std::to_string(doc_.tests.size()) +
                                                  " test(s) kept" + where);
    }
    out.outcome = worse(outcome_of(doc_.tests, interrupted), at_least);
    if (out.error)
        out.outcome = worse(out.outcome, Outcome::failed);
    out.doc = std::move(doc_);
    return out;
}

}  // namespace sb
