#pragma once
// FakeServeTarget: a scripted server for `serve` (engine/serve_target.hpp) on a FakeTimeline,
// so run_serve is tested end to end with exact times. A request streams n_out tokens: the
// first ttft_ns after its send, then one every itl_ns; the Generation it returns is what a
// real stream of those chunks would give (usage counts as streamed), so request_measure's
// arithmetic and serve's bookkeeping run as in a real run.
//
// Time: a client's generate() lets the request's whole time pass on the timeline before it
// returns (calls from several threads take their turns, one request after another); requests
// in flight on streams() end at their scripted end, the clock moved on by wait(). Ctrl-C
// (core/interrupt.hpp) cuts a request as a real transfer is cut: it ends then, with the error
// "interrupted". Every
// request is logged on the timeline as a FakeCall (engine "serve", op request, n_tokens its
// prompt's tokens, index its order of sending, start_ns its send, end_ns its end).
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "engine/serve_target.hpp"

namespace sb {

class FakeTimeline;
struct FakeCall;

// How the scripted server answers one request.
struct FakeServeReply {
    int64_t ttft_ns = 0;
    int64_t itl_ns = 0;
    std::optional<int64_t> n_out;         // tokens streamed (default: as many as asked)
    std::optional<std::string> error;     // fails ttft_ns after its send (sb::Error(runtime))
    std::optional<ServerTimings> server;  // the server's own timings of it, as it says them
};

struct FakeServeScript {
    // The reply to a request (call: its log entry, end_ns not yet set; n_gen: the tokens
    // asked). Null: TTFT 10 ms + 100 us per prompt token, a token every 10 ms, as many as
    // asked.
    std::function<FakeServeReply(const FakeCall& call, int64_t n_gen)> reply;
    // Runs when a request is sent, before the reply: a test requests an interrupt from it
    // (Ctrl-C within a point: the request is cut, as every request in flight).
    std::function<void(const FakeCall& call)> before;
    // Runs when a prompt is made (index: prompts made before it): a test requests an interrupt
    // from it (Ctrl-C between points, while the next point's prompts are made).
    std::function<void(int index)> on_prompt;
    // What describe() answers (default: {"url", "api", "server": "fake-server", "models": []}).
    std::optional<nlohmann::json> about;
};

class FakeServeTarget final : public ServeTarget {
  public:
    FakeServeTarget(FakeTimeline& timeline, const HttpEngineOptions& server,
                    FakeServeScript script);

    nlohmann::json describe() const override;
    // tokens: n_tokens ids from seed (a distinct prompt per seed), exact; takes no time.
    HttpPrompt make_prompt(const std::string& model, int64_t n_tokens, uint64_t seed) override;
    std::unique_ptr<ServeClient> client() override;
    std::unique_ptr<ServeStreams> streams() override;
    void pause(int64_t ns) override;

  private:
    class Client;
    class Streams;
    // A request sent now: logged, `before` run, replied to (under mu_). Returns its log index
    // and reply.
    std::pair<size_t, FakeServeReply> send(const HttpPrompt& prompt, int64_t n_gen);
    // The Generation of a request sent at start_ns with this reply (throws the reply's error).
    static Generation generation(const FakeServeReply& reply, const HttpPrompt& prompt,
                                 int64_t n_gen, int64_t start_ns, int index);
    // Its end: its last token, or ttft_ns after the send for an error.
    static int64_t end_of(const FakeServeReply& reply, int64_t n_gen, int64_t start_ns);
    void set_end(size_t call, int64_t end_ns);

    FakeTimeline& tl_;
    HttpEngineOptions server_;
    FakeServeScript script_;
    int sent_ = 0, prompts_ = 0;
    std::mutex mu_;  // clients on several threads
};

}  // namespace sb
