#pragma once
// `stagebench fleet run`: one measuring command on every device of an inventory, into one
// results store (docs/fleet.md). Per device, in order:
//   1. reach it and read its identity (fleet/device_probe.hpp);
//   2. an ssh or adb device gets a job (fleet/bundle.hpp, the lab's job format): the
//      stagebench for its architecture from the dist folder (a tarball of `make dist`, or a
//      static agent of `make agents` on Android), or none when the inventory names the
//      device's own, with the command's name and its models (each -m whose files are this
//      machine's). The job is made once per content (bundle_key) into DIST/jobs/ (else
//      ~/.cache/stagebench/jobs/; the `keep` last used kept) and copied to WORKDIR/jobs/KEY/
//      once, unpacked there (WORKDIR/jobs/ pruned alike). A local device runs this stagebench
//      on this machine's files; an exec device an agent (or this stagebench) behind its
//      prefix, pushed once by content hash into WORKDIR/sb/HASH/ (pruned alike);
//   3. read that stagebench's version: every device must run the same stagebench and llama.cpp
//      commit, unless allow_mixed;
//   4. -m preset:NAME synthesised there, once (WORKDIR/models/, the `keep` last used kept);
//   5. check the gates: wait to cool below cool_to, refuse on a gate's refusal;
//   6. run the command: on an ssh or adb device the job's run.sh with the command's other
//      arguments, its results folder (WORKDIR/results/STAMP/) copied back whole beside the
//      store (FLEET-results/DEVICE/STAMP/) and checked against its manifest's sha256 hashes
//      (then marked fetched there: WORKDIR/results/ keeps the `keep` last fetched, never one
//      that did not come back whole);
//      on a local or exec device the stagebench itself (its --out document in
//      WORKDIR/results/, the `keep` last written kept). Its document (also a partial one
//      after a failure), with the device's identity (document "fleet"), goes to the store;
// and record the outcome in the store's fleet_runs, failures with their one-line error. A
// device that fails never stops the others.
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "fleet/inventory.hpp"
#include "store/result_store.hpp"

namespace sb {

struct FleetRunOptions {
    std::string db_path;
    std::vector<std::string> command;  // e.g. {"run", "-m", "tiny.gguf", "-p", "64"}
    std::string dist_dir = "dist";     // where the tarballs and agents are
    int parallel = 1;                  // devices at once (never two commands on one device)
    bool resume = false;               // skip (device, command) pairs already ok in the store
    bool allow_mixed = false;          // run devices whose stagebench or llama.cpp differ
    Gates gates;                       // command-line gates (override the inventory's)
    double timeout_s = 0;              // the measuring command's deadline (0: a day)
    std::vector<std::string> only;     // device names to run (empty: all)
    // How many of each the fleet keeps, the last used: the jobs here (DIST/jobs/) and, on
    // every device, the jobs (WORKDIR/jobs/), the results folders that came back
    // (WORKDIR/results/STAMP/), a local or exec device's documents (WORKDIR/results/*.json),
    // an exec device's stagebench copies (WORKDIR/sb/HASH/) and the models synthesised there
    // (WORKDIR/models/); never what this run uses. 1 or more.
    int keep = 8;
    // Called before each step over the devices ("preparing the device", "measuring") on the
    // calling thread; empty: nothing. Tests put an interruption between two steps with it.
    std::function<void(const std::string& step)> before_step;
};

struct FleetRunSummary {
    // failed counts the devices a Ctrl-C left unmeasured too (error_kind "interrupted"), so an
    // interrupted fleet run never sums to "nothing failed".
    int ok = 0, failed = 0, skipped = 0;
    // Every device's outcome in the order decided: the rows appended to fleet_runs (also when
    // the store refused one), and for a device --resume skipped a row of status "skipped" with
    // the document already stored (never appended). `fleet run --junit` reports from these.
    std::vector<FleetRun> runs;
};

// `fleet rpc up`: on every device (after the same reach, deploy and version steps), a
// `stagebench rpc-server` detached from the session on port base_port + the device's index
// (an ssh device listening on its inventory address, a phone on its loopback through `adb
// forward`, this machine on 127.0.0.1), checked from here. Returns the endpoints that answer,
// in inventory order: `--rpc` of run, ops, hybrid, with devices RPC0, RPC1... A device that
// fails is said on log and left out. `fleet rpc down` stops the servers it started.
struct FleetRpcEndpoint {
    std::string device, endpoint;
};
std::vector<FleetRpcEndpoint> fleet_rpc_up(const Inventory& inv, const FleetRunOptions& o,
                                           int base_port, std::ostream& log);
int fleet_rpc_down(const Inventory& inv, const FleetRunOptions& o, std::ostream& log);

// Whether host:port accepts a TCP connection within timeout_s.
bool wait_for_tcp(const std::string& host, int port, double timeout_s);

// The commands whose JSON output is a result document.
bool fleet_measuring_command(const std::string& name);

// Throws sb::Error(usage), naming who ("fleet run", "bundle"), when command is empty or not a
// measuring command, or sets what who sets itself: -o, --output, --out, --db and also_reserved
// (as "--flag" or "--flag=value").
void check_measuring_command(const std::vector<std::string>& command, const std::string& who,
                             const std::vector<std::string>& also_reserved);

// Throws sb::Error(usage) when the command is not a measuring command, sets what the fleet
// sets (-o, --out, --db), or an option is out of range.
void check_fleet_options(const FleetRunOptions& o);

// Throws sb::Error(usage) for a bad command or option (check_fleet_options; with an ssh or adb
// device also --trace and --junit in the command, which the job's run.sh sets, and a -m that
// mixes this machine's files with presets or the devices' paths), sb::Error(input) for a bad
// inventory or store; a device's failure is recorded, never thrown.
FleetRunSummary run_fleet(const Inventory& inv, const FleetRunOptions& o, std::ostream& log);

}  // namespace sb
