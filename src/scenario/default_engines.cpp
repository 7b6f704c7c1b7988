#include "scenario/default_engines.hpp"

#include "engine/llama_engine.hpp"
#include "engine/process.hpp"
#include "profile/tracer.hpp"
#include "scenario/llama_server.hpp"

namespace sb {
namespace {

class DefaultEngineFactory final : public EngineFactory {
  public:
    DefaultEngineFactory(Clock clock, Pause pause)
        : clock_(std::move(clock)), pause_(std::move(pause)) {}
    std::unique_ptr<Engine> make(EngineKind kind, const HttpEngineOptions& server) override {
        if (kind == EngineKind::llama)
            return std::make_unique<LlamaEngine>();
        auto e = std::make_unique<HttpEngine>(server);
        e->connect();
        return e;
    }
    std::unique_ptr<ServeTarget> serve_target(const HttpEngineOptions& server) override {
        return http_serve_target(server);
    }
    std::unique_ptr<ServerRequests> server_requests(const std::string& url,
                                                    const HttpTimeouts& timeouts) override {
        return http_server_requests(url, timeouts);
    }
    std::unique_ptr<TextGenerator> text_generation() override { return llama_text_generation(); }
    std::string server_program() override { return find_peer_program("llama-server"); }
    std::unique_ptr<ManagedServer> start_server(
        const LlamaServerSpec& spec,
        const std::function<void(const std::string&)>& progress) override {
        return std::make_unique<LlamaServer>(spec, progress, clock_, pause_);
    }
    OpRig op_rig(bool huge_pages) override { return make_llama_op_rig(huge_pages); }

  private:
    Clock clock_;
    Pause pause_;
};

}  // namespace

std::unique_ptr<EngineFactory> make_default_engine_factory(Clock clock, Pause pause) {
    return std::make_unique<DefaultEngineFactory>(std::move(clock), std::move(pause));
}

EngineFactory& default_engine_factory() {
    static DefaultEngineFactory f(now_ns, sleep_ns);
    return f;
}

}  // namespace sb
