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
#include "engine/managed_server.hpp"
#include "engine/process.hpp"
#include "engine/server_kind.hpp"
#include "engine/text_generation.hpp"
#include "engine/tokenizer_check.hpp"
#include "engine/wire_api.hpp"
#include "model/inspect.hpp"
#include "scenario/run_context.hpp"

namespace sb {
namespace {

void add_note(TestResult& r, const std::string& n) {
    if (std::find(r.notes.begin(), r.notes.end(), n) == r.notes.end())
        r.notes.push_back(n);
}

bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

// ---- one test --------------------------------------------------------------------------------

TestResult run_http_test(Engine& engine, const std::string& model, const TestConfig& c,
                         const SweepHooks& hooks, const Clock& clock) {
    LoadSpec spec;
    spec.model_path = model;
    engine.load(spec);  // only names the model in the requests
    RepetitionOptions o;
    o.load = false;
    o.clock = clock;
    return run_repetitions(engine, c, hooks, std::move(o));
}

// ---- the run ---------------------------------------------------------------------------------

// A llama-server started by stagebench on 127.0.0.1 for one model and thread count.
struct HttpRun::Managed {
    std::string model;
    int threads = 0;
    std::unique_ptr<ManagedServer> server;
    std::string ban_note;  // synthetic_token_ban's, when tokens are banned
};

HttpRun::HttpRun(const HttpRunOptions& o, const MatrixSpec& m,
                 const std::vector<std::string>& rpc_servers)
    : opts_(o) {
    if (opts_.engines.empty())
        throw usage_error("--engine needs llama, http or llama,http");
    for (EngineKind e : opts_.engines)
        (e == EngineKind::llama ? llama_ : http_) = true;
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
    for (int p : m.n_prompt)
        if (p == 0)
            throw usage_error(
                "-p 0 (decode alone) is not available with --engine http: a "
                "server's request begins with its prompt");
    if (!llama_ && !rpc_servers.empty())
        throw usage_error("--rpc applies to the in-process engine (--engine llama)");
    if (!opts_.url) {
        if (m.models.empty())
            throw usage_error(
                "--engine http needs --url URL, or -m FILE.gguf for a llama-server that "
                "stagebench starts on 127.0.0.1");
        // The server stagebench starts speaks every API but another server's own.
        if (const ServerKind* own = wire_api(opts_.api).own_server();
            own && !own->started_by_stagebench())
            throw usage_error(std::string("--api ") + http_api_name(opts_.api) +
                              " needs --url of " + own->described_as());
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
    hm.flash_attn = {FlashAttn::automatic};
    hm.type_k = {KvType::f16};
    hm.type_v = {KvType::f16};
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

void HttpRun::connect(RunContext& run, std::vector<TestConfig>& tests) {
    ResultDocument& doc = run.doc();
    engines_ = &run.engines();
    if (llama_)
        doc.engines["llama"] = {{"name", "llama.cpp"}, {"in_process", true}};
    if (!http_)
        return;
    if (!opts_.url) {
        server_bin_ = engines_->server_program();
        if (server_bin_.empty())
            throw input_error(
                "llama-server not found (build/peers/llama-server); build it with llama.cpp or "
                "give --url of a running server");
    }
    nlohmann::json e{{"name", "http"},
                     {"in_process", false},
                     {"api", http_api_name(opts_.api)},
                     {"timeout_s", opts_.timeout_s}};
    if (!opts_.url) {
        e["server"] = llama_server_kind().name();
        e["started_by_stagebench"] = true;
        e["binary"] = server_bin_;
        e["host"] = "127.0.0.1";
        e["n_ctx"] = n_ctx_;
        doc.engines["http"] = e;
        return;
    }
    HttpEngineOptions eo;
    eo.url = *opts_.url;
    eo.api = opts_.api;
    eo.timeouts.connect_ms = static_cast<int64_t>(opts_.timeout_s * 1000);
    eo.timeouts.read_ms = eo.timeouts.connect_ms;
    engine_ = run.engines().make(EngineKind::http, eo);
    const nlohmann::json about = engine_->describe();
    const std::string kind = engine_->caps().name;
    e["started_by_stagebench"] = false;
    e.update(about);
    doc.engines["http"] = e;
    std::vector<std::string> listed;
    if (about.contains("models") && about["models"].is_array())
        for (const auto& m : about["models"])
            if (m.is_string())
                listed.push_back(m.get<std::string>());
    const std::string fallback = listed.empty() ? "" : listed.front();
    std::set<std::string> names;
    for (auto& t : tests) {
        if (t.engine != EngineKind::http)
            continue;
        if (t.model_path.empty())
            t.model_path = fallback;
        names.insert(t.model_path);
    }
    if (wire_api(opts_.api).needs_model_name() && names.count(""))
        throw usage_error(std::string("--api ") + http_api_name(opts_.api) +
                          " needs a model name (-m NAME): the server lists none");
    for (const auto& n : names)
        doc.models.push_back({{"path", n},
                              {"name", n.empty() ? kind : n},
                              {"engine", "http"},
                              {"server", kind},
                              {"url", eo.url}});
    const Url u = parse_url(eo.url);
    if (!is_loopback(u.host))
        doc.warnings.push_back(
            {"http_remote_server",
             "the server at " + eo.url +
                 " is not on this machine: system information and telemetry describe the "
                 "client, and TTFT/ITL include the network",
             "run stagebench on the server's machine (or a loopback tunnel) to measure it"});
    run.note("http: " + eo.url + " (" + kind + ", api " + http_api_name(opts_.api) + ")");
}

TestResult HttpRun::run(const TestConfig& c, const SweepHooks& hooks, const Clock& clock) {
    if (opts_.url)
        return run_http_test(*engine_, c.model_path, c, hooks, clock);
    if (!managed_ || managed_->model != c.model_path || managed_->threads != c.n_threads) {
        managed_.reset();
        try {
            auto m = std::make_unique<Managed>();
            m->model = c.model_path;
            m->threads = c.n_threads;
            LlamaServerSpec spec;
            spec.binary = server_bin_;
            spec.model = c.model_path;
            spec.threads = c.n_threads;
            spec.n_ctx = n_ctx_;
            spec.api = opts_.api;
            spec.timeout_s = opts_.timeout_s;
            // RunContext has checked the file: llama.cpp reads its vocabulary without aborting.
            // The server tokenizes the requests: a vocabulary its tokenizer aborts on fails the
            // test here, with its reason, instead of the server.
            check_llama_tokenizes(c.model_path);
            if (inspect_model(c.model_path).synthetic) {
                TokenBan ban = synthetic_token_ban(true, non_utf8_tokens(c.model_path),
                                                   "in its HTTP tests (a logit bias in every "
                                                   "request)");
                spec.banned_tokens = std::move(ban.tokens);
                m->ban_note = std::move(ban.note);
            }
            m->server = engines_->start_server(spec, hooks.progress);
            managed_ = std::move(m);
        } catch (const std::exception& e) {
            TestResult r;
            r.config = c;
            // Like a failed request: a server that would not start says nothing of its kind.
            record_failure(r, e.what(), std::nullopt);
            r.started_ns = r.finished_ns = clock();
            return r;
        }
    }
    TestResult r = run_http_test(managed_->server->engine(), "", c, hooks, clock);
    add_note(r,
             "HTTP tests ran on a llama-server that stagebench started on 127.0.0.1 for the same "
             "GGUF (-np 1, prompt cache off); it uses the backends llama.cpp picks by default "
             "(accelerators such as BLAS included)");
    if (!managed_->ban_note.empty())
        add_note(r, managed_->ban_note);
    return r;
}

TestResult HttpRun::measure(const TestConfig& c, const SweepHooks& hooks, const Clock& clock,
                            std::optional<double> membw,
                            const std::function<void(Engine&, TestResult&)>& after) {
    if (c.engine == EngineKind::http) {
        TestResult r = run(c, hooks, clock);
        Engine* e = opts_.url ? engine_.get() : managed_ ? &managed_->server->engine() : nullptr;
        if (after && e)
            after(*e, r);
        return r;
    }
    if (!local_)
        local_ = engines_->make(EngineKind::llama);
    TestResult r = run_test(*local_, c, hooks, membw, clock);
    if (after)
        after(*local_, r);  // after the timed repetitions, untimed
    return r;
}

void HttpRun::stop() {
    local_.reset();
    managed_.reset();
}

}  // namespace sb
