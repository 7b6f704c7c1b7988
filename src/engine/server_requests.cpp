#include "engine/server_requests.hpp"

#include <mutex>
#include <vector>

#include "core/error.hpp"

namespace sb {
namespace {

class HttpServerRequests final : public ServerRequests {
  public:
    HttpServerRequests(std::string url, const HttpTimeouts& timeouts)
        : url_(std::move(url)), timeouts_(timeouts), probe_(url_, timeouts) {}

    nlohmann::json get_json(const std::string& path) override {
        try {
            const HttpResponse r = probe_.get(path);
            if (r.status != 200)
                return nullptr;
            return nlohmann::json::parse(r.body);
        } catch (const Error&) {
            return nullptr;
        } catch (const nlohmann::json::exception&) {
            return nullptr;
        }
    }

    void prepare(std::size_t n) override {
        if (n > 0)
            client(n - 1);
    }

    Generation stream(std::size_t connection, GenerationStream::Spec spec) override {
        HttpClient& c = client(connection);
        GenerationStream s(std::move(spec));
        const StreamOutcome o = c.post_stream(
            s.path(), s.body(), [&](std::string_view b, int64_t t) { return s.on_bytes(b, t); });
        return s.finish(o);
    }

  private:
    // The connection's client, made under the lock (the clients never move once made).
    HttpClient& client(std::size_t i) {
        const std::lock_guard<std::mutex> lock(mu_);
        while (clients_.size() <= i)
            clients_.push_back(std::make_unique<HttpClient>(url_, timeouts_));
        return *clients_[i];
    }

    std::string url_;
    HttpTimeouts timeouts_;
    HttpClient probe_;
    std::mutex mu_;
    std::vector<std::unique_ptr<HttpClient>> clients_;
};

}  // namespace

std::unique_ptr<ServerRequests> http_server_requests(const std::string& url,
                                                     const HttpTimeouts& timeouts) {
    return std::make_unique<HttpServerRequests>(url, timeouts);
}

}  // namespace sb
