#include "engine/wire_api.hpp"

#include <nlohmann/json.hpp>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/utf8.hpp"

namespace sb {

using nlohmann::json;

Framing WireApi::framing() const {
    return Framing::sse;
}
bool WireApi::takes_token_ids() const {
    return false;
}
bool WireApi::needs_model_name() const {
    return false;
}
const ServerKind* WireApi::own_server() const {
    return nullptr;
}

const WireApi& wire_api(HttpApi api) {
    const auto& all = wire_apis();
    const auto i = static_cast<size_t>(api);
    if (i >= all.size())
        throw runtime_error("no wire API number " + std::to_string(i));
    return *all[i];
}

HttpApi parse_http_api(const std::string& name) {
    const auto& all = wire_apis();
    for (size_t i = 0; i < all.size(); ++i)
        if (name == all[i]->name())
            return static_cast<HttpApi>(i);
    std::string choices;
    for (size_t i = 0; i < all.size(); ++i)
        choices += std::string(i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i]->name();
    throw usage_error("--api must be " + choices + ", not '" + name + "'");
}

const char* http_api_name(HttpApi api) {
    const auto& all = wire_apis();
    const auto i = static_cast<size_t>(api);
    return i < all.size() ? all[i]->name() : "?";
}

std::vector<std::string> http_api_names() {
    std::vector<std::string> names;
    for (const WireApi* w : wire_apis())
        names.emplace_back(w->name());
    return names;
}

std::string http_api_help() {
    std::string h;
    for (const WireApi* w : wire_apis())
        h += std::string(h.empty() ? "" : ", ") + w->name() + " (" + w->help() + ")";
    return h;
}

// ---- reading streamed messages ------------------------------------------------------------

namespace {

// Stream text quoted in an error: valid UTF-8 (the bytes are the server's), one line.
std::string shorten(const std::string& s, size_t n = 80) {
    std::string o = valid_utf8(s);
    if (o.size() > n)
        o = utf8_prefix(o, n) + "...";
    for (char& c : o)
        if (c == '\n' || c == '\r')
            c = ' ';
    return o;
}

std::string error_text(const json& e) {
    if (e.is_string())
        return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string())
        return e["message"].get<std::string>();
    return dump_json(e);
}

}  // namespace

ChunkInfo interpret_message(HttpApi api, const StreamMessage& m) {
    ChunkInfo ci;
    if (m.data == "[DONE]") {
        ci.done_marker = true;
        ci.final = true;
        return ci;
    }
    bool too_deep = false;
    std::optional<json> parsed = parse_server_json(m.data, &too_deep);
    if (!parsed) {
        const std::string what = too_deep ? "malformed message in the stream (nested more than " +
                                                std::to_string(kMaxDocumentDepth) + " deep)"
                                          : std::string("malformed JSON in the stream");
        throw runtime_error(what + ": '" + shorten(m.data) + "'");
    }
    json j = std::move(*parsed);
    if (!j.is_object())
        throw runtime_error("malformed message in the stream (not a JSON object): '" +
                            shorten(m.data) + "'");
    if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
        ci.error = error_text(*e);
        return ci;
    }
    if (m.event == "error") {
        ci.error = shorten(m.data, 200);
        return ci;
    }
    try {
        wire_api(api).read(j, ci);
    } catch (const json::exception&) {
        // A field of the wrong type ("done": "yes"): the request fails, the test records it.
        throw runtime_error("malformed message in the stream (a field of the wrong type): '" +
                            shorten(m.data) + "'");
    }
    if (auto id = j.find("id"); id != j.end() && id->is_string() && !id->empty())
        ci.id = utf8_prefix(valid_utf8(id->get_ref<const std::string&>()), 128);
    return ci;
}

}  // namespace sb
