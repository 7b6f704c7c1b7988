#include "engine/fake_engine.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "engine/server_kind.hpp"
#include "engine/workload.hpp"

namespace sb {

const char* fake_op_name(FakeOp op) {
    switch (op) {
        case FakeOp::load:
            return "load";
        case FakeOp::reset:
            return "reset";
        case FakeOp::fill_to_depth:
            return "fill_to_depth";
        case FakeOp::prefill:
            return "prefill";
        case FakeOp::decode_step:
            return "decode_step";
        case FakeOp::save_state:
            return "save_state";
        case FakeOp::restore_state:
            return "restore_state";
        case FakeOp::request:
            return "request";
        case FakeOp::evaluate:
            break;
    }
    return "evaluate";
}

std::vector<FakeCall> FakeTimeline::calls_of(FakeOp op) const {
    std::vector<FakeCall> out;
    for (const auto& c : calls_)
        if (c.op == op)
            out.push_back(c);
    return out;
}

namespace {

int64_t default_duration_ns(const FakeCall& c) {
    switch (c.op) {
        case FakeOp::load:
            return 5'000'000;
        case FakeOp::reset:
            return 0;
        case FakeOp::fill_to_depth:
            return 10'000 * c.n_tokens;
        case FakeOp::prefill:
            return 100'000 * c.n_tokens;
        case FakeOp::decode_step:
            return 10'000'000;
        case FakeOp::save_state:
            return 1'000'000;
        case FakeOp::restore_state:
            return 2'000'000;
        case FakeOp::request:
            return 100'000 * c.n_tokens + 10'000'000;
        case FakeOp::evaluate:
            break;
    }
    return 0;
}

}  // namespace

std::vector<float> default_fake_logits(std::span<const int32_t> context, int32_t n_vocab) {
    std::vector<float> l(static_cast<size_t>(std::max(n_vocab, 0)));
    const int64_t t = context.empty() ? 0 : context.back();
    const auto n = static_cast<int64_t>(context.size());
    for (size_t j = 0; j < l.size(); ++j)
        l[j] = static_cast<float>((static_cast<int64_t>(j) + t + n) % 7) / 4.0f;
    return l;
}

FakeEngine::FakeEngine(FakeTimeline& timeline, std::string name, FakeScript script)
    : tl_(timeline), name_(std::move(name)), script_(std::move(script)) {}

const FakeCall& FakeEngine::call(FakeOp op, int64_t n_tokens, int32_t token) {
    FakeCall c;
    c.engine = name_;
    c.op = op;
    c.index = counts_[static_cast<int>(op)]++;
    c.n_tokens = n_tokens;
    c.token = token;
    c.start_ns = tl_.now_ns_;
    c.end_ns = c.start_ns;
    tl_.calls_.push_back(c);
    last_valid_ = false;  // every call may change the cached tokens
    // Logged before the script runs, so that a call that throws is in the log too.
    if (script_.before)
        script_.before(c);
    const int64_t d = script_.duration_ns ? script_.duration_ns(c) : default_duration_ns(c);
    tl_.now_ns_ += d;
    tl_.calls_.back().end_ns = tl_.now_ns_;
    return tl_.calls_.back();
}

const LoadSpec& FakeEngine::loaded_spec() const {
    if (!spec_)
        throw runtime_error(name_ + ": not loaded");
    return *spec_;
}

EngineCaps FakeEngine::caps() const {
    EngineCaps c{server_kind ? server_kind->name() : kind, /*in_process=*/!whole_requests,
                 /*kv_depth_cache=*/false,
                 /*thread_control=*/false, /*state_transfer=*/can_transfer};
    c.measures_whole_request = whole_requests;
    c.server = server_kind;
    c.logits = has_logits && !whole_requests;
    return c;
}

void FakeEngine::load(const LoadSpec& spec) {
    call(FakeOp::load, 0, -1);
    if (spec.model_path.empty() && !whole_requests)
        throw input_error(name_ + ": no model");
    spec_ = spec;
    tokens_.clear();
}

void FakeEngine::check_room(int64_t more) const {
    if (!spec_)
        throw runtime_error(name_ + ": engine has no context (load() first)");
    if (spec_->n_ctx > 0 && n_cached() + more > spec_->n_ctx)
        throw runtime_error(name_ + ": context full (" + std::to_string(n_cached() + more) + " > " +
                            std::to_string(spec_->n_ctx) + " tokens)");
}

void FakeEngine::reset() {
    call(FakeOp::reset, 0, -1);
    tokens_.clear();
}

void FakeEngine::fill_to_depth(int n_depth, uint64_t seed) {
    call(FakeOp::fill_to_depth, n_depth, -1);
    tokens_.clear();
    check_room(n_depth);
    tokens_ = random_tokens(n_depth, vocab, seed);
}

StageTimes FakeEngine::prefill(std::span<const int32_t> tokens) {
    check_room(static_cast<int64_t>(tokens.size()));
    const FakeCall& c = call(FakeOp::prefill, static_cast<int64_t>(tokens.size()),
                             tokens.empty() ? -1 : tokens.front());
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    return StageTimes{c.start_ns, c.end_ns};
}

int64_t FakeEngine::decode_step(int32_t token) {
    check_room(1);
    const FakeCall& c = call(FakeOp::decode_step, 1, token);
    tokens_.push_back(token);
    return c.end_ns;
}

std::optional<double> FakeEngine::kv_bytes_read(int depth) const {
    if (!kv_bytes_per_token)
        return std::nullopt;
    return depth * *kv_bytes_per_token;
}

size_t FakeEngine::save_state(std::vector<uint8_t>& buf) {
    if (!can_transfer)
        return Engine::save_state(buf);
    const int64_t n = n_cached();
    call(FakeOp::save_state, n, -1);
    const size_t held = sizeof n + tokens_.size() * sizeof(int32_t);
    const size_t bytes = std::max(held, static_cast<size_t>(state_bytes_per_token * n));
    buf.assign(bytes, 0);
    std::memcpy(buf.data(), &n, sizeof n);
    if (!tokens_.empty())
        std::memcpy(buf.data() + sizeof n, tokens_.data(), tokens_.size() * sizeof(int32_t));
    return bytes;
}

void FakeEngine::restore_state(std::span<const uint8_t> state) {
    if (!can_transfer)
        return Engine::restore_state(state);
    int64_t n = 0;
    if (state.size() >= sizeof n)
        std::memcpy(&n, state.data(), sizeof n);
    call(FakeOp::restore_state, n, -1);
    if (state.size() < sizeof n || n < 0 ||
        state.size() < sizeof n + static_cast<size_t>(n) * sizeof(int32_t))
        throw runtime_error(name_ + ": refused a state of " + std::to_string(state.size()) +
                            " bytes");
    tokens_.clear();
    check_room(n);
    tokens_.resize(static_cast<size_t>(n));
    if (n > 0)
        std::memcpy(tokens_.data(), state.data() + sizeof n, tokens_.size() * sizeof(int32_t));
}

RequestMeasure FakeEngine::run_request(const RequestSpec& spec) {
    if (!whole_requests)
        return Engine::run_request(spec);
    if (spec.on_send)
        spec.on_send();
    const FakeCall& c = call(FakeOp::request, spec.n_prompt, -1);
    RequestMeasure m;
    m.start_ns = c.start_ns;
    m.timing.ttft_ns = c.end_ns - c.start_ns;
    if (spec.on_first_output)
        spec.on_first_output();
    const int64_t n = std::max<int64_t>(1, spec.n_gen);
    for (int64_t i = 1; i < n; ++i) {
        tl_.advance(request_itl_ns);
        m.timing.itl_ns.push_back(request_itl_ns);
    }
    m.timing.e2e_ns = tl_.now_ns() - m.start_ns;
    m.timing.n_out = m.timing.n_streamed = m.timing.n_chunks = n;
    if (n >= 2)
        m.timing.tpot_ns = (m.timing.e2e_ns - m.timing.ttft_ns) / (n - 1);
    m.prompt_tokens = spec.n_prompt;
    return m;
}

void FakeEngine::check_logits() const {
    if (!caps().logits)
        Engine::last_logits();  // throws sb::Error(input), as an engine without them does
}

std::vector<float> FakeEngine::logits_after(std::span<const int32_t> context) const {
    std::vector<float> l =
        script_.logits ? script_.logits(context) : default_fake_logits(context, vocab);
    if (static_cast<int64_t>(l.size()) != vocab)
        throw runtime_error(name_ + ": the script gave " + std::to_string(l.size()) +
                            " logits for a vocabulary of " + std::to_string(vocab));
    return l;
}

std::span<const float> FakeEngine::last_logits() const {
    check_logits();
    if (tokens_.empty())
        throw runtime_error(name_ + ": no logits (nothing computed since the reset)");
    if (!last_valid_) {
        last_ = logits_after(tokens_);
        last_valid_ = true;
    }
    return last_;
}

std::vector<int32_t> FakeEngine::tokenize(const std::string& text, bool add_special) const {
    check_logits();
    if (script_.tokenize)
        return script_.tokenize(text, add_special);
    std::vector<int32_t> out;
    if (add_special && bos)
        out.push_back(*bos);
    for (unsigned char ch : text)
        out.push_back(static_cast<int32_t>(ch % static_cast<unsigned>(std::max(vocab, 1))));
    return out;
}

void FakeEngine::evaluate(std::span<const int32_t> tokens, int first_output,
                          std::vector<float>& out) {
    check_logits();
    if (!spec_)
        throw runtime_error(name_ + ": engine has no context (load() first)");
    if (spec_->n_ctx > 0 && static_cast<int64_t>(tokens.size()) > spec_->n_ctx)
        throw runtime_error(name_ + ": context full (" + std::to_string(tokens.size()) + " > " +
                            std::to_string(spec_->n_ctx) + " tokens)");
    call(FakeOp::evaluate, static_cast<int64_t>(tokens.size()),
         tokens.empty() ? -1 : tokens.front());
    tokens_.assign(tokens.begin(), tokens.end());
    for (size_t i = static_cast<size_t>(std::max(first_output, 0)); i < tokens.size(); ++i) {
        const std::vector<float> l = logits_after(tokens.subspan(0, i + 1));
        out.insert(out.end(), l.begin(), l.end());
    }
}

std::unique_ptr<Engine> FakeEngineFactory::make(EngineKind kind, const HttpEngineOptions& server) {
    if (refuse && *refuse == kind)
        throw input_error("fake: no " + to_string(kind) + " engine can be made");
    auto e = std::make_unique<FakeEngine>(tl_, to_string(kind) + std::to_string(made_++));
    if (kind == EngineKind::http) {
        e->whole_requests = true;
        servers_.push_back(server);
    }
    if (setup)
        setup(*e, kind);
    return e;
}

std::unique_ptr<ServeTarget> FakeEngineFactory::serve_target(const HttpEngineOptions& server) {
    if (refuse && *refuse == EngineKind::http)
        throw input_error("fake: no server to put under load at " + server.url);
    servers_.push_back(server);
    return std::make_unique<FakeServeTarget>(tl_, server, serve);
}

std::unique_ptr<ManagedServer> FakeEngineFactory::start_server(
    const LlamaServerSpec& spec, const std::function<void(const std::string&)>& progress) {
    if (before_start)
        before_start(spec);
    auto state = std::make_shared<FakeServerState>();
    state->spec = spec;
    state->url = "http://fake-server-" + std::to_string(started_.size());
    if (progress)
        progress("starting " + state->url);
    HttpEngineOptions eo;
    eo.url = state->url;
    eo.api = spec.api;
    eo.timeouts.connect_ms = static_cast<int64_t>(spec.timeout_s * 1000);
    eo.timeouts.read_ms = eo.timeouts.connect_ms;
    eo.banned_tokens = spec.banned_tokens;
    auto engine = make(EngineKind::http, eo);
    started_.push_back(state);
    return std::make_unique<FakeManagedServer>(std::move(state), std::move(engine));
}

std::string FakeTextGenerator::apply(const std::string& user_text) const {
    return "<user>" + user_text + "</user><assistant>";
}

int64_t FakeTextGenerator::count(const std::string& user_text) const {
    return static_cast<int64_t>(engine_->tokenize(apply(user_text), true).size());
}

TextGeneration FakeTextGenerator::generate(const std::string& user_text, int n_gen,
                                           const SamplerSettings& s, uint64_t) {
    if (n_gen < 1)
        throw usage_error("a generation needs at least one token");
    FakeEngine& e = *engine_;
    auto draw = [&]() {
        const std::span<const float> logits = e.last_logits();
        int32_t best = -1;
        for (int32_t t = 0; t < static_cast<int32_t>(logits.size()); ++t) {
            if (std::find(s.banned.begin(), s.banned.end(), t) != s.banned.end())
                continue;
            if (best < 0 || logits[static_cast<size_t>(t)] > logits[static_cast<size_t>(best)])
                best = t;
        }
        if (best < 0)
            throw runtime_error("fake: every token is banned");
        return best;
    };
    e.reset();
    TextGeneration g;
    g.start_ns = tl_.now_ns();
    const std::vector<int32_t> prompt = e.tokenize(apply(user_text), true);
    g.prompt_tokens = static_cast<int64_t>(prompt.size());
    e.prefill(prompt);
    int32_t tok = draw();
    g.first_token_ns = tl_.now_ns();
    g.text += std::to_string(tok);
    for (int i = 1; i < n_gen; ++i) {
        e.decode_step(tok);
        tok = draw();
        g.text += " " + std::to_string(tok);
    }
    g.end_ns = tl_.now_ns();
    g.output_tokens = n_gen;
    return g;
}

std::unique_ptr<TextGenerator> FakeEngineFactory::text_generation() {
    auto engine = make(EngineKind::llama);
    auto view = std::make_unique<FakeTextGenerator>(
        tl_, std::unique_ptr<FakeEngine>(static_cast<FakeEngine*>(engine.release())));
    view->non_utf8 = non_utf8_tokens;
    return view;
}

class FakeServerRequests final : public ServerRequests {
  public:
    FakeServerRequests(FakeEngineFactory& f, std::string url) : f_(f), url_(std::move(url)) {}
    nlohmann::json get_json(const std::string& path) override {
        const auto it = f_.documents.find(path);
        return it == f_.documents.end() ? nlohmann::json(nullptr) : it->second;
    }
    void prepare(std::size_t) override {}
    Generation stream(std::size_t connection, GenerationStream::Spec spec) override {
        if (f_.before_stream)
            f_.before_stream(connection, spec);
        FakeTimeline& tl = f_.tl_;
        Generation g;
        g.start_ns = tl.now_ns();
        g.n_asked = spec.n_gen;
        g.prompt_asked = spec.n_prompt;
        const int64_t ttft = 10'000'000 + 100'000 * spec.n_prompt;
        int64_t t = g.start_ns + ttft;
        for (int64_t i = 0; i < spec.n_gen; ++i, t += 10'000'000)
            g.chunks.push_back({t, true, std::nullopt, std::nullopt});
        g.end_ns = g.start_ns + ttft + std::max<int64_t>(spec.n_gen - 1, 0) * 10'000'000;
        g.first_byte_ns = g.start_ns + ttft;
        g.prompt_tokens = spec.n_prompt;
        g.completion_tokens = spec.n_gen;
        g.finish_reason = "length";
        g.request_id = "fake-" + std::to_string(f_.streamed_.size());
        f_.streamed_.push_back({url_, connection, std::move(spec), g.start_ns});
        tl.advance(g.end_ns - g.start_ns);
        return g;
    }

  private:
    FakeEngineFactory& f_;
    std::string url_;
};

std::unique_ptr<ServerRequests> FakeEngineFactory::server_requests(const std::string& url,
                                                                   const HttpTimeouts&) {
    return std::make_unique<FakeServerRequests>(*this, url);
}

OpRig FakeEngineFactory::op_rig(bool huge_pages) {
    rig_huge_pages_.push_back(huge_pages);
    if (!op_rigs)
        throw input_error("fake: no op-profiling rig is scripted");
    auto engine = make(EngineKind::llama);  // refused as make() refuses
    return op_rigs(std::unique_ptr<FakeEngine>(static_cast<FakeEngine*>(engine.release())),
                   huge_pages);
}

}  // namespace sb
