#include "engine/fake_serve.hpp"

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "engine/fake_engine.hpp"

namespace sb {

class FakeServeTarget::Client final : public ServeClient {
  public:
    explicit Client(FakeServeTarget& t) : t_(t) {}
    Generation generate(const std::string&, const HttpPrompt& prompt, int64_t n_gen,
                        uint64_t) override {
        // One request at a time on the timeline: its whole time passes before the next.
        std::lock_guard<std::mutex> lock(t_.mu_);
        const auto [call, reply] = t_.send(prompt, n_gen);
        const int64_t start = t_.tl_.now_ns();
        if (interrupt_requested())
            throw runtime_error("interrupted");
        const int64_t end = end_of(reply, n_gen, start);
        t_.tl_.advance(end - start);
        t_.set_end(call, end);
        return generation(reply, prompt, n_gen, start, t_.tl_.calls()[call].index);
    }

  private:
    FakeServeTarget& t_;
};

class FakeServeTarget::Streams final : public ServeStreams {
  public:
    explicit Streams(FakeServeTarget& t) : t_(t) {}
    void start(const std::string&, const HttpPrompt& prompt, int64_t n_gen, uint64_t,
               OnDone on_done) override {
        const auto [call, reply] = t_.send(prompt, n_gen);
        const int64_t start = t_.tl_.now_ns();
        flight_.push_back(
            {call, reply, prompt, n_gen, start, end_of(reply, n_gen, start), std::move(on_done)});
        t_.set_end(call, flight_.back().end_ns);
    }
    void wait(int64_t wait_ns) override {
        if (interrupt_requested()) {
            // Ctrl-C cuts every transfer in flight, as HttpMulti's do.
            std::vector<InFlight> cut = std::move(flight_);
            flight_.clear();
            for (auto& f : cut) {
                t_.set_end(f.call, t_.tl_.now_ns());
                f.on_done([]() -> Generation { throw runtime_error("interrupted"); });
            }
            return;
        }
        int64_t until = t_.tl_.now_ns() + std::max<int64_t>(wait_ns, 0);
        for (const auto& f : flight_)
            until = std::min(until, f.end_ns);
        t_.tl_.advance(std::max<int64_t>(until - t_.tl_.now_ns(), 0));
        // Those that ended by now, in the order they end (then the order they were sent).
        std::vector<InFlight> ended;
        for (auto it = flight_.begin(); it != flight_.end();)
            if (it->end_ns <= t_.tl_.now_ns()) {
                ended.push_back(std::move(*it));
                it = flight_.erase(it);
            } else {
                ++it;
            }
        std::stable_sort(ended.begin(), ended.end(),
                         [](const InFlight& a, const InFlight& b) { return a.end_ns < b.end_ns; });
        for (auto& f : ended) {
            const int index = t_.tl_.calls()[f.call].index;
            f.on_done([&] { return generation(f.reply, f.prompt, f.n_gen, f.start_ns, index); });
        }
    }
    int in_flight() const override { return static_cast<int>(flight_.size()); }

  private:
    struct InFlight {
        size_t call = 0;
        FakeServeReply reply;
        HttpPrompt prompt;
        int64_t n_gen = 0, start_ns = 0, end_ns = 0;
        OnDone on_done;
    };
    FakeServeTarget& t_;
    std::vector<InFlight> flight_;
};

FakeServeTarget::FakeServeTarget(FakeTimeline& timeline, const HttpEngineOptions& server,
                                 FakeServeScript script)
    : tl_(timeline), server_(server), script_(std::move(script)) {}

nlohmann::json FakeServeTarget::describe() const {
    if (script_.about)
        return *script_.about;
    return {{"url", server_.url},
            {"api", http_api_name(server_.api)},
            {"server", "fake-server"},
            {"models", nlohmann::json::array()}};
}

HttpPrompt FakeServeTarget::make_prompt(const std::string&, int64_t n_tokens, uint64_t seed) {
    if (script_.on_prompt)
        script_.on_prompt(prompts_);
    ++prompts_;
    HttpPrompt p;
    std::mt19937_64 rng(seed);
    for (int64_t i = 0; i < n_tokens; ++i)
        p.tokens.push_back(static_cast<int32_t>(rng() % 1000));
    p.n_tokens = n_tokens;
    p.exact = true;
    return p;
}

std::unique_ptr<ServeClient> FakeServeTarget::client() {
    return std::make_unique<Client>(*this);
}

std::unique_ptr<ServeStreams> FakeServeTarget::streams() {
    return std::make_unique<Streams>(*this);
}

void FakeServeTarget::pause(int64_t ns) {
    std::lock_guard<std::mutex> lock(mu_);
    tl_.advance(std::max<int64_t>(ns, 0));
}

std::pair<size_t, FakeServeReply> FakeServeTarget::send(const HttpPrompt& prompt, int64_t n_gen) {
    FakeCall c;
    c.engine = "serve";
    c.op = FakeOp::request;
    c.index = sent_++;
    c.n_tokens = prompt.n_tokens;
    c.start_ns = c.end_ns = tl_.now_ns();
    tl_.calls_.push_back(c);
    const size_t at = tl_.calls_.size() - 1;
    if (script_.before)
        script_.before(c);
    FakeServeReply r;
    if (script_.reply) {
        r = script_.reply(c, n_gen);
    } else {
        r.ttft_ns = 10'000'000 + 100'000 * prompt.n_tokens;
        r.itl_ns = 10'000'000;
    }
    return {at, r};
}

Generation FakeServeTarget::generation(const FakeServeReply& reply, const HttpPrompt& prompt,
                                       int64_t n_gen, int64_t start_ns, int index) {
    if (reply.error)
        throw runtime_error(*reply.error);
    Generation g;
    g.start_ns = start_ns;
    g.n_asked = n_gen;
    g.prompt_asked = prompt.n_tokens;
    const int64_t n = reply.n_out.value_or(n_gen);
    int64_t t = start_ns + reply.ttft_ns;
    for (int64_t i = 0; i < n; ++i, t += reply.itl_ns)
        g.chunks.push_back({t, true, std::nullopt, std::nullopt});
    g.end_ns = end_of(reply, n_gen, start_ns);
    g.first_byte_ns = start_ns + reply.ttft_ns;
    g.prompt_tokens = prompt.n_tokens;
    g.completion_tokens = n;
    g.finish_reason = "length";
    g.request_id = "fake-" + std::to_string(index);
    g.server = reply.server;
    return g;
}

int64_t FakeServeTarget::end_of(const FakeServeReply& reply, int64_t n_gen, int64_t start_ns) {
    const int64_t n = reply.error ? 1 : std::max<int64_t>(reply.n_out.value_or(n_gen), 1);
    return start_ns + reply.ttft_ns + (n - 1) * reply.itl_ns;
}

void FakeServeTarget::set_end(size_t call, int64_t end_ns) {
    tl_.calls_[call].end_ns = end_ns;
}

}  // namespace sb
