#pragma once
// A tiny HTTP/1.1 server on 127.0.0.1 for fault-injection tests of engines behind HTTP: the
// handler sees each request and writes whatever bytes it likes (a good stream, malformed SSE,
// an error status, half a stream and a closed socket, or nothing at all). One thread per
// connection; every connection is closed when its handler returns. The destructor stops the
// server, waking handlers that hang in wait_until_stopped().
#include <atomic>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace sbtest {

struct HttpRequest {
    std::string method, path, body;
    nlohmann::json json() const;  // the body as JSON (null when it is not JSON)
};

class FaultConn {
  public:
    FaultConn(int fd, const std::atomic<bool>& stop) : fd_(fd), stop_(stop) {}
    bool send(std::string_view bytes);  // false when the peer has gone
    // Reads the next request on the connection (headers, then Content-Length bytes of body);
    // false when the peer closed it or the server stops first.
    bool read_request(HttpRequest& out);
    // A whole response with Content-Length and Connection: close.
    void reply(int status, const std::string& content_type, const std::string& body);
    // A streamed response: headers with Transfer-Encoding: chunked, then chunks.
    void begin_chunked(int status, const std::string& content_type);
    bool chunk(std::string_view data);
    void end_chunked();  // the terminating zero-length chunk
    void sleep_ms(int ms);
    void wait_until_stopped();  // a server that accepted and never answers

  private:
    int fd_;
    const std::atomic<bool>& stop_;
    std::string buf_;  // bytes read past the last request
};

using FaultHandler = std::function<void(const HttpRequest&, FaultConn&)>;

class FaultServer {
  public:
    explicit FaultServer(FaultHandler handler);
    ~FaultServer();
    FaultServer(const FaultServer&) = delete;
    FaultServer& operator=(const FaultServer&) = delete;
    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    int requests() const { return requests_.load(); }

  private:
    void serve(int fd);
    FaultHandler handler_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> requests_{0};
    std::thread acceptor_;
    std::mutex mu_;
    std::vector<std::thread> conns_;
};

// A TCP server on 127.0.0.1 that speaks no protocol: for fault-injection tests of RPC clients.
// The handler gets every accepted connection at once (nothing is read first) and may send
// bytes, wait, or return (the connection is then closed). The destructor stops the server,
// waking handlers that hang in wait_until_stopped().
class RawFaultServer {
  public:
    explicit RawFaultServer(std::function<void(FaultConn&)> handler);
    ~RawFaultServer();
    RawFaultServer(const RawFaultServer&) = delete;
    RawFaultServer& operator=(const RawFaultServer&) = delete;
    int port() const { return port_; }
    std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
    int connections() const { return connections_.load(); }

  private:
    std::function<void(FaultConn&)> handler_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> connections_{0};
    std::thread acceptor_;
    std::mutex mu_;
    std::vector<std::thread> conns_;
};

// Answers what a client asks before generating (GET /v1/models lists "fault-model"; /props,
// /tokenize and anything else unknown: 404). Returns false for a generation request
// (POST /v1/completions, /v1/chat/completions), which the test's handler answers.
bool answer_discovery(const HttpRequest& req, FaultConn& conn);

// One SSE message of an OpenAI completion stream carrying text.
std::string sse_text(const std::string& text);
// The final SSE messages: finish_reason, usage and [DONE].
std::string sse_final(int prompt_tokens, int completion_tokens);

}  // namespace sbtest
