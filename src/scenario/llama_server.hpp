#pragma once
// A llama-server that stagebench starts on 127.0.0.1 for a GGUF (`run --engine http -m FILE`,
// `serve -m FILE`, `explain`): the peer built from the same llama.cpp tree, on a free port, its
// log in the temporary folder (kept, and named in the error, when it fails), stopped when this
// goes out of scope. The ManagedServer (engine/managed_server.hpp) the run's engine factory
// starts (scenario/default_engines.hpp); runners ask the factory, never construct one.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "engine/http_engine.hpp"
#include "engine/managed_server.hpp"
#include "engine/process.hpp"

namespace sb {

// Why a llama-server that did not start failed, from its log: the first line that names an
// error, as llama_reason() words it ("unknown model architecture: 'x'"), else the first failed
// assertion or abort without its source location, else the last line; a debugger's lines
// (llama.cpp's abort handler attaching gdb) are skipped. One line of at most 300 bytes.
std::string startup_failure(const std::string& log_path);

class LlamaServer final : public ManagedServer {
  public:
    // Starts it and waits until /health answers 200 and a client connected (at most
    // max(120 s, timeout_s) on clock, polling every 50 ms: pause lets the time pass; the run's,
    // through the engine factory that makes it). Throws, one line with the reason from its log
    // (startup_failure) and the log's path: sb::Error(input) when it exits before serving
    // (a model or an option it refuses), sb::Error(runtime) when it does not become ready in
    // time or Ctrl-C came first ("interrupted ...").
    LlamaServer(const LlamaServerSpec& spec,
                const std::function<void(const std::string&)>& progress, const Clock& clock,
                const Pause& pause);
    ~LlamaServer();
    LlamaServer(const LlamaServer&) = delete;
    LlamaServer& operator=(const LlamaServer&) = delete;
    const std::string& url() const override { return url_; }
    HttpEngine& engine() override { return *engine_; }
    // Its log (stdout and stderr), removed with this object unless it failed to start or
    // ended by itself.
    const std::string& log_path() const { return log_; }
    // The log's text so far.
    std::string log() const override;
    // Once it has ended by itself (crashed, aborted, killed): one line saying so, how, the
    // reason from its log (startup_failure) and the log's path, which is then kept; nullopt
    // while it runs. Requests to a dead server fail with "cannot connect": this says why.
    std::optional<std::string> ended() override;

  private:
    std::string url_, log_;
    std::vector<std::string> extra_args_;  // to redact what its log quotes of them
    bool keep_log_ = false;
    ChildProcess proc_;
    std::unique_ptr<HttpEngine> engine_;
};

}  // namespace sb
