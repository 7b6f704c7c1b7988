#pragma once
// Files named on the command line, read and written so that no path can hang or corrupt a run.
//
// Inputs (models, logs, documents) must be regular files: a FIFO, a device or a directory in
// their place is refused with one line (sb::Error(input)) instead of a read that blocks forever.
//
// Outputs (--out, --trace, report -o, trace -o, synth -o, ...):
//   - a regular file, or a path that does not exist yet: written to a temporary file beside it
//     and renamed over it, so a reader never sees half a document;
//   - a symbolic link to a regular file: the same, on the file it points to (the link stays);
//   - a FIFO or a character device (/dev/null, /dev/stdout, a terminal), also through a link:
//     written in place, never replaced by a regular file. A FIFO must have a reader: when none
//     opens it within kFifoReaderWait_ms the write fails with one line; a reader that stops
//     reading for kStalledWrite_ms fails it too. Writing never blocks without a deadline;
//   - a directory, a socket or a block device: refused with one line (sb::Error(input)).
#include <cstdint>
#include <string>
#include <string_view>

namespace sb {

constexpr int64_t kFifoReaderWait_ms = 2000;
constexpr int64_t kStalledWrite_ms = 10000;

// Throws sb::Error(input), one line naming what and path, unless path is a regular file (or a
// link to one) that exists. what: "model", "log", "result document", ...
void require_regular_file(const std::string& path, const std::string& what);

// The whole content of a regular file (require_regular_file first). Throws sb::Error(input).
std::string read_input_file(const std::string& path, const std::string& what);

// True when path is written by renaming a temporary over it (it does not exist, or is a
// regular file or a link to one); false for outputs written in place (FIFOs, devices), which
// a command writes once, at its end, rather than after every test.
bool output_is_replaced(const std::string& path);

// Checks before any measurement that path can be written (see above): throws sb::Error(input)
// for a directory, a socket, a block device, or a new file in a directory that does not exist
// or is not writable. Creates nothing.
void check_output_path(const std::string& path, const std::string& what);

// One output being written. Opening does check_output_path's checks and throws the same
// errors; write() and commit() throw sb::Error(runtime) when the bytes cannot be written. An
// output that is destroyed without commit() leaves a regular target untouched (the temporary
// is removed, also by a second Ctrl-C: unlink_pending_outputs()).
class OutputFile {
  public:
    OutputFile(const std::string& path, const std::string& what);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(std::string_view bytes);
    void commit();
    bool in_place() const { return in_place_; }
    const std::string& path() const { return path_; }

  private:
    void fail(const std::string& why);
    std::string path_, what_;
    std::string target_;  // the file renamed over (a link's target), or the path written
    std::string tmp_;     // the temporary beside target_ ("" when writing in place)
    int fd_ = -1;
    int pending_ = -1;  // tmp_'s slot for unlink_pending_outputs(); -1 when none
    bool in_place_ = false;
};

// Removes the temporaries of every OutputFile not yet committed or destroyed. Async-signal-safe
// (unlink(2) on paths kept in static storage): core/interrupt.cpp calls it before a second
// SIGINT or SIGTERM ends the process, which runs no destructor. Up to 32 temporaries at once
// are known to it, each path shorter than 4096 bytes.
void unlink_pending_outputs();

// OutputFile(path, what), write(text), commit().
void write_output_file(const std::string& path, std::string_view text, const std::string& what);

}  // namespace sb
