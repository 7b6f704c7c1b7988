#include <fmt/format.h>

#include <thread>

#include "cli/commands.hpp"
#include "core/json_util.hpp"
#include "core/membw.hpp"
#include "core/stats_json.hpp"

namespace sb::cli {

void add_membw_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "membw", "Measure the machine's memory bandwidth (STREAM copy/scale/add/triad)");
    struct Opts {
        int threads = 0, reps = 10;
        double array_mib = 0;
        std::string format = "md";
    };
    auto o = std::make_shared<Opts>();
    cmd->add_option("-t,--threads", o->threads, "threads (0 = all hardware threads)");
    cmd->add_option("-r,--repetitions", o->reps, "timed repetitions")->capture_default_str();
    cmd->add_option("--array-mib", o->array_mib, "MiB per array (default: 4x last-level cache)");
    cmd->add_option("-o,--output", o->format, "md or json")
        ->check(CLI::IsMember({"md", "json"}))
        ->capture_default_str();
    cmd->callback([&ctx, o] {
        const int threads =
            o->threads > 0 ? o->threads
                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        const std::size_t bytes = o->array_mib > 0
                                      ? static_cast<std::size_t>(o->array_mib * 1048576.0)
                                      : default_membw_array_bytes();
        MembwResult r = measure_membw(bytes, threads, o->reps + 1);
        if (o->format == "json") {
            ctx.out << dump_json(
                           nlohmann::json{{"threads", r.threads},
                                          {"array_bytes", r.array_bytes},
                                          {"copy_gbps", r.copy_gbps},
                                          {"scale_gbps", r.scale_gbps},
                                          {"add_gbps", r.add_gbps},
                                          {"triad_gbps", r.triad_gbps},
                                          {"triad_samples_gbps", to_json(r.triad_samples_gbps)}},
                           2)
                    << "\n";
            return;
        }
        ctx.out << fmt::format(
                       "| kernel | GB/s |\n| --- | ---: |\n| copy | {:.2f} |\n| scale | {:.2f} |\n"
                       "| add | {:.2f} |\n| triad | {:.2f} |\n",
                       r.copy_gbps, r.scale_gbps, r.add_gbps, r.triad_gbps)
                << fmt::format("\n{} threads, {:.0f} MiB per array, best of {} repetitions\n",
                               r.threads, r.array_bytes / 1048576.0, o->reps);
    });
}

}  // namespace sb::cli
