#include "scenario/serve.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/parse.hpp"
#include "core/stats.hpp"
#include "engine/http_engine.hpp"
#include "engine/process.hpp"
#include "model/inspect.hpp"
#include "scenario/llama_server.hpp"
#include "telemetry/telemetry_json.hpp"

namespace sb {

namespace {

// groups: the samples' requests (empty: one sample each).
LatencyStats stats_ms(const std::vector<double>& ms, const std::vector<std::size_t>& groups,
                      std::size_t resamples, uint64_t seed) {
    LatencyStats s;
    s.n = ms.size();
    if (ms.empty())
        return s;
    s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
    s.median = percentile(ms, 0.50);
    s.p90 = percentile(ms, 0.90);
    s.p99 = percentile(ms, 0.99);
    if (resamples > 0) {
        static constexpr double kQs[] = {0.50, 0.90, 0.99};
        const BootstrapCis c = bootstrap_cis(ms, groups, kQs, resamples, seed);
        s.mean_ci = c.mean;
        s.median_ci = c.quantile[0];
        s.p90_ci = c.quantile[1];
        s.p99_ci = c.quantile[2];
    }
    return s;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

void summarize_point(ServePoint& p, const std::map<std::string, double>& slo_ms,
                     std::size_t resamples, uint64_t seed) {
    std::vector<double> ttft, tpot, itl, e2e;
    std::vector<std::size_t> itl_groups;
    std::vector<TokenArrivals> arrivals;
    int64_t out_tokens = 0, all_tokens = 0;
    int64_t first_send = std::numeric_limits<int64_t>::max();
    p.ok = p.errors = p.meeting_slo = p.interrupted = 0;
    p.request_per_s = p.output_tokens_per_s = p.total_tokens_per_s = 0;
    p.goodput_per_s.reset();
    p.slo_attainment.reset();
    for (const auto& r : p.requests) {
        first_send = std::min(first_send, r.send_ns);
        if (r.interrupted) {
            ++p.interrupted;
            continue;
        }
        if (r.error) {
            ++p.errors;
            continue;
        }
        ++p.ok;
        if (r.ttft_ns)
            ttft.push_back(static_cast<double>(*r.ttft_ns) * 1e-6);
        if (r.tpot_ns)
            tpot.push_back(static_cast<double>(*r.tpot_ns) * 1e-6);
        if (r.e2e_ns)
            e2e.push_back(static_cast<double>(*r.e2e_ns) * 1e-6);
        for (int64_t g : r.itl_ns)
            itl.push_back(static_cast<double>(g) * 1e-6);
        if (!r.itl_ns.empty())
            itl_groups.push_back(r.itl_ns.size());
        arrivals.push_back({r.send_ns, r.ttft_ns, r.e2e_ns, r.itl_ns, r.output_tokens.value_or(0)});
        out_tokens += r.output_tokens.value_or(0);
        all_tokens += r.output_tokens.value_or(0) + r.prompt_tokens.value_or(0);
        bool meets = true;
        auto within = [&](const char* k, const std::optional<int64_t>& v) {
            auto it = slo_ms.find(k);
            if (it != slo_ms.end() && (!v || static_cast<double>(*v) * 1e-6 > it->second))
                meets = false;
        };
        within("ttft", r.ttft_ns);
        within("tpot", r.tpot_ns);
        within("e2e", r.e2e_ns);
        p.meeting_slo += meets;
    }
    p.ttft = stats_ms(ttft, {}, resamples, seed);
    p.tpot = stats_ms(tpot, {}, resamples, seed);
    p.itl = stats_ms(itl, itl_groups, resamples, seed);
    p.e2e = stats_ms(e2e, {}, resamples, seed);
    p.window_tokens_per_s =
        arrivals.empty() ? std::vector<double>{}
                         : window_token_rates(arrivals, first_send, p.duration_ns, kServeWindows);
    if (!slo_ms.empty() && p.ok + p.errors > 0)
        p.slo_attainment = static_cast<double>(p.meeting_slo) / (p.ok + p.errors);
    const double s = static_cast<double>(p.duration_ns) * 1e-9;
    if (s > 0) {
        p.request_per_s = p.ok / s;
        p.output_tokens_per_s = static_cast<double>(out_tokens) / s;
        p.total_tokens_per_s = static_cast<double>(all_tokens) / s;
        if (!slo_ms.empty())
            p.goodput_per_s = p.meeting_slo / s;
    }
}

Saturation saturation_of(const std::vector<ServePoint>& points, bool slo_given,
                         std::size_t resamples, uint64_t seed) {
    std::vector<SaturationInput> in;
    std::string mode = "concurrency";
    for (const auto& p : points) {
        SaturationInput x;
        x.value = p.value;
        x.window_tokens_per_s = p.window_tokens_per_s;
        for (const auto& r : p.requests)
            if (!r.error && !r.interrupted && r.e2e_ns)
                x.latency_ms.push_back(static_cast<double>(*r.e2e_ns) * 1e-6);
        x.slo_attainment = p.slo_attainment;
        in.push_back(std::move(x));
        mode = p.mode;
    }
    return find_saturation(std::move(in), mode, slo_given, resamples, seed);
}

std::vector<double> arrival_gaps(int n, double rate, double burstiness, uint64_t seed) {
    std::vector<double> gaps(static_cast<size_t>(std::max(n, 0)), 0.0);
    if (std::isinf(rate))
        return gaps;
    std::mt19937_64 rng(seed);
    // Gamma(shape k, scale theta) has mean k theta and CV 1/sqrt(k).
    std::gamma_distribution<double> g(burstiness, 1.0 / (rate * burstiness));
    for (auto& x : gaps)
        x = g(rng);
    return gaps;
}

std::map<std::string, double> parse_slo(const std::string& text) {
    std::map<std::string, double> out;
    for (const auto& item : split_list(text)) {
        const auto eq = item.find('=');
        const std::string key = item.substr(0, eq);
        if (eq == std::string::npos || (key != "ttft" && key != "tpot" && key != "e2e"))
            throw usage_error("--slo '" + item +
                              "': expected ttft=, tpot= or e2e= a duration "
                              "(e.g. ttft=500ms,tpot=50ms)");
        auto ns = parse_duration(item.substr(eq + 1));
        if (!ns || *ns <= 0)
            throw usage_error("--slo '" + item + "': '" + item.substr(eq + 1) +
                              "' is not a duration (e.g. 500ms, 2s)");
        out[key] = static_cast<double>(*ns) * 1e-6;
    }
    if (out.empty())
        throw usage_error("--slo needs at least one of ttft=, tpot=, e2e=");
    return out;
}

namespace {

// The record of one request whose generation get() returns (or throws); send: the clock just
// before it was started, replaced by the client's own start stamp when it has one.
ServeRequest request_record(const std::function<Generation()>& get, const HttpPrompt& prompt,
                            int index, int64_t send, int64_t t0) {
    ServeRequest r;
    r.index = index;
    r.send_ns = send - t0;
    try {
        const Generation g = get();
        const RequestMeasure m = request_measure(g);
        r.send_ns = m.start_ns - t0;
        r.ttft_ns = m.timing.ttft_ns;
        r.e2e_ns = m.timing.e2e_ns;
        r.tpot_ns = m.timing.tpot_ns;
        r.itl_ns = m.timing.itl_ns;
        r.output_tokens = m.timing.n_out;
        r.streamed_tokens = m.timing.n_streamed;
        r.claimed_output_tokens = m.timing.claimed_out;
        r.notes = m.timing.notes;
        r.prompt_tokens =
            m.prompt_tokens ? m.prompt_tokens : std::optional<int64_t>(prompt.n_tokens);
    } catch (const Error& err) {
        r.error = err.what();
        // Cut by Ctrl-C: kept as interrupted, not counted as the server's failure.
        r.interrupted = interrupt_requested();
    }
    return r;
}

// A thread's request: HttpEngine::generate on that thread's client.
ServeRequest one_request(HttpEngine& e, const std::string& model, const HttpPrompt& prompt,
                         int n_gen, uint64_t seed, int index, int64_t t0) {
    const int64_t send = now_ns();
    return request_record([&] { return e.generate(model, prompt, n_gen, seed); }, prompt, index,
                          send, t0);
}

}  // namespace

ServeResult run_serve(const ServeOptions& o, std::ostream& progress,
                      const std::function<void(const ServeResult&)>& after_point) {
    if (o.concurrency.empty() == o.rates.empty())
        throw usage_error("serve needs --concurrency LIST or --rate LIST (one of them)");
    for (int c : o.concurrency)
        if (c < 1 || c > 1024)
            throw usage_error("--concurrency " + std::to_string(c) + " is outside 1..1024");
    for (double r : o.rates)
        if (!(r > 0))
            throw usage_error(fmt::format("--rate {} is not above 0 (inf: all at once)", r));
    if (!(o.burstiness > 0))
        throw usage_error("--burstiness must be above 0");
    if (o.requests < 1 || o.n_prompt < 1 || o.n_gen < 1)
        throw usage_error("--requests, -p and -n must be at least 1");
    if ((o.n_prompt_max && o.n_prompt_max < o.n_prompt) || (o.n_gen_max && o.n_gen_max < o.n_gen))
        throw usage_error("-p and -n ranges need LO <= HI");
    if (o.duration_s && !(*o.duration_s > 0))
        throw usage_error("--duration must be above 0");
    // The longest request, for the context of a llama-server started here.
    int64_t longest = std::max(o.n_prompt, o.n_prompt_max) + std::max(o.n_gen, o.n_gen_max);
    for (const auto& [lp, ln] : o.lengths)
        longest = std::max(longest, lp + ln);
    if (!o.url && !o.model_file)
        throw usage_error("serve needs --url URL, or -m FILE.gguf for a llama-server it starts");
    if (o.client != "thread" && o.client != "loop")
        throw usage_error("--client '" + o.client + "': expected thread or loop");
    const bool loop = o.client == "loop";

    ServeResult res;
    res.options = o;
    HttpEngineOptions eo;
    std::unique_ptr<LlamaServer> managed;
    const HttpApi api = parse_http_api(o.api);
    std::string model = o.model;
    if (o.url) {
        eo.url = *o.url;
    } else {
        LlamaServerSpec spec;
        spec.binary = find_peer_program("llama-server");
        if (spec.binary.empty())
            throw input_error("llama-server not found (build/peers/llama-server)");
        spec.model = *o.model_file;
        spec.threads = o.threads;
        spec.slots = o.slots;
        // Every slot holds a prompt and its output.
        spec.n_ctx = static_cast<int>(o.slots * (longest + 64));
        spec.api = api;
        spec.timeout_s = o.timeout_s;
        managed = std::make_unique<LlamaServer>(
            spec, [&](const std::string& m) { progress << "stagebench: " << m << "\n"; });
        eo.url = managed->url();
        model.clear();
    }
    eo.api = api;
    eo.timeouts.connect_ms = static_cast<int64_t>(o.timeout_s * 1000);
    eo.timeouts.read_ms = eo.timeouts.connect_ms;
    HttpEngine main(eo);
    main.connect();
    res.server = main.describe();

    struct Point {
        std::string mode;
        double value;
    };
    std::vector<Point> points;
    for (int c : o.concurrency)
        points.push_back({"concurrency", static_cast<double>(c)});
    for (double r : o.rates)
        points.push_back({"rate", r});

    // Telemetry: one stage per point, energy net of an idle baseline taken with the server up.
    std::unique_ptr<Sampler> tel = open_telemetry(o.telemetry, progress, true);
    const bool sampling = tel && has_sources(*tel);
    if (sampling) {
        if (o.telemetry.idle_s > 0) {
            progress << fmt::format("stagebench: measuring the idle baseline ({:g} s)\n",
                                    o.telemetry.idle_s);
            tel->measure_idle(static_cast<int64_t>(o.telemetry.idle_s * 1e9));
        }
        tel->start();
    }
    // Every point sends the same lengths (seeded), each with prompts of its own.
    const auto lens =
        request_lengths(o.requests, {o.n_prompt, std::max(o.n_prompt, o.n_prompt_max)},
                        {o.n_gen, std::max(o.n_gen, o.n_gen_max)}, o.lengths, o.seed);
    const std::string shape =
        !o.lengths.empty()
            ? fmt::format("lengths of {} pairs", o.lengths.size())
            : fmt::format("pp{}{}+tg{}{}", o.n_prompt,
                          o.n_prompt_max > o.n_prompt ? fmt::format("-{}", o.n_prompt_max) : "",
                          o.n_gen, o.n_gen_max > o.n_gen ? fmt::format("-{}", o.n_gen_max) : "");

    uint64_t prompt_seed = o.seed * 1000003;
    for (const auto& pt : points) {
        if (interrupt_requested())
            break;
        // Open loop: the seeded arrivals decide how many requests fall within --duration.
        std::vector<double> gaps;
        int count = o.requests;
        if (pt.mode == "rate") {
            gaps = arrival_gaps(o.requests, pt.value, o.burstiness, o.seed);
            if (o.duration_s) {
                double at_s = 0;
                count = 0;
                for (double g : gaps) {
                    if ((at_s += g) >= *o.duration_s)
                        break;
                    ++count;
                }
                count = std::max(count, 1);
            }
        }
        const int width = pt.mode == "concurrency" ? static_cast<int>(pt.value) : count;
        if (o.duration_s)
            progress << fmt::format(
                "stagebench: serve {} {:g}: {:g} s (at most {} requests) of {}\n", pt.mode,
                pt.value, *o.duration_s, o.requests, shape);
        else
            progress << fmt::format("stagebench: serve {} {:g}: {} requests of {}\n", pt.mode,
                                    pt.value, o.requests, shape);
        // Before the clock: distinct prompts, and one connected client per worker.
        std::vector<HttpPrompt> prompts;
        try {
            for (int i = 0; i < count && !interrupt_requested(); ++i)
                prompts.push_back(
                    main.make_prompt(model, lens[static_cast<size_t>(i)].first, ++prompt_seed));
        } catch (const Error&) {
            if (!interrupt_requested())
                throw;
        }
        if (interrupt_requested())
            break;
        const int n_clients = std::min(width, count);
        std::vector<std::unique_ptr<HttpEngine>> clients;
        for (int i = 0; i < n_clients && !loop; ++i) {
            clients.push_back(std::make_unique<HttpEngine>(eo));
            clients.back()->connect();
        }
        ServePoint p;
        p.mode = pt.mode;
        p.value = pt.value;
        p.requests.resize(static_cast<size_t>(count));
        std::vector<char> sent(static_cast<size_t>(count), 0);  // per request: no shared bits
        const std::string stage = fmt::format("serve.{}.{:g}", pt.mode, pt.value);
        if (sampling)
            tel->mark(stage, true);
        const double cpu0 = cpu_seconds();
        const int64_t t0 = now_ns();
        p.start_ns = t0;
        const int64_t deadline = o.duration_s ? t0 + static_cast<int64_t>(*o.duration_s * 1e9) : 0;
        auto before_deadline = [&] { return deadline == 0 || now_ns() < deadline; };
        if (loop) {
            // One thread (this one) drives every request in flight through libcurl's multi
            // interface; a closed-loop request that ends starts the next from its callback.
            HttpMulti multi(eo.url, eo.timeouts);
            std::vector<std::unique_ptr<GenerationStream>> streams(static_cast<size_t>(count));
            const bool closed = pt.mode == "concurrency";
            int next = 0;
            std::function<void(int)> start = [&](int i) {
                const auto k = static_cast<size_t>(i);
                const int64_t send = now_ns();
                sent[k] = 1;
                try {
                    streams[k] = main.start_generation(model, prompts[k], lens[k].second,
                                                       o.seed + static_cast<uint64_t>(i));
                    GenerationStream* st = streams[k].get();
                    multi.start_stream(
                        st->path(), st->body(),
                        [st](std::string_view b, int64_t t) { return st->on_bytes(b, t); },
                        [&, i, k, send](StreamOutcome out) {
                            p.requests[k] = request_record([&] { return streams[k]->finish(out); },
                                                           prompts[k], i, send, t0);
                            streams[k].reset();
                            if (closed && next < count && !interrupt_requested() &&
                                before_deadline())
                                start(next++);
                        });
                } catch (const Error& err) {
                    p.requests[k] =
                        request_record([&]() -> Generation { throw err; }, prompts[k], i, send, t0);
                }
            };
            if (closed) {
                while (next < n_clients && !interrupt_requested() && before_deadline())
                    start(next++);
            } else {
                double at_s = 0;
                for (int i = 0; i < count && !interrupt_requested(); ++i) {
                    at_s += gaps[static_cast<size_t>(i)];
                    const int64_t when = t0 + static_cast<int64_t>(at_s * 1e9);
                    for (int64_t now = now_ns(); now < when && !interrupt_requested();
                         now = now_ns()) {
                        const int64_t left_ms = (when - now) / 1'000'000;
                        if (multi.in_flight() == 0)
                            std::this_thread::sleep_for(std::chrono::nanoseconds(
                                std::min<int64_t>(when - now, 10'000'000)));
                        else
                            multi.poll(static_cast<int>(std::min<int64_t>(left_ms, 10)));
                    }
                    if (interrupt_requested())
                        break;
                    start(i);
                }
            }
            while (multi.in_flight() > 0)
                multi.poll(1000);
        } else if (pt.mode == "concurrency") {
            std::atomic<int> next{0};
            std::vector<std::thread> ts;
            for (int c = 0; c < n_clients; ++c)
                ts.emplace_back([&, c] {
                    for (int i;
                         !interrupt_requested() && before_deadline() && (i = next++) < count;) {
                        p.requests[static_cast<size_t>(i)] = one_request(
                            *clients[static_cast<size_t>(c)], model,
                            prompts[static_cast<size_t>(i)], lens[static_cast<size_t>(i)].second,
                            o.seed + static_cast<uint64_t>(i), i, t0);
                        sent[static_cast<size_t>(i)] = 1;
                    }
                });
            for (auto& t : ts)
                t.join();
        } else {
            std::vector<std::thread> ts;
            double at_s = 0;
            for (int i = 0; i < count && !interrupt_requested(); ++i) {
                at_s += gaps[static_cast<size_t>(i)];
                const int64_t when = t0 + static_cast<int64_t>(at_s * 1e9);
                while (now_ns() < when && !interrupt_requested())
                    std::this_thread::sleep_for(
                        std::chrono::nanoseconds(std::min<int64_t>(when - now_ns(), 10'000'000)));
                if (interrupt_requested())
                    break;
                sent[static_cast<size_t>(i)] = 1;
                ts.emplace_back([&, i] {
                    p.requests[static_cast<size_t>(i)] = one_request(
                        *clients[static_cast<size_t>(i)], model, prompts[static_cast<size_t>(i)],
                        lens[static_cast<size_t>(i)].second, o.seed + static_cast<uint64_t>(i), i,
                        t0);
                });
            }
            for (auto& t : ts)
                t.join();
        }
        const int64_t t1 = now_ns();
        const double cpu1 = cpu_seconds();
        if (sampling) {
            int64_t out = 0;
            for (size_t i = 0; i < p.requests.size(); ++i)
                if (sent[i] && !p.requests[i].error)
                    out += p.requests[i].output_tokens.value_or(0);
            tel->mark(stage, false, out);
        }
        // Requests never sent (Ctrl-C) are left out, not counted as errors.
        std::vector<ServeRequest> kept;
        for (size_t i = 0; i < p.requests.size(); ++i)
            if (sent[i])
                kept.push_back(p.requests[i]);
        p.requests = std::move(kept);
        int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
        for (const auto& r : p.requests) {
            first = std::min(first, r.send_ns);
            last = std::max(last, r.send_ns + r.e2e_ns.value_or(0));
        }
        p.duration_ns = p.requests.empty() ? 0 : std::max<int64_t>(last - first, 1);
        const double wall = static_cast<double>(t1 - t0) * 1e-9;
        if (wall > 0)
            p.client_cpu_pct = 100 * (cpu1 - cpu0) / wall;
        if (!p.requests.empty())
            p.client_cpu_ms_per_request =
                (cpu1 - cpu0) * 1e3 / static_cast<double>(p.requests.size());
        for (const auto& q : p.requests)
            if (q.error && !q.interrupted)
                progress << fmt::format("stagebench: serve {} {:g}: request {} failed: {}\n",
                                        p.mode, p.value, q.index, *q.error);
        summarize_point(p, o.slo_ms, o.bootstrap_resamples, o.seed);
        if (sampling) {
            const auto st = tel->stage_summaries(stage);
            if (!st.empty()) {
                int64_t out = 0;
                for (const auto& q : p.requests)
                    if (!q.error)
                        out += q.output_tokens.value_or(0);
                p.energy = serve_energy(st.back(), p.ok, out);
            }
        }
        progress << fmt::format(
            "stagebench: serve {} {:g}: {} ok, {} failed, {:.2f} req/s, {:.1f} output tok/s, "
            "TTFT median {:.1f} ms\n",
            p.mode, p.value, p.ok, p.errors, p.request_per_s, p.output_tokens_per_s,
            p.ttft.median.value_or(0));
        if (p.client_cpu_pct && *p.client_cpu_pct > 50)
            res.warnings.push_back(
                {"serve_client_cpu",
                 fmt::format("{}: the client used {:.0f} % of a core: it may be what limits "
                             "the point",
                             p.label(), *p.client_cpu_pct),
                 "fewer concurrent clients per point, or the client on a machine with idle "
                 "cores"});
        res.points.push_back(std::move(p));
        res.saturation =
            saturation_of(res.points, !o.slo_ms.empty(), 2 * o.bootstrap_resamples, o.seed);
        res.interrupted = interrupt_requested();
        if (sampling)
            res.telemetry = tel->record();
        if (after_point)
            after_point(res);
    }
    res.interrupted = interrupt_requested();
    if (sampling) {
        tel->stop();
        res.telemetry = tel->record();
        for (const auto& w : res.telemetry->warnings)
            res.warnings.push_back(w);
    }
    return res;
}

ResultDocument serve_document(ResultDocument doc, const ServeResult& r) {
    const ServeOptions& o = r.options;
    ServeSection s;
    s.api = o.api;
    s.url = o.url;
    if (!o.url)
        s.slots = o.slots;
    s.model = o.model;
    s.n_prompt = o.n_prompt;
    s.n_gen = o.n_gen;
    s.requests_per_point = o.requests;
    s.burstiness = o.burstiness;
    s.seed = o.seed;
    s.slo_ms = o.slo_ms;
    s.server = r.server;
    s.points = r.points;
    s.n_prompt_max = std::max(o.n_prompt, o.n_prompt_max);
    s.n_gen_max = std::max(o.n_gen, o.n_gen_max);
    s.lengths = o.lengths;
    s.duration_s = o.duration_s;
    s.saturation = r.saturation;
    s.interrupted = r.interrupted;
    s.client = o.client;
    doc.serve = std::move(s);
    if (r.telemetry)
        doc.telemetry = telemetry_section(*r.telemetry);
    const std::string kind = r.server.is_object() ? r.server.value("server", "") : "";
    nlohmann::json e{{"name", "http"}, {"in_process", false}};
    if (r.server.is_object())
        e.update(r.server);
    e["started_by_stagebench"] = !o.url;
    if (o.model_file) {
        e["slots"] = o.slots;
        doc.models.push_back(to_json(inspect_model(*o.model_file)));
    } else {
        doc.models.push_back({{"path", o.model},
                              {"name", o.model.empty() ? kind : o.model},
                              {"engine", "http"},
                              {"server", kind},
                              {"url", o.url.value_or("")}});
    }
    doc.engines["http"] = e;
    for (const auto& w : r.warnings)
        doc.warnings.push_back(w);
    doc.finished_at = utc_timestamp();
    return doc;
}

}  // namespace sb
