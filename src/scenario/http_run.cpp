#include "scenario/http_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "engine/process.hpp"

namespace sb {
namespace {

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void add_note(TestResult& r, const std::string& n) {
    if (std::find(r.notes.begin(), r.notes.end(), n) == r.notes.end())
        r.notes.push_back(n);
}

bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

// ---- one test --------------------------------------------------------------------------------

void add_http_repetition(TestResult& r, const RequestTiming& t, const Generation& g,
                         int64_t n_prompt) {
    if (!r.client)
        r.client.emplace();
    int64_t prompt = n_prompt;
    if (g.prompt_tokens)
        prompt = *g.prompt_tokens;
    else if (g.server && g.server->prompt_n)
        prompt = *g.server->prompt_n + g.server->cache_n.value_or(0);
    // The stages appear with their first measured repetition, so a test that failed before
    // measuring anything reads as failed, not as a row of empty numbers.
    if (!r.prefill)
        r.prefill.emplace().n_tokens = r.config.n_prompt;
    if (!r.decode && r.config.n_gen >= 2) {
        r.decode.emplace().n_tokens = r.config.n_gen - 1;  // the tokens after the first
        r.decode->kv_depth_start = r.config.n_prompt + 1;
    }
    const int64_t ttft = std::max<int64_t>(1, t.ttft_ns);
    r.ttft_ns.push_back(t.ttft_ns);
    if (r.prefill) {
        r.prefill->duration_ns.push_back(t.ttft_ns);
        r.prefill->start_ns.push_back(g.start_ns);
        r.prefill->tokens_per_s.push_back(static_cast<double>(prompt) * 1e9 / ttft);
    }
    if (r.decode && t.n_out >= 2 && t.e2e_ns > t.ttft_ns) {
        const int64_t d = t.e2e_ns - t.ttft_ns;
        r.decode->duration_ns.push_back(d);
        r.decode->start_ns.push_back(g.start_ns + t.ttft_ns);
        r.decode->tokens_per_s.push_back(static_cast<double>(t.n_out - 1) * 1e9 / d);
        r.decode->token_latency_ns.insert(r.decode->token_latency_ns.end(), t.itl_ns.begin(),
                                          t.itl_ns.end());
        r.decode->token_latency_counts.push_back(static_cast<int64_t>(t.itl_ns.size()));
    }
    ClientTimings& c = *r.client;
    c.e2e_ns.push_back(t.e2e_ns);
    if (t.tpot_ns)
        c.tpot_ns.push_back(*t.tpot_ns);
    c.first_content_ns.push_back(t.first_content_ns);
    c.prompt_tokens.push_back(prompt);
    c.output_tokens.push_back(t.n_out);
    c.streamed_tokens.push_back(t.n_streamed);
    c.chunks.push_back(t.n_chunks);
    if (g.server) {
        if (!r.server)
            r.server.emplace();
        const ServerTimings& s = *g.server;
        r.server->reps.push_back(s);
        if (s.prompt_ns)
            r.server->ttft_minus_prompt_ns.push_back(t.ttft_ns - *s.prompt_ns);
        if (s.prompt_ns && s.predicted_ns)
            r.server->e2e_minus_total_ns.push_back(t.e2e_ns - *s.prompt_ns - *s.predicted_ns);
    }
}

void finish_http_result(TestResult& r, const std::string& server_kind) {
    if (r.prefill)
        finish_stage(*r.prefill);
    if (r.decode)
        finish_decode(*r.decode);
    r.ttft = summarize_ns(r.ttft_ns);
    const TestConfig& cfg = r.config;
    const std::string name = cfg.test_name() + " over HTTP";
    if (r.client) {
        ClientTimings& c = *r.client;
        c.e2e = summarize_ns(c.e2e_ns);
        c.tpot = summarize_ns(c.tpot_ns);
        std::vector<double> fc;
        for (const auto& v : c.first_content_ns)
            if (v)
                fc.push_back(static_cast<double>(*v));
        c.first_content = summarize(fc);
        if (!c.prompt_tokens.empty()) {
            const auto [lo, hi] =
                std::minmax_element(c.prompt_tokens.begin(), c.prompt_tokens.end());
            if (*lo != cfg.n_prompt || *hi != cfg.n_prompt)
                add_note(r, name + ": the server counted " + std::to_string(*lo) +
                                (*hi != *lo ? "-" + std::to_string(*hi) : "") +
                                " prompt tokens (asked " + std::to_string(cfg.n_prompt) +
                                "; its tokenizer or chat template); prefill t/s uses its count");
        }
        const int64_t want = std::max(1, cfg.n_gen);
        if (!c.output_tokens.empty()) {
            const int64_t lo = *std::min_element(c.output_tokens.begin(), c.output_tokens.end());
            if (lo < want)
                add_note(r, name + ": the server stopped after " + std::to_string(lo) + " of " +
                                std::to_string(want) +
                                " tokens in some repetition (EOS it would not ignore, or a limit)");
        }
    }
    if (r.server) {
        ServerSide& s = *r.server;
        std::vector<double> pre, dec;
        for (const auto& t : s.reps) {
            if (t.prompt_n && t.prompt_ns && *t.prompt_ns > 0)
                pre.push_back(static_cast<double>(*t.prompt_n) * 1e9 / *t.prompt_ns);
            if (t.predicted_n && t.predicted_ns && *t.predicted_ns > 0)
                dec.push_back(static_cast<double>(*t.predicted_n) * 1e9 / *t.predicted_ns);
        }
        s.prefill_tokens_per_s = summarize(pre);
        s.decode_tokens_per_s = summarize(dec);
        s.ttft_minus_prompt = summarize_ns(s.ttft_minus_prompt_ns);
        s.e2e_minus_total = summarize_ns(s.e2e_minus_total_ns);
        std::string n = name + " (" + server_kind + " timings, medians): server prefill ";
        n += s.prefill_tokens_per_s.median ? fixed(*s.prefill_tokens_per_s.median, 1) : "-";
        n += " t/s, decode ";
        n += s.decode_tokens_per_s.median ? fixed(*s.decode_tokens_per_s.median, 1) : "-";
        n += " t/s; client - server: TTFT - prompt time ";
        n +=
            s.ttft_minus_prompt.median ? fixed(*s.ttft_minus_prompt.median * 1e-6, 3) + " ms" : "-";
        n += ", E2E - server total ";
        n += s.e2e_minus_total.median ? fixed(*s.e2e_minus_total.median * 1e-6, 3) + " ms" : "-";
        add_note(r, n);
    }
}

TestResult run_http_test(HttpEngine& engine, const std::string& model, const TestConfig& c,
                         const SweepHooks& hooks) {
    TestResult r;
    r.config = c;
    r.started_ns = now_ns();
    auto mark = [&](const char* stage, bool begin, std::optional<int64_t> tokens = {}) {
        if (hooks.stage_marker)
            hooks.stage_marker(stage, begin, tokens);
    };
    const int64_t n_gen = std::max(1, c.n_gen);
    try {
        const bool decode = c.n_gen >= 2;
        if (c.warmup) {
            if (hooks.progress)
                hooks.progress(c.test_name() + " over HTTP: warmup");
            HttpPrompt p = engine.make_prompt(model, c.n_prompt, c.seed * 1000003 + 999983);
            engine.generate(model, p, std::min<int64_t>(n_gen, 8), c.seed);
        }
        r.stopped_by = StopReason::reps;
        for (int rep = 0; rep < c.max_reps; ++rep) {
            if (interrupt_requested()) {
                r.status = Status::interrupted;
                r.stopped_by = StopReason::interrupt;
                break;
            }
            if (hooks.progress)
                hooks.progress(c.test_name() + " over HTTP: repetition " + std::to_string(rep + 1) +
                               "/" + std::to_string(c.max_reps));
            // The prompt is made (and sized with the server's tokenizer) before the clock
            // starts; its words change every repetition so no prefix cache can help.
            const HttpPrompt prompt = engine.make_prompt(model, c.n_prompt, c.seed * 1000003 + rep);
            mark("prefill", true);
            Generation g = engine.generate(model, prompt, n_gen, c.seed + rep, [&] {
                mark("prefill", false, c.n_prompt);
                if (decode)
                    mark("decode", true);
            });
            RequestTiming t = compute_timing(g);
            if (decode)
                mark("decode", false, std::max<int64_t>(0, t.n_out - 1));
            for (const auto& n : t.notes)
                add_note(r, c.test_name() + " over HTTP: " + n);
            add_http_repetition(r, t, g, c.n_prompt);
            if (repetition_done(r, c, rep))
                break;
        }
    } catch (const std::exception& e) {
        r.status = interrupt_requested() ? Status::interrupted : Status::failed;
        r.error = e.what();
        r.stopped_by = interrupt_requested() ? StopReason::interrupt : StopReason::error;
    }
    finish_http_result(r, engine.server_kind());
    r.finished_ns = now_ns();
    return r;
}

// ---- the run ---------------------------------------------------------------------------------

// A llama-server started by stagebench on 127.0.0.1 for one model and thread count.
struct HttpRun::Managed {
    std::string model;
    int threads = 0;
    std::string log;
    bool keep_log = false;  // the log of a server that failed is named in the error
    ChildProcess proc;
    std::unique_ptr<HttpEngine> engine;
    ~Managed() {
        engine.reset();
        proc.stop();
        std::error_code ec;
        if (!keep_log && !log.empty())
            std::filesystem::remove(log, ec);
    }
};

HttpRun::HttpRun(const HttpRunOptions& o, const MatrixSpec& m,
                 const std::vector<std::string>& rpc_servers)
    : opts_(o) {
    if (opts_.engines.empty())
        throw usage_error("--engine needs llama, http or llama,http");
    for (const auto& e : opts_.engines) {
        if (e == "llama")
            llama_ = true;
        else if (e == "http")
            http_ = true;
        else
            throw usage_error("--engine must be llama, http or llama,http, not '" + e + "'");
    }
    api_ = parse_http_api(opts_.api);
    if (!http_) {
        if (opts_.url)
            throw usage_error("--url needs --engine http");
        return;
    }
    if (!(opts_.timeout_s > 0))
        throw usage_error("--timeout must be > 0 seconds");
    if (opts_.url) {
        parse_url(*opts_.url);  // throws usage for a malformed one
        if (llama_)
            throw usage_error(
                "--url is for --engine http alone; to compare with the in-process engine, omit "
                "--url and stagebench starts llama-server for -m itself");
    }
    for (int d : m.n_depth)
        if (d > 0)
            throw usage_error(
                "-d (KV depth before the prompt) is not available with --engine http");
    if (!llama_ && !rpc_servers.empty())
        throw usage_error("--rpc applies to the in-process engine (--engine llama)");
    if (!opts_.url) {
        if (m.models.empty())
            throw usage_error(
                "--engine http needs --url URL, or -m FILE.gguf for a llama-server that "
                "stagebench starts on 127.0.0.1");
        if (api_ == HttpApi::ollama)
            throw usage_error("--api ollama needs --url of an Ollama server");
        server_bin_ = find_peer_program("llama-server");
        if (server_bin_.empty())
            throw input_error(
                "llama-server not found (build/peers/llama-server); build it with llama.cpp or "
                "give --url of a running server");
    }
}

HttpRun::~HttpRun() {
    stop();
}

std::vector<TestConfig> HttpRun::plan(const MatrixSpec& matrix) {
    std::vector<TestConfig> local;
    if (llama_)
        local = expand_matrix(matrix);
    if (!http_)
        return local;
    MatrixSpec hm = matrix;
    hm.devices = {"HTTP"};
    hm.n_batch = {2048};
    hm.n_ubatch = {512};
    hm.n_gpu_layers = {99};
    hm.flash_attn = {"auto"};
    hm.type_k = {"f16"};
    hm.type_v = {"f16"};
    if (opts_.url) {
        hm.n_threads = {1};  // one test per point; the server's threads are its own (0 below)
        if (hm.models.empty())
            hm.models = {""};
    }
    std::vector<TestConfig> remote = expand_matrix(hm);
    for (auto& t : remote) {
        t.engine = EngineKind::http;
        if (opts_.url)
            t.n_threads = 0;
        n_ctx_ = std::max(n_ctx_, t.n_prompt + std::max(1, t.n_gen) + 64);
    }
    std::vector<TestConfig> out;
    std::vector<bool> used(remote.size(), false);
    for (const auto& l : local) {
        out.push_back(l);
        for (size_t i = 0; i < remote.size(); ++i) {
            const auto& h = remote[i];
            if (!used[i] && h.model_path == l.model_path && h.n_prompt == l.n_prompt &&
                h.n_gen == l.n_gen && (h.n_threads == l.n_threads || h.n_threads == 0)) {
                out.push_back(h);
                used[i] = true;
                break;
            }
        }
    }
    for (size_t i = 0; i < remote.size(); ++i)
        if (!used[i])
            out.push_back(remote[i]);
    return out;
}

void HttpRun::connect(ResultDocument& doc, std::vector<TestConfig>& tests, std::ostream& err,
                      bool progress) {
    if (llama_)
        doc.engines["llama"] = {{"name", "llama.cpp"}, {"in_process", true}};
    if (!http_)
        return;
    nlohmann::json e{{"name", "http"},
                     {"in_process", false},
                     {"api", http_api_name(api_)},
                     {"timeout_s", opts_.timeout_s}};
    if (!opts_.url) {
        e["server"] = "llama-server";
        e["started_by_stagebench"] = true;
        e["binary"] = server_bin_;
        e["host"] = "127.0.0.1";
        e["n_ctx"] = n_ctx_;
        doc.engines["http"] = e;
        return;
    }
    HttpEngineOptions eo;
    eo.url = *opts_.url;
    eo.api = api_;
    eo.timeouts.connect_ms = static_cast<int64_t>(opts_.timeout_s * 1000);
    eo.timeouts.read_ms = eo.timeouts.connect_ms;
    engine_ = std::make_unique<HttpEngine>(eo);
    engine_->connect();
    e["started_by_stagebench"] = false;
    e.update(engine_->describe());
    doc.engines["http"] = e;
    const std::string fallback = engine_->models().empty() ? "" : engine_->models().front();
    std::set<std::string> names;
    for (auto& t : tests) {
        if (t.engine != EngineKind::http)
            continue;
        if (t.model_path.empty())
            t.model_path = fallback;
        names.insert(t.model_path);
    }
    if (api_ == HttpApi::ollama && names.count(""))
        throw usage_error("--api ollama needs a model name (-m NAME): the server lists none");
    for (const auto& n : names)
        doc.models.push_back({{"path", n},
                              {"name", n.empty() ? engine_->server_kind() : n},
                              {"engine", "http"},
                              {"server", engine_->server_kind()},
                              {"url", engine_->options().url}});
    const Url u = parse_url(engine_->options().url);
    if (!is_loopback(u.host))
        doc.warnings.push_back(
            {"http_remote_server",
             "the server at " + engine_->options().url +
                 " is not on this machine: system information and telemetry describe the "
                 "client, and TTFT/ITL include the network",
             "run stagebench on the server's machine (or a loopback tunnel) to measure it"});
    if (progress)
        err << "stagebench: http: " << engine_->options().url << " (" << engine_->server_kind()
            << ", api " << http_api_name(api_) << ")\n";
}

TestResult HttpRun::run(const TestConfig& c, const SweepHooks& hooks) {
    if (opts_.url)
        return run_http_test(*engine_, c.model_path, c, hooks);
    if (!managed_ || managed_->model != c.model_path || managed_->threads != c.n_threads) {
        managed_.reset();
        try {
            auto m = std::make_unique<Managed>();
            m->model = c.model_path;
            m->threads = c.n_threads;
            const int port = free_loopback_port();
            m->log = (std::filesystem::temp_directory_path() /
                      ("stagebench-llama-server-" + std::to_string(getpid()) + "-" +
                       std::to_string(port) + ".log"))
                         .string();
            std::vector<std::string> argv{server_bin_,
                                          "-m",
                                          c.model_path,
                                          "--host",
                                          "127.0.0.1",
                                          "--port",
                                          std::to_string(port),
                                          "-c",
                                          std::to_string(n_ctx_),
                                          "-np",
                                          "1",
                                          "--no-webui"};
            if (c.n_threads > 0)
                argv.insert(argv.end(), {"-t", std::to_string(c.n_threads), "-tb",
                                         std::to_string(c.n_threads)});
            if (hooks.progress)
                hooks.progress("starting llama-server on 127.0.0.1:" + std::to_string(port) +
                               " (log " + m->log + ")");
            m->proc = ChildProcess::spawn(argv, m->log);
            const std::string url = "http://127.0.0.1:" + std::to_string(port);
            const int64_t wait_ms = std::max<int64_t>(120000, opts_.timeout_s * 1000);
            const int64_t deadline = now_ns() + wait_ms * 1'000'000;
            bool ready = wait_for_port("127.0.0.1", port, static_cast<int>(wait_ms), &m->proc);
            HttpClient probe(url, HttpTimeouts{2000, 10000});
            while (ready) {
                if (!m->proc.running() || interrupt_requested()) {
                    ready = false;
                    break;
                }
                try {
                    if (probe.get("/health").status == 200)
                        break;
                } catch (const Error&) {
                }
                if (now_ns() > deadline) {
                    ready = false;
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            if (!ready) {
                std::string last, line;
                std::ifstream f(m->log);
                while (std::getline(f, line))
                    if (!line.empty())
                        last = line;
                m->keep_log = true;
                throw runtime_error("llama-server did not become ready: " +
                                    (last.empty() ? std::string("no output") : last) + " (log " +
                                    m->log + ")");
            }
            HttpEngineOptions eo;
            eo.url = url;
            eo.api = api_;
            eo.timeouts.connect_ms = static_cast<int64_t>(opts_.timeout_s * 1000);
            eo.timeouts.read_ms = eo.timeouts.connect_ms;
            m->engine = std::make_unique<HttpEngine>(eo);
            m->engine->connect();
            managed_ = std::move(m);
        } catch (const std::exception& e) {
            TestResult r;
            r.config = c;
            r.status = Status::failed;
            r.error = e.what();
            r.stopped_by = StopReason::error;
            r.started_ns = r.finished_ns = now_ns();
            return r;
        }
    }
    TestResult r = run_http_test(*managed_->engine, "", c, hooks);
    add_note(r,
             "HTTP tests ran on a llama-server that stagebench started on 127.0.0.1 for the same "
             "GGUF (-np 1, prompt cache off); it uses the backends llama.cpp picks by default "
             "(accelerators such as BLAS included)");
    return r;
}

void HttpRun::stop() {
    managed_.reset();
}

}  // namespace sb
