#pragma once
// How the fleet reaches a device: a shell command line run there, a file pushed or pulled.
//  - ssh: OpenSSH's ssh (BatchMode: never a prompt), files through `cat` on the far side;
//    with an SshSharing, every call to the device goes over one connection (see below);
//  - adb: `adb -s SERIAL shell|push|pull` (the adb on PATH, or $STAGEBENCH_ADB);
//  - local: this machine's sh, files copied;
//  - exec: like local, but the device's stagebench runs behind a command prefix (an emulator
//    such as qemu-aarch64).
// Every call has a deadline; a failure to reach the device is a ProcessResult the caller
// reads (shell) or an sb::Error(runtime), one line naming the device (push, pull).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/subprocess.hpp"
#include "fleet/inventory.hpp"

namespace sb {

// The most bytes a device may send back into a file here that no manifest sizes: a command's
// stdout (shell with a stdout_path), a document written with --out, a results folder's
// result.json or stderr.log when its manifest is missing.
inline constexpr std::uint64_t kMaxUnlistedFileBytes = std::uint64_t{1} << 30;

class Transport {
  public:
    virtual ~Transport() = default;
    // Runs cmd with the device's sh. stdout_path: where its stdout goes ("": captured), at
    // most kMaxUnlistedFileBytes (then stopped, the result's over_limit set).
    virtual ProcessResult shell(const std::string& cmd, double timeout_s,
                                const std::string& stdout_path = "") = 0;
    virtual void push(const std::string& local, const std::string& remote, double timeout_s) = 0;
    // What a device sends is a claim: max_bytes bounds what a copy back writes here. Over
    // ssh the copy is stopped there (ProcessOptions::max_stdout_file); a local file larger is
    // not copied; adb's pull writes the file itself: a file the device says is larger (stat)
    // is not copied, and one that turns out larger is refused after the copy (bounded on disk
    // only by the deadline then).
    virtual void pull(const std::string& remote, const std::string& local, double timeout_s,
                      std::uint64_t max_bytes) = 0;
    // Copies the files names (plain names, no '/') of the device's folder remote_dir into the
    // folder local_dir here, within timeout_s, max_bytes of them together (a results
    // manifest's sizes; the tar's headers are allowed on top); throws as pull. Default: one
    // pull per file; ssh: one `tar -cf -` stream over one call, read here (regular files of
    // those names only).
    virtual void pull_files(const std::string& remote_dir, const std::vector<std::string>& names,
                            const std::string& local_dir, double timeout_s,
                            std::uint64_t max_bytes);
    // The words before a deployed stagebench (an exec device's prefix), else none.
    virtual std::vector<std::string> run_prefix() const { return {}; }
    // Whether the device's files are this machine's (local, exec).
    virtual bool is_this_machine() const { return false; }
};

// Connection sharing over ssh for the length of one stagebench command (OpenSSH's
// ControlMaster): a private folder (mode 0700, in $TMPDIR or /tmp) holds one control socket per
// device; the first ssh to a device opens the connection (the one handshake) and leaves it
// open in the background, every later ssh, push and pull to that device is a session over it.
// A connection idle for 60 s closes itself (ControlPersist); one that is gone (closed, or
// dropped with the device) is opened again by the next call, and a call whose connection drops
// under it fails as a direct one would (ssh's exit 255). Each call keeps its own deadline.
// A device whose ssh_options name any Control* option (ControlMaster=no turns sharing off) or
// -S/-M is left to them. The destructor closes every connection it opened (ssh -O exit, also
// after Ctrl-C, 10 s at most each) and removes the folder. Without a usable folder (none can
// be made, or its path is too long for a socket) there is no sharing: every call connects.
class SshSharing {
  public:
    SshSharing();
    ~SshSharing();
    SshSharing(const SshSharing&) = delete;
    SshSharing& operator=(const SshSharing&) = delete;
    // The control socket for the device of that index; "" when there is no sharing.
    std::string control_path(std::size_t index) const;

  private:
    std::string dir_;
};

// Whether ssh_options take connection sharing in hand (a Control* option, -S or -M).
bool ssh_options_share(const std::vector<std::string>& ssh_options);

// control_path: an ssh device's control socket (SshSharing::control_path), "" for none.
std::unique_ptr<Transport> make_transport(const DeviceSpec& d,
                                          const std::string& control_path = "");

// The ssh command line for d (without the remote command): used by the ssh transport and
// shown by `fleet hosts`.
std::vector<std::string> ssh_argv(const DeviceSpec& d);

// Unpacks the tar (ustar or GNU, as GNU, busybox and toybox `tar -c` write it) at tar_path
// into dir: its regular files named in names (plain names, written with or without "./"); pax
// headers are skipped; anything else (a link, a folder, another name, a GNU long name) is
// refused, so that what a device sends back writes nowhere else. Returns "" or, in a few
// words, why it stopped (what it wrote so far stays).
std::string untar_files(const std::string& tar_path, const std::vector<std::string>& names,
                        const std::string& dir);

// One line for a failed transport call: the program's own last line, or what killed it
// (max_bytes: the call's limit, named when the device sent more).
std::string transport_error(const DeviceSpec& d, const std::string& what, const ProcessResult& r,
                            std::uint64_t max_bytes = 0);

}  // namespace sb
