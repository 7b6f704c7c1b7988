#include "core/doc/server_claim.hpp"

#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

json to_json(const ServerTimings& s) {
    return json{{"source", s.source},
                {"prompt_n", opt(s.prompt_n)},
                {"cache_n", opt(s.cache_n)},
                {"predicted_n", opt(s.predicted_n)},
                {"prompt_ns", opt(s.prompt_ns)},
                {"predicted_ns", opt(s.predicted_ns)},
                {"queue_ns", opt(s.queue_ns)},
                {"load_ns", opt(s.load_ns)}};
}

json to_json(const ServerClaim& c) {
    json j = to_json(c.said);
    j["disagreements"] = c.disagreements;
    return j;
}

void read(const JsonIn& in, ServerTimings& s) {
    ObjectIn{in}("source", s.source)("prompt_n", s.prompt_n)("cache_n", s.cache_n)(
        "predicted_n", s.predicted_n)("prompt_ns", s.prompt_ns)("predicted_ns", s.predicted_ns)(
        "queue_ns", s.queue_ns)("load_ns", s.load_ns)
        .non_negative({"prompt_n", "cache_n", "predicted_n", "prompt_ns", "predicted_ns",
                       "queue_ns", "load_ns"});
}

void read(const JsonIn& in, ServerClaim& c) {
    ServerTimings& s = c.said;
    ObjectIn{in}("source", s.source)("prompt_n", s.prompt_n)("cache_n", s.cache_n)(
        "predicted_n", s.predicted_n)("prompt_ns", s.prompt_ns)("predicted_ns", s.predicted_ns)(
        "queue_ns", s.queue_ns)("load_ns", s.load_ns)("disagreements", c.disagreements)
        .non_negative({"prompt_n", "cache_n", "predicted_n", "prompt_ns", "predicted_ns",
                       "queue_ns", "load_ns"});
}

}  // namespace sb
