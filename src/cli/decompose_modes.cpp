#include "cli/decompose_modes.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "core/backend_env.hpp"
#include "core/clock.hpp"
#include "core/document.hpp"
#include "core/sysinfo.hpp"
#include "model/inspect.hpp"
#include "report/modes_report.hpp"
#include "report/ops_report.hpp"
#include "scenario/run_command.hpp"
#ifdef SB_WITH_FLEET
#include "core/subprocess.hpp"
#endif

namespace sb::cli {

namespace fs = std::filesystem;

std::vector<std::string> workload_child_flags(const Workload& w) {
    return {"-b",
            std::to_string(w.n_batch),
            "--ubatch-size",
            std::to_string(w.n_ubatch),
            "--n-gpu-layers",
            std::to_string(w.n_gpu_layers),
            "--flash-attn",
            to_string(w.flash_attn),
            "--cache-type-k",
            to_string(w.type_k),
            "--cache-type-v",
            to_string(w.type_v)};
}

std::shared_ptr<DecomposeModeArgs> add_decompose_mode_options(CLI::App* cmd) {
    auto m = std::make_shared<DecomposeModeArgs>();
    cmd->add_option("--mode", m->modes,
                    "a pipeline mode NAME=ENV=VAL[,ENV=VAL] (NAME= for the environment as "
                    "inherited); two or more, in pipeline order: each runs the stage(s) in a "
                    "fresh process with that environment, and the differences between "
                    "consecutive modes are the parts (without --mode: the probe model)")
        ->take_all()
        ->allow_extra_args(false);
    cmd->add_option("-r,--rounds", m->rounds,
                    "with --mode: rounds; each round runs every mode once (interleaved)")
        ->check(int_range(1, 10000, "1..10000"))
        ->capture_default_str();
    add_gen_flag(cmd, m->n_gen, 1, "with --mode: per run");
    return m;
}

ModeLauncher make_mode_launcher(const std::string& self, const ModeChildSettings& c, int n_gen,
                                const std::vector<std::string>& record_names,
                                const std::string& dir) {
    return [=](const ModeSpec& mode, int round) -> ModeChildResult {
        ModeChildResult r;
#ifdef SB_WITH_FLEET
        const OpsOptions& o = c.o.ops;
        const bool decode = c.stage != "prefill";
        const std::string out =
            (fs::path(dir) / fmt::format("{}-{}.json", mode.name, round)).string();
        std::string record;
        for (const auto& n : record_names)
            record += (record.empty() ? "" : ",") + n;
        // `env` sets the mode's variables in the child only; this process keeps its own.
        std::vector<std::string> argv{"env", std::string(kRecordEnvVariable) + "=" + record};
        for (const auto& e : mode.env)
            argv.push_back(e.name + "=" + e.value);
        std::vector<std::string> run{self,
                                     "run",
                                     "-m",
                                     o.workload.model_path,
                                     "-p",
                                     std::to_string(o.n_prompt),
                                     "-n",
                                     std::to_string(decode ? n_gen : 0),
                                     "-d",
                                     std::to_string(o.n_depth),
                                     "-r",
                                     "1",
                                     "--device",
                                     o.workload.devices.str(),
                                     "-t",
                                     std::to_string(o.workload.n_threads),
                                     "--seed",
                                     std::to_string(o.seed),
                                     "--telemetry",
                                     "off",
                                     "--membw",
                                     "off",
                                     "--idle",
                                     "0",
                                     "-q",
                                     "-o",
                                     "json",
                                     "--out",
                                     out};
        const auto engine_flags = workload_child_flags(o.workload);
        run.insert(run.end(), engine_flags.begin(), engine_flags.end());
        if (!c.o.rpc_servers.empty()) {
            std::string rpc;
            for (const auto& s : c.o.rpc_servers)
                rpc += (rpc.empty() ? "" : ",") + s;
            run.push_back("--rpc");
            run.push_back(rpc);
        }
        argv.insert(argv.end(), run.begin(), run.end());
        ProcessOptions po;
        po.timeout_s = 3600;
        po.stdout_path = "/dev/null";
        const int64_t t0 = now_ns();
        ProcessResult p = run_process(argv, po);
        r.wall_ns = now_ns() - t0;
        if (p.exit_code >= 0)
            r.exit_code = p.exit_code;
        std::error_code ec;
        if (fs::exists(out, ec)) {
            try {
                ResultDocument d = load_result_document(out);
                if (d.system.is_object() && d.system.contains("backend_env"))
                    r.env_seen = d.system["backend_env"];
                if (!d.tests.empty()) {
                    const TestResult& t = d.tests.front();
                    r.n_threads = t.config.n_threads;
                    if (c.stage != "decode" && t.prefill && !t.prefill->duration_ns.empty())
                        r.stage_ns["prefill"] = static_cast<double>(t.prefill->duration_ns.front());
                    if (decode && t.decode && !t.decode->duration_ns.empty())
                        r.stage_ns["decode"] = static_cast<double>(t.decode->duration_ns.front());
                    if (t.error)
                        r.error = *t.error;
                }
            } catch (const std::exception& e) {
                r.error = std::string("its document could not be read: ") + e.what();
            }
            fs::remove(out, ec);
        }
        if (!p.ok() && !r.error) {
            std::string why = p.timed_out     ? "timed out"
                              : p.interrupted ? "interrupted"
                              : p.signal      ? fmt::format("killed by signal {}", p.signal)
                              : !p.started    ? "could not be started"
                                              : fmt::format("exit {}", p.exit_code);
            const std::string line = p.last_line();
            r.error = "the child process " + why + (line.empty() ? "" : ": " + line);
        } else if (!r.error && r.stage_ns.empty()) {
            r.error = "the child process wrote no stage time";
        }
#else
        (void)self, (void)c, (void)n_gen, (void)record_names, (void)dir, (void)mode, (void)round;
        r.error = "decompose --mode is not in the agent build";
#endif
        return r;
    };
}

void run_decompose_modes(Context& ctx, const DecomposeModeArgs& m, const ModeChildSettings& c) {
    ModeExperimentOptions e;
    std::vector<std::string> names, record;
    for (const auto& text : m.modes) {
        ModeSpec spec = parse_mode_spec(text);
        names.push_back(spec.name);
        for (const auto& v : spec.env)
            if (std::find(record.begin(), record.end(), v.name) == record.end())
                record.push_back(v.name);
        e.modes.push_back(std::move(spec));
    }
    check_mode_names(names);
    check_ops_format(c.o.format);
    // A variable no backend of this build reads leaves its mode the same build as the others.
    Warnings unread;
    for (const auto& v : unread_mode_variables(e.modes, llama_env_variables())) {
        const auto family = v.substr(0, v.find('_', 5) + 1);  // "GGML_HEXAGON_"
        std::string read;
        for (const auto& r : llama_env_variables())
            if (r.rfind(family, 0) == 0 && r.size() > family.size())
                read += (read.empty() ? "" : ", ") + r.substr(family.size());
        unread.push_back(
            {"mode_variable_not_read",
             fmt::format(
                 "{} is read by no backend of this build's llama.cpp (of {}, it reads {}): a "
                 "mode that sets only it runs the same build as the others, and their "
                 "differences are noise",
                 v, family + "*", read.empty() ? "none of them" : read),
             "set a variable this build reads, or build against a llama.cpp whose backend reads "
             "it (LLAMA_CPP_DIR, docs/install.md)"});
        ctx.err << "stagebench: warning: " << unread.back().message << "\n";
    }
    const OpsOptions& o = c.o.ops;
    // Bad input is found here, once, not in every child: the model must be usable.
    ModelInfo info = inspect_model(o.workload.model_path);
    (void)info;
    e.rounds = m.rounds;
    if (c.stage != "decode")
        e.stages.push_back("prefill");
    if (c.stage != "prefill")
        e.stages.push_back("decode");
    e.model_path = o.workload.model_path;
    e.devices = o.workload.devices.str();
    e.n_prompt = o.n_prompt;
    e.n_gen = c.stage == "prefill" ? 0 : m.n_gen;
    e.n_depth = o.n_depth;
    e.n_threads = o.workload.n_threads;
    e.time_basis =
        "the stage's wall time in a fresh `stagebench run` process with the mode's environment "
        "(one repetition after a warm-up); prefill: the prompt, decode: all generated tokens";
    e.out_path = c.o.out_path;
    e.progress = !c.quiet;

    std::error_code ec;
    const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
    if (ec)
        throw runtime_error("cannot find the stagebench binary to run the modes: " + ec.message());
    const fs::path dir =
        fs::temp_directory_path() / fmt::format("stagebench-modes-{}-{}", ::getpid(), now_ns());
    fs::create_directories(dir, ec);
    if (ec)
        throw runtime_error("cannot make a temporary directory for the modes' documents: " +
                            ec.message());
    ResultDocument doc = new_document("decompose", ctx.argv);
    doc.models.push_back(to_json(info));
    doc.warnings.insert(doc.warnings.end(), unread.begin(), unread.end());
    try {
        ctx.exit_code = run_mode_experiment(
            e, make_mode_launcher(self, c, m.n_gen, record, dir.string()), doc, ctx.err);
    } catch (...) {
        fs::remove_all(dir, ec);
        throw;
    }
    fs::remove_all(dir, ec);
    print_modes_document(doc, c.o.format, ctx.out);
    store_document(ctx, doc);
}

}  // namespace sb::cli
