#pragma once
// A private OpenSSH server on 127.0.0.1 for tests of commands run over ssh (stagebench fleet).
// The constructor makes a fresh temp dir with an ed25519 host key, an ed25519 client key that
// the server accepts for the current user, a known_hosts file naming the host key (and a second
// one naming a different key, for host-key mismatch tests), an sshd_config on a free port, and
// starts /usr/sbin/sshd -D -e in the foreground as a child (its stderr goes to <dir>/sshd.log).
// stop() ends the listener (sessions already forked carry on until they end); start() brings it
// back on the same port. The destructor stops it and removes the temp dir.
//
// A client that trusts only this server:
//   ssh -F none -i identity() -p port() -o BatchMode=yes -o IdentitiesOnly=yes
//       -o UserKnownHostsFile=known_hosts() -o GlobalKnownHostsFile=/dev/null
//       -o StrictHostKeyChecking=yes user()@127.0.0.1 'command'
//
// As root, sshd needs its privilege separation dir /run/sshd; start() creates it (mode 755).
#include <sys/types.h>

#include <string>

namespace sbtest {

class LoopbackSshd {
  public:
    LoopbackSshd();  // throws std::runtime_error (with the sshd log) when sshd does not come up
    ~LoopbackSshd();
    LoopbackSshd(const LoopbackSshd&) = delete;
    LoopbackSshd& operator=(const LoopbackSshd&) = delete;

    int port() const { return port_; }
    std::string user() const { return user_; }
    std::string identity() const;           // the client private key (mode 600)
    std::string known_hosts() const;        // "[127.0.0.1]:PORT <host key>"
    std::string wrong_known_hosts() const;  // the same host name with a different key
    std::string dir() const { return dir_; }
    std::string transport() const;  // "ssh://USER@127.0.0.1:PORT"
    std::string log() const;        // what sshd has written to <dir>/sshd.log so far
    // From the log (sshd runs at LogLevel INFO): the connections it accepted (one per
    // handshake a client made: "Accepted publickey for ..."), and those that have ended since
    // (the client went: "Disconnected from user ...").
    int accepted() const;
    int disconnected() const;
    bool running() const { return pid_ > 0; }

    // Starts sshd (again) on the same port and waits, at most 10 s, until the port accepts a
    // TCP connection and sends an SSH banner. No-op when it is running. Throws
    // std::runtime_error with the log when sshd exits or does not answer in time.
    void start();
    // SIGTERM to the listening sshd and wait for it (SIGKILL after 5 s). No-op when stopped.
    void stop();
    // SIGKILL to every session the listener forked (and their processes: the commands run over
    // ssh), then stop(): a device that drops off the network mid-run.
    void kill_all();

  private:
    std::string path(const std::string& name) const { return dir_ + "/" + name; }
    std::string dir_;
    std::string user_;
    int port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace sbtest
