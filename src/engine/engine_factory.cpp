#include "engine/engine_factory.hpp"

#include "engine/llama_engine.hpp"

namespace sb {
namespace {

class DefaultEngineFactory final : public EngineFactory {
  public:
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
};

}  // namespace

EngineFactory& default_engine_factory() {
    static DefaultEngineFactory f;
    return f;
}

}  // namespace sb
