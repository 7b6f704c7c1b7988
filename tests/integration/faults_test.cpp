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
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cli_harness.hpp"
#include "fault_server.hpp"
#include "fuzz_seed.hpp"
#include "model/gguf_mutations.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::vector<std::string> fault_run_args(const std::string& model) {
    return {"run", "-m", model, "-p", "8", "-n", "2", "-r", "1", "--membw", "off", "-q"};
}

void expect_fault_error(const Proc& p, int code, const std::string& needle) {
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
    Proc p = run_sb(
        with(fault_run_args(tiny_model()), {"--sysfs-root", root.string(), "--telemetry", "on",
                                            "--idle", "0", "-o", "json", "--out", out}),
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
    Proc j = run_sb(with(fault_run_args(model), {"-o", "json"}), 300);
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_TRUE(json::parse(j.out)["models"][0]["name"].is_null());
}

// Outputs that are not regular files are written in place and stay what they are.
TEST(Faults, DevicesAndFifosAsOutputsAreWrittenInPlace) {
    TempDir t;
    Proc p = run_sb(with(fault_run_args(tiny_model()),
                         {"--out", "/dev/null", "--trace", "/dev/null", "--telemetry", "off"}),
                    300);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));

    const std::string fifo = t.file("out.fifo"), result = t.file("r.json");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    FifoReader reader(fifo);
    p = run_sb(with(fault_run_args(tiny_model()), {"--out", fifo, "--telemetry", "off"}), 300);
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
    // (Built by appending: GCC 12 warns, wrongly, of an overlapping copy for "'" + string&&.)
    const std::string cmd = std::string("'") + stagebench_bin() + "' run -m '" + tiny_model() +
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
    expect_fault_error(run_sb(with(fault_run_args(tiny_model()), {"--out", dir}), 120), 2,
                       "is a directory");
    expect_fault_error(run_sb(with(fault_run_args(tiny_model()), {"--trace", dir}), 120), 2,
                       "is a directory");
    expect_fault_error(run_sb({"synth", "--preset", "tiny", "-o", dir}), 2, "is a directory");
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
    Proc p = run_sb(with(fault_run_args(tiny_model()),
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
    expect_fault_error(run_sb(fault_run_args(fifo), 30), 2, fifo);
    expect_fault_error(run_sb({"import", "hexagon-profile", fifo}, 30), 2, "FIFO");
    expect_fault_error(run_sb({"report", fifo, "-o", t.file("r.html")}, 30), 2, "FIFO");
    expect_fault_error(run_sb({"trace", fifo}, 30), 2, "FIFO");
    expect_fault_error(run_sb({"compare", fifo, fifo}, 30), 2, "FIFO");
    Proc db = run_sb(with(fault_run_args(tiny_model()), {"--db", fifo}), 30);
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

// ---- peers' claims, child processes, signals (issue 33) ------------------------------------

namespace {

// An OpenAI-compatible server that streams n text chunks and ends with the given usage and
// llama-server-like timings (JSON text, as a hostile or broken server would send them).
FaultHandler claiming_server(std::string completion, std::string timings) {
    return [completion, timings](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        const int n = req.json().value("max_tokens", 1);
        c.begin_chunked(200, "text/event-stream");
        if (n == 1) {  // the prompt's calibration: plain claims
            c.chunk(sse_text("x") + sse_final(8, 1));
            c.end_chunked();
            return;
        }
        for (int i = 0; i < n; ++i)
            c.chunk(sse_text("t"));
        c.chunk(
            "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":"
            "{\"prompt_tokens\":8,\"completion_tokens\":" +
            completion + "},\"timings\":" + timings + "}\n\ndata: [DONE]\n\n");
        c.end_chunked();
    };
}

bool any_note_has(const json& notes, const std::string& needle) {
    if (!notes.is_array())
        return false;
    for (const auto& n : notes)
        if (n.get<std::string>().find(needle) != std::string::npos)
            return true;
    return false;
}

// Every number under j that names tokens, a rate or a time is finite and not negative.
void expect_no_negative(const json& j, const std::string& at = "") {
    if (j.is_object()) {
        for (const auto& [k, v] : j.items())
            if (k != "client_minus_server")  // differences of two times may be negative
                expect_no_negative(v, at + "/" + k);
    } else if (j.is_array()) {
        for (size_t i = 0; i < j.size(); ++i)
            expect_no_negative(j[i], at + "/" + std::to_string(i));
    } else if (j.is_number()) {
        EXPECT_GE(j.get<double>(), 0) << at;
    }
}

}  // namespace

// A server's counts and times are claims: 10^12 completion tokens for a 4-token stream (it
// made run and serve allocate a gap per claimed token until std::bad_alloc), negative,
// fractional or absurd values (stored as negative tokens and tokens/s before). The document
// keeps what the server said beside what was counted, with notes; nothing negative or
// unsupported is stored; exit 0.
TEST(Faults, AServersClaimsAreBoundedCheckedAndKeptAsClaims) {
    struct Case {
        std::string completion, timings;
        json claimed;
    };
    const std::vector<Case> cases = {
        {"1000000000000",
         R"({"prompt_n":1000000000000,"prompt_ms":5e15,"predicted_n":4,"predicted_ms":-1})",
         json(int64_t{1'000'000'000'000})},
        {"-5", R"({"prompt_n":-8,"prompt_ms":-3,"predicted_n":-4,"predicted_ms":"x"})", nullptr},
        {"1e300", R"({"prompt_n":8,"prompt_ms":0.5,"predicted_n":1e300,"predicted_ms":1e300})",
         nullptr},
        {"2.5", R"({"prompt_n":8.5,"cache_n":-1,"predicted_n":4})", nullptr},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.completion + " " + c.timings);
        FaultServer server(claiming_server(c.completion, c.timings));
        Proc p =
            run_sb({"run", "--engine", "http", "--url", server.url(), "-p", "8", "-n", "4", "-r",
                    "2", "--no-warmup", "--telemetry", "off", "--membw", "off", "-q", "-o", "json"},
                   120);
        ASSERT_EQ(p.exit_code, 0) << p.err;
        const json t = json::parse(p.out)["tests"][0];
        EXPECT_EQ(t["status"], "ok");
        EXPECT_EQ(t["client"]["output_tokens"], json::array({4, 4}));
        EXPECT_EQ(t["client"]["streamed_tokens"], json::array({4, 4}));
        EXPECT_EQ(t["client"]["claimed_output_tokens"], json::array({c.claimed, c.claimed}));
        EXPECT_EQ(t["decode"]["token_latency_ns"].size(), 6u);
        EXPECT_TRUE(any_note_has(t["notes"], "not believed") || any_note_has(t["notes"], "ignored"))
            << t["notes"];
        // The records, the claims' part. Not the summaries: a Student-t interval of two
        // repetitions reaches below 0 once they differ by a sixth of their mean (core/stats'
        // ci95_lo of a time, with any server: not a claim, left to its owner).
        for (const auto& [k, v] : t["client"].items())
            if (v.is_array())
                expect_no_negative(v, "client/" + k);
        expect_no_negative(t["server"]["reps"], "server");
        expect_no_negative(t["ttft_ns"], "ttft_ns");
        expect_no_negative(t["decode"]["tokens_per_s"], "decode");
        expect_no_negative(t["prefill"]["tokens_per_s"], "prefill");

        Proc s = run_sb({"serve", "--url", server.url(), "--concurrency", "1", "--requests", "2",
                         "-p", "8", "-n", "4", "-o", "json"},
                        120);
        ASSERT_EQ(s.exit_code, 0) << s.err;
        const json pt = json::parse(s.out)["serve"]["points"][0];
        for (const auto& r : pt["requests"]) {
            EXPECT_EQ(r["output_tokens"], 4) << r;
            EXPECT_EQ(r["streamed_tokens"], 4) << r;
            EXPECT_EQ(r["claimed_output_tokens"], c.claimed) << r;
            EXPECT_TRUE(any_note_has(r["notes"], "not believed") ||
                        any_note_has(r["notes"], "ignored"))
                << r;
        }
        EXPECT_GT(pt["output_tokens_per_s"].get<double>(), 0);
        expect_no_negative(pt["requests"], "requests");
    }
}

namespace {

std::string rpc_hello_reply() {
    std::string r;
    const uint64_t size = 28;  // protocol 6.0.0, no connection capabilities
    r.append(reinterpret_cast<const char*>(&size), 8);
    return r + std::string("\x06\x00\x00\x00", 4) + std::string(24, '\0');
}

}  // namespace

// An RPC server that answers the hello and then claims 0xFFFFFFFF devices: llama.cpp would
// allocate one per claimed device (run and sustained died in std::bad_alloc). A claim beyond
// what a scheduler can use (16 backends) is bad input, one line, before anything runs.
TEST(Faults, AnRpcServerClaimingBillionsOfDevicesIsBadInput) {
    RawFaultServer liar([](FaultConn& c) {
        std::string bytes = rpc_hello_reply();
        const uint64_t size = 4;
        const uint32_t count = 0xFFFFFFFFu;
        bytes.append(reinterpret_cast<const char*>(&size), 8);
        bytes.append(reinterpret_cast<const char*>(&count), 4);
        c.send(bytes);
        c.wait_until_stopped();
    });
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"run", "-m", tiny_model(), "--rpc", liar.endpoint(), "--device", "RPC0", "-p", "8",
              "-n", "2", "-r", "1", "-q"},
             {"sustained", "-m", tiny_model(), "--rpc", liar.endpoint(), "--device", "RPC0",
              "--rounds", "1", "--prompt-tokens", "8", "--max-tokens", "2", "-q"},
             {"devices", "--rpc", liar.endpoint()}}) {
        SCOPED_TRACE(args[0]);
        expect_fault_error(run_sb(args, 60), 2,
                           "RPC server " + liar.endpoint() +
                               " reports 4294967295 devices (at most 16 can be used");
    }
}

// rpc-server's own options: a thread count above ggml's pool (the server died with SIGSEGV on
// the first graph) and a device that cannot run whole graphs are refused at once.
TEST(Faults, RpcServerRefusesWhatItCannotServe) {
    for (const char* t : {"100000", "513", "-1"})
        expect_fault_error(run_sb({"rpc-server", "-p", "1", "-t", t}, 30), 2, "out of range");
    // llama.cpp's server binds IPv4 addresses only: a name or an IPv6 address made it print a
    // line and return (exit 1).
    for (const char* h : {"localhost", "::1", "[::1]"})
        expect_fault_error(run_sb({"rpc-server", "-H", h, "-p", "50052"}, 30), 2,
                           "llama.cpp's RPC server listens on an IPv4 address only");
    // An IPv6 endpoint stopped llama.cpp's client (SIGABRT) once something answered there.
    for (const char* e : {"::1:50052", "[::1]:50052"})
        expect_fault_error(run_sb({"devices", "--rpc", e}, 30), 2,
                           "llama.cpp's RPC client connects over IPv4 only");
    // BLAS (when this llama.cpp has it) runs some ops beside the CPU, never a whole graph.
    Proc devices = run_sb({"devices"}, 60);
    if (devices.out.find("BLAS") != std::string::npos)
        expect_fault_error(run_sb({"rpc-server", "-p", "1", "-d", "BLAS"}, 30), 2,
                           "-d BLAS: an accelerator that runs only some ops beside the CPU "
                           "cannot serve whole graphs");
}

namespace {

// A copy of the Raspberry Pi fixture whose vcgencmd runs body.
struct PiTree {
    explicit PiTree(const std::string& body) {
        fs::copy(fs::path(SB_SOURCE_DIR) / "tests/fixtures/telemetry/rpi5", t.path,
                 fs::copy_options::recursive);
        const std::string script = t.file("bin/vcgencmd");
        fs::remove(script);
        std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
        fs::permissions(script, fs::perms::owner_all);
    }
    std::string root() const { return t.file("sys"); }
    TempDir t;
};

}  // namespace

// A sensor command that closes its output and keeps running, or floods it ignoring SIGPIPE,
// hung `sensors` and `run --telemetry on` for ever. Every child has a deadline (2 s for
// vcgencmd) and is killed with its group; the sensor is absent with a warning, the rest is
// measured.
TEST(Faults, ASensorCommandThatHangsOrFloodsCostsItsDeadlineOnly) {
    for (const char* body :
         {"echo throttled=0x0; exec >&- 2>&-; sleep 600", "trap '' PIPE; yes throttled=0x0"}) {
        SCOPED_TRACE(body);
        PiTree pi(body);
        auto start = std::chrono::steady_clock::now();
        Proc s =
            run_sb({"sensors", "--sysfs-root", pi.root(), "--duration", "1s", "-o", "json"}, 120);
        EXPECT_LT(seconds_since(start), 30);
        ASSERT_EQ(s.exit_code, 0) << s.err;
        EXPECT_NE(s.out.find("vcgencmd get_throttled"), std::string::npos) << s.out;
        EXPECT_NE(s.out.find("within 2 s"), std::string::npos) << s.out;

        start = std::chrono::steady_clock::now();
        Proc r = run_sb(
            with(fault_run_args(tiny_model()),
                 {"--sysfs-root", pi.root(), "--telemetry", "on", "--idle", "0", "-o", "json"}),
            300);
        EXPECT_LT(seconds_since(start), 120);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const json doc = json::parse(r.out);
        EXPECT_EQ(doc["tests"][0]["status"], "ok");
        EXPECT_NE(doc["warnings"].dump().find("within 2 s"), std::string::npos) << doc["warnings"];
    }
}

// Ctrl-C before serve measured anything (its server answers nothing yet) is an interrupted
// run, not bad input: exit 1, the document kept and marked interrupted (it exited 2 before).
TEST(Faults, CtrlCBeforeTheFirstServePointKeepsTheDocument) {
    FaultServer mute([](const HttpRequest&, FaultConn& c) { c.wait_until_stopped(); });
    TempDir t;
    const std::string out = t.file("serve.json");
    pid_t pid = spawn_bg(
        {stagebench_bin(), "serve", "--url", mute.url(), "--concurrency", "1", "--requests", "2",
         "-p", "8", "-n", "4", "--timeout", "600", "-o", "json", "--out", out},
        t.file("log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(signal_and_wait(pid, SIGINT, 30), 1) << read_file(t.file("log.err"));
    EXPECT_LT(seconds_since(start), 10);
    const json doc = json::parse(read_file(t.file("log")));
    EXPECT_EQ(doc["command"], "serve");
    EXPECT_EQ(doc["serve"]["interrupted"], true);
    EXPECT_TRUE(doc["serve"]["points"].empty());
    EXPECT_EQ(json::parse(read_file(out)), doc);
}

// Seeded fuzz of RPC servers' replies: the hello and the device count of every size and value,
// cut short, followed by garbage, a server that closes llama.cpp's own connection. Every
// command ends in bounded time with exit 2 and one line (or exit 0 for a server that answers
// well), never a signal. The seed and the number of cases are printed (tests/fuzz_seed.hpp).
TEST(Faults, RpcRepliesFuzz) {
    sbtest::FuzzRun fuzz(33);
    std::mt19937_64 rng(fuzz.seed());
    auto u64 = [](uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
    auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
    const std::vector<uint32_t> counts = {0, 2, 16, 17, 1000, 0x7FFFFFFFu, 0xFFFFFFFFu};
    while (fuzz.cases() < 12) {
        const int case_no = fuzz.next_case();
        // The first connection (stagebench's probe) gets `reply`; later ones (llama.cpp's own)
        // the same hello and count, then the connection closes.
        std::string reply;
        const int kind = static_cast<int>(rng() % 6);
        const uint32_t count = counts[rng() % counts.size()];
        const std::string hello = rpc_hello_reply();
        switch (kind) {
            case 0:  // a good hello, a count of any value
                reply = hello + u64(4) + u32(count);
                break;
            case 1:  // a count of the wrong size
                reply = hello + u64(1 + rng() % 12) + u32(count) + u32(count);
                break;
            case 2:  // a hello of the wrong size or version
                reply = u64(rng() % 2 ? 3 : 1ull << 40) + std::string(32, '\x07');
                break;
            case 3:  // cut short inside the count
                reply = hello + u64(4) + u32(count).substr(0, 1 + rng() % 3);
                break;
            case 4:  // garbage
                for (int i = 0; i < 40; ++i)
                    reply += static_cast<char>(rng() & 0xff);
                break;
            default:  // a good hello and count followed by garbage
                reply = hello + u64(4) + u32(count) + std::string(16, '\xab');
        }
        SCOPED_TRACE("case " + std::to_string(case_no) + " kind " + std::to_string(kind) +
                     " count " + std::to_string(count));
        auto n = std::make_shared<std::atomic<int>>(0);
        RawFaultServer server([reply, n, hello, count, &u64, &u32](FaultConn& c) {
            if (n->fetch_add(1) == 0) {
                c.send(reply);
                c.wait_until_stopped();
            } else {
                c.send(hello + u64(4) + u32(count));  // then closes: llama.cpp's reads fail
            }
        });
        const auto start = std::chrono::steady_clock::now();
        Proc p = run_sb({"devices", "--rpc", server.endpoint()}, 90);
        EXPECT_LT(seconds_since(start), 45);
        EXPECT_TRUE(p.exit_code == 0 || p.exit_code == 2) << p.exit_code << "\n" << p.err;
        if (p.exit_code == 2)
            expect_fault_error(p, 2, "RPC server " + server.endpoint());
    }
}

// Ctrl-C during fidelity: the variants measured are kept (the one running with the
// repetitions it finished) and the document is marked interrupted, exit 1 (it exited 0 with
// no variants and no mark before).
TEST(Faults, CtrlCDuringFidelityKeepsWhatWasMeasuredMarkedInterrupted) {
    TempDir t;
    const std::string out = t.file("f.json");
    // Many repetitions of the timed pass: the interrupt comes while the variant is timed.
    pid_t pid = spawn_bg({stagebench_bin(), "fidelity", "-m", tiny_model(), "-p", "64", "-n", "16",
                          "-r", "100000", "-o", "json", "--out", out},
                         t.file("log"));
    // The variant's distances measured and its timed pass begun (its progress line says so).
    bool timing = false;
    for (int i = 0; i < 6000 && !timing; ++i) {
        timing =
            read_file(t.file("log.err")).find("distances measured; timing") != std::string::npos;
        if (!timing)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!timing)
        signal_and_wait(pid, SIGKILL, 60);
    ASSERT_TRUE(timing) << read_file(t.file("log.err"));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a few repetitions timed
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(signal_and_wait(pid, SIGINT, 60), 1) << read_file(t.file("log.err"));
    EXPECT_LT(seconds_since(start), 30);
    const json doc = json::parse(read_file(t.file("log")));
    EXPECT_EQ(doc["fidelity"]["interrupted"], true);
    ASSERT_EQ(doc["fidelity"]["variants"].size(), 1u);
    const json& v = doc["fidelity"]["variants"][0];
    EXPECT_EQ(v["decode"]["positions"], 16) << v;  // its distances were measured
    EXPECT_LT(v["decode_tokens_per_s_reps"].size(), 100000u);
    EXPECT_EQ(json::parse(read_file(out)), doc);
    EXPECT_NE(read_file(t.file("log.err")).find("interrupted"), std::string::npos);
}

// serve -m on a GGUF llama.cpp refuses: one line and exit 2, as run says it (before, the
// llama-server's raw log line and exit 1).
TEST(Faults, ServeOnAModelLlamaCppRefusesIsOneLineAndExit2) {
    TempDir t;
    const std::string bogus = t.file("bogus_arch.gguf");
    sb::testing_gguf::write_mutated(tiny_model(), bogus,
                                    {"arch",
                                     [](auto& kv) {
                                         sb::testing_gguf::set_kv(kv, "general.architecture",
                                                                  std::string("bogus"));
                                     },
                                     {}});
    Proc p = run_sb(
        {"serve", "-m", bogus, "--concurrency", "1", "--requests", "1", "-p", "8", "-n", "2"}, 120);
    expect_fault_error(p, 2,
                       "could not load model '" + bogus + "': unknown model architecture: 'bogus'");
}
