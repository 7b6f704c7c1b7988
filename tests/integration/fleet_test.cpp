// `stagebench fleet` over real transports: a real OpenSSH server on 127.0.0.1 (two work
// directories behind it acting as two devices), this build deployed as `make dist` packs it,
// and the adb stand-in tests/fleet/fake-adb (no phone here). Faults: a host key mismatch, a
// device whose sshd is down, a device whose sshd dies mid-run, a full disk; each is one recorded
// error, nothing collected is lost, and --resume completes the rest.
#ifdef SB_WITH_FLEET
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "cli_harness.hpp"
#include "core/error.hpp"
#include "dist_dir.hpp"
#include "fleet/inventory.hpp"
#include "fleet/transport.hpp"
#include "loopback_sshd.hpp"

namespace {

using namespace sbtest;
using nlohmann::json;
namespace fs = std::filesystem;

// An ssh device behind s. installed: the device's own stagebench (`stagebench = "PATH"`, here
// this build's): its jobs pack the models only, where what a test proves is not the dist's
// deployment (TwoSshDevices... and the Ansible tests deploy it), sparing a gzip of the dist.
// more: further ssh_options, as TOML strings ("\"-o\", \"ControlMaster=no\"").
std::string ssh_device(const std::string& name, const LoopbackSshd& s, const std::string& workdir,
                       const std::string& known_hosts, bool installed = false,
                       const std::string& more = "") {
    return "[[device]]\nname = \"" + name + "\"\ntransport = \"" + s.transport() +
           "\"\nidentity = \"" + s.identity() + "\"\nworkdir = \"" + workdir +
           "\"\nssh_options = [\"-F\", \"none\", \"-o\", \"UserKnownHostsFile=" + known_hosts +
           "\", \"-o\", \"GlobalKnownHostsFile=/dev/null\", \"-o\", "
           "\"StrictHostKeyChecking=yes\"" +
           (more.empty() ? "" : ", " + more) + "]\n" +
           (installed ? "stagebench = \"" + stagebench_bin() + "\"\n" : "");
}

json store_rows(const std::string& db, const std::string& fleet) {
    // fleet status is the reader a user has; its markdown rows, split.
    Proc p = run_sb({"fleet", "status", "--db", db, "--fleet", fleet});
    json rows = json::array();
    std::istringstream in(p.out);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("| ", 0) != 0 || line.rfind("| id", 0) == 0)
            continue;
        std::vector<std::string> cells;
        std::istringstream cs(line.substr(2));
        for (std::string c; std::getline(cs, c, '|');)
            cells.push_back(c.substr(
                c.find_first_not_of(' ') == std::string::npos ? 0 : c.find_first_not_of(' ')));
        for (auto& c : cells)
            while (!c.empty() && c.back() == ' ')
                c.pop_back();
        rows.push_back({{"device", cells.at(2)},
                        {"status", cells.at(3)},
                        {"document", cells.at(8)},
                        {"what", cells.at(9)}});
    }
    return rows;
}

json stored_doc(const std::string& db, const std::string& ref) {
    TempDir t;
    Proc p = run_sb({"db", "export", "--db", db, ref.substr(3), "--out", t.file("d.json")});
    if (p.exit_code != 0)
        return json();
    return json::parse(read_file(t.file("d.json")));
}

const std::vector<std::string> kFleetCommand = {"--", "run", "-m", "",  "-p",      "16",
                                                "-n", "4",   "-r", "2", "--membw", "off"};

std::vector<std::string> fleet_run(const std::string& hosts, const std::string& db,
                                   std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"fleet", "run", "--hosts", hosts,
                                  "--db",  db,    "--dist",  dist_dir()};
    a.insert(a.end(), extra.begin(), extra.end());
    for (const auto& w : kFleetCommand)
        a.push_back(w.empty() ? tiny_model() : w);
    return a;
}

TEST(Fleet, TwoSshDevicesFillOneStoreWithTheirIdentitiesAndCompare) {
    TempDir t;
    LoopbackSshd sshd;
    const std::string a = t.file("dev-a"), b = t.file("dev-b");
    write_file(t.file("fleet.toml"), "name = \"lab\"\n" +
                                         ssh_device("a", sshd, a, sshd.known_hosts()) +
                                         ssh_device("b", sshd, b, sshd.known_hosts()));
    const std::string db = t.file("lab.sqlite");
    Proc p = run_sb(fleet_run(t.file("fleet.toml"), db), 600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("[a] deploying stagebench-"), std::string::npos) << p.err;
    EXPECT_NE(p.err.find("fleet lab: 2 ok, 0 failed, 0 skipped"), std::string::npos) << p.err;
    json rows = store_rows(db, "lab");
    ASSERT_EQ(rows.size(), 2u) << rows;
    for (const auto& r : rows) {
        EXPECT_EQ(r["status"], "ok") << r;
        json doc = stored_doc(db, r["document"]);
        ASSERT_TRUE(doc.is_object()) << r;
        const json& f = doc["fleet"];
        EXPECT_EQ(f["fleet"], "lab");
        EXPECT_EQ(f["device"], r["device"]);
        EXPECT_EQ(f["transport"], sshd.transport());
        EXPECT_EQ(f["arch"], "x86_64");
        EXPECT_FALSE(f["kernel"].get<std::string>().empty());
        EXPECT_FALSE(f["cpu_features"].empty());
        // The job's stagebench ran (the deployed tarball), from the device's work directory,
        // not this build.
        const std::string path = f["stagebench"]["path"];
        const std::string key = f["job"]["key"];
        EXPECT_EQ(path,
                  (r["device"] == "a" ? a : b) + "/jobs/" + key + "/stagebench/bin/stagebench");
        EXPECT_EQ(f["stagebench"]["artifact"], "stagebench-0.1.0-linux-amd64.tar.gz");
        EXPECT_EQ(doc["tests"][0]["status"], "ok");
        EXPECT_TRUE(f["gates"]["at_start"].is_object());
        // Its results folder came back whole, beside the store: the trace, the logs, the
        // manifest whose hashes were checked.
        const std::string res = f["job"]["results"];
        EXPECT_EQ(res.rfind(t.file("lab-results/") + r["device"].get<std::string>() + "/", 0), 0u)
            << res;
        for (const char* file : {"manifest.json", "result.json", "trace.json", "stderr.log"})
            EXPECT_TRUE(fs::is_regular_file(res + "/" + file)) << res << "/" << file;
        EXPECT_EQ(json::parse(read_file(res + "/manifest.json"))["outcome"], "measured");
    }
    // One job went over per device (the same for both), with the model in it.
    std::vector<fs::path> jobs;
    for (const auto& e : fs::directory_iterator(a + "/jobs"))
        jobs.push_back(e.path());
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_TRUE(fs::is_regular_file(jobs[0] / "models" / "tiny.gguf"));
    EXPECT_TRUE(fs::is_directory(b + "/jobs/" + jobs[0].filename().string()));
    // The results folders are the lab's: ingest reads them as it reads any job's.
    Proc ing = run_sb({"ingest", t.file("lab-results"), "--db", t.file("again.sqlite")});
    EXPECT_EQ(ing.exit_code, 0) << ing.err;
    EXPECT_NE(ing.err.find("2 document(s) stored"), std::string::npos) << ing.err;

    // Across the devices, from the store: one column per device.
    Proc c = run_sb({"compare", "--db", db, "--fleet", "lab"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_NE(c.out.find("| a | db:1 |"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("| b | db:2 |"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("b/a"), std::string::npos) << c.out;

    // Again with --resume: nothing runs. Without it: the tarball is not deployed again.
    Proc r = run_sb(fleet_run(t.file("fleet.toml"), db, {"--resume"}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("0 ok, 0 failed, 2 skipped"), std::string::npos) << r.err;
    Proc again = run_sb(fleet_run(t.file("fleet.toml"), db, {"--only", "b"}));
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.err.find("deploying"), std::string::npos) << again.err;
    EXPECT_EQ(store_rows(db, "lab").size(), 3u);
}

// Over ssh, a fleet run makes one connection (one handshake) per device: the first ssh to a
// device opens it (OpenSSH's ControlMaster, its socket in a private folder of the run), every
// later ssh and copy is a session over it, and the run closes it when it ends and removes the
// folder. Counted from the sshd's log (a handshake is a line there), not timed. A device whose
// ssh_options take connection sharing in hand (ControlMaster=no here, the documented switch)
// gets ssh as they say: a connection per call.
TEST(Fleet, OneSshConnectionPerDeviceClosedWhenTheRunEnds) {
    TempDir t;
    LoopbackSshd sshd;
    write_file(t.file("lab.toml"),
               "name = \"lab\"\n" + ssh_device("a", sshd, t.file("a"), sshd.known_hosts(), true) +
                   ssh_device("b", sshd, t.file("b"), sshd.known_hosts(), true));
    write_file(t.file("off.toml"),
               "name = \"lab\"\n" + ssh_device("a", sshd, t.file("a"), sshd.known_hosts(), true,
                                               "\"-o\", \"ControlMaster=no\""));
    // The run's temporary folders go here: none is left behind.
    const std::string tmp = t.file("tmp");
    fs::create_directories(tmp);
    auto fleet = [&](const std::string& hosts) {
        std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + tmp, stagebench_bin()};
        for (const auto& w : fleet_run(hosts, t.file("lab.sqlite"), {"--parallel", "2"}))
            argv.push_back(w);
        return run(argv, 600);
    };
    auto closed = [&](int n) {
        // sshd writes a connection's end as its client goes, a moment after the run exits.
        for (int i = 0; i < 200 && sshd.disconnected() < n; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return sshd.disconnected();
    };
    Proc p = fleet(t.file("lab.toml"));
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("fleet lab: 2 ok, 0 failed, 0 skipped"), std::string::npos) << p.err;
    EXPECT_EQ(sshd.accepted(), 2) << sshd.log();
    EXPECT_EQ(closed(2), 2) << sshd.log();
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(tmp))
        left.push_back(e.path().string());
    EXPECT_TRUE(left.empty()) << testing::PrintToString(left);

    Proc off = fleet(t.file("off.toml"));
    ASSERT_EQ(off.exit_code, 0) << off.err;
    const int per_call = sshd.accepted() - 2;
    EXPECT_GT(per_call, 4) << sshd.log();
    EXPECT_EQ(closed(2 + per_call), 2 + per_call) << sshd.log();
}

// What f throws as stagebench's error, "" when it does not.
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const sb::Error& e) {
        return e.what();
    }
    return "";
}

// What a device sends back is a claim bounded by what its manifest accounts for: over a real
// ssh connection, a folder whose file holds more than the bytes asked for is stopped at the
// limit (the tar stream and a single file's copy alike), nothing of it is unpacked, and the
// error names the limit; within it, the same files come back whole.
TEST(Fleet, ACopyBackStopsAtTheBytesItWasToldToExpect) {
    TempDir t;
    LoopbackSshd sshd;
    const sb::Inventory inv = sb::parse_inventory(
        "name = \"lab\"\n" + ssh_device("a", sshd, t.file("a"), sshd.known_hosts()), "lab.toml");
    auto tr = sb::make_transport(inv.devices.at(0));
    const std::string remote = t.file("remote"), local = t.file("local");
    fs::create_directories(remote);
    fs::create_directories(local);
    write_file(remote + "/small.json", "{}\n");
    write_file(remote + "/big.log", std::string(4 << 20, 'x'));  // 4 MiB
    // The tar stream: the manifest says 3 + 1000 bytes; the device has 3 + 4 MiB.
    std::string e = error_of([&] {
        tr->pull_files(remote, {"small.json", "big.log"}, local, 60, 1003);
    });
    EXPECT_NE(e.find("a (ssh://"), std::string::npos) << e;
    EXPECT_NE(e.find("it sent more than the "), std::string::npos) << e;
    EXPECT_NE(e.find(" bytes expected (stopped there)"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(local + "/big.log"));
    EXPECT_FALSE(fs::exists(local + "/.files.tar"));
    // One file's copy (a manifest, a document): stopped at the limit too.
    e = error_of([&] { tr->pull(remote + "/big.log", local + "/big.log", 60, 1 << 20); });
    EXPECT_NE(e.find("it sent more than the 1048576 bytes expected"), std::string::npos) << e;
    EXPECT_LE(fs::file_size(local + "/big.log"), 1u << 20);
    // Within the limits: every byte.
    fs::remove(local + "/big.log");
    EXPECT_EQ(error_of([&] {
                  tr->pull_files(remote, {"small.json", "big.log"}, local, 60, 3 + (4 << 20));
              }),
              "");
    EXPECT_EQ(fs::file_size(local + "/big.log"), 4u << 20);
    EXPECT_EQ(fs::file_size(local + "/small.json"), 3u);
    EXPECT_EQ(error_of([&] { tr->pull(remote + "/small.json", local + "/one.json", 60, 3); }), "");
    EXPECT_EQ(fs::file_size(local + "/one.json"), 3u);
}

// adb's pull writes the file itself: a file the device says (stat) is larger than expected is
// not copied at all; one that a device says is small and then sends larger is refused after the
// copy and removed; within the limit every byte comes back.
TEST(Fleet, AnAdbCopyBackLargerThanExpectedIsRefusedBeforeOrAfterTheCopy) {
    TempDir t;
    const std::string root = t.file("adb");
    fs::create_directories(root + "/FAKE1");
    ::setenv("FAKE_ADB_ROOT", root.c_str(), 1);
    ::setenv("STAGEBENCH_ADB", (std::string(SB_SOURCE_DIR) + "/tests/fleet/fake-adb").c_str(), 1);
    const sb::Inventory inv = sb::parse_inventory(
        "name = \"phones\"\n[[device]]\nname = \"pixel\"\ntransport = \"adb://FAKE1\"\n",
        "phones.toml");
    auto tr = sb::make_transport(inv.devices.at(0));
    const std::string remote = t.file("remote"), local = t.file("local");
    fs::create_directories(remote);
    fs::create_directories(local);
    write_file(remote + "/big.log", std::string(4 << 20, 'x'));  // 4 MiB
    std::string e =
        error_of([&] { tr->pull(remote + "/big.log", local + "/big.log", 60, 1 << 20); });
    EXPECT_NE(e.find("pixel (adb://FAKE1): pulling "), std::string::npos) << e;
    EXPECT_NE(e.find("it has 4194304 bytes, more than the 1048576 expected (not copied)"),
              std::string::npos)
        << e;
    EXPECT_FALSE(fs::exists(local + "/big.log"));
    // A device whose stat says 10 bytes: copied, then refused and removed.
    fs::create_directories(root + "/FAKE1/bin");
    write_file(root + "/FAKE1/bin/stat", "#!/bin/sh\necho 10\n");
    fs::permissions(root + "/FAKE1/bin/stat", fs::perms::owner_all);
    e = error_of([&] { tr->pull(remote + "/big.log", local + "/big.log", 60, 1 << 20); });
    EXPECT_NE(e.find("it sent 4194304 bytes, more than the 1048576 expected"), std::string::npos)
        << e;
    EXPECT_FALSE(fs::exists(local + "/big.log"));
    fs::remove(root + "/FAKE1/bin/stat");
    // Within the limit: every byte.
    EXPECT_EQ(error_of([&] { tr->pull(remote + "/big.log", local + "/big.log", 60, 4 << 20); }),
              "");
    EXPECT_EQ(fs::file_size(local + "/big.log"), 4u << 20);
    ::unsetenv("STAGEBENCH_ADB");
}

// Ctrl-C mid-run closes the shared connection too: the device's stagebench (a wrapper whose
// `version` holds it a few seconds) is being probed over the connection when the signal comes.
TEST(Fleet, CtrlCClosesTheSharedSshConnection) {
    TempDir t;
    LoopbackSshd sshd;
    const std::string wrapper = t.file("sb-slow");
    write_file(wrapper, "#!/bin/sh\nif [ \"$1\" = version ]; then touch '" + t.file("probed") +
                            "'; sleep 4; fi\nexec '" + stagebench_bin() + "' \"$@\"\n");
    fs::permissions(wrapper, fs::perms::owner_all);
    write_file(t.file("lab.toml"), "name = \"lab\"\n" +
                                       ssh_device("a", sshd, t.file("a"), sshd.known_hosts()) +
                                       "stagebench = \"" + wrapper + "\"\n");
    const std::string tmp = t.file("tmp");
    fs::create_directories(tmp);
    std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + tmp, stagebench_bin()};
    for (const auto& w : fleet_run(t.file("lab.toml"), t.file("lab.sqlite")))
        argv.push_back(w);
    const pid_t pid = spawn_bg(argv, t.file("log"));
    for (int i = 0; i < 1200 && !fs::exists(t.file("probed")); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int rc = signal_and_wait(pid, SIGINT, 60);
    ASSERT_TRUE(fs::exists(t.file("probed"))) << read_file(t.file("log.err"));
    EXPECT_EQ(rc, 1) << read_file(t.file("log.err"));
    EXPECT_EQ(sshd.accepted(), 1) << sshd.log();
    for (int i = 0; i < 200 && sshd.disconnected() < 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(sshd.disconnected(), 1) << sshd.log();
    EXPECT_TRUE(fs::is_empty(tmp));
}

TEST(Fleet, FaultsAreRecordedPerDeviceAndResumeCompletesTheRest) {
    TempDir t;
    LoopbackSshd good, down;
    down.stop();
    const std::string wrong = t.file("wrong_known_hosts");
    fs::copy_file(good.wrong_known_hosts(), wrong);
    std::string inv = "name = \"faults\"\n" +
                      ssh_device("ok", good, t.file("ok"), good.known_hosts(), true) +
                      ssh_device("mismatch", good, t.file("mm"), wrong, true) +
                      ssh_device("down", down, t.file("down"), down.known_hosts(), true);
    // A full disk: the device's work directory on a 1 MiB tmpfs (where this user may mount),
    // smaller than the job (the model alone is 2.7 MB).
    const std::string full = t.file("full");
    fs::create_directories(full);
    const bool have_full = ::mount("tmpfs", full.c_str(), "tmpfs", 0, "size=1m") == 0;
    if (have_full)
        inv += ssh_device("full", good, full, good.known_hosts(), true);
    write_file(t.file("fleet.toml"), inv);
    const std::string db = t.file("f.sqlite");
    Proc p = run_sb(fleet_run(t.file("fleet.toml"), db, {"--parallel", "2"}), 600);
    EXPECT_EQ(p.exit_code, 1) << p.err;
    EXPECT_NE(p.err.find(have_full ? "1 ok, 3 failed" : "1 ok, 2 failed"), std::string::npos)
        << p.err;
    std::map<std::string, json> by;
    for (const auto& r : store_rows(db, "faults"))
        by[r["device"]] = r;
    EXPECT_EQ(by["ok"]["status"], "ok");
    EXPECT_EQ(by["mismatch"]["status"], "failed");
    EXPECT_NE(by["mismatch"]["what"].get<std::string>().find("Host key verification failed"),
              std::string::npos)
        << by["mismatch"];
    EXPECT_EQ(by["down"]["status"], "failed");
    EXPECT_NE(by["down"]["what"].get<std::string>().find("Connection refused"), std::string::npos)
        << by["down"];
    if (have_full) {
        EXPECT_EQ(by["full"]["status"], "failed");
        EXPECT_NE(by["full"]["what"].get<std::string>().find("No space left"), std::string::npos)
            << by["full"];
    }
    // Each error is one line in the log as well.
    EXPECT_NE(p.err.find("[down] failed: down (ssh://"), std::string::npos) << p.err;

    // Repaired: the right host key, the server up, room on the disk. --resume runs the rest.
    fs::copy_file(good.known_hosts(), wrong, fs::copy_options::overwrite_existing);
    down.start();
    if (have_full)
        ::umount(full.c_str());
    Proc r = run_sb(fleet_run(t.file("fleet.toml"), db, {"--resume", "--parallel", "2"}), 600);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(have_full ? "3 ok, 0 failed, 1 skipped" : "2 ok, 0 failed, 1 skipped"),
              std::string::npos)
        << r.err;
    int ok = 0;
    for (const auto& row : store_rows(db, "faults"))
        ok += row["status"] == "ok";
    EXPECT_EQ(ok, have_full ? 4 : 3);
}

// The check of the issue: one device's sshd killed mid-run (listener and session) leaves its
// error in the store, and the other device completes.
TEST(Fleet, KillingOneDevicesSshdMidRunLeavesItsErrorAndTheOthersComplete) {
    TempDir t;
    LoopbackSshd quick, slow;
    write_file(t.file("fleet.toml"),
               "name = \"mid\"\n" +
                   ssh_device("quick", quick, t.file("q"), quick.known_hosts(), true) +
                   ssh_device("slow", slow, t.file("s"), slow.known_hosts(), true));
    const std::string db = t.file("m.sqlite");
    // Both devices run some seconds of rounds side by side (20: a second or more where a round
    // takes 70 ms, while slow's is seen running within 0.1 s); slow's sshd dies once its
    // stagebench runs.
    const std::vector<std::string> argv = {stagebench_bin(),
                                           "fleet",
                                           "run",
                                           "--hosts",
                                           t.file("fleet.toml"),
                                           "--db",
                                           db,
                                           "--dist",
                                           dist_dir(),
                                           "--parallel",
                                           "2",
                                           "--",
                                           "sustained",
                                           "-m",
                                           tiny_model(),
                                           "--prompt-tokens",
                                           "64",
                                           "--max-tokens",
                                           "64",
                                           "--rounds",
                                           "20",
                                           "--idle",
                                           "0"};
    const pid_t pid = spawn_bg(argv, t.file("fleet.log"));
    bool running = false;
    for (int i = 0; i < 600 && !running; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        // slow's: the one whose results go into its work directory.
        running =
            run({"/usr/bin/pgrep", "-f", "stagebench sustained .*" + t.file("s") + "/results/"})
                .exit_code == 0;
    }
    ASSERT_TRUE(running) << read_file(t.file("fleet.log.err"));
    slow.kill_all();  // the listener, its sessions and the command they ran
    const int rc = wait_exit(pid, 300);
    const std::string log = read_file(t.file("fleet.log.err"));
    EXPECT_EQ(rc, 1) << log;
    std::map<std::string, json> by;
    for (const auto& r : store_rows(db, "mid"))
        by[r["device"]] = r;  // the last row of each device
    EXPECT_EQ(by["quick"]["status"], "ok") << log;
    EXPECT_EQ(by["slow"]["status"], "failed") << log;
    EXPECT_NE(by["slow"]["what"].get<std::string>().find("connection lost"), std::string::npos)
        << by["slow"];
}

// --timeout interrupts the command on the device: what it measured is kept and stored with the
// failure.
TEST(Fleet, TimeoutInterruptsTheCommandThereAndKeepsWhatItMeasured) {
    TempDir t;
    write_file(
        t.file("slow.toml"),
        "[[device]]\nname = \"here\"\ntransport = \"local\"\nworkdir = \"" + t.file("w") + "\"\n");
    const std::string db = t.file("slow.sqlite");
    Proc p = run_sb({"fleet",
                     "run",
                     "--hosts",
                     t.file("slow.toml"),
                     "--db",
                     db,
                     "--timeout",
                     "3s",
                     "--",
                     "sustained",
                     "-m",
                     tiny_model(),
                     "--prompt-tokens",
                     "64",
                     "--max-tokens",
                     "64",
                     "--rounds",
                     "100000",
                     "--idle",
                     "0"},
                    300);
    EXPECT_EQ(p.exit_code, 1) << p.err;
    const auto rows = store_rows(db, "slow");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["status"], "failed");
    ASSERT_NE(rows[0]["document"], "-") << rows[0];
    json doc = stored_doc(db, rows[0]["document"]);
    const auto n = doc["sustained"]["phases"][0]["rounds"].size();
    EXPECT_GT(n, 0u);
    EXPECT_LT(n, 100000u);
    EXPECT_EQ(doc["fleet"]["device"], "here");
}

// The same over ssh, where the command is the job's run.sh: the interrupt reaches the
// stagebench, run.sh still writes the manifest, and the results folder comes back checked.
TEST(Fleet, TimeoutInterruptsAJobThereAndItsResultsFolderComesBack) {
    TempDir t;
    LoopbackSshd sshd;
    // Nine old jobs in the dist's jobs folder: making this test's job (a model of its own name,
    // so a job of its own) keeps the eight last used.
    const std::string jobs = dist_dir() + "/jobs";
    fs::create_directories(jobs);
    for (int i = 0; i < 9; ++i) {
        const std::string f = jobs + "/00000000000000" + std::to_string(10 + i) + ".tar.gz";
        write_file(f, "old");
        fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::hours(24 + i));
    }
    const std::string model = t.file("own-tiny.gguf");
    fs::copy_file(tiny_model(), model);
    write_file(t.file("slow.toml"), "name = \"slow\"\n" + ssh_device("far", sshd, t.file("far"),
                                                                     sshd.known_hosts(), true));
    const std::string db = t.file("slow.sqlite");
    Proc p = run_sb({"fleet",
                     "run",
                     "--hosts",
                     t.file("slow.toml"),
                     "--db",
                     db,
                     "--dist",
                     dist_dir(),
                     "--timeout",
                     "20s",
                     "--",
                     "sustained",
                     "-m",
                     model,
                     "--prompt-tokens",
                     "64",
                     "--max-tokens",
                     "64",
                     "--rounds",
                     "100000",
                     "--idle",
                     "0"},
                    600);
    EXPECT_EQ(p.exit_code, 1) << p.err;
    int kept = 0;
    for (const auto& e : fs::directory_iterator(jobs))
        kept += e.path().filename().string().size() == 23;
    EXPECT_EQ(kept, 8);
    EXPECT_FALSE(fs::exists(jobs + "/0000000000000018.tar.gz"));  // the oldest
    const auto rows = store_rows(db, "slow");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["status"], "failed");
    EXPECT_NE(rows[0]["what"].get<std::string>().find("far: stopped at --timeout (20 s)"),
              std::string::npos)
        << rows[0];
    ASSERT_NE(rows[0]["document"], "-") << rows[0] << p.err;
    json doc = stored_doc(db, rows[0]["document"]);
    const auto n = doc["sustained"]["phases"][0]["rounds"].size();
    EXPECT_GT(n, 0u);
    EXPECT_LT(n, 100000u);
    EXPECT_TRUE(fs::exists(jobs + "/" + doc["fleet"]["job"]["key"].get<std::string>() + ".tar.gz"));
    const std::string res = doc["fleet"]["job"]["results"];
    const json m = json::parse(read_file(res + "/manifest.json"));
    EXPECT_EQ(m["outcome"], "failed");  // measured, then interrupted
    EXPECT_EQ(m["run_sh_exit"], 1);
}

// A device's folders keep the --keep last used (2 here; 8 by default, as the dist's jobs
// folder in TimeoutInterruptsAJob...): its jobs (a job used again is marked used, by its
// .ok's time; pruned when a job is deployed, never the one just deployed), its results folders
// (each marked by a .fetched once it came back whole; pruned after every run, never this
// run's), and the stagebench copies older releases left in sb/ (pruned with the jobs). What is
// being unpacked (no .ok), a results folder that never came back (no .fetched) and what is not
// the fleet's stay.
TEST(Fleet, DeviceFoldersKeepTheLastUsedJobsResultsAndCopies) {
    TempDir t;
    LoopbackSshd sshd;
    const std::string dev = t.file("dev"), jobs = dev + "/jobs", results = dev + "/results",
                      copies = dev + "/sb", models = dev + "/models";
    auto age = [](const std::string& f, int hours) {
        fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::hours(hours));
    };
    auto marked = [&](const std::string& d, const std::string& mark, int hours) {
        fs::create_directories(d);
        write_file(d + "/" + mark, "");
        age(d + "/" + mark, hours);
    };
    // Three old ones of each, 24 h (...10) to 26 h (...12) old, and what must stay.
    for (int i = 0; i < 3; ++i) {
        marked(jobs + "/00000000000000" + std::to_string(10 + i), ".ok", 24 + i);
        marked(copies + "/00000000000000" + std::to_string(10 + i), ".ok", 24 + i);
        marked(results + "/1999010" + std::to_string(3 - i) + "T000000Z-1", ".fetched", 24 + i);
    }
    fs::create_directories(jobs + "/00000000000000aa");  // being unpacked: no .ok
    fs::create_directories(copies + "/00000000000000aa");
    fs::create_directories(results + "/19990101T000000Z-2");  // never came back: no .fetched
    write_file(results + "/19990101T000000Z-2/stderr.log", "lost\n");
    // models/: three models synthesised there and three copies of releases before jobs, 24 h
    // to 26 h old; one being synthesised (.part).
    fs::create_directories(models);
    for (int i = 0; i < 3; ++i)
        for (const std::string& f :
             {models + "/synth-old" + std::to_string(i) + "-0.1.0.gguf",
              models + "/00000000000000" + std::to_string(10 + i) + "-tiny.gguf"}) {
            write_file(f, "old");
            age(f, 24 + i);
        }
    write_file(models + "/synth-new-0.1.0.gguf.part", "");
    for (const auto& d : {jobs, copies, results, models})
        write_file(d + "/notes.txt", "mine");
    write_file(t.file("lab.toml"),
               "name = \"lab\"\n" + ssh_device("a", sshd, dev, sshd.known_hosts(), true));
    const std::string model_b = t.file("other-tiny.gguf");
    fs::copy_file(tiny_model(), model_b);
    auto fleet = [&](const std::string& model) {
        return run_sb({"fleet",   "run",
                       "--hosts", t.file("lab.toml"),
                       "--db",    t.file("lab.sqlite"),
                       "--dist",  dist_dir(),
                       "--keep",  "2",
                       "--",      "run",
                       "-m",      model,
                       "-p",      "8",
                       "-n",      "2",
                       "-r",      "1",
                       "--membw", "off"},
                      600);
    };
    auto listing = [](const std::string& dir) {
        std::set<std::string> names;
        for (const auto& e : fs::directory_iterator(dir))
            names.insert(e.path().filename().string());
        return names;
    };
    // The folder's names less the old ones and what stays: this run's.
    auto news = [&](const std::string& dir) {
        std::set<std::string> names;
        for (const auto& n : listing(dir))
            if (n.rfind("00000000000000", 0) != 0 && n.rfind("1999010", 0) != 0 && n != "notes.txt")
                names.insert(n);
        return names;
    };
    auto old = [](const std::string& prefix, std::initializer_list<int> which) {
        std::set<std::string> names;
        for (int i : which)
            names.insert(prefix == "results" ? "1999010" + std::to_string(13 - i) + "T000000Z-1"
                                             : "00000000000000" + std::to_string(i));
        return names;
    };
    auto with = [](std::set<std::string> a, const std::set<std::string>& b) {
        a.insert(b.begin(), b.end());
        return a;
    };
    const std::set<std::string> stay = {"00000000000000aa", "notes.txt"};
    const std::set<std::string> stay_results = {"19990101T000000Z-2", "notes.txt"};

    // A new job: it and the last used of the old jobs stay, and so of the copies (no new one:
    // the device's stagebench is its own), and this run's results folder and the last fetched.
    Proc first = fleet(tiny_model());
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_EQ(news(jobs).size(), 1u) << testing::PrintToString(listing(jobs));
    const std::string key_a = *news(jobs).begin();
    EXPECT_EQ(listing(jobs), with(with(old("jobs", {10}), stay), {key_a}));
    EXPECT_EQ(listing(copies), with(old("sb", {10, 11}), stay));
    ASSERT_EQ(news(results).size(), 1u) << testing::PrintToString(listing(results));
    const std::string res_1 = *news(results).begin();
    EXPECT_TRUE(fs::exists(results + "/" + res_1 + "/.fetched"));
    EXPECT_EQ(listing(results), with(with(old("results", {10}), stay_results), {res_1}));
    // models/ down to the two last used of each kind (none used by this run).
    EXPECT_EQ(listing(models),
              (std::set<std::string>{"synth-old0-0.1.0.gguf", "synth-old1-0.1.0.gguf",
                                     "0000000000000010-tiny.gguf", "0000000000000011-tiny.gguf",
                                     "synth-new-0.1.0.gguf.part", "notes.txt"}));

    // Used again (nothing deployed, no job pruned), it is the last used, though its .ok was
    // made older than every other job's. Its results folder and the last one stay.
    age(jobs + "/" + key_a + "/.ok", 48);
    Proc again = fleet(tiny_model());
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.err.find("deploying"), std::string::npos) << again.err;
    EXPECT_EQ(listing(jobs), with(with(old("jobs", {10}), stay), {key_a}));
    const std::set<std::string> two = news(results);
    ASSERT_EQ(two.size(), 2u) << testing::PrintToString(listing(results));
    EXPECT_EQ(two.count(res_1), 1u);
    EXPECT_EQ(listing(results), with(stay_results, two));

    // Another model: another job; the old job goes, not the one used again; the copies down to
    // the last used; the first results folder goes.
    Proc other = fleet(model_b);
    ASSERT_EQ(other.exit_code, 0) << other.err;
    EXPECT_NE(other.err.find("deploying"), std::string::npos) << other.err;
    const std::set<std::string> now = news(jobs);
    ASSERT_EQ(now.size(), 2u) << testing::PrintToString(listing(jobs));
    EXPECT_EQ(now.count(key_a), 1u);
    EXPECT_EQ(listing(jobs), with(stay, now));
    EXPECT_EQ(listing(copies), with(old("sb", {10, 11}), stay));
    const std::set<std::string> last = news(results);
    ASSERT_EQ(last.size(), 2u) << testing::PrintToString(listing(results));
    EXPECT_EQ(last.count(res_1), 0u);
    EXPECT_EQ(listing(results), with(stay_results, last));

    // --keep below 1 is bad input.
    Proc bad = run_sb(
        {"fleet", "run", "--hosts", t.file("lab.toml"), "--keep", "0", "--", "run", "-m", model_b});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

// A local device's folders: the documents its runs leave in WORKDIR/results/ keep the --keep
// last written (1 here), never this run's, and the models synthesised in WORKDIR/models/ the
// last used, never one this run uses however small --keep (two presets here, both there
// already: this build's tiny model under their names, made older than the old ones). Another
// device's documents, a model being synthesised and what is not the fleet's stay.
TEST(Fleet, LocalDeviceDocumentsAndSynthesisedModelsKeepTheLastUsed) {
    TempDir t;
    const std::string w = t.file("w"), results = w + "/results", models = w + "/models";
    fs::create_directories(results);
    fs::create_directories(models);
    auto age = [](const std::string& f, int hours) {
        fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::hours(hours));
    };
    for (int i = 0; i < 3; ++i) {
        const std::string doc = results + "/lab-here-100000000" + std::to_string(i) + "-1.json";
        const std::string model = models + "/synth-old" + std::to_string(i) + "-0.1.0.gguf";
        for (const auto& f : {doc, model}) {
            write_file(f, "{}");
            age(f, 24 + i);
        }
    }
    // Device "here-2"'s document, in the same folder: not device "here"'s to prune.
    for (const auto& f : {results + "/lab-there-1000000000-1.json", results + "/notes.json",
                          results + "/lab-here-2-1000000000-1.json",
                          models + "/synth-new-0.1.0.gguf.part", models + "/notes.txt"})
        write_file(f, "");
    for (const auto& [name, hours] : {std::pair<std::string, int>{"synth-tiny-2-0.1.0.gguf", 48},
                                      {"synth-tiny-1-0.1.0.gguf", 47}}) {
        fs::copy_file(tiny_model(), models + "/" + name);
        age(models + "/" + name, hours);
    }
    write_file(t.file("lab.toml"),
               "name = \"lab\"\n[[device]]\nname = \"here\"\ntransport = "
               "\"local\"\nworkdir = \"" +
                   w + "\"\n");
    auto fleet = [&] {
        return run_sb({"fleet",   "run",
                       "--hosts", t.file("lab.toml"),
                       "--db",    t.file("lab.sqlite"),
                       "--keep",  "1",
                       "--",      "run",
                       "-m",      "preset:tiny:2,preset:tiny:1",
                       "-p",      "8",
                       "-n",      "2",
                       "-r",      "1",
                       "--membw", "off"},
                      300);
    };
    auto listing = [](const std::string& dir) {
        std::set<std::string> names;
        for (const auto& e : fs::directory_iterator(dir))
            names.insert(e.path().filename().string());
        return names;
    };
    auto ours = [&] {
        std::set<std::string> names;
        for (const auto& n : listing(results))
            if (n.rfind("lab-here-", 0) == 0 && n.rfind("lab-here-2-", 0) != 0)
                names.insert(n);
        return names;
    };
    const std::set<std::string> stay = {"lab-there-1000000000-1.json", "notes.json",
                                        "lab-here-2-1000000000-1.json"};
    const std::set<std::string> models_left = {"synth-tiny-2-0.1.0.gguf", "synth-tiny-1-0.1.0.gguf",
                                               "synth-new-0.1.0.gguf.part", "notes.txt"};
    Proc first = fleet();
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_EQ(first.err.find("synthesising"), std::string::npos) << first.err;
    const std::set<std::string> one = ours();
    ASSERT_EQ(one.size(), 1u) << testing::PrintToString(listing(results));
    EXPECT_EQ(one.begin()->find("lab-here-100000000"), std::string::npos);  // not an old one
    std::set<std::string> expect = stay;
    expect.insert(*one.begin());
    EXPECT_EQ(listing(results), expect);
    EXPECT_EQ(listing(models), models_left);

    // Again: this run's document, not the last one's.
    Proc again = fleet();
    ASSERT_EQ(again.exit_code, 0) << again.err;
    const std::set<std::string> two = ours();
    ASSERT_EQ(two.size(), 1u) << testing::PrintToString(listing(results));
    EXPECT_NE(*two.begin(), *one.begin());
    EXPECT_EQ(listing(models), models_left);
}

// An exec device's stagebench copies (WORKDIR/sb/HASH/, the agents tried behind its prefix)
// keep the --keep last used too: every agent this run tried stays, however small --keep, and
// a copy used again is marked used, so it outlives older ones.
TEST(Fleet, ExecDeviceCopiesKeepTheLastUsed) {
    TempDir t;
    // Two agents in the dist: the armv8.6 one refuses this CPU, the armv8.2 one is this build
    // behind a wrapper; the prefix is env.
    const std::string dist = t.file("dist");
    fs::create_directories(dist);
    write_file(dist + "/stagebench-agent-armv8.6", "#!/bin/sh\nexit 1\n");
    write_file(dist + "/stagebench-agent-armv8.2",
               "#!/bin/sh\nexec '" + stagebench_bin() + "' \"$@\"\n");
    const std::string copies = t.file("w/sb");
    for (int i = 0; i < 3; ++i) {
        const std::string d = copies + "/00000000000000" + std::to_string(10 + i);
        fs::create_directories(d);
        write_file(d + "/.ok", "");
        fs::last_write_time(d + "/.ok",
                            fs::file_time_type::clock::now() - std::chrono::hours(24 + i));
    }
    fs::create_directories(copies + "/00000000000000aa");  // being copied: no .ok
    write_file(t.file("exec.toml"),
               "[[device]]\nname = \"emu\"\ntransport = \"exec\"\nprefix = "
               "[\"env\"]\nworkdir = \"" +
                   t.file("w") + "\"\n");
    auto fleet = [&](const std::string& keep) {
        return run_sb({"fleet",   "run",
                       "--hosts", t.file("exec.toml"),
                       "--db",    t.file("e.sqlite"),
                       "--dist",  dist,
                       "--keep",  keep,
                       "--",      "run",
                       "-m",      tiny_model(),
                       "-p",      "8",
                       "-n",      "2",
                       "-r",      "1",
                       "--membw", "off"},
                      300);
    };
    auto listing = [&] {
        std::set<std::string> names;
        for (const auto& e : fs::directory_iterator(copies))
            names.insert(e.path().filename().string());
        return names;
    };
    Proc first = fleet("1");
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_NE(first.err.find("deploying stagebench-agent-armv8.2"), std::string::npos) << first.err;
    std::set<std::string> agents;
    for (const auto& n : listing())
        if (n.rfind("00000000000000", 0) != 0)
            agents.insert(n);
    ASSERT_EQ(agents.size(), 2u) << testing::PrintToString(listing());
    std::set<std::string> expect = agents;
    expect.insert("00000000000000aa");
    EXPECT_EQ(listing(), expect);

    // The agents made older than two other copies, then used again with --keep 3: nothing
    // copied again; they are the last used, with the newer of the two.
    for (const auto& a : agents)
        fs::last_write_time(copies + "/" + a + "/.ok",
                            fs::file_time_type::clock::now() - std::chrono::hours(48));
    for (int i = 0; i < 2; ++i) {
        const std::string d = copies + "/00000000000000" + std::to_string(20 + i);
        fs::create_directories(d);
        write_file(d + "/.ok", "");
        fs::last_write_time(d + "/.ok",
                            fs::file_time_type::clock::now() - std::chrono::hours(20 + 2 * i));
    }
    Proc again = fleet("3");
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.err.find("deploying"), std::string::npos) << again.err;
    expect.insert("0000000000000020");
    EXPECT_EQ(listing(), expect);
}

// adb, through the stand-in (no phone or emulator here): identity from getprop, the model
// pushed, the device's own stagebench, and a serial that is not there.
TEST(Fleet, AdbDevicesThroughTheStandIn) {
    TempDir t;
    const std::string root = t.file("adb");
    fs::create_directories(root + "/FAKE1");
    write_file(root + "/FAKE1/props",
               "ro.product.model=Pixel 8\nro.build.version.release=14\nro.soc.model=Tensor G3\n");
    ::setenv("FAKE_ADB_ROOT", root.c_str(), 1);
    ::setenv("STAGEBENCH_ADB", (std::string(SB_SOURCE_DIR) + "/tests/fleet/fake-adb").c_str(), 1);
    write_file(t.file("phones.toml"),
               "[[device]]\nname = \"pixel\"\ntransport = \"adb://FAKE1\"\n"
               "workdir = \"" +
                   t.file("phone") + "\"\nstagebench = \"" + stagebench_bin() +
                   "\"\n[[device]]\nname = \"gone\"\n"
                   "transport = \"adb://NOPE\"\n");
    const std::string db = t.file("p.sqlite");
    Proc p = run_sb(fleet_run(t.file("phones.toml"), db));
    ::unsetenv("STAGEBENCH_ADB");
    EXPECT_EQ(p.exit_code, 1) << p.err;
    std::map<std::string, json> by;
    for (const auto& r : store_rows(db, "phones"))
        by[r["device"]] = r;
    ASSERT_EQ(by["pixel"]["status"], "ok") << p.err;
    json doc = stored_doc(db, by["pixel"]["document"]);
    EXPECT_EQ(doc["fleet"]["model"], "Pixel 8");
    EXPECT_EQ(doc["fleet"]["android"], "14");
    EXPECT_EQ(doc["fleet"]["soc"], "Tensor G3");
    EXPECT_EQ(doc["fleet"]["transport"], "adb://FAKE1");
    // A job without a stagebench (the phone's own runs it), with the model.
    bool pushed = false;
    for (const auto& e : fs::directory_iterator(t.file("phone") + "/jobs"))
        pushed = pushed || fs::is_regular_file(e.path() / "models" / "tiny.gguf");
    EXPECT_TRUE(pushed);
    EXPECT_EQ(doc["fleet"]["stagebench"]["path"], stagebench_bin());
    EXPECT_TRUE(
        fs::is_regular_file(doc["fleet"]["job"]["results"].get<std::string>() + "/manifest.json"));
    EXPECT_EQ(by["gone"]["status"], "failed");
    EXPECT_NE(by["gone"]["what"].get<std::string>().find("not found"), std::string::npos)
        << by["gone"];

    // A preset is synthesised on the device, once. (--keep 1: the phone keeps the last results
    // folder only.)
    ::setenv("STAGEBENCH_ADB", (std::string(SB_SOURCE_DIR) + "/tests/fleet/fake-adb").c_str(), 1);
    const std::vector<std::string> preset = {"fleet",   "run",
                                             "--hosts", t.file("phones.toml"),
                                             "--db",    db,
                                             "--only",  "pixel",
                                             "--keep",  "1",
                                             "--",      "run",
                                             "-m",      "preset:tiny:2",
                                             "-p",      "8",
                                             "-n",      "2",
                                             "-r",      "1",
                                             "--membw", "off"};
    Proc s1 = run_sb(preset), s2 = run_sb(preset);
    ::unsetenv("STAGEBENCH_ADB");
    EXPECT_EQ(s1.exit_code, 0) << s1.err;
    EXPECT_NE(s1.err.find("[pixel] synthesising tiny there"), std::string::npos) << s1.err;
    EXPECT_EQ(s2.err.find("synthesising"), std::string::npos) << s2.err;
    EXPECT_TRUE(fs::is_regular_file(t.file("phone") + "/models/synth-tiny-2-0.1.0.gguf"));
    const auto rows = store_rows(db, "phones");
    json last = stored_doc(db, rows.back()["document"]);
    EXPECT_EQ(last["models"][0]["synthetic_preset"], "tiny") << last["models"][0];
    std::set<std::string> there;
    for (const auto& e : fs::directory_iterator(t.file("phone") + "/results"))
        there.insert(e.path().filename().string());
    EXPECT_EQ(
        there,
        std::set<std::string>{
            fs::path(last["fleet"]["job"]["results"].get<std::string>()).filename().string()});
}

// Two ports in a row that were free a moment ago.
int two_free_ports() {
    for (int tries = 0; tries < 50; ++tries) {
        const int p = 20000 + static_cast<int>(std::random_device{}() % 30000);
        bool ok = true;
        for (int q : {p, p + 1}) {
            const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(static_cast<uint16_t>(q));
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            ok = ok && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
            ::close(fd);
        }
        if (ok)
            return p;
    }
    return 0;
}

// `fleet rpc up` on two devices (this machine, and a device behind the loopback sshd): a model
// split over both servers, profiled by `ops`, reports per decode token the compute on each
// server, the copies between them (bytes and time); `fleet rpc down` stops them.
TEST(Fleet, RpcUpSplitsAModelOverTwoServersAndOpsReportsItsTransfers) {
    TempDir t;
    LoopbackSshd sshd;
    write_file(t.file("split.toml"),
               "[[device]]\nname = \"a\"\ntransport = \"local\"\nworkdir = \"" + t.file("a") +
                   "\"\n" + ssh_device("b", sshd, t.file("b"), sshd.known_hosts(), true));
    const int port = two_free_ports();
    ASSERT_GT(port, 0);
    Proc up = run_sb({"fleet", "rpc", "up", "--hosts", t.file("split.toml"), "--port",
                      std::to_string(port), "--dist", dist_dir()},
                     300);
    ASSERT_EQ(up.exit_code, 0) << up.err;
    const std::string list =
        "127.0.0.1:" + std::to_string(port) + ",127.0.0.1:" + std::to_string(port + 1);
    EXPECT_EQ(up.out, "--rpc " + list + " --device RPC0+RPC1\n");
    Proc ops = run_sb({"ops", "-m", tiny_model(), "--rpc", list, "--device", "RPC0+RPC1", "-p",
                       "16", "-o", "json"});
    Proc down = run_sb({"fleet", "rpc", "down", "--hosts", t.file("split.toml")});
    ASSERT_EQ(ops.exit_code, 0) << ops.err;
    json doc = json::parse(ops.out);
    bool saw_decode = false;
    for (const auto& st : doc["ops"]["stages"]) {
        if (st["stage"] != "decode")
            continue;
        saw_decode = true;
        EXPECT_EQ(st["n_tokens"], 1);
        EXPECT_GT(st["n_copies"].get<int>(), 0) << st.dump();
        EXPECT_GT(st["copy_bytes"].get<double>(), 0);
        EXPECT_GT(st["copy_ns"].get<double>(), 0);
        std::set<std::string> backends;
        for (const auto& b : st["by_backend"])
            if (b["op_ns"].get<double>() > 0)
                backends.insert(b["backend"]);
        EXPECT_TRUE(backends.count("RPC0") && backends.count("RPC1")) << st["by_backend"];
    }
    EXPECT_TRUE(saw_decode);
    EXPECT_EQ(down.exit_code, 0) << down.err;
    EXPECT_NE(down.err.find("2 server(s) stopped"), std::string::npos) << down.err;
}

TEST(Fleet, BadInputIsOneLineAndExitTwo) {
    TempDir t;
    write_file(t.file("bad.toml"), "[[device]]\nname = \"x\"\ntransport = \"telnet://x\"\n");
    write_file(t.file("ok.toml"), "[[device]]\nname = \"x\"\ntransport = \"local\"\n");
    const std::vector<std::vector<std::string>> cases = {
        {"fleet", "run", "--hosts", t.file("bad.toml"), "--", "run", "-m", "m.gguf"},
        {"fleet", "run", "--hosts", t.file("missing.toml"), "--", "run"},
        {"fleet", "run", "--hosts", t.file("ok.toml"), "--", "sensors"},
        {"fleet", "run", "--hosts", t.file("ok.toml"), "--", "run", "-o", "csv"},
        {"fleet", "run", "--hosts", t.file("ok.toml"), "--cool-to", "warm", "--", "run"},
        {"fleet", "run", "--hosts", t.file("ok.toml"), "--parallel", "0", "--", "run"},
        {"fleet", "status", "--db", t.file("none.sqlite")},
        {"compare", "--fleet", "x"},
    };
    for (const auto& c : cases) {
        Proc p = run_sb(c);
        EXPECT_EQ(p.exit_code, 2) << c[3] << ": " << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    }
}

// Ctrl-C while the fleet prepares its devices, before the first one measures: nothing is
// measured, and the exit is 1 (not everything asked for was done), never 0. The device's
// stagebench is a wrapper whose `version` probe (the preparation) holds it a few seconds and
// leaves a mark; a `run` leaves another.
TEST(Fleet, CtrlCBeforeTheFirstDeviceMeasuresIsExitOneAndRunsNothing) {
    TempDir t;
    const std::string wrapper = t.file("sb-slow");
    write_file(wrapper,
               "#!/bin/sh\n"
               "if [ \"$1\" = version ]; then touch '" +
                   t.file("probed") +
                   "'; sleep 4; fi\n"
                   "if [ \"$1\" = run ]; then touch '" +
                   t.file("ran") + "'; fi\nexec '" + stagebench_bin() + "' \"$@\"\n");
    fs::permissions(wrapper, fs::perms::owner_all);
    write_file(t.file("here.toml"),
               "[[device]]\nname = \"here\"\ntransport = \"local\"\n"
               "stagebench = \"" +
                   wrapper + "\"\n");
    std::vector<std::string> argv = {
        stagebench_bin(), "fleet",           "run", "--hosts", t.file("here.toml"),
        "--db",           t.file("f.sqlite")};
    for (const auto& w : kFleetCommand)
        argv.push_back(w.empty() ? tiny_model() : w);
    const pid_t pid = spawn_bg(argv, t.file("log"));
    const bool probed = [&] {
        for (int i = 0; i < 600 && !fs::exists(t.file("probed")); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return fs::exists(t.file("probed"));
    }();
    const int rc = signal_and_wait(pid, SIGINT, 60);
    ASSERT_TRUE(probed) << read_file(t.file("log.err"));
    EXPECT_EQ(rc, 1) << read_file(t.file("log.err"));
    EXPECT_FALSE(fs::exists(t.file("ran"))) << "nothing is measured after Ctrl-C";
    EXPECT_NE(read_file(t.file("log.err")).find("fleet: interrupted"), std::string::npos)
        << read_file(t.file("log.err"));
    // The store says what happened: an interruption, not a device whose stagebench does not run.
    const json rows = store_rows(t.file("f.sqlite"), "here");
    ASSERT_EQ(rows.size(), 1u) << rows.dump();
    EXPECT_EQ(rows[0]["status"], "failed");
    EXPECT_EQ(rows[0]["what"], "interrupted (Ctrl-C) while preparing the device") << rows.dump();
}

}  // namespace
#endif
