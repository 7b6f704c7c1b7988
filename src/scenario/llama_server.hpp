#pragma once
// A llama-server that stagebench starts on 127.0.0.1 for a GGUF (`run --engine http -m FILE`,
// `serve -m FILE`): the peer built from the same llama.cpp tree, on a free port, its log in the
// temporary folder (kept, and named in the error, when it fails), stopped when this goes out of
// scope.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/http_engine.hpp"
#include "engine/process.hpp"

namespace sb {

struct LlamaServerSpec {
    std::string binary;  // find_peer_program("llama-server")
    std::string model;
    int threads = 0;  // 0: llama-server's default
    int n_ctx = 0;
    int slots = 1;  // -np
    HttpApi api = HttpApi::openai;
    double timeout_s = 120;
    // More of llama-server's own flags, after the ones above (a later flag wins in its
    // parser): `explain --server-args`.
    std::vector<std::string> extra_args;
    // Tokens no request to it may draw (HttpEngineOptions::banned_tokens).
    std::vector<int32_t> banned_tokens;
};

// Why a llama-server that did not start failed, from its log: the first line that names an
// error, as llama_reason() words it ("unknown model architecture: 'x'"), else the first failed
// assertion or abort without its source location, else the last line; a debugger's lines
// (llama.cpp's abort handler attaching gdb) are skipped. One line of at most 300 bytes.
std::string startup_failure(const std::string& log_path);

class LlamaServer {
  public:
    // Starts it and waits until /health answers 200 and a client connected (at most
    // max(120 s, timeout_s)). Throws, one line with the reason from its log
    // (startup_failure) and the log's path: sb::Error(input) when it exits before serving
    // (a model or an option it refuses), sb::Error(runtime) when it does not become ready in
    // time or Ctrl-C came first ("interrupted ...").
    LlamaServer(const LlamaServerSpec& spec,
                const std::function<void(const std::string&)>& progress);
    ~LlamaServer();
    LlamaServer(const LlamaServer&) = delete;
    LlamaServer& operator=(const LlamaServer&) = delete;
    const std::string& url() const { return url_; }
    HttpEngine& engine() { return *engine_; }
    // Its log (stdout and stderr), removed with this object unless it failed to start or
    // ended by itself.
    const std::string& log_path() const { return log_; }
    // Once it has ended by itself (crashed, aborted, killed): one line saying so, how, the
    // reason from its log (startup_failure) and the log's path, which is then kept; nullopt
    // while it runs. Requests to a dead server fail with "cannot connect": this says why.
    std::optional<std::string> ended();

  private:
    std::string url_, log_;
    std::vector<std::string> extra_args_;  // to redact what its log quotes of them
    bool keep_log_ = false;
    ChildProcess proc_;
    std::unique_ptr<HttpEngine> engine_;
};

}  // namespace sb
