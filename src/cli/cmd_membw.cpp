#include <fmt/format.h>

#include <thread>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/membw.hpp"
#include "core/stats_json.hpp"
#include "core/sysinfo.hpp"

namespace sb::cli {

void add_membw_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "membw", "Measure the machine's memory bandwidth (STREAM copy/scale/add/triad)");
    struct Opts {
        int threads = 0, reps = 10;
        double array_mib = 0;
        OutputFormat format = OutputFormat::md;
    };
    auto o = std::make_shared<Opts>();
    cmd->add_option("-t,--threads", o->threads, "threads (0 = all hardware threads)")
        ->check(threads_check());
    cmd->add_option("-r,--repetitions", o->reps, "timed repetitions")
        ->check(int_range(1, 1000, "1..1000"))
        ->capture_default_str();
    // Three arrays of this size: 64 GiB each at most, and the memory check below.
    cmd->add_option("--array-mib", o->array_mib, "MiB per array (default: 4x last-level cache)")
        ->check(real_range(0, 65536, true, false, "more than 0 to 65536 MiB"));
    add_format_option(cmd, o->format, {OutputFormat::md, OutputFormat::json});
    cmd->callback([&ctx, o] {
        const int threads =
            o->threads > 0 ? o->threads
                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        const std::size_t bytes = o->array_mib > 0
                                      ? static_cast<std::size_t>(o->array_mib * 1048576.0)
                                      : default_membw_array_bytes();
        // Three arrays: more than the memory available would page or fail to allocate.
        const auto avail = read_system_info().mem_available_bytes;
        if (avail && 3.0 * static_cast<double>(bytes) > static_cast<double>(*avail))
            throw usage_error(fmt::format(
                "--array-mib {:.0f}: three arrays need {:.0f} MiB, more than the {:.0f} MiB "
                "of memory available",
                o->array_mib, 3.0 * bytes / 1048576.0, *avail / 1048576.0));
        MembwResult r =
            measure_membw(bytes, threads, o->reps + 1, [] { return interrupt_requested(); });
        if (o->format == OutputFormat::json) {
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
