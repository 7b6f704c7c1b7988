// Bad input that must never cost a measurement (README "Bad input and faults"): bytes that are
// not UTF-8, optional text that is absent, outputs that are FIFOs, devices or directories,
// inputs that are FIFOs, Hexagon logs with negative times. Every run ends in bounded time,
// with one error line and the documented exit code, and keeps what it measured.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cli_harness.hpp"
#include "fault_server.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::vector<std::string> run_args(const std::string& model) {
    return {"run", "-m", model, "-p", "8", "-n", "2", "-r", "1", "--membw", "off", "-q"};
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
}

void expect_one_line_error(const Proc& p, int code, const std::string& needle) {
    EXPECT_EQ(p.exit_code, code) << p.err;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << p.err;
    EXPECT_NE(p.err.find(needle), std::string::npos) << p.err;
}

bool is_fifo(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

// Reads a FIFO to its end on a thread (a reader that is there before the writer). Never
// blocks: join() gives the writer 5 more seconds, so a writer that crashed fails the test
// instead of hanging it.
struct FifoReader {
    explicit FifoReader(std::string path) : path_(std::move(path)) {
        thread_ = std::thread([this] { read_all(); });
    }
    std::string join() {
        stop_at_ = sb_now_s() + 5;
        thread_.join();
        return text;
    }
    static double sb_now_s() {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    void read_all() {
        const int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK);
        if (fd < 0)
            return;
        char buf[65536];
        while (sb_now_s() < stop_at_) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0)
                continue;
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0)
                text.append(buf, static_cast<size_t>(n));
            else if (n == 0)
                break;  // the writer came and went (POLLHUP)
        }
        ::close(fd);
    }
    std::string path_, text;
    std::atomic<double> stop_at_{1e300};
    std::thread thread_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// A sensor name and values that are not UTF-8 (one cut after 63 bytes, in the middle of a
// character) reach warnings; the run still writes -o json and --out, exit 0.
TEST(Faults, SensorBytesThatAreNotUtf8KeepTheDocument) {
    TempDir t;
    const fs::path root = t.path / "sys";
    fs::copy(fs::path(SB_SOURCE_DIR) / "tests/fixtures/telemetry/x86-laptop-rapl/sys", root,
             fs::copy_options::recursive);
    std::ofstream(root / "class/thermal/thermal_zone3/type") << "zone\xff\xfe\n";
    std::ofstream(root / "class/thermal/thermal_zone2/temp") << "\xff\xfe\n";
    std::ofstream(root / "class/hwmon/hwmon3/temp1_input") << std::string(63, '7') << "\xC3\xA9\n";
    const std::string out = t.file("r.json");
    Proc p = run_sb(with(run_args(tiny_model()), {"--sysfs-root", root.string(), "--telemetry",
                                                  "on", "--idle", "0", "-o", "json", "--out", out}),
                    300);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(p.out);  // throws on bytes that are not UTF-8
    const json saved = json::parse(read_file(out));
    EXPECT_EQ(saved["tests"].size(), 1u);
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
    const std::string warnings = doc["warnings"].dump();
    EXPECT_NE(warnings.find(kFffd), std::string::npos) << warnings;  // "\xff\xfe" quoted
    for (const auto& e : fs::directory_iterator(t.path))
        EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

// A valid GGUF without general.name: the table names the model by its file.
TEST(Faults, ModelWithoutAGeneralNameStillGetsItsTable) {
    TempDir t;
    const std::string model = t.file("noname.gguf");
    std::string bytes = read_file(tiny_model());
    const std::string key = "general.name";
    const size_t at = bytes.find(key);
    ASSERT_NE(at, std::string::npos);
    bytes[at + 8] = 'X';  // "general.Xame": same length, no general.name any more
    std::ofstream(model, std::ios::binary) << bytes;
    Proc p = run_sb({"run", "-m", model, "-p", "8", "-n", "2", "-r", "1", "--membw", "off",
                     "--telemetry", "off"},
                    300);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("| noname.gguf"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("tg2"), std::string::npos) << p.out;
    Proc j = run_sb(with(run_args(model), {"-o", "json"}), 300);
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_TRUE(json::parse(j.out)["models"][0]["name"].is_null());
}

// Outputs that are not regular files are written in place and stay what they are.
TEST(Faults, DevicesAndFifosAsOutputsAreWrittenInPlace) {
    TempDir t;
    Proc p = run_sb(with(run_args(tiny_model()),
                         {"--out", "/dev/null", "--trace", "/dev/null", "--telemetry", "off"}),
                    300);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));

    const std::string fifo = t.file("out.fifo"), result = t.file("r.json");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    FifoReader reader(fifo);
    p = run_sb(with(run_args(tiny_model()), {"--out", fifo, "--telemetry", "off"}), 300);
    const std::string got = reader.join();
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_TRUE(is_fifo(fifo));
    const json doc = json::parse(got);  // one document, the final one
    EXPECT_EQ(doc["tests"].size(), 1u);
    std::ofstream(result) << got;

    // trace -o, report -o and synth -o go through the same writer.
    FifoReader trace_reader(fifo);
    p = run_sb({"trace", result, "-o", fifo});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_TRUE(json::parse(trace_reader.join()).contains("traceEvents"));
    EXPECT_TRUE(is_fifo(fifo));
    p = run_sb({"report", result, "-o", "/dev/null"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    p = run_sb({"synth", "--preset", "tiny", "-o", "/dev/null"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A directory as an output is refused before anything is measured.
// Results that never reach standard output (a full disk) are not a success: one line, exit 1,
// while --out still gets the document.
TEST(Faults, AStandardOutputThatCannotBeWrittenIsNotExit0) {
    if (!std::filesystem::exists("/dev/full"))
        GTEST_SKIP() << "no /dev/full";
    TempDir t;
    const std::string err = t.file("err"), out = t.file("r.json");
    const std::string cmd = "'" + stagebench_bin() + "' run -m '" + tiny_model() +
                            "' -p 4 -n 1 -r 1 --membw off -q --out '" + out + "' >/dev/full 2>'" +
                            err + "'";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 1) << read_file(err);
    EXPECT_EQ(read_file(err), "stagebench: error: cannot write the results to standard output\n");
    EXPECT_EQ(nlohmann::json::parse(read_file(out))["tests"][0]["status"], "ok");
}

TEST(Faults, ADirectoryAsAnOutputIsBadInput) {
    TempDir t;
    const std::string dir = t.file("d");
    fs::create_directory(dir);
    const auto start = std::chrono::steady_clock::now();
    expect_one_line_error(run_sb(with(run_args(tiny_model()), {"--out", dir}), 120), 2,
                          "is a directory");
    expect_one_line_error(run_sb(with(run_args(tiny_model()), {"--trace", dir}), 120), 2,
                          "is a directory");
    expect_one_line_error(run_sb({"synth", "--preset", "tiny", "-o", dir}), 2, "is a directory");
    EXPECT_LT(seconds_since(start), 60);
    EXPECT_TRUE(fs::is_directory(dir));
}

// A FIFO that nobody reads as --out: the run measures, prints -o json, stores in --db, then
// fails with one line (exit 2) in bounded time.
TEST(Faults, AFifoWithoutAReaderCostsNoMeasurement) {
    TempDir t;
    const std::string fifo = t.file("out.fifo"), db = t.file("r.sqlite");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    Proc p = run_sb(with(run_args(tiny_model()),
                         {"--out", fifo, "--db", db, "-o", "json", "--telemetry", "off"}),
                    120);
    EXPECT_LT(seconds_since(start), 60);
    // The store's note, then the one error line.
    EXPECT_EQ(p.exit_code, 2) << p.err;
    const size_t err_at = p.err.find("stagebench: error: ");
    ASSERT_NE(err_at, std::string::npos) << p.err;
    EXPECT_EQ(p.err.find('\n', err_at), p.err.size() - 1) << p.err;
    EXPECT_NE(p.err.find("FIFO", err_at), std::string::npos) << p.err;
    EXPECT_NE(p.err.find("stored as #1"), std::string::npos) << p.err;
    EXPECT_EQ(json::parse(p.out)["tests"].size(), 1u);
    Proc list = run_sb({"db", "list", "--db", db, "-o", "json"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    EXPECT_NE(list.out.find("\"id\": 1"), std::string::npos) << list.out;
    EXPECT_TRUE(is_fifo(fifo));
}

// FIFOs given as inputs are refused at once (they used to block forever).
TEST(Faults, FifosAsInputsAreRefusedAtOnce) {
    TempDir t;
    const std::string fifo = t.file("in.fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    expect_one_line_error(run_sb(run_args(fifo), 30), 2, fifo);
    expect_one_line_error(run_sb({"import", "hexagon-profile", fifo}, 30), 2, "FIFO");
    expect_one_line_error(run_sb({"report", fifo, "-o", t.file("r.html")}, 30), 2, "FIFO");
    expect_one_line_error(run_sb({"trace", fifo}, 30), 2, "FIFO");
    expect_one_line_error(run_sb({"compare", fifo, fifo}, 30), 2, "FIFO");
    Proc db = run_sb(with(run_args(tiny_model()), {"--db", fifo}), 30);
    EXPECT_EQ(db.exit_code, 2) << db.err;
    EXPECT_NE(db.err.find("not a regular file"), std::string::npos) << db.err;
    EXPECT_LT(seconds_since(start), 60);
}

// A generated Hexagon log with negative times: those lines are refused and counted, the sums
// hold only the others.
TEST(Faults, HexagonNegativeTimesAreRefused) {
    TempDir t;
    const std::string log = t.file("hex.log");
    std::mt19937 rng(11);
    int negatives = 0;
    long long good_usec = 0;
    {
        std::ofstream f(log);
        for (int i = 0; i < 60; ++i) {
            const bool neg = rng() % 5 == 0;
            const long long usec = neg ? -static_cast<long long>(1 + rng() % 3000) : rng() % 500;
            negatives += neg;
            if (!neg)
                good_usec += usec;
            f << "ggml-hex: HTP0 profile-op MUL_MAT: w x a -> Qcur-" << i
              << " : 64:64 x 64:1 -> 64:1 : q4_0 x f32 -> f32 : 1:1 : HTP0 : op-usec " << usec
              << " op-cycles 1000 op-pkts 10 (1.0) call-usec " << (neg ? 5 : usec + 5) << "\n";
        }
    }
    ASSERT_GT(negatives, 0);
    Proc p = run_sb({"import", "hexagon-profile", log, "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("negative usec"), std::string::npos) << p.err;
    const json doc = json::parse(p.out);
    const json& info = doc["ops"]["import"];
    EXPECT_EQ(info["n_refused"], negatives) << info;  // refused, not "did not parse"
    EXPECT_EQ(info["n_records"], 60 - negatives) << info;
    double sum_ns = 0;
    for (const auto& r : doc["ops"]["stages"][0]["ops"])
        sum_ns += r["op_ns"].get<double>();
    EXPECT_DOUBLE_EQ(sum_ns, good_usec * 1000.0);
}

// Ctrl-C while a server trickles bytes inside --timeout: the run ends at once, keeping the test
// measured before.
TEST(Faults, CtrlCEndsAWaitOnATricklingServer) {
    FaultServer server([](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        const int n = req.json().value("max_tokens", 1);
        c.begin_chunked(200, "text/event-stream");
        if (n == 4) {
            while (c.chunk(":"))  // a comment byte every 100 ms, forever
                c.sleep_ms(100);
            return;
        }
        for (int i = 0; i < n; ++i)
            c.chunk(sse_text("t"));
        c.chunk(sse_final(8, n));
        c.end_chunked();
    });
    TempDir t;
    const std::string out = t.file("r.json");
    pid_t pid = spawn_bg({stagebench_bin(),
                          "run",
                          "--engine",
                          "http",
                          "--url",
                          server.url(),
                          "-p",
                          "8",
                          "-n",
                          "6,4",
                          "-r",
                          "1",
                          "--no-warmup",
                          "--timeout",
                          "600",
                          "--telemetry",
                          "off",
                          "--out",
                          out,
                          "-q"},
                         t.file("log"));
    for (int i = 0; i < 1500; ++i) {  // the first test on disk
        try {
            if (json::parse(read_file(out))["tests"].size() == 1)
                break;
        } catch (...) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // inside the second request
    const auto start = std::chrono::steady_clock::now();
    const int rc = signal_and_wait(pid, SIGINT, 30);
    EXPECT_LT(seconds_since(start), 10);
    EXPECT_EQ(rc, 1);
    const json doc = json::parse(read_file(out));
    ASSERT_GE(doc["tests"].size(), 1u);
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
}
