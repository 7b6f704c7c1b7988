#include "profile/llama_bench_command.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parse.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "profile/import_finish.hpp"
#include "profile/llama_bench_import.hpp"

namespace sb {

namespace {

using nlohmann::json;

constexpr const char* kTool = "llama-bench";

struct Row {
    LlamaBenchRow r;
    std::string file;
    TestConfig config;  // what the row's columns say (n_prompt, n_gen of the row)
};

std::optional<std::string> field(const LlamaBenchRow& r, const char* name) {
    const auto it = r.fields.find(name);
    if (it == r.fields.end() || trim(it->second).empty())
        return std::nullopt;
    return trimmed(it->second);
}

// The row's workload from its columns; absent columns keep the pinned llama-bench's defaults
// (n_batch 2048, n_ubatch 512, f16 caches, flash attention auto, every layer offloaded).
// Returns why the row cannot be a test, or "".
std::string config_of(const LlamaBenchRow& r, TestConfig& c) {
    c.model_path = field(r, "model_filename").value_or(field(r, "model_type").value_or("?"));
    c.n_prompt = r.n_prompt;
    c.n_gen = r.n_gen;
    c.n_depth = r.n_depth;
    c.n_gpu_layers = -1;
    c.n_threads = 0;
    c.engine = EngineKind::llama;
    c.reps = c.max_reps = static_cast<int>(r.samples_ns.size());
    struct IntField {
        const char* name;
        int* out;
        int64_t lo, hi;
    };
    for (const IntField& f : {IntField{"n_threads", &c.n_threads, 0, 100000},
                              IntField{"n_batch", &c.n_batch, 1, 10000000},
                              IntField{"n_ubatch", &c.n_ubatch, 1, 10000000},
                              IntField{"n_gpu_layers", &c.n_gpu_layers, -1, 1000000}}) {
        const auto text = field(r, f.name);
        if (!text)
            continue;
        const auto v = parse_decimal_int(*text);
        if (!v || *v < f.lo || *v > f.hi)
            return fmt::format("{} '{}' cannot be true ({}..{})", f.name, *text, f.lo, f.hi);
        *f.out = static_cast<int>(*v);
    }
    for (auto [name, out] : {std::pair{"type_k", &c.type_k}, std::pair{"type_v", &c.type_v}}) {
        const auto text = field(r, name);
        if (!text)
            continue;
        const auto t = parse_enum<KvType>(*text);
        if (!t)
            return fmt::format("{} '{}' is no KV cache type ({})", name, *text,
                               enum_spellings<KvType>());
        *out = *t;
    }
    if (const auto fa = field(r, "flash_attn")) {
        if (*fa == "-1" || *fa == "auto")
            c.flash_attn = FlashAttn::automatic;
        else if (*fa == "1" || *fa == "true" || *fa == "on")
            c.flash_attn = FlashAttn::on;
        else if (*fa == "0" || *fa == "false" || *fa == "off")
            c.flash_attn = FlashAttn::off;
        else
            return fmt::format("flash_attn '{}' is none of -1, 0, 1", *fa);
    }
    // llama-bench's devices: "auto" (llama.cpp's choice), "none" (the CPU alone) or names
    // joined with '/'.
    const std::string dev = field(r, "devices").value_or("auto");
    const std::string backends = field(r, "backends").value_or("");
    if (dev == "none" || (dev == "auto" && (backends == "CPU" || backends.empty())))
        c.devices = "CPU";
    else if (dev == "auto")
        c.devices = "auto";
    else {
        std::string d = dev;
        std::replace(d.begin(), d.end(), '/', '+');
        c.devices = d;
    }
    return "";
}

// "2.52 MiB" -> bytes, "4.20 M" -> count, as markdown prints them (two decimals).
std::optional<int64_t> scaled(const std::string& text, const std::map<std::string, double>& units) {
    const std::size_t sp = text.find(' ');
    if (sp == std::string::npos)
        return std::nullopt;
    const auto v = parse_decimal(text.substr(0, sp));
    const auto u = units.find(trimmed(text.substr(sp + 1)));
    if (!v || u == units.end() || *v < 0 || *v * u->second > 1e15)
        return std::nullopt;
    return static_cast<int64_t>(std::llround(*v * u->second));
}

// The row's stage: its samples, or its mean as the one value.
void fill_stage(const LlamaBenchRow& r, int n_tokens, StageResult& s) {
    s.n_tokens = n_tokens;
    if (!r.samples_ns.empty()) {
        s.duration_ns = r.samples_ns;
        s.tokens_per_s = r.samples_ts;
        s.duration = summarize_ns(s.duration_ns);
        s.throughput = summarize(s.tokens_per_s);
        return;
    }
    const double tokens = r.n_prompt + r.n_gen;
    s.duration_ns = {r.avg_ns ? *r.avg_ns
                              : static_cast<int64_t>(std::llround(1e9 * tokens / *r.avg_ts))};
    s.tokens_per_s = {*r.avg_ts};
    s.duration = summarize_ns(s.duration_ns);
    s.throughput = summarize(s.tokens_per_s);
    // The file's own spread of its repetitions, which one value cannot give.
    s.throughput.stddev = r.stddev_ts;
    if (r.stddev_ts)
        s.throughput.cv = *r.stddev_ts / *r.avg_ts;
    if (r.stddev_ns) {
        s.duration.stddev = static_cast<double>(*r.stddev_ns);
        s.duration.cv = static_cast<double>(*r.stddev_ns) / static_cast<double>(s.duration_ns[0]);
    }
}

ImportedRow imported_row(const Row& x) {
    ImportedRow o;
    o.file = x.file;
    o.line = x.r.line;
    o.test = x.r.test;
    o.stage = x.r.n_gen == 0 ? "pp" : x.r.n_prompt == 0 ? "tg" : "pp+tg";
    o.avg_ts = x.r.avg_ts;
    o.stddev_ts = x.r.stddev_ts;
    o.avg_ns = x.r.avg_ns;
    o.stddev_ns = x.r.stddev_ns;
    o.samples_ns = x.r.samples_ns;
    o.samples_ts = x.r.samples_ts;
    for (const auto& [k, v] : x.r.fields)
        o.fields[k] = v;
    return o;
}

std::vector<std::string> split_backends(const std::string& b) {
    std::vector<std::string> out;
    for (auto& s : split_list(b, ','))
        if (!trim(s).empty())
            out.push_back(trimmed(s));
    return out;
}

std::string where(const Row& x) {
    return fmt::format("{} line {} ({})", x.file, x.r.line, x.r.test);
}

TestResult make_test(const std::vector<const Row*>& rows) {
    const Row& first = *rows.front();
    TestResult t;
    t.config = first.config;
    t.status = Status::ok;
    t.stopped_by = StopReason::reps;
    t.backends = split_backends(field(first.r, "backends").value_or(""));
    t.imported = TestImport{kTool, {}};
    const Row* pp = nullptr;
    const Row* tg = nullptr;
    for (const Row* x : rows) {
        t.imported->rows.push_back(imported_row(*x));
        if (x->r.n_gen == 0)
            pp = x;
        else if (x->r.n_prompt == 0)
            tg = x;
    }
    t.config.n_prompt = pp ? pp->r.n_prompt : tg ? 0 : first.r.n_prompt;
    t.config.n_gen = tg ? tg->r.n_gen : pp ? 0 : first.r.n_gen;
    if (pp) {
        t.prefill.emplace();
        fill_stage(pp->r, pp->r.n_prompt, *t.prefill);
    }
    if (tg) {
        t.decode.emplace();
        fill_stage(tg->r, tg->r.n_gen, *t.decode);
        t.decode->kv_depth_start = tg->r.n_depth;
    }
    t.reps_done = static_cast<int>(std::max(t.prefill ? t.prefill->duration_ns.size() : 0,
                                            t.decode ? t.decode->duration_ns.size() : 0));
    if (pp && tg)
        t.notes.push_back(fmt::format(
            "llama-bench: prefill from {}, decode from {} (llama-bench's tg test decodes from "
            "KV depth {}, not after the prompt as stagebench's does)",
            where(*pp), where(*tg), tg->r.n_depth));
    else if (!pp && !tg)
        t.notes.push_back(
            fmt::format("llama-bench: {} is one rate over prefill and decode together ({:.2f} t/s, "
                        "(n_prompt + n_gen) / the whole time): no stage of its own",
                        where(first), *first.r.avg_ts));
    else
        t.notes.push_back(fmt::format("llama-bench: {}", where(pp ? *pp : *tg)));
    for (const Row* x : {pp, tg})
        if (x && x->r.samples_ns.empty())
            t.notes.push_back(fmt::format(
                "llama-bench printed the mean{} of {}'s repetitions, not its samples: the one "
                "value here is that mean",
                x->r.stddev_ts ? fmt::format(" ± {:.2f} t/s", *x->r.stddev_ts) : "", x->r.test));
    return t;
}

// The configuration a pp row and a tg row must share to be one test: every column but the
// test's own (its tokens, rates, samples and time).
std::string group_key(const Row& x) {
    std::string k = x.file + "\n" + std::to_string(x.r.n_depth);
    for (const auto& [name, v] : x.r.fields)
        if (name != "test_time")
            k += "\n" + name + "=" + v;
    return k;
}

std::string read_bench_checked(const std::string& path) {
    require_regular_file(path, "llama-bench output");
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > static_cast<uintmax_t>(kLlamaBenchMaxBytes))
        throw input_error(
            fmt::format("'{}': {} bytes, more than llama-bench output can be "
                        "({} MiB at most)",
                        path, size, kLlamaBenchMaxBytes >> 20));
    std::string text = read_input_file(path, "llama-bench output");
    if (text.size() > static_cast<std::size_t>(kLlamaBenchMaxBytes))
        throw input_error(
            fmt::format("'{}': more than {} MiB, more than llama-bench output can "
                        "be",
                        path, kLlamaBenchMaxBytes >> 20));
    if (const std::size_t nul = text.find('\0'); nul != std::string::npos)
        throw input_error(fmt::format(
            "'{}' is binary (a NUL byte at offset {}), not llama-bench output", path, nul));
    return text;
}

}  // namespace

int run_import_llama_bench(const LlamaBenchImportOptions& o, ResultDocument& doc,
                           std::ostream& err) {
    if (o.files.empty())
        throw usage_error("import llama-bench: give one FILE or more");
    ImportSection section;
    section.tool = kTool;
    std::vector<Row> rows;
    std::vector<std::string> skipped;   // "FILE line N: why"
    std::vector<std::string> warnings;  // their lines on err
    for (const auto& path : o.files) {
        const std::string text = read_bench_checked(path);
        LlamaBenchParse p = parse_llama_bench(text);
        if (p.format.empty())
            throw input_error(fmt::format(
                "'{}': no llama-bench output found ({} lines; looked for a markdown table with "
                "model, test and t/s columns, a csv header with avg_ts, JSON objects and SQL "
                "INSERTs)",
                path, p.n_lines));
        ImportedFile f{path, p.format, p.variant, 0, 0};
        const std::size_t before = rows.size();
        for (auto& r : p.rows) {
            Row x{std::move(r), path, {}};
            if (std::string why = config_of(x.r, x.config); !why.empty()) {
                p.skipped.push_back({x.r.line, why});
                continue;
            }
            rows.push_back(std::move(x));
        }
        std::sort(p.skipped.begin(), p.skipped.end(),
                  [](const auto& a, const auto& b) { return a.line < b.line; });
        for (const auto& s : p.skipped) {
            skipped.push_back(fmt::format("{} line {}: {}", path, s.line, s.reason));
            warnings.push_back(fmt::format("stagebench: warning: {} line {}: row skipped: {}\n",
                                           path, s.line, s.reason));
        }
        f.rows = static_cast<int>(rows.size() - before);
        f.skipped = static_cast<int>(p.skipped.size());
        if (f.rows == 0)
            throw input_error(fmt::format(
                "'{}': no complete llama-bench row ({} found in the {} output, {} skipped{})", path,
                p.rows.size(), p.format, p.skipped.size(),
                p.skipped.empty()
                    ? std::string()
                    : fmt::format("; line {}: {}", p.skipped[0].line, p.skipped[0].reason)));
        section.files.push_back(f);
    }

    // Only once every file was read: a file that fails is one error line, no warnings before it.
    for (const auto& w : warnings)
        err << w;

    // Tests: pp and tg rows of one configuration paired, in the order of the files.
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Row*>> groups;
    for (const auto& x : rows) {
        const std::string k = group_key(x);
        if (!groups.count(k))
            order.push_back(k);
        groups[k].push_back(&x);
    }
    doc.tests.clear();
    for (const auto& k : order) {
        std::vector<const Row*> pp, tg, both;
        for (const Row* x : groups[k])
            (x->r.n_gen == 0 ? pp : x->r.n_prompt == 0 ? tg : both).push_back(x);
        if (!pp.empty() && !tg.empty()) {
            for (const Row* p : pp)
                for (const Row* g : tg)
                    doc.tests.push_back(make_test({p, g}));
        } else {
            for (const Row* x : pp)
                doc.tests.push_back(make_test({x}));
            for (const Row* x : tg)
                doc.tests.push_back(make_test({x}));
        }
        for (const Row* x : both)
            doc.tests.push_back(make_test({x}));
    }

    // Models, by the path tests name them with.
    static const std::map<std::string, double> kBytes = {
        {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
    static const std::map<std::string, double> kCount = {
        {"K", 1e3}, {"M", 1e6}, {"B", 1e9}, {"T", 1e12}};
    std::set<std::string> seen;
    bool rounded = false;
    for (const auto& x : rows) {
        if (!seen.insert(x.config.model_path).second)
            continue;
        json m{{"path", x.config.model_path}};
        if (const auto name = field(x.r, "model_type"))
            m["name"] = *name;
        std::optional<int64_t> bytes, params;
        if (const auto v = field(x.r, "model_size"))
            bytes = parse_decimal_int(*v);
        else if (const auto s = field(x.r, "size"); s && (bytes = scaled(*s, kBytes)))
            rounded = true;
        if (const auto v = field(x.r, "model_n_params"))
            params = parse_decimal_int(*v);
        else if (const auto s = field(x.r, "params"); s && (params = scaled(*s, kCount)))
            rounded = true;
        if (bytes && *bytes >= 0)
            m["file_bytes"] = *bytes;
        if (params && *params >= 0)
            m["n_params"] = *params;
        doc.models.push_back(m);
    }

    // The machine and build the files name (never the one that reads them).
    std::set<std::string> cpus, gpus, commits;
    const Row& first = rows.front();
    json system = json::object(), llama = json::object();
    for (const auto& x : rows) {
        if (const auto v = field(x.r, "cpu_info"))
            cpus.insert(*v);
        if (const auto v = field(x.r, "gpu_info"))
            gpus.insert(*v);
        if (const auto v = field(x.r, "build_commit"))
            commits.insert(*v);
    }
    if (const auto v = field(first.r, "cpu_info"))
        system["cpu_model"] = *v;
    if (const auto v = field(first.r, "gpu_info"))
        system["gpu_model"] = *v;
    system["source"] = kTool;
    llama["tag"] = nullptr;
    if (const auto v = field(first.r, "build_commit"))
        llama["commit"] = *v;
    if (const auto v = field(first.r, "build_number"); v && parse_decimal_int(*v))
        llama["build_number"] = *parse_decimal_int(*v);
    if (const auto v = field(first.r, "backends"))
        llama["backends"] = split_backends(*v);
    llama["source"] = kTool;
    doc.system = system;
    doc.llama = llama;
    doc.warnings.clear();
    doc.telemetry.reset();
    doc.membw = nullptr;
    // llama-bench's test_time (RFC 3339) of the first row, when it wrote one: when the
    // measurement began, not when it was read.
    if (const auto t = field(first.r, "test_time"))
        doc.started_at = *t;

    section.method =
        "Imported from llama-bench's output: each stage's tokens/s is llama-bench's, (n_prompt "
        "+ n_gen) / a repetition's time after its warm-up run, over its repetitions; samples "
        "where the file had them (json, jsonl), else the mean it printed as one value. A pp row "
        "and a tg row of one configuration are one test (prefill, decode); a pp+tg row is one "
        "rate over both stages, kept in its test's import rows.";
    if (rounded)
        section.notes.push_back(
            "model size and parameters from markdown's \"size\" and \"params\" columns, rounded "
            "as printed (two decimals)");
    if (cpus.size() > 1 || gpus.size() > 1 || commits.size() > 1)
        section.notes.push_back(fmt::format(
            "the files name {} CPU(s), {} GPU(s) and {} build(s): the system and llama sections "
            "hold the first row's; each test's import rows hold its own",
            cpus.size(), gpus.size(), commits.size()));
    finish_import(
        doc, std::move(section), skipped,
        {"import_rows_skipped", "row(s) of the llama-bench output",
         "a row cut off or damaged (a truncated paste or file) or with values that cannot "
         "be true; the other rows are imported"},
        o.out_path);
    return 0;
}

}  // namespace sb
