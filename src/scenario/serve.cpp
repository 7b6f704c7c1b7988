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

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/parse.hpp"
#include "core/stats.hpp"
#include "core/sysinfo.hpp"
#include "engine/http_engine.hpp"
#include "engine/llama_engine.hpp"
#include "engine/process.hpp"
#include "engine/serve_target.hpp"
#include "engine/text_generation.hpp"
#include "engine/tokenizer_check.hpp"
#include "model/inspect.hpp"
#include "scenario/explain_settings.hpp"
#include "scenario/llama_server.hpp"

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
        // The other TTFT definitions harnesses use, and the server's id of the request.
        if (g.first_byte_ns)
            r.ttft_first_byte_ns = *g.first_byte_ns - m.start_ns;
        r.ttft_first_content_ns = m.timing.first_content_ns;
        r.request_id = g.request_id;
        r.server_claim = m.claim;
    } catch (const Error& err) {
        r.error = err.what();
        // Cut by Ctrl-C: kept as interrupted, not counted as the server's failure.
        r.interrupted = interrupt_requested();
    }
    return r;
}

// A thread's request: generate on that thread's client.
ServeRequest one_request(ServeClient& c, const Clock& clock, const std::string& model,
                         const HttpPrompt& prompt, int n_gen, uint64_t seed, int index,
                         int64_t t0) {
    const int64_t send = clock();
    return request_record([&] { return c.generate(model, prompt, n_gen, seed); }, prompt, index,
                          send, t0);
}

// What one invocation's options say once checked.
struct ServePlan {
    int64_t longest = 0;  // the longest request (prompt + output), for a started server's context
    bool loop = false;    // --client loop
    std::vector<std::pair<std::string, double>> points;  // (mode, value) in order
    std::vector<std::pair<int64_t, int64_t>> lens;       // every request's (prompt, output)
    std::string shape;                                   // the lengths, for progress lines
};

ServePlan plan_of(const ServeOptions& o) {
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
    if (o.max_error_rate && !(*o.max_error_rate >= 0 && *o.max_error_rate <= 1))
        throw usage_error(
            fmt::format("--max-error-rate {} is not a share in 0..1", *o.max_error_rate));
    if (o.duration_s && !(*o.duration_s > 0))
        throw usage_error("--duration must be above 0");
    if (!o.url && !o.model_file)
        throw usage_error("serve needs --url URL, or -m FILE.gguf for a llama-server it starts");
    ServePlan p;
    p.longest = std::max(o.n_prompt, o.n_prompt_max) + std::max(o.n_gen, o.n_gen_max);
    for (const auto& [lp, ln] : o.lengths)
        p.longest = std::max(p.longest, lp + ln);
    p.loop = o.client == ClientKind::loop;
    for (int c : o.concurrency)
        p.points.push_back({"concurrency", static_cast<double>(c)});
    for (double r : o.rates)
        p.points.push_back({"rate", r});
    // Every point sends the same lengths (seeded), each with prompts of its own.
    p.lens = request_lengths(o.requests, {o.n_prompt, std::max(o.n_prompt, o.n_prompt_max)},
                             {o.n_gen, std::max(o.n_gen, o.n_gen_max)}, o.lengths, o.seed);
    p.shape =
        !o.lengths.empty()
            ? fmt::format("lengths of {} pairs", o.lengths.size())
            : fmt::format("pp{}{}+tg{}{}", o.n_prompt,
                          o.n_prompt_max > o.n_prompt ? fmt::format("-{}", o.n_prompt_max) : "",
                          o.n_gen, o.n_gen_max > o.n_gen ? fmt::format("-{}", o.n_gen_max) : "");
    return p;
}

// The server under load (given, or a llama-server started here), as the run's engine factory
// connects to it: it makes the prompts, the clients and says what the server is.
struct ServeServer {
    std::unique_ptr<ManagedServer> managed;
    HttpEngineOptions eo;
    std::string model;  // the name the requests carry ("" the server's default)
    std::unique_ptr<ServeTarget> target;
};

ServeServer connect_server(const ServeOptions& o, const ServePlan& plan, const TokenBan& ban,
                           RunContext& run) {
    ServeServer s;
    s.model = o.model;
    if (o.url) {
        s.eo.url = *o.url;
    } else {
        LlamaServerSpec spec;
        spec.binary = run.engines().server_program();
        if (spec.binary.empty())
            throw input_error("llama-server not found (build/peers/llama-server)");
        spec.model = *o.model_file;
        spec.threads = o.threads;
        spec.slots = o.slots;
        // Every slot holds a prompt and its output.
        spec.n_ctx = static_cast<int>(o.slots * (plan.longest + 64));
        spec.api = o.api;
        spec.timeout_s = o.timeout_s;
        spec.extra_args = o.server_args;
        spec.banned_tokens = ban.tokens;
        s.managed = run.engines().start_server(spec, [&run](const std::string& m) { run.note(m); });
        s.eo.url = s.managed->url();
        s.model.clear();
    }
    s.eo.api = o.api;
    s.eo.timeouts.connect_ms = static_cast<int64_t>(o.timeout_s * 1000);
    s.eo.timeouts.read_ms = s.eo.timeouts.connect_ms;
    s.eo.banned_tokens = ban.tokens;
    s.target = run.engines().serve_target(s.eo);
    return s;
}

// One point's requests as they are driven: the prompts (made before its clock), the clients
// (thread per request), the records and which requests were sent.
struct PointRun {
    PointRun(const ServeOptions& opts, const ServePlan& pl, ServeServer& s, ServePoint& pt,
             const Clock& c)
        : o(opts), plan(pl), server(s), p(pt), clock(c) {}
    const ServeOptions& o;
    const ServePlan& plan;
    ServeServer& server;
    ServePoint& p;
    const Clock& clock;  // the run's
    std::vector<HttpPrompt> prompts;
    std::vector<double> gaps;  // open loop: the seeded inter-arrival gaps (s)
    int count = 0;             // requests the point may send
    int n_clients = 0;
    std::vector<std::unique_ptr<ServeClient>> clients;
    std::vector<char> sent;  // per request: no shared bits
    int64_t t0 = 0, deadline = 0;
    // --max-error-rate: the errors among the requests finished so far, after each one.
    std::atomic<int> finished{0}, failed{0};
    std::atomic<bool> error_stop{false};
    void note_done(const ServeRequest& q) {
        if (q.interrupted)
            return;
        const int f = q.error ? ++failed : failed.load();
        const int n = ++finished;
        if (o.max_error_rate && n >= kServeErrorRateMinFinished &&
            static_cast<double>(f) / n > *o.max_error_rate)
            error_stop = true;
    }
    bool before_deadline() const {
        return !error_stop.load() && (deadline == 0 || clock() < deadline);
    }
};

// One thread (this one) drives every request in flight (libcurl's multi interface in a real
// run); a closed-loop request that ends starts the next from its callback.
void drive_loop(PointRun& r) {
    std::unique_ptr<ServeStreams> streams = r.server.target->streams();
    const bool closed = r.p.mode == "concurrency";
    int next = 0;
    std::function<void(int)> start = [&](int i) {
        const auto k = static_cast<size_t>(i);
        const int64_t send = r.clock();
        r.sent[k] = 1;
        try {
            streams->start(
                r.server.model, r.prompts[k], r.plan.lens[k].second,
                r.o.seed + static_cast<uint64_t>(i),
                [&, i, k, send](const ServeStreams::Result& result) {
                    r.p.requests[k] = request_record(result, r.prompts[k], i, send, r.t0);
                    r.note_done(r.p.requests[k]);
                    if (closed && next < r.count && !interrupt_requested() && r.before_deadline())
                        start(next++);
                });
        } catch (const Error& err) {
            r.p.requests[k] =
                request_record([&]() -> Generation { throw err; }, r.prompts[k], i, send, r.t0);
            r.note_done(r.p.requests[k]);
        }
    };
    if (closed) {
        while (next < r.n_clients && !interrupt_requested() && r.before_deadline())
            start(next++);
    } else {
        double at_s = 0;
        for (int i = 0; i < r.count && !interrupt_requested() && !r.error_stop; ++i) {
            at_s += r.gaps[static_cast<size_t>(i)];
            const int64_t when = r.t0 + static_cast<int64_t>(at_s * 1e9);
            // At most 10 ms at a time: Ctrl-C is seen within that.
            for (int64_t now = r.clock(); now < when && !interrupt_requested(); now = r.clock())
                streams->wait(std::min<int64_t>(when - now, 10'000'000));
            if (interrupt_requested())
                break;
            start(i);
        }
    }
    while (streams->in_flight() > 0)
        streams->wait(1'000'000'000);
}

// Closed loop, a thread per client: each sends its next request when its last one ended.
void drive_closed_threads(PointRun& r) {
    std::atomic<int> next{0};
    std::vector<std::thread> ts;
    for (int c = 0; c < r.n_clients; ++c)
        ts.emplace_back([&, c] {
            for (int i; !interrupt_requested() && r.before_deadline() && (i = next++) < r.count;) {
                const auto k = static_cast<size_t>(i);
                r.p.requests[k] = one_request(*r.clients[static_cast<size_t>(c)], r.clock,
                                              r.server.model, r.prompts[k], r.plan.lens[k].second,
                                              r.o.seed + static_cast<uint64_t>(i), i, r.t0);
                r.sent[k] = 1;
                r.note_done(r.p.requests[k]);
            }
        });
    for (auto& t : ts)
        t.join();
}

// Open loop, a thread per request, started at its seeded arrival.
void drive_open_threads(PointRun& r) {
    std::vector<std::thread> ts;
    double at_s = 0;
    for (int i = 0; i < r.count && !interrupt_requested() && !r.error_stop; ++i) {
        at_s += r.gaps[static_cast<size_t>(i)];
        const int64_t when = r.t0 + static_cast<int64_t>(at_s * 1e9);
        for (int64_t now = r.clock(); now < when && !interrupt_requested(); now = r.clock())
            r.server.target->pause(std::min<int64_t>(when - now, 10'000'000));
        if (interrupt_requested())
            break;
        r.sent[static_cast<size_t>(i)] = 1;
        ts.emplace_back([&, i] {
            const auto k = static_cast<size_t>(i);
            r.p.requests[k] =
                one_request(*r.clients[k], r.clock, r.server.model, r.prompts[k],
                            r.plan.lens[k].second, r.o.seed + static_cast<uint64_t>(i), i, r.t0);
            r.note_done(r.p.requests[k]);
        });
    }
    for (auto& t : ts)
        t.join();
}

// Before the point's clock: how many requests it sends (open loop: the seeded arrivals within
// --duration), their distinct prompts, and one connected client per worker. False when
// interrupted meanwhile.
bool prepare_point(PointRun& r, RunContext& run, uint64_t& prompt_seed) {
    const ServeOptions& o = r.o;
    r.count = o.requests;
    if (r.p.mode == "rate") {
        r.gaps = arrival_gaps(o.requests, r.p.value, o.burstiness, o.seed);
        if (o.duration_s) {
            double at_s = 0;
            r.count = 0;
            for (double g : r.gaps) {
                if ((at_s += g) >= *o.duration_s)
                    break;
                ++r.count;
            }
            r.count = std::max(r.count, 1);
        }
    }
    const int width = r.p.mode == "concurrency" ? static_cast<int>(r.p.value) : r.count;
    if (o.duration_s)
        run.note(fmt::format("serve {} {:g}: {:g} s (at most {} requests) of {}", r.p.mode,
                             r.p.value, *o.duration_s, o.requests, r.plan.shape));
    else
        run.note(fmt::format("serve {} {:g}: {} requests of {}", r.p.mode, r.p.value, o.requests,
                             r.plan.shape));
    try {
        for (int i = 0; i < r.count && !interrupt_requested(); ++i)
            r.prompts.push_back(r.server.target->make_prompt(
                r.server.model, r.plan.lens[static_cast<size_t>(i)].first, ++prompt_seed));
    } catch (const Error&) {
        if (!interrupt_requested())
            throw;
    }
    if (interrupt_requested())
        return false;
    r.n_clients = std::min(width, r.count);
    for (int i = 0; i < r.n_clients && !r.plan.loop; ++i)
        r.clients.push_back(r.server.target->client());
    r.p.requests.resize(static_cast<size_t>(r.count));
    r.sent.assign(static_cast<size_t>(r.count), 0);
    return true;
}

// After the point's clock: the requests never sent (Ctrl-C) left out, not counted as errors;
// the span, the client's CPU, the failures, the statistics and the energy.
void finish_point(PointRun& r, RunContext& run, const std::string& stage, int64_t wall_ns,
                  double cpu_s) {
    ServePoint& p = r.p;
    std::vector<ServeRequest> kept;
    for (size_t i = 0; i < p.requests.size(); ++i)
        if (r.sent[i])
            kept.push_back(p.requests[i]);
    p.requests = std::move(kept);
    int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
    for (const auto& q : p.requests) {
        first = std::min(first, q.send_ns);
        last = std::max(last, q.send_ns + q.e2e_ns.value_or(0));
    }
    p.duration_ns = p.requests.empty() ? 0 : std::max<int64_t>(last - first, 1);
    const double wall = static_cast<double>(wall_ns) * 1e-9;
    if (wall > 0)
        p.client_cpu_pct = 100 * cpu_s / wall;
    if (!p.requests.empty())
        p.client_cpu_ms_per_request = cpu_s * 1e3 / static_cast<double>(p.requests.size());
    // A server stagebench started that has stopped (an abort, a crash) failed the requests:
    // they say so and why, not "cannot connect", in one line.
    const std::optional<std::string> ended =
        r.server.managed ? r.server.managed->ended() : std::nullopt;
    int n_failed = 0;
    for (auto& q : p.requests)
        if (q.error && !q.interrupted) {
            ++n_failed;
            if (ended)
                q.error = *ended;
            else
                run.note(fmt::format("serve {} {:g}: request {} failed: {}", p.mode, p.value,
                                     q.index, *q.error));
        }
    if (ended && n_failed > 0)
        run.note(fmt::format("serve {} {:g}: {} request(s) failed: {}", p.mode, p.value, n_failed,
                             *ended));
    summarize_point(p, r.o.slo_ms, r.o.bootstrap_resamples, r.o.seed);
    if (Sampler* tel = run.sampler()) {
        const auto st = tel->stage_summaries(stage);
        if (!st.empty()) {
            int64_t out = 0;
            for (const auto& q : p.requests)
                if (!q.error)
                    out += q.output_tokens.value_or(0);
            p.energy = serve_energy(st.back(), p.ok, out);
        }
    }
    run.note(fmt::format(
        "serve {} {:g}: {} ok, {} failed, {:.2f} req/s, {:.1f} output tok/s, TTFT median {:.1f} "
        "ms",
        p.mode, p.value, p.ok, p.errors, p.request_per_s, p.output_tokens_per_s,
        p.ttft.median.value_or(0)));
    if (p.stopped_by)
        run.note(
            fmt::format("serve {} {:g}: stopped after {} of {} requests: {} of {} finished "
                        "failed, more than --max-error-rate {:g}",
                        p.mode, p.value, p.requests.size(), r.count, r.failed.load(),
                        r.finished.load(), *r.o.max_error_rate));
}

// One point: prepared before its clock, driven, finished. nullopt when interrupted before it
// began.
std::optional<ServePoint> measure_point(const ServeOptions& o, const ServePlan& plan,
                                        ServeServer& server, RunContext& run,
                                        const std::pair<std::string, double>& at,
                                        uint64_t& prompt_seed) {
    ServePoint p;
    p.mode = at.first;
    p.value = at.second;
    PointRun r(o, plan, server, p, run.clock());
    if (!prepare_point(r, run, prompt_seed))
        return std::nullopt;
    Sampler* tel = run.sampler();
    const std::string stage = fmt::format("serve.{}.{:g}", p.mode, p.value);
    if (tel)
        tel->mark(stage, true);
    const double cpu0 = cpu_seconds();
    r.t0 = run.clock()();
    p.start_ns = r.t0;
    r.deadline = o.duration_s ? r.t0 + static_cast<int64_t>(*o.duration_s * 1e9) : 0;
    if (plan.loop)
        drive_loop(r);
    else if (p.mode == "concurrency")
        drive_closed_threads(r);
    else
        drive_open_threads(r);
    const int64_t t1 = run.clock()();
    const double cpu1 = cpu_seconds();
    if (r.error_stop)
        p.stopped_by = "max_error_rate";
    if (tel) {
        int64_t out = 0;
        for (size_t i = 0; i < p.requests.size(); ++i)
            if (r.sent[i] && !p.requests[i].error)
                out += p.requests[i].output_tokens.value_or(0);
        tel->mark(stage, false, out);
    }
    finish_point(r, run, stage, t1 - r.t0, cpu1 - cpu0);
    return p;
}

// The serve section of the document as measured so far.
ServeSection serve_section(const ServeOptions& o, const nlohmann::json& server,
                           const std::vector<std::string>& notes, std::vector<ServePoint> points,
                           bool interrupted) {
    ServeSection s;
    s.notes = notes;
    s.api = http_api_name(o.api);
    s.url = o.url;
    if (!o.url) {
        s.slots = o.slots;
        s.server_args = redact_server_args(o.server_args);
    }
    s.model = o.model;
    s.n_prompt = o.n_prompt;
    s.n_gen = o.n_gen;
    s.requests_per_point = o.requests;
    s.burstiness = o.burstiness;
    s.seed = o.seed;
    s.slo_ms = o.slo_ms;
    s.server = server;
    s.saturation = saturation_of(points, !o.slo_ms.empty(), 2 * o.bootstrap_resamples, o.seed);
    s.points = std::move(points);
    s.n_prompt_max = std::max(o.n_prompt, o.n_prompt_max);
    s.n_gen_max = std::max(o.n_gen, o.n_gen_max);
    s.lengths = o.lengths;
    s.duration_s = o.duration_s;
    s.interrupted = interrupted;
    s.client = to_string(o.client);
    s.max_error_rate = o.max_error_rate;
    return s;
}

// The server as the document's engines["http"] and, for a server not started here, its model.
void describe_server(RunContext& run, const ServeOptions& o, const nlohmann::json& server) {
    ResultDocument& doc = run.doc();
    const std::string kind = server.is_object() ? server.value("server", "") : "";
    nlohmann::json e{{"name", "http"}, {"in_process", false}};
    if (server.is_object())
        e.update(server);
    e["started_by_stagebench"] = !o.url;
    if (o.model_file)
        e["slots"] = o.slots;
    else
        doc.models.push_back({{"path", o.model},
                              {"name", o.model.empty() ? kind : o.model},
                              {"engine", "http"},
                              {"server", kind},
                              {"url", o.url.value_or("")}});
    doc.engines["http"] = e;
}

}  // namespace

RunResult run_serve(const ServeOptions& o, RunEnv env) {
    const ServePlan plan = plan_of(o);
    RunSetup setup;
    setup.take(env);
    if (o.model_file)
        setup.models = {*o.model_file};  // bad input before a server starts
    setup.telemetry = o.telemetry;
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    RunContext run(env.doc, setup, env.err, env.listener);
    // The llama-server it starts: what llama.cpp would refuse at startup is said as run says it
    // (after RunContext's checks of the file: llama.cpp aborts on some of what they refuse),
    // and a synthetic model's tokens that llama-server cannot stream are banned.
    // llama-server tokenizes every request: a vocabulary its tokenizer aborts on is refused here.
    TokenBan ban;
    if (o.model_file) {
        check_llama_tokenizes(*o.model_file);
        const bool synthetic =
            !run.doc().models.empty() && run.doc().models.front().value("synthetic", false);
        if (synthetic)
            ban = synthetic_token_ban(true, non_utf8_tokens(*o.model_file),
                                      "(a logit bias in every request)");
    }
    std::vector<std::string> notes;
    if (!ban.note.empty())
        notes.push_back(ban.note);
    // Ctrl-C before the first point (while llama-server starts or the server is asked what it
    // is) cuts a request or a wait, which throws: the run was interrupted, not given bad input,
    // so the document is kept with no points, marked interrupted.
    ServeServer server;
    nlohmann::json about;
    try {
        server = connect_server(o, plan, ban, run);
        about = server.target->describe();
    } catch (const Error& e) {
        if (!interrupt_requested())
            throw;
        run.note(std::string("interrupted before the first point was measured (") + e.what() + ")");
        run.update(
            [&](ResultDocument& doc) { doc.serve = serve_section(o, about, notes, {}, true); });
        return run.finish(Outcome::ok);
    }
    describe_server(run, o, about);
    run.open(threads_or_default(o.threads));
    // Telemetry: one stage per point, energy net of an idle baseline taken with the server up.
    run.start();
    run.plan(plan.points.size());
    std::vector<ServePoint> points;
    uint64_t prompt_seed = o.seed * 1000003;
    bool failed = false;
    for (const auto& at : plan.points) {
        if (run.should_stop())
            break;
        std::optional<ServePoint> p = measure_point(o, plan, server, run, at, prompt_seed);
        if (!p)
            break;
        failed = failed || p->errors > 0;
        // The server stagebench started has stopped: no further point is sent to it.
        const bool server_ended = server.managed && server.managed->ended();
        failed = failed || server_ended;
        if (p->client_cpu_pct && *p->client_cpu_pct > 50)
            run.doc().warnings.push_back(
                {"serve_client_cpu",
                 fmt::format("{}: the client used {:.0f} % of a core: it may be what limits "
                             "the point",
                             p->label(), *p->client_cpu_pct),
                 "fewer concurrent clients per point, or the client on a machine with idle "
                 "cores"});
        points.push_back(std::move(*p));
        run.progress().advance();
        Sampler* tel = run.sampler();
        run.update([&](ResultDocument& doc) {
            doc.serve = serve_section(o, about, notes, points, interrupt_requested());
            if (tel)
                doc.telemetry = tel->record();
        });
        if (server_ended)
            break;
    }
    run.update([&](ResultDocument& doc) {
        doc.serve = serve_section(o, about, notes, points, interrupt_requested());
    });
    server.target.reset();
    server.managed.reset();
    return run.finish(failed ? Outcome::failed : Outcome::ok);
}

}  // namespace sb
