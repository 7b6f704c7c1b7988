#include "core/doc/serve_section.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

std::string ServePoint::label() const {
    if (std::isinf(value))
        return mode + " inf";
    return fmt::format("{} {:g}", mode, value);
}

json to_json(const ServeRequest& r) {
    return json{{"index", r.index},
                {"send_ns", r.send_ns},
                {"ttft_ns", opt(r.ttft_ns)},
                {"tpot_ns", opt(r.tpot_ns)},
                {"e2e_ns", opt(r.e2e_ns)},
                {"itl_ns", r.itl_ns},
                {"prompt_tokens", opt(r.prompt_tokens)},
                {"output_tokens", opt(r.output_tokens)},
                {"error", opt(r.error)}};
}

json to_json(const LatencyStats& s) {
    return json{{"n", s.n},
                {"mean_ms", opt(s.mean)},
                {"median_ms", opt(s.median)},
                {"p90_ms", opt(s.p90)},
                {"p99_ms", opt(s.p99)}};
}

json to_json(const ServePoint& p) {
    json reqs = json::array();
    for (const auto& q : p.requests)
        reqs.push_back(to_json(q));
    // JSON has no infinity: an unbounded rate is the string "inf".
    const json value = std::isinf(p.value) ? json("inf") : json(p.value);
    return json{{"mode", p.mode},
                {"value", value},
                {"start_ns", opt(p.start_ns)},
                {"duration_ns", p.duration_ns},
                {"ok", p.ok},
                {"errors", p.errors},
                {"error_rate", p.error_rate()},
                {"request_per_s", p.request_per_s},
                {"output_tokens_per_s", p.output_tokens_per_s},
                {"total_tokens_per_s", p.total_tokens_per_s},
                {"ttft", to_json(p.ttft)},
                {"tpot", to_json(p.tpot)},
                {"itl", to_json(p.itl)},
                {"e2e", to_json(p.e2e)},
                {"meeting_slo", p.meeting_slo},
                {"goodput_per_s", opt(p.goodput_per_s)},
                {"client_cpu_pct", opt(p.client_cpu_pct)},
                {"requests", reqs}};
}

json to_json(const ServeSection& s) {
    json points = json::array();
    for (const auto& p : s.points)
        points.push_back(to_json(p));
    return json{{"api", s.api},
                {"url", opt(s.url)},
                {"slots", opt(s.slots)},
                {"model", s.model},
                {"n_prompt", s.n_prompt},
                {"n_gen", s.n_gen},
                {"requests_per_point", s.requests_per_point},
                {"burstiness", s.burstiness},
                {"seed", s.seed},
                {"slo_ms", s.slo_ms},
                {"server", s.server},
                {"points", points}};
}

void read(const JsonIn& in, ServeRequest& r) {
    ObjectIn{in}("index", r.index)("send_ns", r.send_ns)("ttft_ns", r.ttft_ns)(
        "tpot_ns", r.tpot_ns)("e2e_ns", r.e2e_ns)("itl_ns", r.itl_ns)(
        "prompt_tokens", r.prompt_tokens)("output_tokens", r.output_tokens)("error", r.error);
}

void read(const JsonIn& in, LatencyStats& s) {
    ObjectIn{in}("n", s.n)("mean_ms", s.mean)("median_ms", s.median)("p90_ms", s.p90)("p99_ms",
                                                                                      s.p99);
}

void read(const JsonIn& in, ServePoint& p) {
    ObjectIn o{in};
    o("mode", p.mode);
    if (o.has("mode") && p.mode != "concurrency" && p.mode != "rate")
        o.at("mode").fail("expected concurrency or rate, found \"" + p.mode + "\"");
    if (o.has("value")) {
        const JsonIn v = o.at("value");
        if (v.raw().is_string() && v.raw() == "inf")
            p.value = std::numeric_limits<double>::infinity();
        else if (v.raw().is_number())
            read(v, p.value);
        else
            v.fail_type("a number or \"inf\"");
    }
    o("start_ns", p.start_ns)("duration_ns", p.duration_ns)("ok", p.ok)("errors", p.errors)
        .check<double>("error_rate")("request_per_s", p.request_per_s)("output_tokens_per_s",
                                                                       p.output_tokens_per_s)(
            "total_tokens_per_s", p.total_tokens_per_s)("ttft", p.ttft)("tpot", p.tpot)(
            "itl", p.itl)("e2e", p.e2e)("meeting_slo", p.meeting_slo)(
            "goodput_per_s", p.goodput_per_s)("client_cpu_pct", p.client_cpu_pct)("requests",
                                                                                  p.requests);
}

void read(const JsonIn& in, ServeSection& s) {
    ObjectIn o{in};
    o("api", s.api)("url", s.url)("slots", s.slots)("model", s.model)("n_prompt", s.n_prompt)(
        "n_gen", s.n_gen)("requests_per_point", s.requests_per_point)("burstiness", s.burstiness)(
        "seed", s.seed)("slo_ms", s.slo_ms)("points", s.points);
    if (o.has("server"))
        read_object_or_null(o.at("server"), s.server);
}

}  // namespace sb
