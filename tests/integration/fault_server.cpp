#include "fault_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace sbtest {

nlohmann::json HttpRequest::json() const {
    try {
        return nlohmann::json::parse(body);
    } catch (const std::exception&) {
        return nullptr;
    }
}

bool FaultConn::send(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0)
            return false;
        bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

bool FaultConn::read_request(HttpRequest& req) {
    size_t header_end = std::string::npos;
    size_t want = 0;
    char tmp[8192];
    for (;;) {
        if (header_end == std::string::npos) {
            header_end = buf_.find("\r\n\r\n");
            if (header_end != std::string::npos) {
                const std::string head = buf_.substr(0, header_end);
                const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
                req.method = head.substr(0, sp1);
                req.path = head.substr(sp1 + 1, sp2 - sp1 - 1);
                std::string lower = head;
                for (char& c : lower)
                    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                const size_t cl = lower.find("\r\ncontent-length:");
                want = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 17));
            }
        }
        if (header_end != std::string::npos && buf_.size() >= header_end + 4 + want) {
            req.body = buf_.substr(header_end + 4, want);
            buf_.erase(0, header_end + 4 + want);
            return true;
        }
        if (stop_)
            return false;
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            continue;
        const ssize_t n = recv(fd_, tmp, sizeof tmp, 0);
        if (n <= 0)
            return false;
        buf_.append(tmp, static_cast<size_t>(n));
    }
}

namespace {

const char* reason(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 404:
            return "Not Found";
        case 500:
            return "Internal Server Error";
        case 503:
            return "Service Unavailable";
        default:
            return "Status";
    }
}

}  // namespace

void FaultConn::reply(int status, const std::string& content_type, const std::string& body) {
    send("HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\nContent-Type: " +
         content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body);
}

void FaultConn::begin_chunked(int status, const std::string& content_type) {
    send("HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\nContent-Type: " +
         content_type + "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
}

bool FaultConn::chunk(std::string_view data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return send(std::string(size) + std::string(data) + "\r\n");
}

void FaultConn::end_chunked() {
    send("0\r\n\r\n");
}

void FaultConn::sleep_ms(int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!stop_ && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void FaultConn::wait_until_stopped() {
    while (!stop_)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// A listening socket on 127.0.0.1 at a free port, into fd; returns the port.
static int listen_on_loopback(int& fd) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::runtime_error("socket failed");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        throw std::runtime_error("cannot listen on 127.0.0.1");
    return ntohs(a.sin_port);
}

FaultServer::FaultServer(FaultHandler handler) : handler_(std::move(handler)) {
    port_ = listen_on_loopback(listen_fd_);
    acceptor_ = std::thread([this] {
        while (!stop_) {
            pollfd p{listen_fd_, POLLIN, 0};
            if (poll(&p, 1, 20) <= 0)
                continue;
            const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0)
                continue;
            std::lock_guard<std::mutex> lock(mu_);
            conns_.emplace_back([this, fd] { serve(fd); });
        }
    });
}

FaultServer::~FaultServer() {
    stop_ = true;
    if (acceptor_.joinable())
        acceptor_.join();
    std::vector<std::thread> conns;
    {
        std::lock_guard<std::mutex> lock(mu_);
        conns.swap(conns_);
    }
    for (auto& t : conns)
        t.join();
    close(listen_fd_);
}

void FaultServer::serve(int fd) {
    FaultConn conn(fd, stop_);
    HttpRequest req;
    if (conn.read_request(req)) {
        ++requests_;
        handler_(req, conn);
    }
    shutdown(fd, SHUT_RDWR);
    close(fd);
}

RawFaultServer::RawFaultServer(std::function<void(FaultConn&)> handler)
    : handler_(std::move(handler)) {
    port_ = listen_on_loopback(listen_fd_);
    acceptor_ = std::thread([this] {
        while (!stop_) {
            pollfd p{listen_fd_, POLLIN, 0};
            if (poll(&p, 1, 20) <= 0)
                continue;
            const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0)
                continue;
            ++connections_;
            std::lock_guard<std::mutex> lock(mu_);
            conns_.emplace_back([this, fd] {
                FaultConn conn(fd, stop_);
                handler_(conn);
                shutdown(fd, SHUT_RDWR);
                close(fd);
            });
        }
    });
}

RawFaultServer::~RawFaultServer() {
    stop_ = true;
    if (acceptor_.joinable())
        acceptor_.join();
    std::vector<std::thread> conns;
    {
        std::lock_guard<std::mutex> lock(mu_);
        conns.swap(conns_);
    }
    for (auto& t : conns)
        t.join();
    close(listen_fd_);
}

bool answer_discovery(const HttpRequest& req, FaultConn& conn) {
    if (req.method == "POST" &&
        (req.path == "/v1/completions" || req.path == "/v1/chat/completions"))
        return false;
    if (req.method == "GET" && req.path == "/v1/models") {
        conn.reply(
            200, "application/json",
            R"({"object":"list","data":[{"id":"fault-model","object":"model","owned_by":"fault"}]})");
        return true;
    }
    conn.reply(404, "application/json", R"({"error":{"message":"not found","code":404}})");
    return true;
}

std::string sse_text(const std::string& text) {
    nlohmann::json j{{"object", "text_completion"},
                     {"choices", {{{"index", 0}, {"text", text}, {"finish_reason", nullptr}}}}};
    return "data: " + j.dump() + "\n\n";
}

std::string sse_final(int prompt_tokens, int completion_tokens) {
    nlohmann::json fin{{"object", "text_completion"},
                       {"choices", {{{"index", 0}, {"text", ""}, {"finish_reason", "length"}}}}};
    nlohmann::json usage{{"object", "text_completion"},
                         {"choices", nlohmann::json::array()},
                         {"usage",
                          {{"prompt_tokens", prompt_tokens},
                           {"completion_tokens", completion_tokens},
                           {"total_tokens", prompt_tokens + completion_tokens}}}};
    return "data: " + fin.dump() + "\n\ndata: " + usage.dump() + "\n\ndata: [DONE]\n\n";
}

}  // namespace sbtest
