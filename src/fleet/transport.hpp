#pragma once
// How the fleet reaches a device: a shell command line run there, a file pushed or pulled.
//  - ssh: OpenSSH's ssh (BatchMode: never a prompt), files through `cat` on the far side;
//  - adb: `adb -s SERIAL shell|push|pull` (the adb on PATH, or $STAGEBENCH_ADB);
//  - local: this machine's sh, files copied;
//  - exec: like local, but the device's stagebench runs behind a command prefix (an emulator
//    such as qemu-aarch64).
// Every call has a deadline; a failure to reach the device is a ProcessResult the caller
// reads (shell) or an sb::Error(runtime), one line naming the device (push, pull).
#include <memory>
#include <string>
#include <vector>

#include "core/subprocess.hpp"
#include "fleet/inventory.hpp"

namespace sb {

class Transport {
  public:
    virtual ~Transport() = default;
    // Runs cmd with the device's sh. stdout_path: where its stdout goes ("": captured).
    virtual ProcessResult shell(const std::string& cmd, double timeout_s,
                                const std::string& stdout_path = "") = 0;
    virtual void push(const std::string& local, const std::string& remote, double timeout_s) = 0;
    virtual void pull(const std::string& remote, const std::string& local, double timeout_s) = 0;
    // The words before a deployed stagebench (an exec device's prefix), else none.
    virtual std::vector<std::string> run_prefix() const { return {}; }
    // Whether the device's files are this machine's (local, exec).
    virtual bool is_this_machine() const { return false; }
};

std::unique_ptr<Transport> make_transport(const DeviceSpec& d);

// The ssh command line for d (without the remote command): used by the ssh transport and
// shown by `fleet hosts`.
std::vector<std::string> ssh_argv(const DeviceSpec& d);

// One line for a failed transport call: the program's own last line, or what killed it.
std::string transport_error(const DeviceSpec& d, const std::string& what, const ProcessResult& r);

}  // namespace sb
