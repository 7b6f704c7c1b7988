// `stagebench fleet run|status`: one measuring command on the devices of an inventory, into
// one results store (fleet/fleet_run.hpp, README "Fleet").
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/junit_option.hpp"
#include "core/interrupt.hpp"
#include "core/parse.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"
#ifdef SB_WITH_FLEET
#include "fleet/fleet_run.hpp"
#include "fleet/inventory.hpp"
#endif

namespace sb::cli {

namespace fs = std::filesystem;

#ifdef SB_WITH_FLEET
namespace {

// Each device's outcome with the document it stored, read back from the store (a document the
// store cannot give back is left out: its row still says what happened).
std::vector<FleetJunitDevice> fleet_junit_devices(const FleetRunSummary& s,
                                                  const std::string& db_path) {
    std::vector<FleetJunitDevice> out;
    std::optional<ResultStore> store;
    try {
        store.emplace(ResultStore::open(db_path, ResultStore::Mode::existing));
    } catch (const Error&) {
    }
    for (const auto& run : s.runs) {
        FleetJunitDevice d{run, std::nullopt};
        if (store && run.document_id) {
            try {
                d.doc = store->get(*run.document_id);
            } catch (const Error&) {
            }
        }
        out.push_back(std::move(d));
    }
    return out;
}

}  // namespace
#endif

#ifdef SB_WITH_FLEET

namespace {

// The store beside the inventory (fleet.toml -> fleet.sqlite) unless --db names one.
std::string default_db(const std::string& hosts) {
    fs::path p(hosts);
    return (p.parent_path() / (p.stem().string() + ".sqlite")).string();
}

std::string short_commit(const std::optional<std::string>& c) {
    return c ? c->substr(0, 12) : "-";
}

// A deadline flag: a duration above 0 and at most a day (0 would mean no deadline at all).
double deadline_s(const std::string& flag, const std::string& text) {
    const auto ns = parse_duration(text);
    if (!ns || *ns <= 0 || static_cast<double>(*ns) * 1e-9 > kMaxGateWait_s)
        throw usage_error(flag + " '" + text +
                          "': expected a deadline above 0 and at most a day, e.g. 30m, 90s");
    return static_cast<double>(*ns) * 1e-9;
}

}  // namespace

void add_fleet_command(CLI::App& app, Context& ctx) {
    auto* fleet = app.add_subcommand(
        "fleet",
        "Run one measuring command on many devices (ssh, adb, local, exec) into one store");
    fleet->require_subcommand(1);
    struct Args {
        std::string hosts, db, cool_to, cool_timeout, governor;
        std::optional<double> min_battery, max_load;
        std::string timeout;
        std::string only;
        FleetRunOptions o;
        std::optional<std::string> fleet_name;
    };
    auto a = std::make_shared<Args>();

    auto* run = fleet->add_subcommand(
        "run",
        "Run COMMAND (run, ops, decompose, sustained, hybrid) on every device: "
        "fleet run --hosts fleet.toml -- run -m model.gguf -p 512 -n 128");
    run->add_option("--hosts", a->hosts,
                    "the inventory (TOML, or an Ansible inventory: .yml/.yaml, INI)")
        ->required();
    run->add_option("--db", a->db,
                    "the results store: a SQLite file (default: the inventory's name .sqlite) or "
                    "postgresql://user@host:port/dbname");
    run->add_option("--dist", a->o.dist_dir,
                    "where `make dist` and `make agents` put the tarballs and agents")
        ->capture_default_str();
    run->add_option("--parallel", a->o.parallel,
                    "devices measured at once (never two commands on one device)")
        ->check(int_range(1, 1024, "1..1024"))
        ->capture_default_str();
    run->add_flag("--resume", a->o.resume,
                  "skip devices whose run of this command is already in the store");
    run->add_flag("--allow-mixed", a->o.allow_mixed,
                  "run devices whose stagebench or llama.cpp commit differs from the others'");
    run->add_option("--cool-to", a->cool_to,
                    "wait until the hottest thermal zone is below this (e.g. 45C)");
    run->add_option("--cool-timeout", a->cool_timeout,
                    "the longest wait for --cool-to, then run anyway with a warning (10m)");
    run->add_option("--governor", a->governor,
                    "a CPU governor other than performance: warn (default), refuse or ignore")
        ->check(CLI::IsMember({"warn", "refuse", "ignore"}));
    run->add_option("--min-battery", a->min_battery,
                    "refuse a device on battery below this percentage")
        ->check(CLI::Range(0.0, 100.0));
    run->add_option("--max-load", a->max_load, "refuse a device whose 1-minute load is above this")
        ->check(CLI::Range(0.0, 1e6));
    run->add_option("--timeout", a->timeout,
                    "the measuring command's deadline per device (e.g. 30m)");
    run->add_option("--only", a->only, "these devices of the inventory (a comma list)");
    run->add_option("--keep", a->o.keep,
                    "how many jobs, results folders or documents, stagebench copies and "
                    "synthesised models each device keeps, the last used (and jobs here, in "
                    "DIST/jobs/)")
        ->check(int_range(1, 1000000, "1 or more"))
        ->capture_default_str();
    run->add_option("COMMAND", a->o.command, "the measuring command and its arguments, after --")
        ->required();
    auto junit = std::make_shared<JunitOutput>("fleet run");
    junit->add_option(run);
    run->callback(junit->wrap([&ctx, a, junit] {
        junit->check();
        Inventory inv = load_inventory(a->hosts);
        a->o.db_path = a->db.empty() ? default_db(a->hosts) : a->db;
        if (!a->cool_to.empty()) {
            a->o.gates.cool_to_c = parse_celsius(a->cool_to);
            if (!a->o.gates.cool_to_c)
                throw usage_error("--cool-to '" + a->cool_to + "' is not a temperature (e.g. 45C)");
        }
        if (!a->cool_timeout.empty())
            a->o.gates.cool_timeout_s = deadline_s("--cool-timeout", a->cool_timeout);
        if (!a->governor.empty())
            a->o.gates.governor = a->governor;
        a->o.gates.min_battery_pct = a->min_battery;
        a->o.gates.max_load = a->max_load;
        if (!a->timeout.empty())
            a->o.timeout_s = deadline_s("--timeout", a->timeout);
        if (!a->only.empty())
            a->o.only = split_list(a->only);
        check_fleet_options(a->o);
        const std::string store = printable_store_name(a->o.db_path);
        ctx.err << fmt::format("fleet {}: {} device(s), store {}\n", inv.name, inv.devices.size(),
                               store);
        const FleetRunSummary s = run_fleet(inv, a->o, ctx.err);
        ctx.err << fmt::format("fleet {}: {} ok, {} failed, {} skipped (fleet status --db {})\n",
                               inv.name, s.ok, s.failed, s.skipped, store);
        // Ctrl-C is never "everything asked for was done": exit 1, also before the first device.
        ctx.exit_code = s.failed > 0 || interrupt_requested() ? 1 : 0;
        if (junit->asked())
            junit->write(junit_of_fleet(inv.name, fleet_junit_devices(s, a->o.db_path)));
    }));

    auto* rpc = fleet->add_subcommand(
        "rpc", "rpc-server on the devices, for a model split over several hosts (--rpc)");
    rpc->require_subcommand(1);
    auto* up = rpc->add_subcommand(
        "up", "Deploy and start `stagebench rpc-server` on every device; print the --rpc list");
    auto port = std::make_shared<int>(50052);
    up->add_option("--hosts", a->hosts,
                   "the inventory (TOML, or an Ansible inventory: .yml/.yaml, INI)")
        ->required();
    up->add_option("--dist", a->o.dist_dir, "where the tarballs and agents are")
        ->capture_default_str();
    up->add_option("--port", *port, "the first device's port; the next device gets the next one")
        ->check(int_range(1, 65535, "1..65535"))
        ->capture_default_str();
    up->add_option("--only", a->only, "these devices of the inventory (a comma list)");
    up->add_flag("--allow-mixed", a->o.allow_mixed,
                 "devices whose stagebench or llama.cpp commit differs from the others'");
    up->add_option("--keep", a->o.keep,
                   "how many jobs and stagebench copies each device keeps, the last used")
        ->check(int_range(1, 1000000, "1 or more"))
        ->capture_default_str();
    up->callback([&ctx, a, port] {
        Inventory inv = load_inventory(a->hosts);
        if (!a->only.empty())
            a->o.only = split_list(a->only);
        const auto eps = fleet_rpc_up(inv, a->o, *port, ctx.err);
        std::string list, devices;
        for (std::size_t i = 0; i < eps.size(); ++i) {
            list += (i ? "," : "") + eps[i].endpoint;
            devices += (i ? "+" : "") + std::string("RPC") + std::to_string(i);
        }
        if (!eps.empty()) {
            ctx.out << "--rpc " << list << " --device " << devices << "\n";
            ctx.err << "fleet rpc: " << eps.size()
                    << " server(s); e.g. stagebench ops -m model.gguf "
                    << "--rpc " << list << " --device " << devices
                    << " (copies between them: the splits); fleet rpc down --hosts " << a->hosts
                    << " stops them\n";
        }
        ctx.exit_code = eps.size() == inv.devices.size() ||
                                (!a->o.only.empty() && eps.size() == a->o.only.size())
                            ? 0
                            : 1;
    });
    auto* down = rpc->add_subcommand("down", "Stop the rpc-servers `fleet rpc up` started");
    down->add_option("--hosts", a->hosts,
                     "the inventory (TOML, or an Ansible inventory: .yml/.yaml, INI)")
        ->required();
    down->add_option("--only", a->only, "these devices of the inventory (a comma list)");
    down->callback([&ctx, a] {
        Inventory inv = load_inventory(a->hosts);
        if (!a->only.empty())
            a->o.only = split_list(a->only);
        const int n = fleet_rpc_down(inv, a->o, ctx.err);
        ctx.err << "fleet rpc: " << n << " server(s) stopped\n";
    });

    auto* status = fleet->add_subcommand(
        "status", "What ran where, when, with which stagebench and llama.cpp, and what failed");
    status->add_option("--hosts", a->hosts, "the inventory (its store: the inventory's .sqlite)");
    status->add_option("--db", a->db,
                       "the results store (a SQLite file or postgresql://user@host:port/dbname)");
    status->add_option("--fleet", a->fleet_name, "only this fleet (the inventory's name)");
    status->callback([&ctx, a] {
        std::string db = a->db;
        std::optional<std::string> name = a->fleet_name;
        if (db.empty() && a->hosts.empty())
            throw usage_error("fleet status needs --db FILE or --hosts FILE");
        if (!a->hosts.empty()) {
            Inventory inv = load_inventory(a->hosts);
            if (db.empty())
                db = default_db(a->hosts);
            if (!name)
                name = inv.name;
        }
        auto store = ResultStore::open(db, ResultStore::Mode::existing);
        const auto runs = store.fleet_runs(name);
        ctx.out
            << "| id | fleet | device | status | finished (UTC) | stagebench | llama.cpp | arch "
               "| document | command or error |\n"
            << "|---|---|---|---|---|---|---|---|---|---|\n";
        for (const auto& r : runs) {
            std::string what = r.status == "ok" ? r.command : r.error.value_or("");
            for (auto& c : what)
                if (c == '|' || c == '\n')
                    c = ' ';
            ctx.out << fmt::format(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.id, r.fleet, r.device,
                r.status, r.finished_at, r.tool_version.value_or("-"), short_commit(r.llama_commit),
                r.arch.value_or("-"), r.document_id ? "db:" + std::to_string(*r.document_id) : "-",
                what);
        }
        if (runs.empty())
            ctx.err << "fleet status: no fleet runs in '" << store.path() << "'\n";
    });
}

#else

void add_fleet_command(CLI::App& app, Context&) {
    auto* fleet = app.add_subcommand("fleet", "Not in this build (needs toml++ and OpenSSL)");
    fleet->allow_extras();
    fleet->callback([] {
        throw usage_error(
            "fleet is not in this build: it needs toml++ (libtomlplusplus-dev) and OpenSSL at "
            "build time");
    });
}

#endif

}  // namespace sb::cli
