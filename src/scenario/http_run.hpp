#pragma once
// The HTTP side of `stagebench run`: tests on an engine behind a server, measured with the
// stage definitions of engine/http_engine.hpp and mapped onto the one TestResult every
// reporter reads:
//   prefill  n_prompt / TTFT per repetition (TTFT includes the first token and the transport);
//   decode   tokens after the first / (E2E - TTFT), its raw samples the inter-token gaps;
//   ttft_ns  TTFT; client{} E2E, TPOT, first content, token counts; server{} the server's own
//            stage timings with client - server differences.
// The server is either given (--url) or a llama-server that stagebench starts on 127.0.0.1
// for each GGUF (-m FILE, --engine http without --url); `--engine llama,http` runs every test
// on both, the in-process test first, so the two appear side by side.
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/engine_factory.hpp"
#include "engine/http_engine.hpp"
#include "scenario/stage_sweep.hpp"

namespace sb {

class RunContext;

struct HttpRunOptions {
    std::vector<EngineKind> engines{EngineKind::llama};  // llama, http, or both
    std::optional<std::string> url;  // --url; none: stagebench starts llama-server
    HttpApi api = HttpApi::openai;
    double timeout_s = 120;  // connect and silent-read timeout
};

// Runs one test on an engine that measures whole requests (a server) through the one
// repetition loop (scenario/repetition.hpp), each repetition one whole request. model is the
// name sent to the server ("" for its default). Never throws for a failure of the test: it is
// recorded (status failed, error one line, its kind unknown; interrupted when the interrupt cut
// it off) with the repetitions before it.
TestResult run_http_test(Engine& engine, const std::string& model, const TestConfig& config,
                         const SweepHooks& hooks, const Clock& clock = now_ns);

// Plans, connects and runs the HTTP tests of one `run` invocation.
class HttpRun {
  public:
    // Checks the combination of options; throws sb::Error(usage) for a bad one (no engine, -d
    // with http, --url with the in-process engine, no model and no URL...) and
    // sb::Error(input) when llama-server is needed but not found.
    HttpRun(const HttpRunOptions& opts, const MatrixSpec& matrix,
            const std::vector<std::string>& rpc_servers);
    ~HttpRun();

    bool uses_llama() const { return llama_; }
    bool uses_http() const { return http_; }
    // -m names GGUF files (the in-process engine, or the llama-server stagebench starts).
    bool needs_gguf() const { return llama_ || !opts_.url; }

    // Every test of the run in order: an in-process test, then the HTTP test of the same
    // point. Throws sb::Error(usage) as expand_matrix does.
    std::vector<TestConfig> plan(const MatrixSpec& matrix);

    // With --url: reaches the server through the run's engine factory (sb::Error(input) when
    // it cannot), names the default model in tests that have none, lists server models in
    // doc.models. Describes the engines in doc.engines and adds a warning when the server is
    // not on this machine.
    void connect(RunContext& run, std::vector<TestConfig>& tests);

    // Runs one HTTP test (starting or switching the managed llama-server first).
    TestResult run(const TestConfig& config, const SweepHooks& hooks, const Clock& clock = now_ns);

    // Stops a managed llama-server.
    void stop();

  private:
    struct Managed;
    HttpRunOptions opts_;
    bool llama_ = false, http_ = false;
    std::string server_bin_;
    int n_ctx_ = 0;
    std::unique_ptr<Engine> engine_;  // --url
    std::unique_ptr<Managed> managed_;
};

}  // namespace sb
