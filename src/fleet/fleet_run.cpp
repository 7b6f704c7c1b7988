#include "fleet/fleet_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "core/arm_level.hpp"
#include "core/document.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"
#include "fleet/bundle.hpp"
#include "fleet/device_probe.hpp"
#include "fleet/dist_files.hpp"
#include "fleet/results_folder.hpp"
#include "fleet/transport.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"

namespace sb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kProbeTimeoutS = 60;
constexpr double kCopyTimeoutS = 1800;
// A job's key in its file and folder names: bundle_key's first 16 hex digits; an exec
// device's stagebench copy (WORKDIR/sb/HASH/) is named alike by its content_hash.
constexpr std::size_t kJobKeyDigits = 16;

const std::set<std::string> kMeasuring = {"run", "ops", "decompose", "sustained", "hybrid"};
// Those that write their document as they go with --out (kept after a failure).
const std::set<std::string> kRunWithOut = {"run", "ops", "sustained", "hybrid"};

// The first 16 hex digits of the file's SHA-256.
std::string content_hash(const std::string& path) {
    return sha256_file(path).substr(0, 16);
}

struct Version {
    std::string tool, llama_tag, llama_commit;
    std::optional<std::string> cpu_variant;
    std::vector<std::string> cpu_features;  // what its CPU backend sees (an agent: the hwcaps)
};

// The release, without a build's suffix (0.1.0+agent.armv8.2 is 0.1.0).
std::string release_of(const std::string& tool) {
    return tool.substr(0, tool.find('+'));
}

// `stagebench version`'s lines.
std::optional<Version> parse_version(const std::string& text) {
    Version v;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("stagebench ", 0) == 0)
            v.tool = line.substr(11);
        else if (line.rfind("llama.cpp ", 0) == 0) {
            const auto open = line.find(" (commit ");
            v.llama_tag =
                line.substr(10, open == std::string::npos ? std::string::npos : open - 10);
            if (open != std::string::npos) {
                const auto close = line.find(')', open);
                v.llama_commit = line.substr(
                    open + 9, close == std::string::npos ? std::string::npos : close - open - 9);
            }
        } else if (line.rfind("cpu variant: ", 0) == 0) {
            v.cpu_variant = line.substr(13);
        } else if (line.rfind("cpu features:", 0) == 0) {
            std::istringstream words(line.substr(13));
            for (std::string w; words >> w;)
                v.cpu_features.push_back(w);
        }
    }
    if (v.tool.empty())
        return std::nullopt;
    return v;
}

bool is_run_model_flag(const std::string& a) {
    return a == "-m" || a == "--model";
}

std::vector<std::string> comma_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream list(s);
    for (std::string m; std::getline(list, m, ',');)
        out.push_back(m);
    return out;
}

// The last line of a log that is stagebench's own error ("stagebench: error: ..."), without
// run.sh's closing summary; else its last non-empty line; "" when empty.
std::string last_error_line(const std::string& text) {
    std::istringstream in(text);
    std::string line, error, last;
    while (std::getline(in, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
            line.pop_back();
        if (line.empty())
            continue;
        last = line;
        if (line.rfind("stagebench: error: ", 0) == 0 &&
            line.find("not measured (stagebench exited") == std::string::npos)
            error = line.substr(19);
    }
    return error.empty() ? last : error;
}

// A shell glob of n hex digits.
std::string hex_glob(std::size_t n) {
    std::string g;
    for (std::size_t i = 0; i < n; ++i)
        g += "[0-9a-f]";
    return g;
}

// The glob of a results folder's name on a device: run_job's STAMP (utc_stamp()-PID).
std::string stamp_glob() {
    return "[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z-*";
}

// Housekeeping of one of the device's folders, in POSIX sh (toybox's and busybox's ls, tail and
// rm too): in dir, the entries named by glob that hold marker (a job's or a stagebench copy's
// .ok, touched on every use; a results folder's .fetched, made once it came back whole) beyond
// the `keep` last used (by the marker's time) are removed, never those named in spare (what
// this run uses). An entry without its marker (a job or copy being unpacked, a results folder
// being written or that never came back) and anything else are left alone. What another run
// uses there was marked used when that run began, so it goes only after `keep` others were
// used since.
std::string prune_device_script(const std::string& dir, const std::string& glob,
                                const std::string& marker, std::size_t keep,
                                const std::vector<std::string>& spare) {
    std::string remove = fmt::format("rm -rf \"${{f%/{}}}\"", marker);
    if (!spare.empty()) {
        std::vector<std::string> names;
        for (const auto& s : spare)
            names.push_back(shell_quote(s + "/" + marker));
        remove = fmt::format("case \"$f\" in {}) ;; *) {} ;; esac", fmt::join(names, "|"), remove);
    }
    // A subshell: several folders are pruned in one call.
    return fmt::format(
        "(cd {} 2>/dev/null && ls -t -d {}/{} 2>/dev/null | tail -n +{} | "
        "while read -r f; do {}; done)",
        shell_quote(dir), glob, marker, keep + 1, remove);
}

// The same for files: in dir, the files named by glob beyond the `keep` last used (by their own
// time: a model touched on every use, a document written by its run) are removed, never those
// named in spare nor one still being written (NAME.part).
std::string prune_device_files(const std::string& dir, const std::string& glob, std::size_t keep,
                               const std::vector<std::string>& spare) {
    std::vector<std::string> names = {"*.part"};
    for (const auto& s : spare)
        names.push_back(shell_quote(s));
    return fmt::format(
        "(cd {} 2>/dev/null && ls -t -d {} 2>/dev/null | tail -n +{} | "
        "while read -r f; do case \"$f\" in {}) ;; *) rm -f \"$f\" ;; esac; done)",
        shell_quote(dir), glob, keep + 1, fmt::join(names, "|"));
}

std::string utc_stamp() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    return stamp;
}

std::string self_exe() {
    std::error_code ec;
    return fs::read_symlink("/proc/self/exe", ec).string();
}

struct Job {
    DeviceSpec spec;
    std::unique_ptr<Transport> t;
    std::string workdir;
    DeviceIdentity id;
    std::string sb;        // the stagebench to run there
    std::string artifact;  // what was deployed ("" when none)
    std::optional<Version> version;
    std::string started_at;
    std::optional<std::string> error, error_kind;  // a failure before the command ran
    bool skip = false;
    std::optional<int64_t> done_doc;  // --resume: the document already stored
    // ssh and adb devices run a job (fleet/bundle.hpp): unpacked there in job_dir, named by
    // job_key (the first 16 hex digits of bundle_key), run with run_args.
    bool bundled = false;
    std::string job_dir, job_key;
    std::vector<std::string> run_args;
    // An exec device: the stagebench copies (WORKDIR/sb/HASH/) this run pushed or used.
    std::vector<std::string> sb_used;
    // The models synthesised there (WORKDIR/models/NAME) this run uses.
    std::vector<std::string> models_used;
};

class Fleet {
  public:
    Fleet(const Inventory& inv, const FleetRunOptions& o, std::ostream& log)
        : inv_(inv), o_(o), log_(log) {
        if (!o.db_path.empty())
            store_ = ResultStore::open(o.db_path);
        command_json_ = dump_json(json(o.command));
        split_for_jobs();
    }

    // The devices to work on (--only), each with its transport and work directory.
    void select() {
        for (const auto& d : inv_.devices) {
            if (!o_.only.empty() &&
                std::find(o_.only.begin(), o_.only.end(), d.name) == o_.only.end())
                continue;
            auto j = std::make_unique<Job>();
            j->spec = d;
            j->spec.gates = inv_.gates.overridden_by(d.gates).overridden_by(o_.gates);
            if (d.kind == TransportKind::ssh && !sharing_)
                sharing_ = std::make_unique<SshSharing>();
            j->t = make_transport(j->spec, d.kind == TransportKind::ssh
                                               ? sharing_->control_path(jobs_.size())
                                               : std::string());
            j->workdir = workdir_of(j->spec);
            j->bundled = d.kind == TransportKind::ssh || d.kind == TransportKind::adb;
            jobs_.push_back(std::move(j));
        }
        if (jobs_.empty())
            throw usage_error("--only names no device of inventory '" + inv_.path + "'");
        // A job's run.sh writes the trace and the JUnit into its results folder itself.
        const bool any_job =
            std::any_of(jobs_.begin(), jobs_.end(), [](const auto& j) { return j->bundled; });
        if (any_job && !o_.command.empty())
            check_measuring_command(o_.command, "fleet run", {"--trace", "--junit"});
    }

    FleetRunSummary run() {
        select();
        if (o_.resume) {
            for (const auto& r : store_->fleet_runs(inv_.name))
                for (auto& j : jobs_)
                    if (r.device == j->spec.name && r.command == command_json_ &&
                        r.status == "ok") {
                        j->skip = true;
                        j->done_doc = r.document_id;
                    }
        }
        for (auto& j : jobs_)
            if (j->skip) {
                say(*j, j->done_doc ? fmt::format("already in the store (document #{}): skipped",
                                                  *j->done_doc)
                                    : std::string("already in the store: skipped"));
                ++summary_.skipped;
                FleetRun r = row(*j);
                r.status = "skipped";
                r.document_id = j->done_doc;
                summary_.runs.push_back(std::move(r));
            }
        each("preparing the device", [this](Job& j) { prepare(j); });
        check_versions();
        each("measuring", [this](Job& j) { measure(j); });
        return summary_;
    }

  private:
    std::size_t keep() const { return static_cast<std::size_t>(o_.keep); }

    std::string workdir_of(const DeviceSpec& d) const {
        if (!d.workdir.empty())
            return d.workdir;
        switch (d.kind) {
            case TransportKind::ssh:
                return "stagebench-fleet";  // in the login's home
            case TransportKind::adb:
                return "/data/local/tmp/stagebench";
            default: {
                // Beside a SQLite store; a database has no "beside": the current folder.
                const fs::path base = is_postgres_url(o_.db_path)
                                          ? fs::current_path()
                                          : fs::path(o_.db_path).parent_path();
                return fs::absolute(base / (inv_.name + "-" + d.name)).string();
            }
        }
    }

    void say(const Job& j, const std::string& msg) {
        std::lock_guard lk(log_mu_);
        log_ << "[" << j.spec.name << "] " << msg << "\n" << std::flush;
    }

    // f on every job not skipped or failed, o_.parallel at once. A job that fails after Ctrl-C
    // is recorded as interrupted during what (a version probe killed by the signal is not a
    // device whose stagebench "does not run"); one that Ctrl-C reaches before f as interrupted
    // before what: a device left unmeasured is never silently dropped from the summary.
    void each(const std::string& what, const std::function<void(Job&)>& f) {
        if (o_.before_step)
            o_.before_step(what);
        std::atomic<std::size_t> next{0};
        auto worker = [&] {
            for (std::size_t k; (k = next++) < jobs_.size();) {
                Job& j = *jobs_[k];
                if (j.skip || j.error)
                    continue;
                if (interrupt_requested()) {
                    fail(j, "interrupted (Ctrl-C) before " + what, "interrupted");
                    continue;
                }
                try {
                    f(j);
                } catch (const Error& e) {
                    if (interrupt_requested())
                        fail(j, "interrupted (Ctrl-C) while " + what, "interrupted");
                    else
                        fail(j, e.what(), error_kind_name(e.kind()));
                } catch (const std::exception& e) {
                    fail(j, interrupt_requested() ? "interrupted (Ctrl-C) while " + what : e.what(),
                         interrupt_requested() ? "interrupted" : "runtime");
                }
            }
        };
        const int n = std::max(1, std::min<int>(o_.parallel, static_cast<int>(jobs_.size())));
        std::vector<std::thread> threads;
        for (int i = 1; i < n; ++i)
            threads.emplace_back(worker);
        worker();
        for (auto& t : threads)
            t.join();
    }

    void fail(Job& j, const std::string& error, const std::string& kind) {
        j.error = error;
        j.error_kind = kind;
        say(j, "failed: " + error);
        FleetRun r = row(j);
        r.status = "failed";
        r.error = error;
        r.error_kind = kind;
        record(j, r);
        std::lock_guard lk(store_mu_);
        ++summary_.failed;
    }

    // Appends a fleet run to the store; one the store refuses (a server gone, a lock held past
    // the wait) is said on the log, never thrown: the device's outcome is already decided.
    void record(const Job& j, const FleetRun& r) {
        std::lock_guard lk(store_mu_);
        summary_.runs.push_back(r);
        if (!store_)
            return;
        try {
            store_->append_fleet_run(r);
        } catch (const Error& e) {
            say(j, std::string("not recorded in the store (fleet status will not show it): ") +
                       e.what());
        }
    }

    // Appends doc to the store; when the store refuses it, writes it to a file as `--db` does
    // (beside a SQLite store, else in the current folder) and returns nullopt with why in
    // error: what was measured is never lost.
    std::optional<int64_t> store_document(const Job& j, const ResultDocument& doc,
                                          std::string& error) {
        std::lock_guard lk(store_mu_);
        try {
            return store_->append(doc);
        } catch (const Error& e) {
            const std::time_t t = std::time(nullptr);
            std::tm tm{};
            gmtime_r(&t, &tm);
            char stamp[32];
            std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
            const std::string base = fallback_document_base(o_.db_path, stamp) + "-" + j.spec.name;
            const std::string text = dump_json(to_json(doc), 2) + "\n";
            std::string where;
            try {
                where = write_fallback_document(base, text);
            } catch (const Error&) {
                where = write_fallback_document(fs::path(base).filename().string(), text);
            }
            error = std::string(e.what()) + "; its document was written to " + where +
                    " instead (stagebench db import --db " + store_->path() + " " + where +
                    " adds it later)";
            return std::nullopt;
        }
    }

    FleetRun row(const Job& j) const {
        FleetRun r;
        r.fleet = inv_.name;
        r.device = j.spec.name;
        r.transport = j.spec.transport;
        r.command = command_json_;
        r.started_at = j.started_at.empty() ? utc_timestamp() : j.started_at;
        r.finished_at = utc_timestamp();
        if (j.version) {
            r.tool_version = j.version->tool;
            r.llama_commit = j.version->llama_commit;
        }
        if (!j.id.arch.empty())
            r.arch = j.id.arch;
        return r;
    }

    ProcessResult sh(Job& j, const std::string& cmd, double timeout_s = kProbeTimeoutS) {
        return j.t->shell(cmd, timeout_s);
    }

    // Runs cmd there; throws sb::Error(runtime) naming what when it fails.
    std::string must(Job& j, const std::string& cmd, const std::string& what,
                     double timeout_s = kProbeTimeoutS) {
        auto r = sh(j, cmd, timeout_s);
        if (!r.ok())
            throw runtime_error(transport_error(j.spec, what, r));
        return r.out;
    }

    // --- 1 to 4 ---
    void prepare(Job& j) {
        j.started_at = utc_timestamp();
        say(j, "reaching " + j.spec.transport);
        j.id = parse_identity(must(j, identity_script(), "reading its identity"));
        must(j, "mkdir -p " + shell_quote(j.workdir), "making " + j.workdir);
        if (j.bundled)
            deploy_job(j);
        else
            deploy(j);
        say(j, fmt::format("{} {}, stagebench {} (llama.cpp {}){}", j.id.arch,
                           j.id.model.value_or(j.id.cpu.value_or("")), j.version->tool,
                           j.version->llama_commit, j.artifact.empty() ? "" : ", " + j.artifact));
        if (j.bundled)
            resolve_run_args(j);
        else
            push_models(j);
    }

    // --- ssh and adb devices: the measuring command as a job (fleet/bundle.hpp) ---

    // The command split once for the jobs: its name and each -m whose models are all files of
    // this machine go into the job (the files packed, the flag rewritten to models/NAME), the
    // rest become run.sh's arguments, so that one job serves every run of the same stagebench,
    // models and command whatever the other arguments. `fleet rpc` (no command) packs the
    // stagebench alone.
    void split_for_jobs() {
        const auto& c = o_.command;
        job_command_ = {c.empty() ? std::string("run") : c[0]};
        for (std::size_t i = 1; i < c.size(); ++i) {
            if (!is_run_model_flag(c[i]) || i + 1 == c.size()) {
                rest_args_.push_back(c[i]);
                continue;
            }
            const auto models = comma_list(c[i + 1]);
            const auto here = std::count_if(models.begin(), models.end(),
                                            [](const auto& m) { return fs::is_regular_file(m); });
            if (here > 0 && here == static_cast<long>(models.size())) {
                job_command_.insert(job_command_.end(), {c[i], c[i + 1]});
                for (const auto& m : models)
                    if (std::find(job_models_.begin(), job_models_.end(), m) == job_models_.end())
                        job_models_.push_back(m);
            } else if (here > 0) {
                throw usage_error("fleet run: " + c[i] + " '" + c[i + 1] +
                                  "' mixes files of this machine with presets or paths of the "
                                  "devices; give each kind its own " +
                                  c[i]);
            } else {
                rest_args_.insert(rest_args_.end(), {c[i], c[i + 1]});
            }
            ++i;
        }
    }

    // Where fleet run keeps the jobs it makes: beside the dist they are made of (dist/jobs/),
    // else in the user's cache when the dist folder cannot be written.
    std::string jobs_cache_dir() const {
        std::error_code ec;
        const fs::path beside = fs::path(o_.dist_dir) / "jobs";
        fs::create_directories(beside, ec);
        if (!ec && ::access(beside.c_str(), W_OK) == 0)
            return beside.string();
        const char* xdg = std::getenv("XDG_CACHE_HOME");
        const char* home = std::getenv("HOME");
        const fs::path cache =
            xdg && *xdg ? fs::path(xdg) : fs::path(home ? home : "/tmp") / ".cache";
        const fs::path dir = cache / "stagebench" / "jobs";
        fs::create_directories(dir, ec);
        if (ec)
            throw input_error("fleet run: cannot make a folder for its jobs, neither " +
                              beside.string() + " nor " + dir.string() + ": " + ec.message());
        return dir.string();
    }

    struct MadeJob {
        BundleSpec spec;
        std::string path, key;
    };

    // The job for bo, made once per content (bundle_key) and kept in the jobs folder; a job
    // already there is used as it is. One at a time: parallel devices of one target share it.
    MadeJob job_for(BundleOptions bo) {
        std::lock_guard lk(bundle_mu_);
        const std::string which = bo.installed_stagebench.value_or("target:" + bo.target);
        auto it = made_.find(which);
        if (it != made_.end())
            return it->second;
        MadeJob m;
        m.spec = plan_bundle(bo);
        m.key = bundle_key(m.spec);
        const fs::path dir = jobs_cache_dir();
        m.path = (dir / (m.key.substr(0, 16) + ".tar.gz")).string();
        std::error_code ec;
        if (!fs::is_regular_file(m.path)) {
            bo.out = m.path;
            std::ostringstream quiet;  // bundle's own progress: the devices' lines say it
            write_bundle(bo, m.spec, quiet);
            prune_jobs(dir, m.path, static_cast<std::size_t>(o_.keep));
        } else {
            // Used now: the last to be pruned.
            fs::last_write_time(m.path, fs::file_time_type::clock::now(), ec);
        }
        made_[which] = m;
        return m;
    }

    // The jobs folder keeps the `kept` last used; older ones (another dist, other models) are
    // removed, never the one just made. A job being copied elsewhere stays readable.
    static void prune_jobs(const fs::path& dir, const std::string& keep, std::size_t kept) {
        std::vector<std::pair<fs::file_time_type, fs::path>> jobs;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            const std::string n = e.path().filename().string();
            if (n.size() == kJobKeyDigits + 7 && n.substr(kJobKeyDigits) == ".tar.gz" &&
                e.is_regular_file(ec))
                jobs.emplace_back(e.last_write_time(ec), e.path());
        }
        if (jobs.size() <= kept)
            return;
        std::sort(jobs.begin(), jobs.end(),
                  [](const auto& a, const auto& b) { return a.first > b.first; });
        for (std::size_t i = kept; i < jobs.size(); ++i)
            if (jobs[i].second != fs::path(keep))
                fs::remove(jobs[i].second, ec);
    }

    // The job of the device's target (as deploy() picks a stagebench: the dist tarball of its
    // architecture, a phone's agent of its ARM level, or the one the inventory names), copied
    // there once per content into WORKDIR/jobs/KEY/ and unpacked.
    void deploy_job(Job& j) {
        const DeviceSpec& d = j.spec;
        BundleOptions bo;
        bo.dist_dir = o_.dist_dir;
        bo.models = job_models_;
        bo.command = job_command_;
        if (d.stagebench) {
            std::string path = *d.stagebench;
            if (path.rfind('/', 0) != 0) {
                // A name on the device's PATH: the job names it by its path there.
                auto r = sh(j, "command -v " + shell_quote(path));
                std::string found = r.out.substr(0, r.out.find('\n'));
                if (!r.ok() || found.rfind('/', 0) != 0)
                    throw input_error(d.name + ": its stagebench '" + path + "' is not there");
                path = found;
            }
            bo.installed_stagebench = path;
        } else {
            const std::string arch = dist_arch(j.id.arch);
            if (arch.empty())
                throw input_error(d.name + ": no stagebench for its architecture '" + j.id.arch +
                                  "'");
            if (!j.id.android && dist_tarball_for(o_.dist_dir, arch)) {
                bo.target = arch;
            } else if (arch == "arm64") {
                // A phone (or an ARM board without the tarball): the static agent of its level.
                std::set<std::string> features;
                try {
                    features = cpuinfo_common_features(j.id.cpuinfo);
                } catch (const Error&) {
                }
                const ArmLevel best = best_arm_level(features);
                std::optional<ArmLevel> level;
                for (ArmLevel l : kArmLevels)
                    if (dist_agent(o_.dist_dir, l) && l <= best)
                        level = l;
                if (!level)
                    throw input_error(
                        fmt::format("{}: no agent in {} for {} (make agents builds {})", d.name,
                                    o_.dist_dir, arm_level_name(best), agent_file_name(best)));
                bo.target = "agent-" + arm_level_name(*level);
            } else {
                throw input_error(d.name + ": no stagebench-*-linux-" + arch + ".tar.gz in " +
                                  o_.dist_dir + " (make dist)");
            }
        }
        const MadeJob m = job_for(bo);
        j.job_key = m.key.substr(0, kJobKeyDigits);
        const std::string jobs = j.workdir + "/jobs";
        j.job_dir = jobs + "/" + j.job_key;
        // A job already there is used as it is, and marked used now (its .ok's time), so that
        // pruning the device's jobs folder keeps it among the last used.
        const std::string ok = shell_quote(j.job_dir + "/.ok");
        if (!sh(j, "test -f " + ok + " && { touch " + ok + " 2>/dev/null || true; }").ok()) {
            std::error_code ec;
            const auto bytes = fs::file_size(m.path, ec);
            say(j, fmt::format("deploying {}{} model(s) as job {} ({:.1f} MB)",
                               m.spec.artifact.empty() ? "" : m.spec.artifact + " and ",
                               m.spec.models.size(), j.job_key,
                               ec ? 0.0 : static_cast<double>(bytes) / 1e6));
            must(j, "mkdir -p " + shell_quote(jobs), "making " + jobs);
            const std::string tarball = j.job_dir + ".tar.gz";
            j.t->push(m.path, tarball, kCopyTimeoutS);
            // Unpacked beside, then marked: a job half unpacked (a full disk) is never used.
            const std::string q = shell_quote(j.job_dir), qt = shell_quote(tarball);
            must(j,
                 "rm -rf " + q + " && mkdir " + q + " && { err=$(tar -xzf " + qt + " -C " + q +
                     " 2>&1) || { rm -rf " + q + " " + qt +
                     "; printf '%s\\n' \"$err\" | head -n 1 >&2; " + "exit 1; }; } && rm -f " + qt +
                     " && touch " + ok,
                 "unpacking the job", kCopyTimeoutS);
            // Housekeeping: a prune that fails (a file the login cannot remove) leaves more
            // jobs there, never a failed device. The stagebench copies of older releases
            // (WORKDIR/sb/, before devices ran jobs) go the same way.
            sh(j, prune_device_script(jobs, hex_glob(kJobKeyDigits), ".ok", keep(), {j.job_key}) +
                      "; " +
                      prune_device_script(j.workdir + "/sb", hex_glob(kJobKeyDigits), ".ok", keep(),
                                          {}));
        }
        j.sb = m.spec.stagebench.rfind('/', 0) == 0 ? m.spec.stagebench
                                                    : j.job_dir + "/" + m.spec.stagebench;
        j.artifact = m.spec.artifact;
        j.version = version_of(j, with_prefix(j, j.sb));
        if (!j.version)
            throw runtime_error(d.name + ": the job's stagebench does not run there (" + j.sb +
                                ")");
    }

    // run.sh's arguments on this device: each -m preset:NAME synthesised there (once), other
    // models passed as they are (paths the device has).
    void resolve_run_args(Job& j) {
        j.run_args = rest_args_;
        for (std::size_t i = 0; i + 1 < j.run_args.size(); ++i) {
            if (!is_run_model_flag(j.run_args[i]))
                continue;
            std::string joined;
            for (const auto& m : comma_list(j.run_args[i + 1]))
                joined += (joined.empty() ? "" : ",") +
                          (m.rfind("preset:", 0) == 0 ? synth_there(j, m.substr(7)) : m);
            j.run_args[i + 1] = joined;
            ++i;
        }
    }

    std::optional<Version> version_of(Job& j, const std::vector<std::string>& argv) {
        auto r = sh(j, shell_join(argv) + " version");
        if (!r.ok())
            return std::nullopt;
        return parse_version(r.out);
    }

    std::vector<std::string> with_prefix(const Job& j, const std::string& sb) const {
        auto argv = j.t->run_prefix();
        argv.push_back(sb);
        return argv;
    }

    // Pushes file into workdir/sb/HASH/ once; returns that folder. One already there is marked
    // used now (its .ok's time), as a job is, so that pruning sb/ keeps it among the last used.
    std::string push_once(Job& j, const std::string& file, bool tarball) {
        const std::string h = content_hash(file);
        const std::string dir = j.workdir + "/sb/" + h;
        j.sb_used.push_back(h);
        const std::string ok = shell_quote(dir + "/.ok");
        if (sh(j, "test -f " + ok + " && { touch " + ok + " 2>/dev/null || true; }").ok())
            return dir;
        say(j, "deploying " + fs::path(file).filename().string());
        must(j, "mkdir -p " + shell_quote(dir), "making " + dir);
        const std::string remote = dir + "/" + fs::path(file).filename().string();
        j.t->push(file, remote, kCopyTimeoutS);
        must(j,
             tarball
                 ? "cd " + shell_quote(dir) + " && tar -xzf " + shell_quote(remote) + " && rm -f " +
                       shell_quote(remote) + " && touch .ok"
                 : "chmod 755 " + shell_quote(remote) + " && touch " + shell_quote(dir + "/.ok"),
             tarball ? "unpacking the dist" : "installing the agent");
        return dir;
    }

    std::vector<fs::path> agents_high_to_low() const {
        std::vector<fs::path> out;
        for (auto it = std::rbegin(kArmLevels); it != std::rend(kArmLevels); ++it)
            if (auto p = dist_agent(o_.dist_dir, *it))
                out.push_back(*p);
        return out;
    }

    // A local or exec device's stagebench: one the inventory names, an agent (or this
    // stagebench) behind an exec prefix, or this stagebench.
    void deploy(Job& j) {
        const DeviceSpec& d = j.spec;
        if (d.stagebench) {
            j.sb = *d.stagebench;
            j.version = version_of(j, with_prefix(j, j.sb));
            if (!j.version)
                throw input_error(d.name + ": its stagebench '" + j.sb + "' does not run");
            return;
        }
        if (d.kind == TransportKind::exec) {
            deploy_exec(j);
            // Housekeeping, as for the jobs: a prune that fails is never a failed device.
            sh(j, prune_device_script(j.workdir + "/sb", hex_glob(kJobKeyDigits), ".ok", keep(),
                                      j.sb_used));
            return;
        }
        // A local device: this machine's own stagebench. (ssh and adb devices get a job:
        // deploy_job.)
        j.sb = self_exe();
        j.version = version_of(j, {j.sb});
        if (!j.version)
            throw runtime_error(d.name + ": this stagebench does not run: " + j.sb);
    }

    // An exec device's stagebench: what runs behind the prefix is found by trying: the agents
    // from the highest ARM level down (an agent refuses a CPU without its features), then this
    // stagebench.
    void deploy_exec(Job& j) {
        const DeviceSpec& d = j.spec;
        for (const auto& a :
             d.arch.value_or("arm64") == "arm64" ? agents_high_to_low() : std::vector<fs::path>{}) {
            const std::string dir = push_once(j, a.string(), false);
            const std::string sb = dir + "/" + a.filename().string();
            if (auto v = version_of(j, with_prefix(j, sb))) {
                j.sb = sb;
                j.version = v;
                j.artifact = a.filename().string();
                // The device is the emulated CPU, not this machine.
                j.id.arch = "aarch64";
                j.id.cpu_features = v->cpu_features;
                j.id.cpu.reset();
                j.id.model = shell_join(d.prefix);
                j.id.soc.reset();
                j.id.cpuinfo.clear();
                return;
            }
        }
        j.sb = self_exe();
        j.version = version_of(j, with_prefix(j, j.sb));
        if (!j.version)
            throw input_error(d.name + ": nothing of " + o_.dist_dir +
                              " runs behind its prefix (make agents, make dist)");
    }

    // A local or exec device's models: the files here, presets synthesised (once).
    void push_models(Job& j) {
        std::map<std::string, std::string> remote;
        for (std::size_t i = 0; i + 1 < o_.command.size(); ++i) {
            if (o_.command[i] != "-m" && o_.command[i] != "--model")
                continue;
            std::stringstream list(o_.command[i + 1]);
            for (std::string m; std::getline(list, m, ',');) {
                if (remote.count(m))
                    continue;
                if (m.rfind("preset:", 0) == 0) {
                    remote[m] = synth_there(j, m.substr(7));
                    continue;
                }
                // This machine's files (local and exec devices) as they are; anything else a
                // model behind a server.
                if (fs::is_regular_file(m))
                    remote[m] = fs::absolute(m).string();
            }
        }
        std::lock_guard lk(jobs_mu_);
        j_models_[&j] = remote;
    }

    // preset:NAME[:LAYERS]: `synth` on the device, once (the same stagebench writes the same
    // file for the same preset and seed).
    std::string synth_there(Job& j, const std::string& spec) {
        const auto colon = spec.find(':');
        const std::string preset = spec.substr(0, colon);
        const std::string layers = colon == std::string::npos ? "" : spec.substr(colon + 1);
        if (preset.empty() ||
            preset.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") !=
                std::string::npos ||
            layers.find_first_not_of("0123456789") != std::string::npos)
            throw usage_error("-m preset:" + spec + ": expected preset:NAME or preset:NAME:LAYERS");
        const std::string path = j.workdir + "/models/synth-" + preset +
                                 (layers.empty() ? "" : "-" + layers) + "-" +
                                 release_of(j.version->tool) + ".gguf";
        j.models_used.push_back(fs::path(path).filename().string());
        // One already there is marked used now (its time), so that pruning models/ keeps it.
        const std::string q = shell_quote(path);
        if (!sh(j, "test -f " + q + " && { touch " + q + " 2>/dev/null || true; }").ok()) {
            say(j, "synthesising " + preset + " there");
            auto argv = with_prefix(j, j.sb);
            argv.insert(argv.end(), {"synth", "--preset", preset, "-o", path + ".part"});
            if (!layers.empty())
                argv.insert(argv.end(), {"--layers", layers});
            must(j,
                 "mkdir -p " + shell_quote(j.workdir + "/models") + " && " + shell_join(argv) +
                     " && mv -f " + shell_quote(path + ".part") + " " + shell_quote(path),
                 "synthesising " + preset, kCopyTimeoutS);
        }
        return path;
    }

    // Every device runs the same stagebench and llama.cpp commit as the first one, or fails.
    void check_versions() {
        const Job* first = nullptr;
        for (auto& j : jobs_) {
            if (j->skip || j->error || !j->version)
                continue;
            if (!first) {
                first = j.get();
                continue;
            }
            const Version &a = *first->version, &b = *j->version;
            if ((release_of(a.tool) != release_of(b.tool) || a.llama_commit != b.llama_commit) &&
                !o_.allow_mixed)
                fail(*j,
                     fmt::format("{}: stagebench {} with llama.cpp {} differs from {}'s {} with "
                                 "{}: redeploy, or --allow-mixed to compare them anyway",
                                 j->spec.name, b.tool, b.llama_commit, first->spec.name, a.tool,
                                 a.llama_commit),
                     "input");
        }
    }

    // --- `fleet rpc up|down`: rpc-server on the devices ---
  public:
    std::vector<FleetRpcEndpoint> rpc_up(int base_port) {
        select();
        each("preparing the device", [this](Job& j) { prepare(j); });
        check_versions();
        std::vector<FleetRpcEndpoint> out;
        for (std::size_t k = 0; k < jobs_.size(); ++k) {
            Job& j = *jobs_[k];
            if (j.error)
                continue;
            try {
                out.push_back(start_rpc_server(j, base_port + static_cast<int>(k)));
            } catch (const Error& e) {
                fail(j, e.what(), error_kind_name(e.kind()));
            }
        }
        return out;
    }

    int rpc_down() {
        select();
        int stopped = 0;
        each("stopping its rpc-server", [&](Job& j) {
            const std::string pidfile = j.workdir + "/rpc-server.pid";
            auto r = sh(j, "test -f " + shell_quote(pidfile) + " && kill $(cat " +
                               shell_quote(pidfile) + ") && rm -f " + shell_quote(pidfile));
            if (r.ok()) {
                say(j, "rpc-server stopped");
                std::lock_guard lk(log_mu_);
                ++stopped;
            } else {
                say(j, "no rpc-server of the fleet running there");
            }
        });
        return stopped;
    }

  private:
    FleetRpcEndpoint start_rpc_server(Job& j, int port) {
        // Where the host reaches it: an ssh device at its address (the server listens there
        // only), a phone through `adb forward`, this machine on loopback.
        std::string listen = "127.0.0.1", reach = "127.0.0.1";
        if (j.spec.kind == TransportKind::ssh)
            listen = reach = j.spec.host;
        const std::string pidfile = j.workdir + "/rpc-server.pid",
                          logfile = j.workdir + "/rpc-server.log";
        auto argv = with_prefix(j, j.sb);
        argv.insert(argv.end(), {"rpc-server", "-H", listen, "-p", std::to_string(port)});
        // Stop one this fleet started before, then start it detached from the session.
        must(j,
             "cd " + shell_quote(j.workdir) + " && { [ -f rpc-server.pid ] && kill $(cat " +
                 "rpc-server.pid) 2>/dev/null; true; } && (nohup " + shell_join(argv) + " >" +
                 shell_quote(logfile) + " 2>&1 </dev/null & echo $! >" + shell_quote(pidfile) + ")",
             "starting rpc-server");
        if (j.spec.kind == TransportKind::adb) {
            const char* adb = std::getenv("STAGEBENCH_ADB");
            auto r = run_process({adb && *adb ? adb : "adb", "-s", j.spec.serial, "forward",
                                  "tcp:" + std::to_string(port), "tcp:" + std::to_string(port)});
            if (!r.ok())
                throw runtime_error(transport_error(j.spec, "adb forward", r));
        }
        const std::string endpoint = reach + ":" + std::to_string(port);
        if (!wait_for_tcp(reach, port, 20)) {
            auto tail = sh(j, "tail -n 3 " + shell_quote(logfile));
            std::string why = tail.out;
            while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
                why.pop_back();
            const auto nl = why.rfind('\n');
            throw runtime_error(
                j.spec.name + ": rpc-server does not answer at " + endpoint +
                (why.empty() ? "" : ": " + why.substr(nl == std::string::npos ? 0 : nl + 1)));
        }
        say(j, "rpc-server at " + endpoint);
        return {j.spec.name, endpoint};
    }

    // --- 5: the gates, then 6: the command ---
    json gates(Job& j, Warnings& warnings) {
        const Gates& g = j.spec.gates;
        const double timeout = g.cool_timeout_s.value_or(600);
        const auto start = std::chrono::steady_clock::now();
        GateState first, s;
        bool timed_out = false;
        for (int k = 0;; ++k) {
            s = parse_gate_state(must(j, gate_script(), "reading its temperatures"));
            if (k == 0)
                first = s;
            GateVerdict v = judge_gates(g, s);
            if (v.refusal)
                throw input_error(j.spec.name + ": gate: " + *v.refusal);
            const double waited =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (!v.hot) {
                for (const auto& w : v.warnings) {
                    say(j, "warning: " + w);
                    warnings.push_back({"fleet_gate", w, ""});
                }
                break;
            }
            // Ctrl-C while cooling: the command is not started ("ran anyway" would measure
            // after the user asked to stop).
            if (interrupt_requested())
                throw runtime_error(j.spec.name + ": interrupted while cooling");
            if (waited >= timeout) {
                timed_out = true;
                const std::string w =
                    fmt::format("still {:.1f} C after {:.0f} s, above --cool-to {:g}C: ran anyway",
                                *s.hottest_c, waited, *g.cool_to_c);
                say(j, "warning: " + w);
                warnings.push_back({"fleet_cool_timeout", w, "give it longer (--cool-timeout)"});
                break;
            }
            if (k % 6 == 0)
                say(j, fmt::format("cooling: {:.1f} C, waiting for {:g} C", *s.hottest_c,
                                   *g.cool_to_c));
            for (int w = 0; w < 50 && !interrupt_requested(); ++w)  // 5 s, Ctrl-C answered
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        json out = {{"before", to_json(first)},
                    {"at_start", to_json(s)},
                    {"waited_s", waited},
                    {"cool_timed_out", timed_out}};
        out["cool_to_c"] = g.cool_to_c ? json(*g.cool_to_c) : json(nullptr);
        out["governor"] = g.governor.value_or("warn");
        out["min_battery_pct"] = g.min_battery_pct ? json(*g.min_battery_pct) : json(nullptr);
        out["max_load"] = g.max_load ? json(*g.max_load) : json(nullptr);
        return out;
    }

    // What one command left: the transport's result, the document (also a partial one), and
    // for a job the local results folder and what went wrong with it.
    struct Ran {
        ProcessResult r;
        double took_s = 0;
        std::optional<ResultDocument> doc;
        std::string doc_error;
        std::string results_dir;           // a job's results folder here ("" : none)
        std::optional<std::string> error;  // a job's failure, one line (without the device)
        std::string error_kind = "runtime";
    };

    std::string device_line(const Job& j) const {
        std::string line;
        if (!j.spec.env.empty()) {
            line += "env";
            for (const auto& [k, v] : j.spec.env)
                line += " " + k + "=" + shell_quote(v);
            line += " ";
        }
        return line;
    }

    // --timeout is enforced on the device, with an interrupt: the command keeps what it
    // measured (its --out document) and stops as after Ctrl-C; killed 30 s later if it does
    // not. Killing the local ssh or adb client alone would leave it running there.
    std::vector<std::string> timeout_words() const {
        if (o_.timeout_s <= 0)
            return {};
        return {"timeout", "-s", "INT", "-k", "30", fmt::format("{:.0f}", std::ceil(o_.timeout_s))};
    }

    // The local deadline only backs up the device's (a device that stops answering).
    double local_deadline() const { return o_.timeout_s > 0 ? o_.timeout_s + 90 : 0; }

    static void try_load(Ran& out, const std::string& path) {
        if (out.doc)
            return;
        try {
            if (fs::is_regular_file(path) && fs::file_size(path) > 0)
                out.doc = load_result_document(path);
        } catch (const Error& e) {
            out.doc_error = e.what();
        }
    }

    // A local or exec device: this machine's stagebench (or one behind a prefix) on the
    // command's own arguments, the document read from its --out file or stdout.
    Ran run_direct(Job& j) {
        std::vector<std::string> args = o_.command;
        std::map<std::string, std::string> remote_models;
        {
            std::lock_guard lk(jobs_mu_);
            remote_models = j_models_[&j];
        }
        for (std::size_t i = 0; i + 1 < args.size(); ++i) {
            if (!is_run_model_flag(args[i]))
                continue;
            std::string joined;
            for (const auto& m : comma_list(args[i + 1])) {
                auto it = remote_models.find(m);
                joined +=
                    (joined.empty() ? "" : ",") + (it == remote_models.end() ? m : it->second);
            }
            args[i + 1] = joined;
        }
        const std::string stamp =
            std::to_string(::time(nullptr)) + "-" + std::to_string(::getpid());
        const std::string remote_out =
            j.workdir + "/results/" + inv_.name + "-" + j.spec.name + "-" + stamp + ".json";
        args.insert(args.end(), {"-o", "json"});
        const bool with_out = kRunWithOut.count(args[0]) > 0;
        if (with_out)
            args.insert(args.end(), {"--out", remote_out});
        std::string line =
            "cd " + shell_quote(j.workdir) + " && mkdir -p results && " + device_line(j);
        auto argv = with_prefix(j, j.sb);
        argv.insert(argv.end(), args.begin(), args.end());
        const auto t = timeout_words();
        argv.insert(argv.begin(), t.begin(), t.end());
        line += shell_join(argv);
        say(j, "running " + shell_join(o_.command));
        const fs::path tmp = fs::temp_directory_path() /
                             fmt::format("sb-fleet-{}-{}-{}", ::getpid(), j.spec.name, stamp);
        fs::create_directories(tmp);
        const std::string stdout_file = (tmp / "stdout.json").string();
        Ran out;
        const auto t0 = std::chrono::steady_clock::now();
        out.r = j.t->shell(line, local_deadline(), stdout_file);
        out.took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // The document: the one written as it went (also after a failure), else stdout.
        if (with_out) {
            const std::string local_out = (tmp / "out.json").string();
            try {
                j.t->pull(remote_out, local_out, kCopyTimeoutS, kMaxUnlistedFileBytes);
                try_load(out, local_out);
            } catch (const Error&) {
            }
        }
        try_load(out, stdout_file);
        std::error_code ec;
        fs::remove_all(tmp, ec);
        // Housekeeping, as after a job: the documents the runs left in WORKDIR/results/ (each
        // read back by its run: a file of this machine, or of an exec device's) keep the
        // `keep` last written, never this run's; then models/. The stamp's seconds are spelled
        // out as ten digits, so that device `a`'s pattern does not take device `a-1`'s files
        // when two devices share a folder.
        const std::string digits10 = [] {
            std::string d;
            for (int i = 0; i < 10; ++i)
                d += "[0-9]";
            return d;
        }();
        sh(j, prune_device_files(
                  j.workdir + "/results",
                  shell_quote(inv_.name + "-" + j.spec.name) + "-" + digits10 + "-[0-9]*.json",
                  keep(), {fs::path(remote_out).filename().string()}) +
                  "; " + prune_models(j));
        return out;
    }

    // Housekeeping of the device's WORKDIR/models/: the models synthesised there
    // (synth-*.gguf, touched on every use) keep the `keep` last used, never one this run uses;
    // the model copies of releases before jobs (HASH-NAME) the `keep` last copied. A prune that
    // fails is never a failed device.
    std::string prune_models(const Job& j) const {
        const std::string dir = j.workdir + "/models";
        return prune_device_files(dir, "synth-*.gguf", keep(), j.models_used) + "; " +
               prune_device_files(dir, hex_glob(kJobKeyDigits) + "-*", keep(), {});
    }

    // Where the results folders of the jobs come back to: beside a SQLite store (a database
    // has no "beside": the current folder), FLEET-results/DEVICE/STAMP/.
    fs::path results_root() const {
        const fs::path base = is_postgres_url(o_.db_path) || o_.db_path.empty()
                                  ? fs::current_path()
                                  : fs::absolute(o_.db_path).parent_path();
        return base / (inv_.name + "-results");
    }

    // An ssh or adb device: its job's run.sh with the command's other arguments, writing into
    // WORKDIR/results/STAMP/, which comes back here whole and is checked against its manifest.
    Ran run_job(Job& j) {
        const std::string stamp = utc_stamp() + "-" + std::to_string(::getpid());
        const std::string remote = j.workdir + "/results/" + stamp;
        std::vector<std::string> argv = timeout_words();
        argv.insert(argv.end(), {"sh", j.job_dir + "/run.sh"});
        argv.insert(argv.end(), j.run_args.begin(), j.run_args.end());
        // From the login's folder, where a relative work directory is (run.sh takes a relative
        // STAGEBENCH_RESULTS as the caller's).
        const std::string line = "mkdir -p " + shell_quote(remote) + " && " + device_line(j) +
                                 "STAGEBENCH_RESULTS=" + shell_quote(remote) + " " +
                                 shell_join(argv);
        say(j, "running " + shell_join(o_.command) + " (job " + j.job_key + ")");
        Ran out;
        const auto t0 = std::chrono::steady_clock::now();
        out.r = j.t->shell(line, local_deadline());
        out.took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

        // The results folder, back here: the manifest first, then every file it lists.
        const fs::path local = results_root() / j.spec.name / stamp;
        std::error_code ec;
        fs::create_directories(local, ec);
        if (ec) {
            out.error = "cannot make the results folder " + local.string() + ": " + ec.message();
            return out;
        }
        out.results_dir = local.string();
        bool fetched = false;  // the whole folder is here, checked
        auto pull = [&](const std::string& name, std::uint64_t max_bytes) {
            j.t->pull(remote + "/" + name, (local / name).string(), kCopyTimeoutS, max_bytes);
        };
        try {
            pull("manifest.json", kMaxManifestBytes);
            const ResultsManifest m = read_results_manifest(local.string());
            // The files it lists in one call where the transport can (ssh: one tar stream),
            // no more bytes than it says they have.
            std::vector<std::string> names;
            std::uint64_t bytes = 0;
            for (const auto& f : m.files) {
                names.push_back(f.name);
                bytes = f.bytes > UINT64_MAX - bytes ? UINT64_MAX : bytes + f.bytes;
            }
            j.t->pull_files(remote, names, local.string(), kCopyTimeoutS, bytes);
            verify_results_folder(m);
            fetched = true;
            for (const auto& f : m.files)
                if (f.kind == "document")
                    try_load(out, (local / f.name).string());
            if (out.r.exit_code != 0 && out.r.exit_code <= 2 && !out.doc_error.empty())
                out.error = out.doc_error;
        } catch (const Error& e) {
            // No manifest (run.sh did not finish: a lost connection, a kill) or one that does
            // not check: what the command wrote is still fetched and kept here.
            for (const char* f : {"result.json", "stderr.log"}) {
                try {
                    if (!fs::exists(local / f))
                        pull(f, kMaxUnlistedFileBytes);
                } catch (const Error&) {
                }
            }
            try_load(out, (local / "result.json").string());
            if (out.r.exit_code >= 0 && out.r.exit_code <= 2)
                out.error = std::string("its results folder does not check: ") + e.what();
        }
        // There, a folder that came back whole is marked fetched: WORKDIR/results/ keeps the
        // `keep` last fetched (this one among them). One that did not come back (a lost
        // connection, a folder that does not check) holds the only copy and is never removed.
        // Housekeeping: a prune that fails is never a failed device.
        std::string tidy = prune_models(j);
        if (fetched)
            tidy = "touch " + shell_quote(remote + "/.fetched") + " && " +
                   prune_device_script(j.workdir + "/results", stamp_glob(), ".fetched", keep(),
                                       {stamp}) +
                   "; " + tidy;
        sh(j, tidy);
        if (o_.timeout_s > 0 && out.r.exit_code == 124)  // timeout(1)'s status when it struck
            out.error = fmt::format("stopped at --timeout ({:.0f} s): what it measured is kept",
                                    std::ceil(o_.timeout_s));
        if (!out.error && (out.r.exit_code == 1 || out.r.exit_code == 2)) {
            std::string log;
            try {
                log = read_input_file((local / "stderr.log").string(), "stderr.log");
            } catch (const Error&) {
            }
            const std::string why = last_error_line(log + "\n" + out.r.err);
            if (out.r.exit_code == 2) {
                out.error = why.empty() ? "not measured" : why;
                out.error_kind = "input";
            } else {
                out.error = "measured, but a test or the gate failed" +
                            (why.empty() ? std::string() : ": " + why);
            }
        }
        return out;
    }

    void measure(Job& j) {
        Warnings gate_warnings;
        json gate_json = gates(j, gate_warnings);
        Ran ran = j.bundled ? run_job(j) : run_direct(j);
        const ProcessResult& r = ran.r;
        std::optional<ResultDocument>& doc = ran.doc;

        std::optional<int64_t> doc_id;
        std::string store_error;  // the store refused the document (written to a file)
        if (doc) {
            json identity = to_json(j.id);
            identity["fleet"] = inv_.name;
            identity["device"] = j.spec.name;
            identity["transport"] = j.spec.transport;
            if (!j.spec.prefix.empty())
                identity["prefix"] = j.spec.prefix;
            identity["stagebench"] = {{"path", j.sb},
                                      {"version", j.version->tool},
                                      {"llama_tag", j.version->llama_tag},
                                      {"llama_commit", j.version->llama_commit},
                                      {"artifact", j.artifact}};
            identity["ggml_cpu_variant"] =
                j.version->cpu_variant ? json(*j.version->cpu_variant) : json(nullptr);
            identity["gates"] = gate_json;
            if (j.bundled)
                identity["job"] = {{"key", j.job_key}, {"results", ran.results_dir}};
            doc->fleet = identity;
            for (auto& w : gate_warnings)
                doc->warnings.push_back(w);
            doc_id = store_document(j, *doc, store_error);
        }
        const bool ok = r.ok() && !ran.error && doc && doc_id;
        FleetRun row_ = row(j);
        row_.document_id = doc_id;
        row_.status = ok ? "ok" : "failed";
        if (!ok) {
            std::string err;
            if (r.exit_code == 255 && j.spec.kind == TransportKind::ssh)
                err = transport_error(j.spec, "connection lost", r);
            else if (r.timed_out || r.interrupted || r.signal || !r.started || r.over_limit)
                err = transport_error(j.spec, "the command", r, kMaxUnlistedFileBytes);
            else if (ran.error)
                err = j.spec.name + ": " + *ran.error;
            else if (!store_error.empty() && r.ok())
                err = j.spec.name + ": " + store_error;
            else if (r.ok())
                err = j.spec.name + ": the command gave no result document" +
                      (ran.doc_error.empty() ? "" : ": " + ran.doc_error);
            else if (r.exit_code > 128 && r.exit_code < 160)
                err = fmt::format("{}: the command was killed by signal {} on the device",
                                  j.spec.name, r.exit_code - 128);
            else
                err = j.spec.name + ": " + r.last_line();
            row_.error = err;
            row_.error_kind = j.bundled ? ran.error_kind : r.exit_code == 2 ? "input" : "runtime";
            say(j, "failed: " + err +
                       (doc_id ? fmt::format(" (what it measured is document #{})", *doc_id) : ""));
            if (!store_error.empty() && !r.ok())
                say(j, "failed to store what it measured: " + store_error);
            if (!ran.results_dir.empty())
                say(j, "its results folder: " + ran.results_dir);
            std::lock_guard lk(store_mu_);
            ++summary_.failed;
        } else {
            say(j, fmt::format("ok: document #{} in {:.1f} s{}", *doc_id, ran.took_s,
                               ran.results_dir.empty() ? "" : ", results in " + ran.results_dir));
            std::lock_guard lk(store_mu_);
            ++summary_.ok;
        }
        record(j, row_);
    }

    const Inventory& inv_;
    const FleetRunOptions& o_;
    std::ostream& log_;
    std::optional<ResultStore> store_;  // none for `fleet rpc`
    std::string command_json_;
    // The ssh devices' shared connections (fleet/transport.hpp): declared before the jobs, so
    // that their transports close them before its folder goes.
    std::unique_ptr<SshSharing> sharing_;
    std::vector<std::unique_ptr<Job>> jobs_;
    std::map<const Job*, std::map<std::string, std::string>> j_models_;
    // The jobs: the command's part packed (name, -m files) and run.sh's arguments; the jobs
    // made in this run, by target (or installed stagebench).
    std::vector<std::string> job_command_, job_models_, rest_args_;
    std::map<std::string, MadeJob> made_;
    std::mutex log_mu_, store_mu_, jobs_mu_, bundle_mu_;
    FleetRunSummary summary_;
};

}  // namespace

bool wait_for_tcp(const std::string& host, int port, double timeout_s) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    while (std::chrono::steady_clock::now() < deadline && !interrupt_requested()) {
        addrinfo* res = nullptr;
        if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) == 0) {
            bool ok = false;
            for (addrinfo* a = res; a && !ok; a = a->ai_next) {
                const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
                if (fd < 0)
                    continue;
                ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
                ::close(fd);
            }
            ::freeaddrinfo(res);
            if (ok)
                return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

std::vector<FleetRpcEndpoint> fleet_rpc_up(const Inventory& inv, const FleetRunOptions& o,
                                           int base_port, std::ostream& log) {
    if (base_port < 1 || base_port + static_cast<int>(inv.devices.size()) > 65535)
        throw usage_error("--port " + std::to_string(base_port) + " leaves no room for " +
                          std::to_string(inv.devices.size()) + " device(s)");
    FleetRunOptions oo = o;
    oo.db_path.clear();
    Fleet f(inv, oo, log);
    return f.rpc_up(base_port);
}

int fleet_rpc_down(const Inventory& inv, const FleetRunOptions& o, std::ostream& log) {
    FleetRunOptions oo = o;
    oo.db_path.clear();
    Fleet f(inv, oo, log);
    return f.rpc_down();
}

bool fleet_measuring_command(const std::string& name) {
    return kMeasuring.count(name) > 0;
}

void check_measuring_command(const std::vector<std::string>& command, const std::string& who,
                             const std::vector<std::string>& also_reserved) {
    if (command.empty())
        throw usage_error(who + " needs a command after --, e.g. -- run -m model.gguf");
    if (!fleet_measuring_command(command[0]))
        throw usage_error(who + ": '" + command[0] +
                          "' is not a measuring command (run, ops, decompose, sustained, hybrid)");
    auto is = [](const std::string& a, const std::string& flag) {
        return a == flag || (flag.rfind("--", 0) == 0 && a.rfind(flag + "=", 0) == 0);
    };
    for (const auto& a : command) {
        for (const char* f : {"-o", "--output", "--out", "--db"})
            if (is(a, f))
                throw usage_error(who + " sets " + a + " itself: each document goes to the " +
                                  (who == "fleet run" ? "fleet's store" : "job's results/"));
        for (const auto& f : also_reserved)
            if (is(a, f))
                throw usage_error(who + " sets " + a + " itself");
    }
}

void check_fleet_options(const FleetRunOptions& o) {
    check_measuring_command(o.command, "fleet run", {});
    if (o.parallel < 1)
        throw usage_error("--parallel must be 1 or more");
    if (o.keep < 1)
        throw usage_error("--keep must be 1 or more");
}

FleetRunSummary run_fleet(const Inventory& inv, const FleetRunOptions& o, std::ostream& log) {
    check_fleet_options(o);
    Fleet f(inv, o, log);
    FleetRunSummary s = f.run();
    if (interrupt_requested())
        log << "fleet: interrupted\n";
    return s;
}

}  // namespace sb
