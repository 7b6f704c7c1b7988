#include "scenario/ops_run.hpp"

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "scenario/run_context.hpp"

namespace sb {

int run_ops(const OpsCommandOptions& o, ResultDocument& doc, std::ostream& err) {
    std::string device_set;
    for (const auto& d : o.ops.devices)
        device_set += (device_set.empty() ? "" : "+") + d;
    RunSetup setup;
    setup.models = {o.ops.model_path};
    setup.rpc_servers = o.rpc_servers;
    setup.device_sets = {device_set};
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    RunContext run(doc, setup, err, nullptr);
    run.open(threads_or_default(o.ops.n_threads));

    ProgressFn progress = [&run](const std::string& m) { run.progress().note(m); };
    // llama.cpp may stop the process mid-profile (an RPC server that dies): the profile is one
    // measurement, so nothing is recorded, but the line says which server went away.
    LastWordScope last_word([&](const std::string& message) -> std::optional<std::string> {
        return "the ops profile on " + device_set +
               " failed: " + describe_llama_stop(message, device_set, "") +
               "; nothing of it was recorded";
    });
    OpsProfile p = profile_ops(o.ops, progress);
    for (auto& w : profile_warnings(p))
        doc.warnings.push_back(w);
    // Ctrl-C stops the profile at the next repetition or op: what was traced is kept, marked
    // partial, and the run is not "everything asked for was done" (exit 1, README).
    const bool interrupted = interrupt_requested();
    if (interrupted)
        doc.warnings.push_back(
            {"interrupted",
             "interrupted (Ctrl-C) before the profile was complete: its stages and ops are "
             "partial (fewer repetitions, ops not replayed)",
             "run it again to the end for a complete profile"});
    doc.ops = std::move(p);
    doc.finished_at = utc_timestamp();
    run.save(DocumentSave::final);
    if (interrupted) {
        err << "stagebench: interrupted; the partial profile is kept"
            << (o.out_path ? " in " + *o.out_path : std::string()) << "\n";
        return 1;
    }
    return 0;
}

}  // namespace sb
