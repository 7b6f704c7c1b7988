#include "core/file_io.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "temp_dir.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

using sbtest::TempDir;

std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Only the target (and the files a test made) remain: no temporary is left behind.
void expect_no_temporaries(const TempDir& t) {
    for (const auto& e : fs::directory_iterator(t.path))
        EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

ErrorKind kind_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
        return e.kind();
    }
    ADD_FAILURE() << "no sb::Error thrown";
    return ErrorKind::runtime;
}

TEST(FileIo, RegularFilesAreReplacedAtomicallyAndKeepTheirMode) {
    TempDir t;
    const std::string p = t.file("r.json");
    write_output_file(p, "first\n", "the result file");
    EXPECT_EQ(slurp(p), "first\n");
    ::chmod(p.c_str(), 0640);
    struct stat before {};
    ::stat(p.c_str(), &before);
    write_output_file(p, "second\n", "the result file");
    EXPECT_EQ(slurp(p), "second\n");
    struct stat after {};
    ::stat(p.c_str(), &after);
    EXPECT_NE(before.st_ino, after.st_ino);  // a new file renamed over the old one
    EXPECT_EQ(after.st_mode & 07777, 0640u);
    expect_no_temporaries(t);
    EXPECT_TRUE(output_is_replaced(p));
    EXPECT_TRUE(output_is_replaced(t.file("new.json")));
}

TEST(FileIo, AnUncommittedOutputLeavesTheOldFile) {
    TempDir t;
    const std::string p = t.file("r.json");
    write_output_file(p, "kept\n", "x");
    {
        OutputFile f(p, "x");
        f.write("half a docu");
    }
    EXPECT_EQ(slurp(p), "kept\n");
    expect_no_temporaries(t);
}

// In a death test's child: two outputs half written, then the signal twice.
[[noreturn]] void signal_twice_while_writing(int sig, const std::string& a_path,
                                             const std::string& b_path) {
    install_interrupt_handlers();
    OutputFile a(a_path, "x");
    OutputFile b(b_path, "y");
    a.write("half a model");
    b.write("half a document");
    std::raise(sig);  // the first: a request to stop soon
    std::raise(sig);  // the second: the end
    std::_Exit(0);
}

// A second Ctrl-C ends the process at once, without destructors: the temporaries of unfinished
// outputs are removed on the signal's path (a second Ctrl-C left synth's 109 MB temporary).
TEST(FileIoDeathTest, ASecondSignalLeavesNoTemporary) {
    for (const int sig : {SIGINT, SIGTERM}) {
        TempDir t;
        const std::string p = t.file("model.gguf");
        write_output_file(p, "kept\n", "x");
        EXPECT_EXIT(signal_twice_while_writing(sig, p, t.file("other.json")),
                    testing::KilledBySignal(sig), "");
        EXPECT_EQ(slurp(p), "kept\n");
        EXPECT_FALSE(fs::exists(t.file("other.json")));
        expect_no_temporaries(t);
    }
}

// What unlink_pending_outputs() removes is an unfinished output's temporary, never a target.
TEST(FileIo, UnlinkPendingOutputsRemovesOnlyUnfinishedTemporaries) {
    TempDir t;
    const std::string done = t.file("done.json"), open = t.file("open.json");
    write_output_file(done, "done\n", "x");
    {
        OutputFile f(open, "x");
        f.write("half");
        unlink_pending_outputs();
        expect_no_temporaries(t);
        EXPECT_THROW(f.commit(), Error);  // its temporary is gone: cannot be moved into place
    }
    unlink_pending_outputs();
    EXPECT_EQ(slurp(done), "done\n");
    EXPECT_FALSE(fs::exists(open));
}

TEST(FileIo, ALinkToARegularFileStaysALink) {
    TempDir t;
    const std::string target = t.file("target.json"), link = t.file("link.json");
    write_output_file(target, "old\n", "x");
    fs::create_symlink(target, link);
    write_output_file(link, "new\n", "x");
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(slurp(target), "new\n");
    expect_no_temporaries(t);
}

TEST(FileIo, DevNullStaysACharacterDevice) {
    write_output_file("/dev/null", "anything\n", "the result file");
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_FALSE(output_is_replaced("/dev/null"));
    EXPECT_NO_THROW(check_output_path("/dev/null", "x"));
}

TEST(FileIo, AFifoWithAReaderGetsTheContent) {
    TempDir t;
    const std::string p = t.file("fifo");
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    const std::string text(1 << 20, 'x');  // larger than a pipe's buffer: the writer must wait
    std::string got;
    std::thread reader([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the writer waits
        got = slurp(p);
    });
    write_output_file(p, text, "the trace file");
    reader.join();
    EXPECT_EQ(got.size(), text.size());
    EXPECT_EQ(got, text);
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(FileIo, AFifoWithoutAReaderFailsInBoundedTime) {
    TempDir t;
    const std::string p = t.file("fifo");
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    try {
        write_output_file(p, "x", "the result file (--out)");
        ADD_FAILURE() << "wrote to a FIFO nobody reads";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("FIFO"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("--out"), std::string::npos) << e.what();
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(s, kFifoReaderWait_ms / 1000.0 + 5);
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(FileIo, DirectoriesAndMissingDirectoriesAreRefused) {
    TempDir t;
    EXPECT_EQ(kind_of([&] { write_output_file(t.path.string(), "x", "x"); }), ErrorKind::input);
    EXPECT_EQ(kind_of([&] { check_output_path(t.path.string(), "x"); }), ErrorKind::input);
    EXPECT_EQ(kind_of([&] { check_output_path(t.file("no/such/dir/r.json"), "x"); }),
              ErrorKind::input);
    EXPECT_EQ(kind_of([&] { check_output_path("", "x"); }), ErrorKind::usage);
    EXPECT_TRUE(fs::is_directory(t.path));
}

TEST(FileIo, InputsMustBeRegularFiles) {
    TempDir t;
    const std::string fifo = t.file("fifo"), reg = t.file("r.txt");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    write_output_file(reg, "text", "x");
    EXPECT_EQ(read_input_file(reg, "log"), "text");
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(kind_of([&] { read_input_file(fifo, "log"); }), ErrorKind::input);
    EXPECT_EQ(kind_of([&] { read_input_file("/dev/zero", "model"); }), ErrorKind::input);
    EXPECT_EQ(kind_of([&] { read_input_file(t.path.string(), "document"); }), ErrorKind::input);
    EXPECT_EQ(kind_of([&] { read_input_file(t.file("absent"), "document"); }), ErrorKind::input);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2);
    try {
        require_regular_file(fifo, "log");
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("a FIFO, not a regular file"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sb
