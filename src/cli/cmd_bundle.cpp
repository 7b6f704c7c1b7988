// `stagebench bundle`: one self-contained job for a lab's own engine (fleet/bundle.hpp), and
// `stagebench ingest`: the results folders such jobs hand back, into a store
// (fleet/results_folder.hpp). docs/lab.md.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"
#ifdef SB_WITH_FLEET
#include "fleet/bundle.hpp"
#include "fleet/results_folder.hpp"
#endif

namespace sb::cli {

#ifdef SB_WITH_FLEET

void add_bundle_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "bundle",
        "Pack one measuring command, its stagebench and models into a job a device cloud, CI "
        "runner, LAVA or Ansible runs offline: bundle -o job.tar.gz -m model.gguf -- run -m "
        "model.gguf -p 512");
    auto o = std::make_shared<BundleOptions>();
    cmd->add_option("-o,--out", o->out, "the job to write (a .tar.gz)")->required();
    cmd->add_option("--target", o->target,
                    "what it runs on: host, arm64, agent-armv8.0, agent-armv8.2, agent-armv8.6")
        ->capture_default_str();
    cmd->add_option("--dist", o->dist_dir,
                    "where `make dist` and `make agents` put the tarballs and agents")
        ->capture_default_str();
    // One file per -m: a list would also take the `--` that starts the command.
    cmd->add_option("-m,--model", o->models, "a model the command needs (repeat for several)")
        ->required()
        ->allow_extra_args(false);
    cmd->add_option(
        "--installed", o->installed_stagebench,
        "PATH: pack no stagebench; run.sh runs the one installed at PATH on the device");
    cmd->add_option("--baseline", o->baseline,
                    "a result document to gate against: run.sh compares the measurement with it "
                    "and exits 1 when a gate fails (with --fail-if-slower/--fail-if-energy)");
    cmd->add_option("--fail-if-slower", o->fail_if_slower,
                    "PCT: the gate of compare --fail-if-slower against --baseline (e.g. 5%)");
    cmd->add_option("--fail-if-energy", o->fail_if_energy,
                    "PCT: the gate of compare --fail-if-energy against --baseline (e.g. 5%)");
    cmd->add_option("--lava-job", o->lava_job, "also write a LAVA job definition (YAML) here");
    cmd->add_option("--lava-bundle-url", o->lava_bundle_url,
                    "where the LAVA device fetches the job (with --lava-job)");
    cmd->add_option("--lava-device-type", o->lava_device_type,
                    "the LAVA job's device_type (with --lava-job)")
        ->capture_default_str();
    cmd->add_option("COMMAND", o->command, "the measuring command and its arguments, after --")
        ->required();
    cmd->callback([&ctx, o] {
        const BundleSummary s = write_bundle(*o, ctx.err);
        ctx.err << fmt::format("bundle: {} ({:.1f} MB, sha256 {}): {} for {}{}\n", s.out,
                               static_cast<double>(s.bytes) / 1e6, s.sha256,
                               fmt::join(s.spec.command, " "), s.spec.target,
                               s.spec.gate.empty()
                                   ? ""
                                   : fmt::format(", gated by {} against {}",
                                                 fmt::join(s.spec.gate, " "), *o->baseline));
        if (o->lava_job)
            ctx.err << "bundle: LAVA job " << *o->lava_job << " (fetches " << *o->lava_bundle_url
                    << ")\n";
        ctx.err << "bundle: run it with `sh run.sh` in the unpacked folder; results/ then holds "
                   "the documents and manifest.json\n";
    });
}

void add_ingest_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "ingest",
        "Put the results folders of jobs (bundle's results/, fetched by a device cloud, CI, "
        "LAVA or Ansible) into a results store, their manifests' hashes checked");
    struct Args {
        std::vector<std::string> dirs;
        std::string db;
        double wait_s = 60;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("DIR", a->dirs, "results folders, or folders holding them (4 levels down)")
        ->required();
    cmd->add_option("--db", a->db,
                    "the results store: a SQLite file or postgresql://user@host:port/dbname")
        ->required();
    cmd->add_option("--db-wait", a->wait_s, "seconds to wait while another writer holds the store")
        ->check(seconds_check(true))
        ->capture_default_str();
    cmd->callback([&ctx, a] {
        StoreWait w;
        w.timeout_s = a->wait_s;
        ResultStore store = ResultStore::open(a->db, ResultStore::Mode::create, w);
        const IngestSummary s = ingest_results(a->dirs, store, ctx.err);
        ctx.err << fmt::format(
            "stagebench: ingested {} folder(s) into {}: {} document(s) stored, {} already there, "
            "{} folder(s) skipped\n",
            s.folders, store.path(), s.stored, s.present, s.skipped.size());
        // What could be stored is; a folder skipped is bad input, as db copy's.
        if (!s.skipped.empty())
            throw input_error(fmt::format("{} of {} results folder(s) skipped, the first: {}",
                                          s.skipped.size(), s.folders, s.skipped.front()));
    });
}

#else

void add_bundle_command(CLI::App& app, Context&) {
    auto* c = app.add_subcommand("bundle", "Not in this build (needs toml++ and OpenSSL)");
    c->allow_extras();
    c->callback([] {
        throw usage_error("bundle is not in this build: it needs toml++ and OpenSSL at build time");
    });
}

void add_ingest_command(CLI::App& app, Context&) {
    auto* c = app.add_subcommand("ingest", "Not in this build (needs toml++ and OpenSSL)");
    c->allow_extras();
    c->callback([] {
        throw usage_error("ingest is not in this build: it needs toml++ and OpenSSL at build time");
    });
}

#endif

}  // namespace sb::cli
