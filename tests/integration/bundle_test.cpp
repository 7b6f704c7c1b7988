// `stagebench bundle` and `stagebench ingest` as a lab uses them: this build packed as `make
// dist` packs it, the job unpacked in a fresh folder and its run.sh run by dash in an empty
// environment (env -i PATH=/usr/bin:/bin) without a network (a new network namespace where
// this user may make one), its results/ ingested into a store; the LAVA job checked by
// Debian's lava-common. The arm64 and agent jobs: tests/dist/bundle_qemu.sh.
#ifdef SB_WITH_FLEET
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_harness.hpp"
#include "dist_dir.hpp"
#include "fleet/transport.hpp"
#include "loopback_sshd.hpp"

namespace {

using namespace sbtest;
using nlohmann::json;
namespace fs = std::filesystem;

const std::vector<std::string> kCommand = {"run", "-m", "",  "-p",      "8",  "-n",
                                           "2",   "-r", "1", "--membw", "off"};

std::vector<std::string> bundle_args(const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"bundle", "-o", out, "--dist", dist_dir(), "-m", tiny_model()};
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back("--");
    for (const auto& w : kCommand)
        a.push_back(w.empty() ? tiny_model() : w);
    return a;
}

// The job, with its LAVA job beside it (job() + ".lava.yaml"), made by `bundle` once per build
// (of what the dist packs) and model, in the build's test cache: the tests only read it.
const std::string& job() {
    static const std::string path = [] {
        auto args = [](const std::string& out) {
            return bundle_args(out, {"--lava-job", out + ".lava.yaml", "--lava-bundle-url",
                                     "https://lab.example/jobs/job.tar.gz", "--lava-device-type",
                                     "bcm2711-rpi-4-b"});
        };
        // Keyed by what makes it: the dist, the model's bytes and bundle's arguments.
        std::string what = read_file(tiny_model());
        for (const auto& a : args("OUT"))
            what += "\n" + (a == dist_dir()     ? std::string("DIST")
                            : a == tiny_model() ? std::string("MODEL")
                                                : a);
        const std::string dir = cached_output(
            "bundle-job", dist_key() + "-" + std::to_string(std::hash<std::string>{}(what)),
            [&](const std::string& out) {
                Proc r = run_sb(args(out + "/job.tar.gz"), 600);
                if (r.exit_code != 0)
                    throw std::runtime_error("bundle failed: " + r.err);
            });
        return dir + "/job.tar.gz";
    }();
    return path;
}

// The job unpacked into dir (fresh).
void unpack(const std::string& dir) {
    fs::create_directories(dir);
    Proc p = run({"/bin/tar", "-xzf", job(), "-C", dir}, 120);
    ASSERT_EQ(p.exit_code, 0) << p.err;
}

// run.sh under dash in an empty environment, without a network where this user may make a
// namespace (root); extra: run.sh's arguments.
Proc run_job(const std::string& dir, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin"};
    static const bool netns = run({"/usr/bin/unshare", "-n", "true"}, 10).exit_code == 0;
    if (netns)
        argv.insert(argv.end(), {"/usr/bin/unshare", "-n"});
    argv.insert(argv.end(), {"/usr/bin/dash", dir + "/run.sh"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, 300);
}

bool has_junit_flag() {
    return run_sb({"run", "--help"}).out.find("--junit") != std::string::npos;
}

TEST(Bundle, TheJobHoldsRunShSpecStagebenchAndModel) {
    TempDir t;
    Proc p = run({"/bin/tar", "-tzf", job()}, 60);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    for (const char* f : {"run.sh", "job.json", "./stagebench/bin/stagebench", "models/tiny.gguf"})
        EXPECT_NE(p.out.find(std::string(f).substr(f[0] == '.' ? 2 : 0)), std::string::npos)
            << f << " not in\n"
            << p.out.substr(0, 2000);
    unpack(t.file("job"));
    const json spec = json::parse(read_file(t.file("job/job.json")));
    EXPECT_EQ(spec["target"], "host");
    EXPECT_EQ(spec["arch"], "amd64");
    EXPECT_EQ(spec["command"], json({"run", "-m", "models/tiny.gguf", "-p", "8", "-n", "2", "-r",
                                     "1", "--membw", "off"}));
    ASSERT_EQ(spec["models"].size(), 1u);
    EXPECT_EQ(spec["models"][0]["path"], "models/tiny.gguf");
    Proc h = run({"/usr/bin/sha256sum", tiny_model()}, 60);
    EXPECT_EQ(spec["models"][0]["sha256"], h.out.substr(0, 64));
    EXPECT_EQ(spec["models"][0]["bytes"], fs::file_size(tiny_model()));
    EXPECT_TRUE(spec["stagebench"]["artifact"].get<std::string>().rfind("stagebench-", 0) == 0)
        << spec;
    // POSIX sh: dash parses it (checkbashisms too, where devscripts is installed).
    Proc d = run({"/usr/bin/dash", "-n", t.file("job/run.sh")}, 30);
    EXPECT_EQ(d.exit_code, 0) << d.err;
    if (const std::string cb = on_path("checkbashisms"); !cb.empty()) {
        Proc c = run({cb, "--posix", t.file("job/run.sh")}, 30);
        EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
    }
}

TEST(Bundle, RunShMeasuresInAnEmptyEnvironmentWithTheArgumentsGivenIt) {
    TempDir t;
    unpack(t.file("job"));
    // -t 1: run.sh's arguments follow the job's command.
    Proc p = run_job(t.file("job"), {"-t", "1"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("stagebench: measured; results in " + t.file("job/results")),
              std::string::npos)
        << p.err;
    const json doc = json::parse(read_file(t.file("job/results/result.json")));
    ASSERT_EQ(doc["tests"].size(), 1u);
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
    EXPECT_EQ(doc["tests"][0]["config"]["n_threads"], 1);
    EXPECT_TRUE(fs::file_size(t.file("job/results/trace.json")) > 0);
    EXPECT_TRUE(fs::exists(t.file("job/results/stderr.log")));
    const json m = json::parse(read_file(t.file("job/results/manifest.json")));
    EXPECT_EQ(m["stagebench_results"], 1);
    EXPECT_EQ(m["exit_code"], 0);
    EXPECT_EQ(m["run_sh_exit"], 0);
    EXPECT_EQ(m["outcome"], "measured");
    EXPECT_EQ(m["job"]["command"][0], "run");
    // Every file listed with the bytes and hash it has.
    std::set<std::string> listed;
    for (const auto& f : m["files"]) {
        const std::string path = t.file("job/results/" + f["name"].get<std::string>());
        listed.insert(f["name"]);
        EXPECT_EQ(f["bytes"], fs::file_size(path)) << f;
        Proc h = run({"/usr/bin/sha256sum", path}, 60);
        EXPECT_EQ(f["sha256"], h.out.substr(0, 64)) << f;
    }
    for (const char* f : {"result.json", "trace.json", "stdout.log", "stderr.log"})
        EXPECT_TRUE(listed.count(f)) << f << " not in the manifest";
    // The JUnit step follows the stagebench packed: junit.xml exactly when it has --junit.
    EXPECT_EQ(fs::exists(t.file("job/results/junit.xml")), has_junit_flag());
    EXPECT_EQ(listed.count("junit.xml") > 0, has_junit_flag());
    EXPECT_EQ(m["junit"],
              has_junit_flag() ? "written" : "not written: this stagebench has no --junit");
}

// A board's or phone's minimal userland: busybox's applets alone on PATH, its sh running
// run.sh (no dash, no coreutils). The job measures, the manifest's sizes and hashes (busybox's
// sha256sum) are right, and the results folder as the device's `tar -cf -` sends it (busybox's
// tar) is what the fleet's reader takes back, byte for byte.
TEST(Bundle, RunShMeasuresWithBusyboxAsTheWholeUserland) {
    TempDir t;
    unpack(t.file("job"));
    const std::string bb = t.file("bb");
    fs::create_directories(bb);
    Proc list = run({"/usr/bin/busybox", "--list"}, 30);
    ASSERT_EQ(list.exit_code, 0) << list.err;
    std::istringstream applets(list.out);
    for (std::string a; std::getline(applets, a);)
        if (!a.empty())
            fs::create_symlink("/usr/bin/busybox", bb + "/" + a);
    std::vector<std::string> argv = {"/usr/bin/env", "-i", "PATH=" + bb};
    if (run({"/usr/bin/unshare", "-n", "true"}, 10).exit_code == 0)
        argv.insert(argv.end(), {"/usr/bin/unshare", "-n"});
    argv.insert(argv.end(), {"/usr/bin/busybox", "sh", t.file("job/run.sh"), "-t", "1"});
    Proc p = run(argv, 300);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const std::string res = t.file("job/results");
    const json doc = json::parse(read_file(res + "/result.json"));
    ASSERT_EQ(doc["tests"].size(), 1u);
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
    const json m = json::parse(read_file(res + "/manifest.json"));
    EXPECT_EQ(m["outcome"], "measured");
    std::vector<std::string> names;
    for (const auto& f : m["files"]) {
        const std::string path = res + "/" + f["name"].get<std::string>();
        names.push_back(f["name"]);
        EXPECT_EQ(f["bytes"], fs::file_size(path)) << f;
        Proc h = run({"/usr/bin/sha256sum", path}, 60);
        EXPECT_EQ(f["sha256"], h.out.substr(0, 64)) << f;
    }
    ASSERT_FALSE(names.empty());
    // What `cd RESULTS && tar -cf - NAMES` writes on that device, read by the fleet.
    std::string line = "cd '" + res + "' && tar -cf '" + t.file("back.tar") + "'";
    for (const auto& n : names)
        line += " '" + n + "'";
    Proc tar = run({"/usr/bin/env", "-i", "PATH=" + bb, "/usr/bin/busybox", "sh", "-c", line}, 60);
    ASSERT_EQ(tar.exit_code, 0) << tar.err;
    fs::create_directories(t.file("back"));
    EXPECT_EQ(sb::untar_files(t.file("back.tar"), names, t.file("back")), "");
    for (const auto& n : names)
        EXPECT_EQ(read_file(t.file("back/" + n)), read_file(res + "/" + n)) << n;
}

// A device whose C++ runtime is older than the build machine's: the tarball's stagebench cannot
// start there (the loader's "version `GLIBCXX_...' not found", exit 127), so run.sh puts the
// tarball's lib/compat/ first and measures. The stand-in fails as the loader would unless
// lib/compat is on LD_LIBRARY_PATH, and then runs the packed stagebench.
TEST(Bundle, RunShPutsTheTarballsCppRuntimeFirstWhereTheSystemsIsOlder) {
    TempDir t;
    unpack(t.file("job"));
    const std::string bin = t.file("job/stagebench/bin");
    ASSERT_TRUE(fs::is_directory(t.file("job/stagebench/lib/compat")));
    fs::rename(bin + "/stagebench", bin + "/stagebench.real");
    write_file(bin + "/stagebench",
               "#!/bin/sh\n"
               "case \"$LD_LIBRARY_PATH\" in\n"
               "  */lib/compat*) exec \"$(dirname \"$0\")/stagebench.real\" \"$@\" ;;\n"
               "esac\n"
               "echo \"$0: /lib/x86_64-linux-gnu/libstdc++.so.6: version \\`GLIBCXX_3.4.30' not "
               "found (required by $0)\" >&2\n"
               "exit 127\n");
    fs::permissions(bin + "/stagebench", fs::perms::owner_all);
    Proc p = run_job(t.file("job"));
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("this system's C++ runtime is older than the stagebench's: using "),
              std::string::npos)
        << p.err;
    const json doc = json::parse(read_file(t.file("job/results/result.json")));
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
    EXPECT_EQ(json::parse(read_file(t.file("job/results/manifest.json")))["outcome"], "measured");
}

TEST(Bundle, RunShSaysItCouldNotMeasureWithExit2) {
    TempDir t;
    unpack(t.file("job"));
    // A usage error of the command: exit 2, stagebench's line in stderr.log, a manifest.
    Proc p = run_job(t.file("job"), {"-p", "-1"});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(read_file(t.file("job/results/stderr.log")).find("stagebench: error: "),
              std::string::npos);
    const json m = json::parse(read_file(t.file("job/results/manifest.json")));
    EXPECT_EQ(m["outcome"], "not_measured");
    EXPECT_EQ(m["exit_code"], 2);
    EXPECT_FALSE(fs::exists(t.file("job/results/result.json")));

    // A model damaged on the way: refused before anything runs, one line.
    {
        std::fstream f(t.file("job/models/tiny.gguf"), std::ios::in | std::ios::out);
        f.seekp(100);
        f.put('\x5a');
    }
    Proc d = run_job(t.file("job"));
    EXPECT_EQ(d.exit_code, 2);
    EXPECT_NE(d.err.find("stagebench: error: the job's model models/tiny.gguf is damaged: sha256 "),
              std::string::npos)
        << d.err;
}

// A result document as if measured far faster (fast) or far slower: its raw samples scaled,
// the rates by rate and the times by 1 / time (compare and its gates read those samples). The
// factors are wide enough that stalls of a loaded machine (samples thousands of times apart,
// so CIs as wide) leave the verdict of the rates the same.
json scaled(json doc, double rate, double time) {
    auto times = [&](json& a) {
        for (auto& v : a)
            v = std::max<int64_t>(
                1, static_cast<int64_t>(static_cast<double>(v.get<int64_t>()) / time));
    };
    for (auto& t : doc["tests"]) {
        for (const char* stage : {"prefill", "decode"}) {
            if (!t.contains(stage) || !t[stage].is_object())
                continue;
            json& st = t[stage];
            for (auto& v : st["tokens_per_s"])
                v = v.get<double>() * rate;
            for (const char* k : {"duration_ns", "token_latency_ns"})
                if (st.contains(k))
                    times(st[k]);
        }
        if (t.contains("ttft_ns"))
            times(t["ttft_ns"]);
    }
    return doc;
}

// run.sh's gate: a job with a baseline and --fail-if-slower compares what it measured with the
// baseline it carries. A baseline far faster than this machine: exit 1, the compare in
// results/, the gate's failure in junit.xml (read by junitparser); far slower: exit 0;
// nothing measured: exit 2, no gate.
TEST(Bundle, RunShExitsOneWhenTheGateOfItsBaselineFails) {
    TempDir t;
    // The jobs' command leaves the repetitions to run.sh's arguments (-r 3: an interval). They
    // run this build's stagebench where it is (--installed): the gate is run.sh's, whichever
    // stagebench it runs, and a job that packs the dist is the other tests' (three of them
    // here cost a minute of gzip).
    auto job_of = [&](const std::string& name, std::vector<std::string> gate) {
        const std::string out = t.file(name + ".tar.gz");
        std::vector<std::string> a = {"bundle",         "-o", out,         "--installed",
                                      stagebench_bin(), "-m", tiny_model()};
        a.insert(a.end(), gate.begin(), gate.end());
        a.insert(a.end(),
                 {"--", "run", "-m", tiny_model(), "-p", "8", "-n", "2", "--membw", "off"});
        Proc b = run_sb(a, 600);
        EXPECT_EQ(b.exit_code, 0) << b.err;
        if (!gate.empty()) {
            EXPECT_NE(b.err.find("gated by --fail-if-slower 5% against " + gate[1]),
                      std::string::npos)
                << b.err;
        }
        fs::create_directories(t.file(name));
        Proc u = run({"/bin/tar", "-xzf", out, "-C", t.file(name)}, 120);
        EXPECT_EQ(u.exit_code, 0) << u.err;
        return t.file(name);
    };
    const std::string plain = job_of("plain", {});
    Proc first = run_job(plain, {"-r", "3"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const json measured = json::parse(read_file(plain + "/results/result.json"));
    std::ofstream(t.file("fast.json")) << scaled(measured, 1e9, 1e3).dump(2);
    std::ofstream(t.file("slow.json")) << scaled(measured, 1e-9, 1e-3).dump(2);
    auto gated = [&](const std::string& name, const std::string& baseline) {
        return job_of(name, {"--baseline", baseline, "--fail-if-slower", "5%"});
    };

    const std::string failing = gated("failing", t.file("fast.json"));
    const json spec = json::parse(read_file(failing + "/job.json"));
    EXPECT_EQ(spec["gate"]["compare"], json({"--fail-if-slower", "5%"}));
    Proc p = run_job(failing, {"-r", "3"});
    EXPECT_EQ(p.exit_code, 1) << p.err;
    EXPECT_NE(p.err.find("stagebench: measured, but a test or the gate failed; results in " +
                         failing + "/results"),
              std::string::npos)
        << p.err;
    const json m = json::parse(read_file(failing + "/results/manifest.json"));
    EXPECT_EQ(m["exit_code"], 0);  // the measurement itself was ok
    EXPECT_EQ(m["run_sh_exit"], 1);
    EXPECT_EQ(m["outcome"], "failed");
    EXPECT_EQ(m["gate"], "failed");
    EXPECT_EQ(m["gate_exit"], 1);
    std::set<std::string> listed;
    for (const auto& f : m["files"])
        listed.insert(f["name"]);
    for (const char* f : {"result.json", "compare.md", "compare.json"})
        EXPECT_TRUE(listed.count(f)) << f << " not in the manifest";
    EXPECT_NE(read_file(failing + "/results/compare.md").find("failed"), std::string::npos);
    // ingest checks and stores the folder's document (the compare is not a result document).
    Proc i = run_sb({"ingest", failing + "/results", "--db", t.file("g.sqlite")});
    EXPECT_EQ(i.exit_code, 0) << i.err;
    if (has_junit_flag()) {
        EXPECT_TRUE(listed.count("junit.xml"));
        Proc r = run(
            {"/usr/bin/python3", std::string(SB_SOURCE_DIR) + "/tests/integration/junit_read.py",
             failing + "/results/junit.xml"},
            60);
        ASSERT_EQ(r.exit_code, 0) << r.err << read_file(failing + "/results/junit.xml");
        const json x = json::parse(r.out);
        std::set<std::string> suites;
        int failures = 0;
        for (const auto& s : x["suites"]) {
            suites.insert(s["name"]);
            for (const auto& c : s["cases"])
                for (const auto& res : c["results"])
                    failures += res["kind"] == "failure";
        }
        EXPECT_TRUE(suites.count("stagebench compare")) << r.out;
        EXPECT_GE(suites.size(), 2u) << r.out;  // the command's suite and the gate's
        EXPECT_GE(failures, 1) << r.out;
    }

    const std::string passing = gated("passing", t.file("slow.json"));
    Proc ok = run_job(passing, {"-r", "3"});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    const json mo = json::parse(read_file(passing + "/results/manifest.json"));
    EXPECT_EQ(mo["gate"], "passed");
    EXPECT_EQ(mo["outcome"], "measured");

    // Nothing measured: exit 2, the gate never asked.
    Proc bad = run_job(passing, {"-p", "-1"});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    const json mb = json::parse(read_file(passing + "/results/manifest.json"));
    EXPECT_EQ(mb["outcome"], "not_measured");
    EXPECT_EQ(mb["gate"], "none");
    EXPECT_FALSE(fs::exists(passing + "/results/compare.md"));
}

TEST(Bundle, BadJobsAreUsageErrors) {
    TempDir t;
    const std::string out = t.file("j.tar.gz");
    auto expect_error = [&](std::vector<std::string> args, const std::string& msg) {
        Proc p = run_sb(args);
        EXPECT_EQ(p.exit_code, 2) << p.err;
        EXPECT_NE(p.err.find(msg), std::string::npos) << p.err;
        EXPECT_FALSE(fs::exists(out));
    };
    auto args = bundle_args(out);
    args.insert(args.end(), {"-o", "json"});
    expect_error(args, "stagebench: error: bundle sets -o itself");
    args = bundle_args(out);
    args.insert(args.end(), {"--trace", "x.json"});
    expect_error(args, "stagebench: error: bundle sets --trace itself");
    expect_error({"bundle", "-o", out, "--dist", dist_dir(), "-m", tiny_model(), "--", "run", "-m",
                  "/elsewhere/other.gguf"},
                 "the command's -m '/elsewhere/other.gguf' is not a model of the job");
    expect_error({"bundle", "-o", out, "--dist", dist_dir(), "-m", tiny_model(), "--", "serve",
                  "-m", tiny_model()},
                 "'serve' is not a measuring command");
    expect_error(bundle_args(out, {"--target", "riscv"}), "--target 'riscv': expected host");
    expect_error(bundle_args(out, {"--target", "agent-armv8.2"}),
                 "no stagebench-agent-armv8.2 in " + dist_dir() + " (make agents builds it)");
    expect_error(bundle_args(out, {"--lava-job", t.file("lava.yaml")}),
                 "--lava-job needs --lava-bundle-url URL");
    expect_error(bundle_args(out, {"--fail-if-slower", "5%"}),
                 "--fail-if-slower and --fail-if-energy need --baseline DOC");
    expect_error(bundle_args(out, {"--baseline", tiny_model(), "--fail-if-slower", "5%"}),
                 "stagebench: error: ");
    expect_error(bundle_args(out, {"--baseline", tiny_model()}), "--baseline needs a gate");
    expect_error(bundle_args(out, {"--baseline", tiny_model(), "--fail-if-slower", "five"}),
                 "expected a percentage");
}

TEST(Bundle, TheLavaJobIsValidForLavaCommon) {
    const std::string lava = job() + ".lava.yaml";
    const std::string yaml = read_file(lava);
    EXPECT_NE(yaml.find("device_type: \"bcm2711-rpi-4-b\""), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("https://lab.example/jobs/job.tar.gz"), std::string::npos) << yaml;
    Proc h = run({"/usr/bin/sha256sum", job()}, 60);
    EXPECT_NE(yaml.find(h.out.substr(0, 64) + "  job.tar.gz' | sha256sum -c -"), std::string::npos)
        << yaml;
    if (run({"/usr/bin/python3", "-c", "import lava_common.schemas"}, 60).exit_code != 0)
        GTEST_SKIP() << "Debian's lava-common is not installed (scripts/setup-deps.sh installs it)";
    auto validate = [](const std::string& file) {
        return run({"/usr/bin/python3", "-c",
                    "import sys, yaml\n"
                    "from lava_common.schemas import validate\n"
                    "validate(yaml.safe_load(open(sys.argv[1])), strict=True)\n"
                    "print('valid')\n",
                    file},
                   120);
    };
    Proc v = validate(lava);
    EXPECT_EQ(v.exit_code, 0) << v.out << v.err << yaml;
    EXPECT_EQ(v.out, "valid\n");
    // The validator refuses what LAVA would: the same job without its boot method.
    TempDir t;
    std::string broken = yaml;
    broken.replace(broken.find("method: minimal"), 15, "method: nonesuch");
    std::ofstream(t.file("broken.yaml")) << broken;
    EXPECT_NE(validate(t.file("broken.yaml")).exit_code, 0);
}

TEST(Ingest, ResultsFoldersAreStoredOnceAndDamagedOnesSkipped) {
    TempDir t;
    unpack(t.file("job"));
    // Two devices' results, as a lab's engine hands them back: lab/<host>/results/.
    for (const char* host : {"a", "b"}) {
        const std::string res = t.file(std::string("lab/") + host + "/results");
        fs::create_directories(res);
        std::vector<std::string> argv = {"/usr/bin/env",       "-i",
                                         "PATH=/usr/bin:/bin", "STAGEBENCH_RESULTS=" + res,
                                         "/usr/bin/dash",      t.file("job/run.sh")};
        Proc p = run(argv, 300);
        ASSERT_EQ(p.exit_code, 0) << p.err;
    }
    const std::string db = t.file("lab.sqlite");
    Proc p = run_sb({"ingest", t.file("lab"), "--db", db});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("stagebench: stored " + t.file("lab/a/results/result.json")),
              std::string::npos)
        << p.err;
    EXPECT_NE(p.err.find("ingested 2 folder(s) into " + db +
                         ": 2 document(s) stored, 0 already there, 0 folder(s) skipped"),
              std::string::npos)
        << p.err;
    // Again: nothing twice.
    p = run_sb({"ingest", t.file("lab"), "--db", db});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("2 folder(s) into " + db +
                         ": 0 document(s) stored, 2 already there, 0 folder(s) skipped"),
              std::string::npos)
        << p.err;
    Proc l = run_sb({"db", "list", "--db", db, "-o", "json"});
    ASSERT_EQ(l.exit_code, 0) << l.err;
    EXPECT_EQ(json::parse(l.out).size(), 2u);

    // One byte changed in b's document (same size): b is skipped with why, a stays stored.
    {
        const std::string f = t.file("lab/b/results/result.json");
        std::string text = read_file(f);
        const auto at = text.find("\"ok\"");
        ASSERT_NE(at, std::string::npos);
        text.replace(at, 4, "\"OK\"");
        std::ofstream(f, std::ios::binary | std::ios::trunc) << text;
    }
    const std::string db2 = t.file("two.sqlite");
    p = run_sb({"ingest", t.file("lab"), "--db", db2});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(p.err.find("stagebench: skipped " + t.file("lab/b/results") +
                         ": result.json does not match manifest.json: sha256 "),
              std::string::npos)
        << p.err;
    EXPECT_NE(p.err.find("1 document(s) stored, 0 already there, 1 folder(s) skipped"),
              std::string::npos)
        << p.err;
    EXPECT_NE(p.err.find("stagebench: error: 1 of 2 results folder(s) skipped, the first: "),
              std::string::npos)
        << p.err;

    // A folder with no results folder in it: bad input, one line.
    fs::create_directories(t.file("empty"));
    p = run_sb({"ingest", t.file("empty"), "--db", db2});
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.err.find("stagebench: error: '" + t.file("empty") + "' holds no results folder"),
              std::string::npos)
        << p.err;
}

TEST(Ingest, AFolderThatMeasuredNothingIsSkippedWithItsError) {
    TempDir t;
    unpack(t.file("job"));
    Proc r = run_job(t.file("job"), {"-p", "-1"});
    ASSERT_EQ(r.exit_code, 2) << r.err;
    Proc p = run_sb({"ingest", t.file("job/results"), "--db", t.file("s.sqlite")});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(p.err.find("stagebench: skipped " + t.file("job/results") +
                         ": not measured (the command exited 2): stagebench: error: "),
              std::string::npos)
        << p.err;
}

// share/stagebench/ansible/run.yml with Debian's ansible-core, against a real sshd on
// loopback: two hosts of an INI inventory (two work folders behind one sshd), each host's
// results/ fetched into RESULTS/<host>/ and ingested.
TEST(Ansible, ThePlaybookRunsTheJobOnEveryHostAndFetchesTheirResults) {
    const std::string playbook = on_path("ansible-playbook");
    if (playbook.empty())
        GTEST_SKIP() << "no ansible-playbook (scripts/setup-deps.sh installs ansible-core)";
    TempDir t;
    LoopbackSshd sshd;
    const std::string ssh_args = "-F none -o UserKnownHostsFile=" + sshd.known_hosts() +
                                 " -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes";
    std::string inv = "[boards]\n";
    for (const char* h : {"pi-a", "pi-b"})
        inv += std::string(h) +
               " ansible_host=127.0.0.1 ansible_port=" + std::to_string(sshd.port()) +
               " ansible_user=" + sshd.user() + " ansible_ssh_private_key_file=" + sshd.identity() +
               " stagebench_workdir=" + t.file(std::string("dev-") + h) + "\n";
    // pi-b's arguments for run.sh: one thread.
    inv += "\n[boards:vars]\nansible_python_interpreter=/usr/bin/python3\nansible_remote_tmp=" +
           t.file("remote-tmp") + "\nansible_ssh_common_args='" + ssh_args + "'\n";
    std::ofstream(t.file("hosts.ini")) << inv;
    std::ofstream(t.file("host_vars-pi-b.yml")) << "stagebench_args: -t 1\n";
    fs::create_directories(t.file("host_vars"));
    fs::rename(t.file("host_vars-pi-b.yml"), t.file("host_vars/pi-b.yml"));
    auto play = [&] {
        return run(
            {"/usr/bin/env", "HOME=" + t.path.string(), "ANSIBLE_LOCAL_TEMP=" + t.file("local-tmp"),
             "ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0", playbook, "-i", t.file("hosts.ini"),
             std::string(SB_SOURCE_DIR) + "/share/stagebench/ansible/run.yml", "-e",
             "bundle=" + job(), "-e", "results=" + t.file("results")},
            600);
    };
    Proc p = play();
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
    for (const char* h : {"pi-a", "pi-b"}) {
        const std::string dir = t.file(std::string("results/") + h);
        const json m = json::parse(read_file(dir + "/manifest.json"));
        EXPECT_EQ(m["outcome"], "measured") << h;
        const json doc = json::parse(read_file(dir + "/result.json"));
        EXPECT_EQ(doc["tests"][0]["status"], "ok") << h;
        EXPECT_TRUE(fs::exists(dir + "/trace.json")) << h;
        if (std::string(h) == "pi-b") {
            EXPECT_EQ(doc["tests"][0]["config"]["n_threads"], 1);
        }
    }
    // The job was unpacked once per host; a second play copies and unpacks nothing again.
    p = play();
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
    const auto at = p.out.find("TASK [Unpack it once per content]");
    ASSERT_NE(at, std::string::npos) << p.out;
    const std::string unpack_task = p.out.substr(at, p.out.find("TASK [", at + 1) - at);
    EXPECT_EQ(unpack_task.find("changed:"), std::string::npos) << unpack_task;
    EXPECT_NE(unpack_task.find("ok: [pi-a]"), std::string::npos) << unpack_task;

    Proc i = run_sb({"ingest", t.file("results"), "--db", t.file("lab.sqlite")});
    EXPECT_EQ(i.exit_code, 0) << i.err;
    EXPECT_NE(i.err.find("ingested 2 folder(s)"), std::string::npos) << i.err;
}

// fleet run reads the same kinds of inventory (INI, YAML) as the playbook: two hosts behind the
// loopback sshd, each measured into one store.
TEST(Ansible, FleetRunTakesTheInventoryToo) {
    TempDir t;
    LoopbackSshd sshd;
    std::string inv = "[boards]\n";
    for (const char* h : {"pi-a", "pi-b"})
        inv += std::string(h) +
               " ansible_host=127.0.0.1 ansible_port=" + std::to_string(sshd.port()) +
               " stagebench_workdir=" + t.file(std::string("dev-") + h) + "\n";
    inv += "[boards:vars]\nansible_user=" + sshd.user() +
           "\nansible_ssh_private_key_file=" + sshd.identity() +
           "\nansible_ssh_common_args='-F none -o UserKnownHostsFile=" + sshd.known_hosts() +
           " -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes'\n";
    std::ofstream(t.file("hosts.ini")) << inv;
    Proc p = run_sb({"fleet",   "run",
                     "--hosts", t.file("hosts.ini"),
                     "--db",    t.file("lab.sqlite"),
                     "--dist",  dist_dir(),
                     "--",      "run",
                     "-m",      tiny_model(),
                     "-p",      "8",
                     "-n",      "2",
                     "-r",      "1",
                     "--membw", "off"},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("fleet hosts: 2 ok, 0 failed, 0 skipped"), std::string::npos) << p.err;
    EXPECT_NE(p.err.find("[pi-b] reaching ssh://" + sshd.user() +
                         "@127.0.0.1:" + std::to_string(sshd.port())),
              std::string::npos)
        << p.err;
    EXPECT_TRUE(fs::exists(t.file("dev-pi-b/results")));

    // The same lab as a YAML inventory: the same two hosts, their job already there.
    std::string yml = "all:\n  children:\n    boards:\n      hosts:\n";
    for (const char* h : {"pi-a", "pi-b"})
        yml += std::string("        ") + h + ":\n          ansible_host: 127.0.0.1\n" +
               "          ansible_port: " + std::to_string(sshd.port()) +
               "\n          stagebench_workdir: " + t.file(std::string("dev-") + h) + "\n";
    yml +=
        "      vars:\n        ansible_user: " + sshd.user() +
        "\n        ansible_ssh_private_key_file: " + sshd.identity() +
        "\n        ansible_ssh_common_args: '-F none -o UserKnownHostsFile=" + sshd.known_hosts() +
        " -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes'\n";
    std::ofstream(t.file("lab.yml")) << yml;
    Proc y = run_sb({"fleet",   "run",
                     "--hosts", t.file("lab.yml"),
                     "--db",    t.file("lab.sqlite"),
                     "--dist",  dist_dir(),
                     "--",      "run",
                     "-m",      tiny_model(),
                     "-p",      "8",
                     "-n",      "2",
                     "-r",      "1",
                     "--membw", "off"},
                    600);
    ASSERT_EQ(y.exit_code, 0) << y.err;
    EXPECT_NE(y.err.find("fleet lab: 2 ok, 0 failed, 0 skipped"), std::string::npos) << y.err;
    EXPECT_EQ(y.err.find("deploying"), std::string::npos) << y.err;
}

}  // namespace
#endif
