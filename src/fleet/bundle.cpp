#include "fleet/bundle.hpp"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "analysis/compare_gate.hpp"
#include "core/arm_level.hpp"
#include "core/document.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"
#include "core/subprocess.hpp"
#include "core/version.hpp"
#include "fleet/device_probe.hpp"
#include "fleet/dist_files.hpp"
#include "fleet/fleet_run.hpp"

namespace sb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The measuring commands whose document is written as it goes with --out, and those that take
// --trace (cli/trace_option.hpp); the others print it with -o json.
const std::set<std::string> kWithOut = {"run", "ops", "sustained", "hybrid"};
const std::set<std::string> kWithTrace = {"run", "ops", "sustained", "hybrid"};

bool is_model_flag(const std::string& a) {
    return a == "-m" || a == "--model";
}

std::string this_arch() {
    utsname u{};
    if (::uname(&u) != 0)
        return "";
    return dist_arch(u.machine);
}

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    return fs::equivalent(a, b, ec);
}

// A LAVA device type or job name: what LAVA's own names are made of.
bool lava_name(const std::string& s) {
    return !s.empty() && s.size() <= 200 &&
           s.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
               std::string::npos;
}

// A double-quoted YAML scalar: JSON's string escapes are YAML's too.
std::string yq(const std::string& s) {
    return json(s).dump();
}

}  // namespace

std::vector<std::string> bundle_command(const std::vector<std::string>& command,
                                        const std::vector<std::string>& models) {
    std::vector<std::string> out = command;
    for (std::size_t i = 0; i + 1 < out.size(); ++i) {
        if (!is_model_flag(out[i]))
            continue;
        std::string joined;
        std::stringstream list(out[i + 1]);
        for (std::string m; std::getline(list, m, ',');) {
            std::optional<std::string> name;
            for (const auto& b : models)
                if (m == b || same_file(m, b) || m == fs::path(b).filename().string())
                    name = "models/" + fs::path(b).filename().string();
            if (!name)
                throw usage_error("bundle: the command's " + out[i] + " '" + m +
                                  "' is not a model of the job; add it with bundle -m " + m);
            joined += (joined.empty() ? "" : ",") + *name;
        }
        out[i + 1] = joined;
        ++i;
    }
    return out;
}

void check_bundle_options(const BundleOptions& o) {
    if (o.installed_stagebench) {
        if (o.installed_stagebench->empty() || (*o.installed_stagebench)[0] != '/')
            throw usage_error("bundle: the installed stagebench '" + *o.installed_stagebench +
                              "' is not an absolute path");
    } else if (std::find(kBundleTargets.begin(), kBundleTargets.end(), o.target) ==
               kBundleTargets.end()) {
        throw usage_error(
            "--target '" + o.target +
            "': expected host, amd64, arm64, agent-armv8.0, agent-armv8.2 or agent-armv8.6");
    }
    check_measuring_command(o.command, "bundle", {"--trace", "--junit"});
    if (o.fail_if_slower)
        parse_gate_threshold("fail-if-slower", *o.fail_if_slower);
    if (o.fail_if_energy)
        parse_gate_threshold("fail-if-energy", *o.fail_if_energy);
    const bool threshold = o.fail_if_slower || o.fail_if_energy;
    if (threshold && !o.baseline)
        throw usage_error(
            "bundle: --fail-if-slower and --fail-if-energy need --baseline DOC: the document "
            "the job's measurement is compared with");
    if (o.baseline && !threshold)
        throw usage_error(
            "bundle: --baseline needs a gate: --fail-if-slower PCT and/or --fail-if-energy PCT");
    if (o.baseline && !o.installed_stagebench && o.target.rfind("agent-", 0) == 0)
        throw usage_error("bundle: the phone agent has no compare, so a job of --target " +
                          o.target +
                          " cannot gate: compare its results/result.json on the host instead "
                          "(stagebench compare BASE result.json --fail-if-slower PCT)");
    if (o.baseline)
        load_result_document(*o.baseline);  // a result document, or a one-line input error
    std::map<std::string, std::string> names;
    for (const auto& m : o.models) {
        require_regular_file(m, "model");
        const std::string name = fs::path(m).filename().string();
        if (auto it = names.find(name); it != names.end() && !same_file(it->second, m))
            throw input_error("bundle: the models '" + it->second + "' and '" + m +
                              "' have one file name, " + name + ", in the job's models/");
        names[name] = m;
    }
    bundle_command(o.command, o.models);
    if (o.lava_job) {
        if (!o.lava_bundle_url || o.lava_bundle_url->empty())
            throw usage_error(
                "--lava-job needs --lava-bundle-url URL: where the LAVA device fetches the job");
        if (!lava_name(o.lava_device_type))
            throw usage_error("--lava-device-type '" + o.lava_device_type +
                              "': expected a LAVA device type name (letters, digits, - _ .)");
    }
}

std::string bundle_spec_json(const BundleSpec& s) {
    json models = json::array();
    for (const auto& m : s.models)
        models.push_back({{"path", m.path}, {"bytes", m.bytes}, {"sha256", m.sha256}});
    json results = {
        {"document", "result.json"}, {"trace", s.with_trace ? json("trace.json") : json(nullptr)},
        {"junit", "junit.xml"},      {"stdout", "stdout.log"},
        {"stderr", "stderr.log"},    {"manifest", "manifest.json"}};
    if (!s.gate.empty()) {
        results["compare"] = "compare.md";
        results["compare_document"] = "compare.json";
    }
    auto or_null = [](const std::string& v) { return v.empty() ? json(nullptr) : json(v); };
    json j = {{"stagebench_bundle", 1},
              {"target", s.target},
              {"arch", s.arch},
              {"created_at", s.created_at},
              {"created_by", s.created_by},
              {"stagebench",
               {{"artifact", or_null(s.artifact)},
                {"sha256", or_null(s.artifact_sha256)},
                {"path", s.stagebench}}},
              {"models", models},
              {"command", s.command},
              {"results", results}};
    if (!s.gate.empty())
        j["gate"] = {
            {"baseline", "baseline.json"}, {"sha256", s.baseline_sha256}, {"compare", s.gate}};
    return dump_json(j, 2) + "\n";
}

std::string bundle_run_script(const BundleSpec& s) {
    std::string models;
    for (const auto& m : s.models)
        models += "check_model " + shell_quote(m.path) + " " + m.sha256 + "\n";
    if (!s.gate.empty())
        models += "check_model baseline.json " + s.baseline_sha256 + "\n";
    const std::string cmd = shell_join(s.command);
    const std::string name = shell_quote(s.command.at(0));
    const std::string sb = s.stagebench.rfind('/', 0) == 0 ? shell_quote(s.stagebench)
                                                           : "$here/" + shell_quote(s.stagebench);
    std::string out;
    out += R"SH(#!/bin/sh
# A stagebench job, written by `stagebench bundle` (docs/lab.md). POSIX sh: it needs nothing but
# sh and the base tools, no network and no environment.
#
#   sh run.sh [ARGS...]     ARGS: the measuring command's own, after those of job.json
#
# Writes into $STAGEBENCH_RESULTS, else results/ beside this script: result.json, trace.json,
# junit.xml (when this stagebench has --junit), compare.md and compare.json (a job with a gate),
# stdout.log, stderr.log and manifest.json (every file with its bytes and sha256; `stagebench
# ingest` checks them). Exits 0 (measured, every test ok, the gate passed), 1 (measured, but a
# test or the gate failed) or 2 (could not measure, or the gate could not be evaluated).
# $STAGEBENCH_PREFIX, when set, is put before the stagebench (split at spaces): an emulator
# (qemu-aarch64 -cpu cortex-a76), taskset -c 4-7, nice -n -5.
fail() {
  echo "stagebench: error: $*" >&2
  exit 2
}
# Ctrl-C or SIGTERM to the process group (a CI runner cancelling, timeout -s INT) reaches the
# stagebench too, which stops keeping what it measured; this script then still writes the
# manifest. Before the stagebench starts, it stops here.
interrupted=
trap 'interrupted=1' INT TERM
here=$(cd "$(dirname "$0")" && pwd -P) || fail "cannot enter the job's folder"
results=${STAGEBENCH_RESULTS:-$here/results}
# A relative $STAGEBENCH_RESULTS is the caller's, not the job's.
case $results in
  /*) ;;
  *) results=$(pwd)/$results ;;
esac
cd "$here" || fail "cannot enter $here"
mkdir -p "$results" || fail "cannot make the results folder $results"
results=$(cd "$results" && pwd -P) || fail "cannot enter the results folder"
for f in result.json trace.json junit.xml compare.md compare.json gates.xml stdout.log stderr.log \
  manifest.json; do
  rm -f "$results/$f" || fail "cannot replace $results/$f"
done
)SH";
    out += "sb=" + sb + "\n";
    out += R"SH([ -f "$sb" ] || fail "no stagebench in the job ($sb)"
# Some device clouds unpack without the mode bits.
[ -x "$sb" ] || chmod 755 "$sb" || fail "cannot make $sb executable"
# A system whose C++ runtime is older than the one a tarball's stagebench was built with cannot
# start it ("version `GLIBCXX_...' not found"): the tarball's own copy in lib/compat/ (off its
# rpath, so that a newer system's runtime wins) then goes first.
compat=$(dirname "$sb")/../lib/compat
if [ -d "$compat" ] && ! $STAGEBENCH_PREFIX "$sb" --version >/dev/null 2>"$results/stderr.log" &&
  grep -q -E "version .(GLIBCXX|CXXABI|GCC)_[0-9.]+. not found" "$results/stderr.log"; then
  LD_LIBRARY_PATH=$compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
  echo "stagebench: this system's C++ runtime is older than the stagebench's: using $compat" >&2
fi
rm -f "$results/stderr.log"

hash_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 -r "$1" | cut -d ' ' -f 1
  fi
}
# A model copied badly would be measured as if it were the model: its hash is checked first.
check_model() {
  [ -f "$1" ] || fail "the job's model $1 is missing"
  h=$(hash_of "$1")
  [ -z "$h" ] || [ "$h" = "$2" ] || fail "the job's model $1 is damaged: sha256 $h, the job's $2"
}
)SH";
    out += models;
    out += "\n[ -z \"$interrupted\" ] || fail \"interrupted before the command started\"\n";
    out += "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)\n";
    out += "set -- " + cmd + " \"$@\"\n";
    if (s.with_out)
        out += "set -- \"$@\" --out \"$results/result.json\"\n";
    else
        out += "set -- \"$@\" -o json\n";
    if (s.with_trace)
        out += "set -- \"$@\" --trace \"$results/trace.json\"\n";
    out += "# The JUnit step: only a stagebench that has --junit for " + s.command.at(0) +
           " is asked for junit.xml.\n";
    out += "stagebench_has_junit() {\n  $STAGEBENCH_PREFIX \"$sb\" " + name +
           " --help 2>/dev/null | grep -q -e '--junit'\n}\n";
    out += R"SH(if stagebench_has_junit; then
  junit=written
  set -- "$@" --junit "$results/junit.xml"
else
  junit="not written: this stagebench has no --junit"
fi
)SH";
    if (s.with_out)
        out +=
            "$STAGEBENCH_PREFIX \"$sb\" \"$@\" >\"$results/stdout.log\" "
            "2>\"$results/stderr.log\"\n";
    else
        out +=
            "$STAGEBENCH_PREFIX \"$sb\" \"$@\" >\"$results/result.json\" "
            "2>\"$results/stderr.log\"\n";
    out += R"SH(rc=$?
cat "$results/stderr.log" >&2
[ -s "$results/result.json" ] || rm -f "$results/result.json"
gate=none gate_exit=null
)SH";
    if (!s.gate.empty()) {
        out += "# The gate: the document against the job's baseline, by compare.\n";
        out += R"SH(if [ -f "$results/result.json" ] && [ "$rc" -le 1 ]; then
)SH";
        out += "  set -- compare \"$here/baseline.json\" \"$results/result.json\" " +
               shell_join(s.gate) + " --out \"$results/compare.json\"\n";
        out += R"SH(  [ "$junit" != written ] || set -- "$@" --junit "$results/gates.xml"
  $STAGEBENCH_PREFIX "$sb" "$@" >"$results/compare.md" 2>"$results/gate.log"
  gate_exit=$?
  cat "$results/gate.log" >&2
  cat "$results/gate.log" >>"$results/stderr.log"
  rm -f "$results/gate.log"
  case $gate_exit in
    0) gate=passed ;;
    1) gate=failed ;;
    *) gate=error ;;
  esac
  # One junit.xml: the command's suites, then compare's (the gate's case and its failure).
  # Both files are stagebench's: the declaration, <testsuites ...>, suites, </testsuites>.
  if [ -s "$results/gates.xml" ] && [ -s "$results/junit.xml" ]; then
    {
      head -n 1 "$results/junit.xml"
      echo '<testsuites name="stagebench job">'
      sed '1,2d;$d' "$results/junit.xml"
      sed '1,2d;$d' "$results/gates.xml"
      echo '</testsuites>'
    } >"$results/junit.xml.part" && mv -f "$results/junit.xml.part" "$results/junit.xml"
  elif [ -s "$results/gates.xml" ]; then
    mv -f "$results/gates.xml" "$results/junit.xml"
  fi
  rm -f "$results/gates.xml" "$results/junit.xml.part"
fi
)SH";
    }
    out += R"SH(finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# 0: measured; 1: measured, a test or the gate failed (the documents say which); else not
# measured (bad input, a stagebench that cannot run here, killed) or the gate not evaluated.
if [ "$rc" -eq 0 ] && [ -f "$results/result.json" ]; then
  code=0 outcome=measured
elif [ "$rc" -eq 1 ] && [ -f "$results/result.json" ]; then
  code=1 outcome=failed
else
  code=2 outcome=not_measured
fi
case $gate in
  failed) [ "$code" -eq 2 ] || code=1 outcome=failed ;;
  error) code=2 ;;
esac

sep=
entry() {
  f=$results/$1
  [ -f "$f" ] || return 0
  h=$(hash_of "$f")
  b=$(wc -c <"$f" | tr -d ' ')
  if [ -n "$h" ]; then h="\"$h\""; else h=null; fi
  printf '%s\n    {"name": "%s", "kind": "%s", "bytes": %s, "sha256": %s}' "$sep" "$1" "$2" "$b" "$h"
  sep=,
}
host=$(uname -n 2>/dev/null | tr -d '"\\')
machine=$(uname -m 2>/dev/null | tr -d '"\\')
{
  printf '{\n  "stagebench_results": 1,\n'
  printf '  "host": "%s",\n  "machine": "%s",\n' "$host" "$machine"
  printf '  "started_at": "%s",\n  "finished_at": "%s",\n' "$started" "$finished"
  printf '  "exit_code": %s,\n  "run_sh_exit": %s,\n  "outcome": "%s",\n' "$rc" "$code" "$outcome"
  printf '  "gate": "%s",\n  "gate_exit": %s,\n' "$gate" "$gate_exit"
  printf '  "junit": "%s",\n  "job": ' "$junit"
  cat "$here/job.json"
  printf '  ,"files": ['
  entry result.json document
  entry trace.json trace
  entry junit.xml junit
  entry compare.md gate
  entry compare.json gate
  entry stdout.log log
  entry stderr.log log
  printf '\n  ]\n}\n'
} >"$results/manifest.json.part" && mv -f "$results/manifest.json.part" "$results/manifest.json" \
  || fail "cannot write $results/manifest.json"
if [ "$gate" = error ]; then
  echo "stagebench: error: measured, but the gate could not be evaluated (compare exited $gate_exit); results in $results" >&2
else
  case $outcome in
    measured) echo "stagebench: measured; results in $results" >&2 ;;
    failed) echo "stagebench: measured, but a test or the gate failed; results in $results" >&2 ;;
    *) echo "stagebench: error: not measured (stagebench exited $rc); its log is $results/stderr.log" >&2 ;;
  esac
fi
exit "$code"
)SH";
    return out;
}

std::string lava_job_yaml(const BundleSpec& s, const std::string& job_name,
                          const std::string& device_type, const std::string& url,
                          const std::string& bundle_sha256) {
    // Each step is one line of the test shell LAVA writes; they run in one shell, in order.
    const std::vector<std::string> steps = {
        "rm -rf stagebench-job && mkdir stagebench-job && cd stagebench-job",
        "(wget -q -O job.tar.gz " + shell_quote(url) + " || curl -fsSL -o job.tar.gz " +
            shell_quote(url) + ") || lava-test-raise stagebench-fetch",
        "echo '" + bundle_sha256 +
            "  job.tar.gz' | sha256sum -c - || lava-test-raise stagebench-damaged",
        "tar -xzf job.tar.gz && rm -f job.tar.gz",
        "sh ./run.sh; rc=$?",
        "cat results/manifest.json",
        "if [ \"$rc\" -eq 0 ]; then lava-test-case stagebench --result pass; else "
        "lava-test-case stagebench --result fail; fi",
        "[ \"$rc\" -le 1 ] || lava-test-raise stagebench-not-measured",
    };
    std::string y;
    y += "# A LAVA job written by `stagebench bundle --lava-job` (docs/lab.md): runs the job\n";
    y += "# " + yq(shell_join(s.command)) + " (target " + s.target + ") in a test shell.\n";
    y += "# Deploy and boot are a board's that boots its own system; change them to your\n";
    y += "# device type's. The bundle is fetched from the URL below and checked by its sha256.\n";
    y += "device_type: " + yq(device_type) + "\n";
    y += "job_name: " + yq(job_name) + "\n";
    y += "priority: medium\nvisibility: public\n";
    y += "timeouts:\n  job:\n    hours: 2\n  action:\n    minutes: 90\n";
    y += "  connection:\n    minutes: 2\n";
    y += "actions:\n";
    y += "- deploy:\n    to: overlay\n    timeout:\n      minutes: 10\n";
    y += "- boot:\n    method: minimal\n    timeout:\n      minutes: 10\n";
    y += "- test:\n    timeout:\n      minutes: 90\n    definitions:\n";
    y += "    - from: inline\n      name: stagebench\n      path: inline/stagebench.yaml\n";
    y += "      repository:\n        metadata:\n          format: Lava-Test Test Definition 1.0\n";
    y += "          name: stagebench\n          description: " +
         yq("stagebench " + shell_join(s.command)) + "\n";
    y += "        run:\n          steps:\n";
    for (const auto& st : steps)
        y += "          - " + yq(st) + "\n";
    return y;
}

BundleSpec plan_bundle(const BundleOptions& o) {
    check_bundle_options(o);
    BundleSpec spec;
    spec.target = o.installed_stagebench ? "installed" : o.target;
    spec.created_at = utc_timestamp();
    spec.created_by = std::string("stagebench ") + tool_version();
    spec.command = bundle_command(o.command, o.models);
    spec.with_out = kWithOut.count(spec.command[0]) > 0;
    spec.with_trace = kWithTrace.count(spec.command[0]) > 0;
    if (o.fail_if_slower)
        spec.gate.insert(spec.gate.end(), {"--fail-if-slower", *o.fail_if_slower});
    if (o.fail_if_energy)
        spec.gate.insert(spec.gate.end(), {"--fail-if-energy", *o.fail_if_energy});
    if (o.baseline)
        spec.baseline_sha256 = sha256_file(*o.baseline);
    for (const auto& m : o.models) {
        const std::string path = "models/" + fs::path(m).filename().string();
        if (std::none_of(spec.models.begin(), spec.models.end(),
                         [&](const BundleModel& b) { return b.path == path; }))
            spec.models.push_back({path, sha256_file(m), fs::file_size(m)});
    }
    if (o.installed_stagebench) {
        spec.stagebench = *o.installed_stagebench;
        return spec;
    }

    // The stagebench of the target, as fleet run deploys it.
    std::optional<fs::path> artifact;
    if (o.target.rfind("agent-", 0) == 0) {
        spec.arch = "arm64";
        const auto level = parse_arm_level(o.target.substr(6));
        artifact = dist_agent(o.dist_dir, *level);
        if (!artifact)
            throw input_error("bundle: no " + agent_file_name(*level) + " in " + o.dist_dir +
                              " (make agents builds it)");
    } else {
        spec.arch = o.target == "host" ? this_arch() : o.target;
        if (spec.arch.empty())
            throw input_error("bundle: this machine's architecture has no dist");
        artifact = dist_tarball_for(o.dist_dir, spec.arch);
        if (!artifact)
            throw input_error("bundle: no stagebench-*-linux-" + spec.arch + ".tar.gz in " +
                              o.dist_dir +
                              (spec.arch == "arm64" ? " (make dist ARCH=arm64)" : " (make dist)"));
    }
    spec.artifact_path = artifact->string();
    spec.artifact = artifact->filename().string();
    spec.artifact_sha256 = sha256_file(artifact->string());
    return spec;
}

std::string bundle_key(const BundleSpec& s) {
    json models = json::array();
    for (const auto& m : s.models)
        models.push_back({m.path, m.sha256, m.bytes});
    const json j = {{"created_by", s.created_by},
                    {"target", s.target},
                    {"arch", s.arch},
                    {"artifact", s.artifact},
                    {"artifact_sha256", s.artifact_sha256},
                    {"stagebench", s.stagebench},
                    {"models", models},
                    {"command", s.command},
                    {"with_out", s.with_out},
                    {"with_trace", s.with_trace},
                    {"gate", s.gate},
                    {"baseline_sha256", s.baseline_sha256}};
    return sha256_text(j.dump());
}

BundleSummary write_bundle(const BundleOptions& o, std::ostream& log) {
    return write_bundle(o, plan_bundle(o), log);
}

BundleSummary write_bundle(const BundleOptions& o, const BundleSpec& spec, std::ostream& log) {
    check_output_path(o.out, "the job (bundle -o)");
    if (o.lava_job)
        check_output_path(*o.lava_job, "the LAVA job (--lava-job)");
    const bool installed = spec.artifact_path.empty();
    const bool tarball = !installed && spec.target.rfind("agent-", 0) != 0;
    const fs::path artifact = spec.artifact_path;

    // The job's tree, beside the output so that models are linked rather than copied.
    const fs::path out = fs::absolute(o.out);
    const fs::path stage =
        out.parent_path() / fmt::format(".{}.stage-{}", out.filename().string(), ::getpid());
    std::error_code ec;
    fs::remove_all(stage, ec);
    struct Cleanup {
        fs::path p;
        ~Cleanup() {
            std::error_code e;
            fs::remove_all(p, e);
        }
    } cleanup{stage};
    fs::create_directories(stage / "models");
    std::vector<std::string> parts = {"run.sh", "job.json", "models"};
    if (installed) {
        log << "bundle: the job runs the stagebench installed at " << spec.stagebench << "\n"
            << std::flush;
    } else {
        log << "bundle: packing " << spec.artifact << "\n" << std::flush;
        parts.push_back("stagebench");
    }
    if (tarball) {
        ProcessOptions po;
        po.timeout_s = 1800;
        auto r = run_process({"tar", "-xzf", artifact.string(), "-C", stage.string()}, po);
        if (!r.ok())
            throw runtime_error("bundle: unpacking " + artifact.string() + ": " + r.last_line());
        fs::rename(stage / dist_tarball_stem(artifact), stage / "stagebench");
    } else if (!installed) {
        fs::create_directories(stage / "stagebench" / "bin");
        fs::copy_file(artifact, stage / "stagebench" / "bin" / "stagebench");
        fs::permissions(stage / "stagebench" / "bin" / "stagebench", fs::perms(0755));
    }
    // Linked where they can be (the same file system), else copied.
    auto add = [&](const std::string& from, const fs::path& dst) {
        if (fs::exists(dst))
            return;
        fs::create_hard_link(fs::canonical(from), dst, ec);
        if (ec)
            fs::copy_file(from, dst);
    };
    for (const auto& m : o.models) {
        const std::string name = fs::path(m).filename().string();
        if (!fs::exists(stage / "models" / name))
            log << "bundle: adding model " << name << "\n" << std::flush;
        add(m, stage / "models" / name);
    }
    if (!spec.gate.empty()) {
        log << "bundle: adding the baseline " << *o.baseline << " (gate: " << shell_join(spec.gate)
            << ")\n"
            << std::flush;
        add(*o.baseline, stage / "baseline.json");
        parts.push_back("baseline.json");
    }
    write_output_file((stage / "job.json").string(), bundle_spec_json(spec), "job.json");
    write_output_file((stage / "run.sh").string(), bundle_run_script(spec), "run.sh");
    fs::permissions(stage / "run.sh", fs::perms(0755));

    const fs::path part =
        out.parent_path() / fmt::format(".{}.part-{}", out.filename().string(), ::getpid());
    ProcessOptions tar_options;
    tar_options.timeout_s = 3600;
    // Owner and times of this machine mean nothing on the device.
    std::vector<std::string> tar = {"tar",       "-czf",        part.string(),
                                    "--owner=0", "--group=0",   "--numeric-owner",
                                    "-C",        stage.string()};
    tar.insert(tar.end(), parts.begin(), parts.end());
    auto r = run_process(tar, tar_options);
    if (!r.ok()) {
        fs::remove(part, ec);
        throw runtime_error("bundle: tar: " + r.last_line());
    }
    fs::rename(part, out);

    BundleSummary sum;
    sum.out = o.out;
    sum.sha256 = sha256_file(out.string());
    sum.bytes = fs::file_size(out);
    sum.spec = spec;
    if (o.lava_job) {
        std::string job_name = "stagebench-" + spec.command[0] + "-" + spec.target;
        write_output_file(
            *o.lava_job,
            lava_job_yaml(spec, job_name, o.lava_device_type, *o.lava_bundle_url, sum.sha256),
            "the LAVA job (--lava-job)");
    }
    return sum;
}

}  // namespace sb
