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

namespace {

json ci_json(const std::optional<Ci95>& c) {
    return c ? json::array({c->lo, c->hi}) : json(nullptr);
}

// A point's value: JSON has no infinity, an unbounded rate is the string "inf".
json value_json(double v) {
    return std::isinf(v) ? json("inf") : json(v);
}

json value_json(const std::optional<double>& v) {
    return v ? value_json(*v) : json(nullptr);
}

void read_value(const JsonIn& v, double& out) {
    if (v.raw().is_string() && v.raw() == "inf")
        out = std::numeric_limits<double>::infinity();
    else if (v.raw().is_number())
        read(v, out);
    else
        v.fail_type("a number or \"inf\"");
}

void read_value(ObjectIn& o, const char* key, std::optional<double>& out) {
    out.reset();
    if (!o.has(key) || o.at(key).is_null())
        return;
    double v = 0;
    read_value(o.at(key), v);
    out = v;
}

json ratio_json(const std::optional<RatioCi>& r) {
    return r ? json{{"ratio", r->ratio}, {"ci95", {r->lo, r->hi}}} : json(nullptr);
}

}  // namespace

void read(const JsonIn& in, Ci95& c) {
    if (!in.raw().is_array() || in.raw().size() != 2)
        in.fail_type("an array [lo, hi]");
    read(in.element(0), c.lo);
    read(in.element(1), c.hi);
}

void read(const JsonIn& in, std::pair<int64_t, int64_t>& v) {
    if (!in.raw().is_array() || in.raw().size() != 2)
        in.fail_type("an array [prompt, output]");
    read(in.element(0), v.first);
    read(in.element(1), v.second);
}

void read(const JsonIn& in, RatioCi& r) {
    ObjectIn o{in};
    o("ratio", r.ratio);
    if (o.has("ci95")) {
        Ci95 c;
        read(o.at("ci95"), c);
        r.lo = c.lo;
        r.hi = c.hi;
    }
    r.no_difference = r.lo <= 1.0 && 1.0 <= r.hi;
}

void read(const JsonIn& in, SaturationStep& s) {
    ObjectIn o{in};
    if (o.has("from"))
        read_value(o.at("from"), s.from);
    if (o.has("to"))
        read_value(o.at("to"), s.to);
    o("throughput_ratio", s.throughput)("latency_ratio", s.latency)(
        "throughput_grew", s.throughput_grew)("latency_grew", s.latency_grew);
}

json to_json(const ServeEnergy& e) {
    return json{{"metric", e.metric},
                {"method", e.method},
                {"duration_s", e.duration_s},
                {"energy_j", opt(e.energy_j)},
                {"net_energy_j", opt(e.net_energy_j)},
                {"mean_power_mw", opt(e.mean_power_mw)},
                {"idle_power_mw", opt(e.idle_power_mw)},
                {"j_per_request", opt(e.j_per_request)},
                {"net_j_per_request", opt(e.net_j_per_request)},
                {"j_per_output_token", opt(e.j_per_output_token)},
                {"net_j_per_output_token", opt(e.net_j_per_output_token)}};
}

void read(const JsonIn& in, ServeEnergy& e) {
    ObjectIn{in}("metric", e.metric)("method", e.method)("duration_s", e.duration_s)(
        "energy_j", e.energy_j)("net_energy_j", e.net_energy_j)("mean_power_mw", e.mean_power_mw)(
        "idle_power_mw", e.idle_power_mw)("j_per_request", e.j_per_request)(
        "net_j_per_request", e.net_j_per_request)("j_per_output_token", e.j_per_output_token)(
        "net_j_per_output_token", e.net_j_per_output_token)
        // Net of the idle power, energy may be below 0; the totals may not.
        .non_negative({"duration_s", "energy_j", "mean_power_mw", "idle_power_mw", "j_per_request",
                       "j_per_output_token"});
}

json to_json(const Saturation& s) {
    json steps = json::array();
    for (const auto& st : s.steps)
        steps.push_back(json{{"from", value_json(st.from)},
                             {"to", value_json(st.to)},
                             {"throughput_ratio", ratio_json(st.throughput)},
                             {"latency_ratio", ratio_json(st.latency)},
                             {"throughput_grew", st.throughput_grew},
                             {"latency_grew", st.latency_grew}});
    return json{{"test",
                 "throughput: output tokens/s in equal windows per point, ratio of means; "
                 "latency: E2E, ratio of medians; saturated where the throughput ratio's 95 % "
                 "bootstrap CI reaches 1 and the latency ratio's is above 1"},
                {"windows", s.windows},
                {"steps", steps},
                {"saturated_at", value_json(s.saturated_at)},
                {"next", value_json(s.next)},
                {"slo_given", s.slo_given},
                {"slo_attainment_needed", s.slo_attainment_needed},
                {"max_meeting_slo", value_json(s.max_meeting_slo)},
                {"verdict", s.verdict}};
}

void read(const JsonIn& in, Saturation& s) {
    ObjectIn o{in};
    o.check<std::string>("test")("windows", s.windows)("steps", s.steps)("slo_given", s.slo_given)(
        "slo_attainment_needed", s.slo_attainment_needed)("verdict", s.verdict);
    read_value(o, "saturated_at", s.saturated_at);
    read_value(o, "next", s.next);
    read_value(o, "max_meeting_slo", s.max_meeting_slo);
}

json to_json(const ServeRequest& r) {
    json j{{"index", r.index},
           {"send_ns", r.send_ns},
           {"ttft_ns", opt(r.ttft_ns)},
           {"tpot_ns", opt(r.tpot_ns)},
           {"e2e_ns", opt(r.e2e_ns)},
           {"itl_ns", r.itl_ns},
           {"prompt_tokens", opt(r.prompt_tokens)},
           {"output_tokens", opt(r.output_tokens)},
           {"streamed_tokens", opt(r.streamed_tokens)},
           {"claimed_output_tokens", opt(r.claimed_output_tokens)},
           {"error", opt(r.error)},
           {"interrupted", r.interrupted},
           {"ttft_first_byte_ns", opt(r.ttft_first_byte_ns)},
           {"ttft_first_content_ns", opt(r.ttft_first_content_ns)},
           {"request_id", opt(r.request_id)}};
    if (r.server_claim)
        j["server_claim"] = to_json(*r.server_claim);
    if (!r.notes.empty())
        j["notes"] = r.notes;
    return j;
}

json to_json(const LatencyStats& s) {
    return json{{"n", s.n},
                {"mean_ms", opt(s.mean)},
                {"median_ms", opt(s.median)},
                {"p90_ms", opt(s.p90)},
                {"p99_ms", opt(s.p99)},
                {"mean_ci95_ms", ci_json(s.mean_ci)},
                {"median_ci95_ms", ci_json(s.median_ci)},
                {"p90_ci95_ms", ci_json(s.p90_ci)},
                {"p99_ci95_ms", ci_json(s.p99_ci)}};
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
                {"requests", reqs},
                {"interrupted", p.interrupted},
                {"window_tokens_per_s", p.window_tokens_per_s},
                {"slo_attainment", opt(p.slo_attainment)},
                {"energy", p.energy ? to_json(*p.energy) : json(nullptr)},
                {"client_cpu_ms_per_request", opt(p.client_cpu_ms_per_request)},
                {"stopped_by", opt(p.stopped_by)}};
}

json to_json(const ServeSection& s) {
    json points = json::array();
    for (const auto& p : s.points)
        points.push_back(to_json(p));
    json j{{"api", s.api},
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
           {"points", points},
           {"n_prompt_max", s.n_prompt_max},
           {"n_gen_max", s.n_gen_max},
           {"lengths", s.lengths},
           {"duration_s", opt(s.duration_s)},
           {"saturation", to_json(s.saturation)},
           {"client", opt(s.client)},
           {"interrupted", s.interrupted},
           {"max_error_rate", opt(s.max_error_rate)},
           {"ttft_definition", s.ttft_definition}};
    if (!s.server_args.empty())
        j["server_args"] = s.server_args;
    if (!s.notes.empty())
        j["notes"] = s.notes;
    return j;
}

void read(const JsonIn& in, ServeRequest& r) {
    ObjectIn{in}("index", r.index)("send_ns", r.send_ns)("ttft_ns", r.ttft_ns)(
        "tpot_ns", r.tpot_ns)("e2e_ns", r.e2e_ns)("itl_ns", r.itl_ns)(
        "prompt_tokens", r.prompt_tokens)("output_tokens", r.output_tokens)(
        "streamed_tokens", r.streamed_tokens)("claimed_output_tokens", r.claimed_output_tokens)(
        "notes", r.notes)("error", r.error)("interrupted", r.interrupted)("ttft_first_byte_ns",
                                                                          r.ttft_first_byte_ns)(
        "ttft_first_content_ns", r.ttft_first_content_ns)("request_id", r.request_id)(
        "server_claim", r.server_claim)
        .non_negative({"send_ns", "ttft_ns", "tpot_ns", "e2e_ns", "itl_ns", "prompt_tokens",
                       "output_tokens", "streamed_tokens", "claimed_output_tokens",
                       "ttft_first_byte_ns", "ttft_first_content_ns"});
}

void read(const JsonIn& in, LatencyStats& s) {
    ObjectIn{in}("n", s.n)("mean_ms", s.mean)("median_ms", s.median)("p90_ms", s.p90)(
        "p99_ms", s.p99)("mean_ci95_ms", s.mean_ci)("median_ci95_ms", s.median_ci)(
        "p90_ci95_ms", s.p90_ci)("p99_ci95_ms", s.p99_ci)
        .non_negative({"mean_ms", "median_ms", "p90_ms", "p99_ms", "mean_ci95_ms", "median_ci95_ms",
                       "p90_ci95_ms", "p99_ci95_ms"});
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
            "goodput_per_s", p.goodput_per_s)("client_cpu_pct", p.client_cpu_pct)(
            "requests", p.requests)("interrupted", p.interrupted)(
            "window_tokens_per_s", p.window_tokens_per_s)("slo_attainment", p.slo_attainment)(
            "energy", p.energy)("client_cpu_ms_per_request", p.client_cpu_ms_per_request)(
            "stopped_by", p.stopped_by)
        .non_negative({"duration_ns", "ok", "errors", "request_per_s", "output_tokens_per_s",
                       "total_tokens_per_s", "goodput_per_s", "client_cpu_pct",
                       "window_tokens_per_s", "slo_attainment", "client_cpu_ms_per_request"});
}

void read(const JsonIn& in, ServeSection& s) {
    ObjectIn o{in};
    o("api", s.api)("url", s.url)("slots", s.slots)("model", s.model)("n_prompt", s.n_prompt)(
        "n_gen", s.n_gen)("requests_per_point", s.requests_per_point)("burstiness", s.burstiness)(
        "seed", s.seed)("slo_ms", s.slo_ms)("points", s.points)("n_prompt_max", s.n_prompt_max)(
        "n_gen_max", s.n_gen_max)("lengths", s.lengths)("duration_s", s.duration_s)(
        "saturation", s.saturation)("interrupted", s.interrupted)("client", s.client)(
        "max_error_rate", s.max_error_rate)("ttft_definition", s.ttft_definition)(
        "server_args", s.server_args)("notes", s.notes)
        .non_negative({"slots", "n_prompt", "n_gen", "requests_per_point", "slo_ms", "n_prompt_max",
                       "n_gen_max", "duration_s", "max_error_rate"});
    if (o.has("server"))
        read_object_or_null(o.at("server"), s.server);
}

}  // namespace sb
