#include "scenario/mode_experiment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "analysis/mode_parts.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "profile/ops_command.hpp"

namespace sb {

namespace {

bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

bool env_name_ok(const std::string& n) {
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0])))
        return false;
    for (char c : n)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
            return false;
    return true;
}

// NAME of "NAME=...": checked, with the rest after the first '='.
std::pair<std::string, std::string> split_name(const std::string& text, const char* form) {
    const auto eq = text.find('=');
    if (eq == std::string::npos)
        throw usage_error(fmt::format("--mode '{}': expected {}", text, form));
    const std::string name = text.substr(0, eq);
    if (name.empty())
        throw usage_error(
            fmt::format("--mode '{}': the mode has no name (expected {})", text, form));
    for (char c : name)
        if (!name_char(c))
            throw usage_error(fmt::format(
                "--mode '{}': a mode name is letters, digits, '_', '-' and '.' (expected {})", text,
                form));
    return {name, text.substr(eq + 1)};
}

}  // namespace

std::vector<std::string> unread_mode_variables(const std::vector<ModeSpec>& modes,
                                               const std::vector<std::string>& read) {
    std::vector<std::string> out;
    if (read.empty())
        return out;
    for (const auto& m : modes)
        for (const auto& v : m.env)
            if (v.name.rfind("GGML_", 0) == 0 &&
                !std::binary_search(read.begin(), read.end(), v.name) &&
                std::find(out.begin(), out.end(), v.name) == out.end())
                out.push_back(v.name);
    return out;
}

ModeSpec parse_mode_spec(const std::string& text) {
    static const char* form = "NAME=ENV=VAL[,ENV=VAL...] (or NAME= for the inherited environment)";
    auto [name, rest] = split_name(text, form);
    ModeSpec m;
    m.name = name;
    if (rest.empty())
        return m;
    size_t start = 0;
    while (true) {
        const size_t comma = rest.find(',', start);
        const std::string item =
            rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const auto eq = item.find('=');
        if (eq == std::string::npos)
            throw usage_error(
                fmt::format("--mode '{}': '{}' is not ENV=VAL (expected {})", text, item, form));
        EnvSetting e{item.substr(0, eq), item.substr(eq + 1)};
        if (!env_name_ok(e.name))
            throw usage_error(
                fmt::format("--mode '{}': '{}' is not an environment variable name (expected {})",
                            text, e.name, form));
        for (const auto& prev : m.env)
            if (prev.name == e.name)
                throw usage_error(fmt::format("--mode '{}': {} is set twice", text, e.name));
        m.env.push_back(e);
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return m;
}

std::pair<std::string, std::string> parse_mode_log(const std::string& text) {
    auto [name, path] = split_name(text, "NAME=LOG");
    if (path.empty())
        throw usage_error(fmt::format("--mode '{}': no log path (expected NAME=LOG)", text));
    return {name, path};
}

void check_mode_names(const std::vector<std::string>& names) {
    if (names.size() < 2)
        throw usage_error(
            fmt::format("--mode: give at least two modes (their differences are the parts), not {}",
                        names.size()));
    std::set<std::string> seen;
    for (const auto& n : names)
        if (!seen.insert(n).second)
            throw usage_error(fmt::format("--mode: the mode name '{}' is given twice", n));
}

int run_mode_experiment(const ModeExperimentOptions& o, const ModeLauncher& launch,
                        ResultDocument& doc, std::ostream& err) {
    std::vector<std::string> names;
    for (const auto& m : o.modes)
        names.push_back(m.name);
    check_mode_names(names);
    if (o.rounds < 1)
        throw usage_error("--rounds must be at least 1");
    if (o.stages.empty())
        throw usage_error("no stage to measure");

    ModesSection s;
    s.source = "processes";
    s.model_path = o.model_path;
    s.devices = o.devices;
    s.n_prompt = o.n_prompt;
    s.n_gen = o.n_gen;
    s.n_depth = o.n_depth;
    s.n_threads = o.n_threads;
    s.rounds = o.rounds;
    s.stages = o.stages;
    s.time_basis = o.time_basis;
    for (const auto& m : o.modes) {
        Mode mode;
        mode.name = m.name;
        mode.env = m.env;
        s.modes.push_back(mode);
    }
    s.notes.push_back(
        "each run is a fresh process with its mode's environment; rounds alternate the order (A "
        "B, B A, ...); part 0 is the first mode's time, part i mode i's less mode i-1's");
    auto save = [&](DocumentSave how) {
        summarize_modes(s);
        doc.modes = s;
        if (o.out_path)
            write_document(doc, *o.out_path, how);
    };
    save(DocumentSave::progress);

    bool failed = false;
    InterleavedRounds rounds(static_cast<int>(o.modes.size()), o.rounds);
    while (rounds.has_runs_remaining()) {
        const auto [round, index, sequence] = rounds.next();
        const ModeSpec& spec = o.modes[static_cast<size_t>(index)];
        ModeChildResult c = launch(spec, round);
        ModeRun run;
        run.round = round;
        run.sequence = sequence;
        run.stage_ns = std::move(c.stage_ns);
        run.exit_code = c.exit_code;
        run.wall_ns = c.wall_ns;
        run.error = c.error;
        run.env_seen = std::move(c.env_seen);
        run.n_threads = c.n_threads;
        if (run.error)
            failed = true;
        if (o.progress) {
            err << fmt::format("mode {} round {}/{}:", spec.name, round + 1, o.rounds);
            for (const auto& stage : o.stages)
                if (auto it = run.stage_ns.find(stage); it != run.stage_ns.end())
                    err << fmt::format(" {} {:.3f} ms", stage, it->second / 1e6);
            if (run.error)
                err << " failed: " << *run.error;
            err << "\n";
        }
        s.modes[static_cast<size_t>(index)].runs.push_back(std::move(run));
        save(DocumentSave::progress);
    }
    // Ctrl-C during the last run stopped no run, but cut that one short.
    const bool interrupted = rounds.interrupted() || interrupt_requested();
    if (interrupted)
        doc.warnings.push_back({"interrupted",
                                "interrupted (Ctrl-C) before every round ran: the modes' times "
                                "are of the runs that did",
                                "run it again to the end for every round"});
    for (const auto& m : s.modes) {
        int n_failed = 0;
        std::string first;
        for (const auto& r : m.runs)
            if (r.error && n_failed++ == 0)
                first = *r.error;
        if (n_failed > 0)
            doc.warnings.push_back({"mode_failed",
                                    fmt::format("mode '{}': {} of {} run(s) failed (first: {})",
                                                m.name, n_failed, m.runs.size(), first),
                                    "see modes[].runs[].error; the other modes are kept"});
    }
    doc.finished_at = utc_timestamp();
    save(DocumentSave::final);
    return failed || interrupted ? 1 : 0;
}

int import_mode_logs(const std::vector<std::pair<std::string, std::string>>& logs,
                     ResultDocument& doc, std::ostream& err, const ImportOptions& how) {
    std::vector<std::string> names;
    for (const auto& [name, path] : logs)
        names.push_back(name);
    check_mode_names(names);
    std::vector<OpsProfile> profiles;
    Warnings warnings;
    for (const auto& [name, path] : logs) {
        ImportOptions io;
        io.log_path = path;
        io.format = OutputFormat::json;
        io.stage_of = how.stage_of;
        io.one_stage = how.one_stage;
        ResultDocument one;
        try {
            run_import_hexagon(io, one, err);
        } catch (const Error& e) {
            throw Error(e.kind(), fmt::format("mode '{}': {}", name, e.what()));
        }
        for (auto w : one.warnings) {
            w.message = fmt::format("mode '{}': {}", name, w.message);
            warnings.push_back(std::move(w));
        }
        profiles.push_back(*one.ops);
    }
    ModesSection s;
    s.source = "hexagon-profile";
    s.rounds = 1;
    // Stages in the order the first log gives them, then any other log's.
    bool all_call = true;
    for (const auto& p : profiles)
        for (const auto& st : p.stages) {
            if (std::find(s.stages.begin(), s.stages.end(), st.stage) == s.stages.end())
                s.stages.push_back(st.stage);
            if (!st.rec.sum_call_ns)
                all_call = false;
        }
    s.time_basis = all_call
                       ? "the sum of the host's call times of the stage's ops (call-usec)"
                       : "the sum of the backend's op times of the stage's ops (usec; these logs "
                         "have no call time for every stage)";
    for (size_t i = 0; i < logs.size(); ++i) {
        Mode m;
        m.name = logs[i].first;
        m.log_path = logs[i].second;
        ModeRun r;
        r.sequence = static_cast<int>(i);
        for (const auto& st : profiles[i].stages) {
            const std::optional<double> ns = all_call ? st.rec.sum_call_ns : st.rec.sum_op_ns;
            if (ns)
                r.stage_ns[st.stage] = *ns;
        }
        if (r.stage_ns.empty())
            r.error = "no stage time in this log";
        m.runs.push_back(r);
        s.modes.push_back(m);
    }
    s.model_path = logs.back().second;
    s.devices = profiles.back().devices;
    s.notes.push_back(
        "one log per mode, in pipeline order: part 0 is the first mode's stage time, part i mode "
        "i's less mode i-1's; the parts add up to the last mode's time. One log is one run: no "
        "CI");
    // How each log was split into stages (the importer's ops.import.stage_split).
    for (size_t i = 0; i < logs.size(); ++i) {
        const auto& info = profiles[i].import_info;
        const std::string split = info.contains("stage_split") && info["stage_split"].is_string()
                                      ? info["stage_split"].get<std::string>()
                                      : std::string("none");
        std::string stages;
        for (const auto& st : profiles[i].stages)
            stages += (stages.empty() ? "" : ", ") + st.stage;
        s.notes.push_back(fmt::format("mode '{}': stages {} ({})", logs[i].first, stages,
                                      split == "none"      ? "not split"
                                      : split == "tokens"  ? "split by the mat-muls' tokens"
                                      : split == "markers" ? "split by --stage-of markers"
                                                           : "split by --stage-of markers and "
                                                             "the mat-muls' tokens"));
    }
    summarize_modes(s);
    doc.system = nullptr;  // the machine that reads the logs is not the one that made them
    doc.llama = nullptr;
    doc.warnings = warnings;
    doc.modes = s;
    doc.finished_at = utc_timestamp();
    return 0;
}

}  // namespace sb
