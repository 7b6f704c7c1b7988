#pragma once
// `stagebench bundle`: one self-contained job for a device lab's own engine (a device cloud, a
// CI runner, LAVA, Ansible), one tarball that unpacks flat into:
//
//   run.sh              POSIX sh; `sh run.sh [ARGS...]` measures and writes results/
//   job.json            the job's spec: target, the stagebench and models with their sha256,
//                       the command (with the models' paths in the job), what results/ holds
//   stagebench/         the stagebench of the target: a dist tree (bin/stagebench, lib/,
//                       peers/, share/) or the static agent as bin/stagebench; absent from a
//                       job that runs a stagebench installed on the device (installed_stagebench)
//   models/NAME         the models the command names
//   baseline.json       with a gate (baseline): the document the measurement is compared with
//
// run.sh needs nothing but sh and the base tools every Linux and Android has (mkdir, cat, date,
// grep, cut, wc, tr, uname and sha256sum or shasum or openssl for the hashes; with a gate also
// head and sed); no network, no environment (it runs under `env -i`). It checks the models' hashes,
// runs the command with the arguments given to it appended, and writes into $STAGEBENCH_RESULTS,
// else results/ beside it (bundle_results_files()):
//   result.json   the result document (also a partial one after a failure)
//   trace.json    its Chrome trace (the commands with --trace)
//   junit.xml     when the stagebench has --junit (checked by asking its --help); with a gate,
//                 the command's suites and compare's (the gate's case, its <failure>)
//   compare.md, compare.json   with a gate: `compare baseline.json result.json --fail-if-...`
//   stdout.log, stderr.log
//   manifest.json what ran, how it ended, and every file above with its bytes and sha256
//                 (read back by `stagebench ingest`, fleet/results_folder.hpp)
// and exits 0 (measured: every test ok, the gate passed), 1 (measured, but a test or the gate
// failed: the documents say which) or 2 (could not measure: a bad job, a damaged model, a
// stagebench that does not run on this machine; or the gate could not be evaluated). Ctrl-C or
// SIGTERM (a CI runner cancelling, `timeout -s INT`) reaches the command, which stops keeping
// what it measured, and run.sh still writes the manifest.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace sb {

// What a job runs on: "host" (this machine's architecture, from its dist tarball), "amd64",
// "arm64" (the dist tarball of that architecture), "agent-armv8.0", "agent-armv8.2",
// "agent-armv8.6" (a static agent of `make agents`).
inline const std::vector<std::string> kBundleTargets = {
    "host", "amd64", "arm64", "agent-armv8.0", "agent-armv8.2", "agent-armv8.6"};

struct BundleOptions {
    std::string out;              // JOB.tar.gz
    std::string target = "host";  // one of kBundleTargets
    std::string dist_dir = "dist";
    std::vector<std::string> models;   // files put into models/ (by their file name)
    std::vector<std::string> command;  // e.g. {"run", "-m", "tiny.gguf", "-p", "64"}
    // A stagebench already installed on the device (an absolute path there): the job packs
    // none and run.sh runs this one (target and dist_dir are then not used).
    std::optional<std::string> installed_stagebench;
    // A regression gate: run.sh compares the document with baseline (a result document, packed
    // as baseline.json) by `compare --fail-if-slower PCT` and/or `--fail-if-energy PCT`
    // (analysis/compare_gate.hpp's thresholds, e.g. "5%"). Needs a dist target (an agent has
    // no compare).
    std::optional<std::string> baseline, fail_if_slower, fail_if_energy;
    // --lava-job: also a LAVA job definition (lava_job_yaml()) that fetches the bundle from
    // lava_bundle_url on a device of lava_device_type.
    std::optional<std::string> lava_job, lava_bundle_url;
    std::string lava_device_type = "qemu";
};

struct BundleModel {
    std::string path;    // in the job: "models/NAME"
    std::string sha256;  // 64 hex digits
    uint64_t bytes = 0;
};

// job.json's content.
struct BundleSpec {
    std::string target, arch;     // arch: "amd64", "arm64"; target "installed": "" (unknown)
    std::string artifact;         // the dist tarball or agent packed (its file name); "" when
                                  // the job runs an installed stagebench
    std::string artifact_sha256;  // of that file ("" when none)
    std::string artifact_path;    // that file on this machine (not in job.json)
    std::string stagebench = "stagebench/bin/stagebench";  // what run.sh runs: in the job, or
                                                           // an absolute path on the device
    std::string created_at;                                // UTC, ISO 8601
    std::string created_by;                                // the stagebench version that wrote it
    std::vector<BundleModel> models;
    std::vector<std::string> command;  // the models' arguments rewritten to models/NAME
    bool with_out = true;              // the command writes its document with --out (else -o json)
    bool with_trace = true;            // the command takes --trace
    // The gate: compare's flags ({"--fail-if-slower", "5%"}); empty: no gate, no baseline.json.
    std::vector<std::string> gate;
    std::string baseline_sha256;  // of baseline.json, with a gate
};

// Throws sb::Error(usage) for a target not in kBundleTargets, a command that is not a
// measuring command or sets what run.sh sets (-o, --out, --db, --trace, --junit), a model of
// the command that is not among models (the job would lack it), --lava-job without
// lava_bundle_url or with a device type that is not a LAVA name, a gate threshold that is not
// one, a threshold without a baseline or a baseline without a threshold, a gate on an agent
// target, an installed stagebench that is not an absolute path; sb::Error(input) for a model
// that is not a readable regular file or two models of one file name, a baseline that is not a
// result document.
void check_bundle_options(const BundleOptions& o);

// The command with each -m/--model value (a comma list too) rewritten to models/NAME. Throws
// sb::Error(usage) for a value that is none of models (by path as given, the same file, or
// file name).
std::vector<std::string> bundle_command(const std::vector<std::string>& command,
                                        const std::vector<std::string>& models);

// The run.sh of a job (see above): POSIX sh, no bash-isms (checked by dash -n in tests).
std::string bundle_run_script(const BundleSpec& spec);

// job.json.
std::string bundle_spec_json(const BundleSpec& spec);

// A LAVA job definition (YAML) that runs the bundle in a test shell on a device of
// device_type: deploy the LAVA overlay, boot with the minimal method (a board that boots its
// own system), then a test whose inline definition fetches url (wget or curl), checks its
// sha256, unpacks it, runs `sh run.sh`, reports one lava-test-case per run.sh outcome and
// prints results/manifest.json into the log. Accepted by lava_common.schemas.validate.
std::string lava_job_yaml(const BundleSpec& spec, const std::string& job_name,
                          const std::string& device_type, const std::string& url,
                          const std::string& bundle_sha256);

struct BundleSummary {
    std::string out;     // the tarball written
    std::string sha256;  // of the tarball
    uint64_t bytes = 0;
    BundleSpec spec;
};

// What the job will hold, without writing it: the stagebench of the target found in dist_dir
// and hashed, the models hashed, the command rewritten. Throws as check_bundle_options,
// sb::Error(input) when dist_dir has no stagebench for the target (naming the make target
// that builds it).
BundleSpec plan_bundle(const BundleOptions& o);

// A key of the job's content (64 hex digits): the same for two plans of the same stagebench
// release, artifact, models, command and gate, whenever they were made (created_at aside).
std::string bundle_key(const BundleSpec& spec);

// Writes the tarball of a plan (through a temporary beside it, renamed at the end: never half
// a job; two writers of one file never share a temporary) and, with lava_job, the LAVA job.
// Progress goes to log. Throws sb::Error(input) when out cannot be written,
// sb::Error(runtime) when tar fails.
BundleSummary write_bundle(const BundleOptions& o, const BundleSpec& spec, std::ostream& log);
// plan_bundle, then write_bundle.
BundleSummary write_bundle(const BundleOptions& o, std::ostream& log);

}  // namespace sb
