#pragma once
// `stagebench bundle`: one self-contained job for a device lab's own engine (a device cloud, a
// CI runner, LAVA, Ansible), one tarball that unpacks flat into:
//
//   run.sh              POSIX sh; `sh run.sh [ARGS...]` measures and writes results/
//   job.json            the job's spec: target, the stagebench and models with their sha256,
//                       the command (with the models' paths in the job), what results/ holds
//   stagebench/         the stagebench of the target: a dist tree (bin/stagebench, lib/,
//                       peers/, share/) or the static agent as bin/stagebench
//   models/NAME         the models the command names
//
// run.sh needs nothing but sh and the base tools every Linux and Android has (mkdir, cat, date,
// grep, cut, wc, tr, uname and sha256sum or shasum or openssl for the hashes); no network, no
// environment (it runs under `env -i`). It checks the models' hashes, runs the command with
// the arguments given to it appended, and writes into $STAGEBENCH_RESULTS, else results/
// beside it (bundle_results_files()):
//   result.json   the result document (also a partial one after a failure)
//   trace.json    its Chrome trace (the commands with --trace)
//   junit.xml     when the stagebench has --junit (checked by asking its --help)
//   stdout.log, stderr.log
//   manifest.json what ran, how it ended, and every file above with its bytes and sha256
//                 (read back by `stagebench ingest`, fleet/results_folder.hpp)
// and exits 0 (measured: every test ok), 1 (measured, but a test or gate failed: the
// documents say which) or 2 (could not measure: a bad job, a damaged model, a stagebench that
// does not run on this machine).
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace sb {

// What a job runs on: "host" (this machine's architecture, from its dist tarball), "arm64"
// (the arm64 dist tarball), "agent-armv8.0", "agent-armv8.2", "agent-armv8.6" (a static
// agent of `make agents`).
inline const std::vector<std::string> kBundleTargets = {"host", "arm64", "agent-armv8.0",
                                                        "agent-armv8.2", "agent-armv8.6"};

struct BundleOptions {
    std::string out;              // JOB.tar.gz
    std::string target = "host";  // one of kBundleTargets
    std::string dist_dir = "dist";
    std::vector<std::string> models;   // files put into models/ (by their file name)
    std::vector<std::string> command;  // e.g. {"run", "-m", "tiny.gguf", "-p", "64"}
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
    std::string target, arch;     // arch: "amd64", "arm64"
    std::string artifact;         // the dist tarball or agent packed (its file name)
    std::string artifact_sha256;  // of that file
    std::string created_at;       // UTC, ISO 8601
    std::string created_by;       // the stagebench version that wrote it
    std::vector<BundleModel> models;
    std::vector<std::string> command;  // the models' arguments rewritten to models/NAME
    bool with_out = true;              // the command writes its document with --out (else -o json)
    bool with_trace = true;            // the command takes --trace
};

// Throws sb::Error(usage) for a target not in kBundleTargets, a command that is not a
// measuring command or sets what run.sh sets (-o, --out, --db, --trace, --junit), a model of
// the command that is not among models (the job would lack it), --lava-job without
// lava_bundle_url or with a device type that is not a LAVA name; sb::Error(input) for a model
// that is not a readable regular file or two models of one file name.
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

// Writes the tarball (through a temporary beside it, renamed at the end: never half a job)
// and, with lava_job, the LAVA job. Progress goes to log. Throws as check_bundle_options,
// sb::Error(input) when dist_dir has no stagebench for the target (naming the make target
// that builds it) or out cannot be written, sb::Error(runtime) when tar fails.
BundleSummary write_bundle(const BundleOptions& o, std::ostream& log);

}  // namespace sb
