#include "engine/serve_target.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/http_client.hpp"

namespace sb {
namespace {

class HttpServeClient final : public ServeClient {
  public:
    explicit HttpServeClient(const HttpEngineOptions& o) : e_(o) { e_.connect(); }
    Generation generate(const std::string& model, const HttpPrompt& prompt, int64_t n_gen,
                        uint64_t seed) override {
        return e_.generate(model, prompt, n_gen, seed);
    }

  private:
    HttpEngine e_;
};

class HttpServeStreams final : public ServeStreams {
  public:
    HttpServeStreams(const HttpEngine& main, const HttpEngineOptions& o)
        : main_(main), multi_(o.url, o.timeouts) {}
    void start(const std::string& model, const HttpPrompt& prompt, int64_t n_gen, uint64_t seed,
               OnDone on_done) override {
        std::shared_ptr<GenerationStream> st = main_.start_generation(model, prompt, n_gen, seed);
        // The stream lives until its transfer ended and on_done heard of it.
        multi_.start_stream(
            st->path(), st->body(),
            [raw = st.get()](std::string_view b, int64_t t) { return raw->on_bytes(b, t); },
            [st, done = std::move(on_done)](StreamOutcome out) {
                done([&] { return st->finish(out); });
            });
    }
    void wait(int64_t wait_ns) override {
        if (multi_.in_flight() == 0)
            std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<int64_t>(wait_ns, 0)));
        else
            multi_.poll(static_cast<int>(std::clamp<int64_t>(wait_ns / 1'000'000, 0, 1000)));
    }
    int in_flight() const override { return multi_.in_flight(); }

  private:
    const HttpEngine& main_;
    HttpMulti multi_;
};

class HttpServeTarget final : public ServeTarget {
  public:
    explicit HttpServeTarget(const HttpEngineOptions& o) : o_(o), main_(o) { main_.connect(); }
    nlohmann::json describe() const override { return main_.describe(); }
    HttpPrompt make_prompt(const std::string& model, int64_t n_tokens, uint64_t seed) override {
        return main_.make_prompt(model, n_tokens, seed);
    }
    std::unique_ptr<ServeClient> client() override { return std::make_unique<HttpServeClient>(o_); }
    std::unique_ptr<ServeStreams> streams() override {
        return std::make_unique<HttpServeStreams>(main_, o_);
    }
    void pause(int64_t ns) override {
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<int64_t>(ns, 0)));
    }

  private:
    HttpEngineOptions o_;
    HttpEngine main_;
};

}  // namespace

std::unique_ptr<ServeTarget> http_serve_target(const HttpEngineOptions& o) {
    return std::make_unique<HttpServeTarget>(o);
}

}  // namespace sb
