#include "profile/llama_bench_import.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/parse.hpp"
#include "core/strings.hpp"

namespace sb {

namespace {

using nlohmann::json;

// Bounds of what a llama-bench row can claim. A repetition over a day, a rate over 1e8 tokens/s,
// a test of more than 1e7 tokens or a model of more than 2^50 bytes is no measurement.
constexpr int64_t kMaxTokens = 10'000'000;
constexpr int64_t kMaxRepNs = 86'400'000'000'000;  // one day
constexpr double kMaxTokensPerS = 1e8;
constexpr std::size_t kMaxSamples = 100'000;
constexpr std::size_t kMaxLineBytes = 1 << 20;

std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos)
            nl = text.size();
        std::string_view l = text.substr(pos, nl - pos);
        if (!l.empty() && l.back() == '\r')
            l.remove_suffix(1);
        lines.push_back(l);
        pos = nl + 1;
    }
    return lines;
}

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

// A line as pasted: white space, and the quote markers of a pasted reply ("> ") removed.
std::string_view unquote(std::string_view l) {
    l = trim(l);
    while (!l.empty() && l.front() == '>') {
        l.remove_prefix(1);
        l = trim(l);
    }
    return l;
}

std::vector<std::string> md_cells(std::string_view l) {
    // "| a | b |" -> {"a", "b"}; llama-bench's values hold no '|'.
    std::vector<std::string> cells;
    l.remove_prefix(1);
    if (!l.empty() && l.back() == '|')
        l.remove_suffix(1);
    for (auto& c : split_list(l, '|'))
        cells.push_back(trimmed(c));
    return cells;
}

bool md_separator(const std::vector<std::string>& cells) {
    if (cells.empty())
        return false;
    for (const auto& c : cells) {
        if (c.empty())
            return false;
        for (char ch : c)
            if (ch != '-' && ch != ':')
                return false;
    }
    return true;
}

bool md_header(const std::vector<std::string>& cells) {
    bool test = false, ts = false, model = false;
    for (const auto& c : cells) {
        test = test || c == "test";
        ts = ts || c == "t/s";
        model = model || c == "model";
    }
    return test && ts && model;
}

// Markdown's display names (markdown_printer::get_field_display_name) to the field names.
std::string md_field(const std::string& display) {
    static const std::map<std::string, std::string> names = {
        {"model", "model_type"},  {"backend", "backends"},
        {"ngl", "n_gpu_layers"},  {"sm", "split_mode"},
        {"threads", "n_threads"}, {"nkvo", "no_kv_offload"},
        {"fa", "flash_attn"},     {"lm", "load_mode"},
        {"embd", "embeddings"},   {"nopo", "no_op_offload"},
        {"noh", "no_host"},       {"dev", "devices"},
        {"ts", "tensor_split"},   {"ot", "tensor_buft_overrides"},
        {"fitt", "fit_target"},   {"fitc", "fit_min_ctx"},
        {"mmap", "use_mmap"},     {"mmq", "mul_mat_q"},
        {"cpu_mask", "cpu_mask"}, {"n_cpu_moe", "n_cpu_moe"}};
    const auto it = names.find(display);
    return it == names.end() ? display : it->second;
}

std::optional<int64_t> int_field(const std::map<std::string, std::string>& f, const char* name) {
    const auto it = f.find(name);
    if (it == f.end())
        return std::nullopt;
    return parse_decimal_int(trim(it->second));
}

// Checks and completes a row whose fields are all read: the test's token counts, the rates and
// times, the samples. Returns the reason it cannot be imported, or "" when it can.
std::string check_row(LlamaBenchRow& r) {
    auto& f = r.fields;
    // The token counts: the columns where the format has them, else the test's name.
    if (f.count("n_prompt") || f.count("n_gen")) {
        const auto p = int_field(f, "n_prompt"), g = int_field(f, "n_gen");
        const auto d = f.count("n_depth") ? int_field(f, "n_depth") : std::optional<int64_t>(0);
        if (!p || !g || !d)
            return "n_prompt, n_gen or n_depth is not an integer";
        for (int64_t v : {*p, *g, *d})
            if (v < 0 || v > kMaxTokens)
                return fmt::format("a token count of {} (0..{} can be true)", v, kMaxTokens);
        r.n_prompt = static_cast<int>(*p);
        r.n_gen = static_cast<int>(*g);
        r.n_depth = static_cast<int>(*d);
        f.erase("n_prompt");
        f.erase("n_gen");
        f.erase("n_depth");
        r.test = r.n_prompt > 0 && r.n_gen == 0   ? fmt::format("pp{}", r.n_prompt)
                 : r.n_gen > 0 && r.n_prompt == 0 ? fmt::format("tg{}", r.n_gen)
                                                  : fmt::format("pp{}+tg{}", r.n_prompt, r.n_gen);
        if (r.n_depth > 0)
            r.test += fmt::format(" @ d{}", r.n_depth);
    } else {
        const auto t = parse_llama_bench_test(r.test);
        if (!t)
            return fmt::format("test '{}' is no llama-bench test name", r.test);
        r.n_prompt = t->n_prompt;
        r.n_gen = t->n_gen;
        r.n_depth = t->n_depth;
    }
    if (r.n_prompt + r.n_gen <= 0)
        return "a test of no tokens";
    // Markdown gave avg_ts and stddev_ts from its t/s cell; the others have them as fields.
    for (auto [name, out] :
         {std::pair{"avg_ts", &r.avg_ts}, std::pair{"stddev_ts", &r.stddev_ts}}) {
        const auto it = f.find(name);
        if (it == f.end())
            continue;
        const auto v = parse_decimal(trim(it->second));
        f.erase(it);
        if (!v)
            return fmt::format("{} is not a number", name);
        *out = *v;
    }
    for (auto [name, out] :
         {std::pair{"avg_ns", &r.avg_ns}, std::pair{"stddev_ns", &r.stddev_ns}}) {
        const auto it = f.find(name);
        if (it == f.end())
            continue;
        const auto v = parse_decimal_int(trim(it->second));
        f.erase(it);
        if (!v)
            return fmt::format("{} is not an integer", name);
        *out = *v;
    }
    if (!r.avg_ts)
        return "no tokens/s";
    if (!(*r.avg_ts > 0) || *r.avg_ts > kMaxTokensPerS)
        return fmt::format("{} tokens/s cannot be true (above 0, at most {:g})", *r.avg_ts,
                           kMaxTokensPerS);
    if (r.stddev_ts && (*r.stddev_ts < 0 || *r.stddev_ts > kMaxTokensPerS))
        return fmt::format("a standard deviation of {} tokens/s cannot be true", *r.stddev_ts);
    if (r.avg_ns && (*r.avg_ns <= 0 || *r.avg_ns > kMaxRepNs))
        return fmt::format("avg_ns {} cannot be true (above 0, at most a day)", *r.avg_ns);
    if (r.stddev_ns && (*r.stddev_ns < 0 || *r.stddev_ns > kMaxRepNs))
        return fmt::format("stddev_ns {} cannot be true", *r.stddev_ns);
    if (r.samples_ns.size() > kMaxSamples || r.samples_ts.size() > kMaxSamples)
        return fmt::format("more than {} samples", kMaxSamples);
    if (r.samples_ns.size() != r.samples_ts.size() && !r.samples_ts.empty())
        return fmt::format("{} samples_ns but {} samples_ts", r.samples_ns.size(),
                           r.samples_ts.size());
    const double tokens = r.n_prompt + r.n_gen;
    for (std::size_t i = 0; i < r.samples_ns.size(); ++i) {
        const int64_t ns = r.samples_ns[i];
        if (ns <= 0 || ns > kMaxRepNs)
            return fmt::format("samples_ns[{}] = {} cannot be true (above 0, at most a day)", i,
                               ns);
        // llama-bench's samples_ts are 1e9 * (n_prompt + n_gen) / samples_ns, printed to six
        // digits: one that disagrees was not written by it.
        const double ts = 1e9 * tokens / static_cast<double>(ns);
        if (i < r.samples_ts.size() && std::abs(r.samples_ts[i] - ts) > 1e-3 * ts)
            return fmt::format("samples_ts[{}] = {} where samples_ns[{}] gives {:.6g}", i,
                               r.samples_ts[i], i, ts);
    }
    if (r.samples_ts.empty())
        for (int64_t ns : r.samples_ns)
            r.samples_ts.push_back(1e9 * tokens / static_cast<double>(ns));
    if (!r.samples_ts.empty()) {
        double sum = 0;
        for (double v : r.samples_ts)
            sum += v;
        const double mean = sum / static_cast<double>(r.samples_ts.size());
        if (std::abs(mean - *r.avg_ts) > 1e-3 * mean + 1e-6)
            return fmt::format("avg_ts {} is not the mean of its samples ({:.6g})", *r.avg_ts,
                               mean);
    }
    return "";
}

// --- markdown ---------------------------------------------------------------------------

bool parse_ts_cell(const std::string& cell, LlamaBenchRow& r) {
    std::string_view c = trim(cell);
    std::size_t sep = std::string_view::npos, len = 0;
    for (std::string_view pm : {"±", "+/-", "+-"})
        if (const std::size_t p = c.find(pm); p != std::string_view::npos) {
            sep = p;
            len = pm.size();
            break;
        }
    const auto avg = parse_decimal(trim(c.substr(0, sep)));
    if (!avg)
        return false;
    r.avg_ts = *avg;
    if (sep != std::string_view::npos) {
        const auto sd = parse_decimal(trim(c.substr(sep + len)));
        if (!sd)
            return false;
        r.stddev_ts = *sd;
    }
    return true;
}

void parse_md(const std::vector<std::string_view>& lines, LlamaBenchParse& out) {
    std::vector<std::string> header;
    bool in_table = false;
    std::size_t pending = out.rows.size();  // rows not yet given a build line
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string_view l = unquote(lines[i]);
        const int64_t line = static_cast<int64_t>(i) + 1;
        if (starts_with(l, "build: ")) {
            // "build: 80fb11a (1)" after each table (markdown_printer::print_footer).
            std::string_view b = trim(l.substr(7));
            const std::size_t sp = b.find(" (");
            const std::string commit(trim(b.substr(0, sp)));
            std::optional<int64_t> number;
            if (sp != std::string_view::npos && b.back() == ')')
                number = parse_decimal_int(b.substr(sp + 2, b.size() - sp - 3));
            for (std::size_t k = pending; k < out.rows.size(); ++k) {
                out.rows[k].fields["build_commit"] = commit;
                if (number)
                    out.rows[k].fields["build_number"] = std::to_string(*number);
            }
            pending = out.rows.size();
            in_table = false;
            continue;
        }
        if (l.empty() || l.front() != '|') {
            in_table = false;
            continue;
        }
        const auto cells = md_cells(l);
        if (md_header(cells) && i + 1 < lines.size()) {
            const std::string_view next = unquote(lines[i + 1]);
            if (!next.empty() && next.front() == '|' && md_separator(md_cells(next))) {
                header = cells;
                in_table = true;
                ++out.n_tables;
                ++i;
                continue;
            }
        }
        if (!in_table)
            continue;
        if (l.back() != '|' || l.size() < 2) {
            out.skipped.push_back({line,
                                   "the row is cut off (the line ends before its last "
                                   "column)"});
            continue;
        }
        if (cells.size() < header.size()) {
            out.skipped.push_back({line, fmt::format("the row is cut off ({} of the header's {} "
                                                     "columns)",
                                                     cells.size(), header.size())});
            continue;
        }
        if (cells.size() > header.size()) {
            out.skipped.push_back({line, fmt::format("{} columns where the table's header has {}",
                                                     cells.size(), header.size())});
            continue;
        }
        LlamaBenchRow r;
        r.line = line;
        bool ok = true;
        for (std::size_t c = 0; c < cells.size() && ok; ++c) {
            if (header[c] == "test")
                r.test = cells[c];
            else if (header[c] == "t/s")
                ok = parse_ts_cell(cells[c], r);
            else
                r.fields[md_field(header[c])] = cells[c];
        }
        if (!ok) {
            out.skipped.push_back({line, "t/s is not \"MEAN ± SD\""});
            continue;
        }
        if (std::string why = check_row(r); !why.empty())
            out.skipped.push_back({line, why});
        else
            out.rows.push_back(std::move(r));
    }
}

// --- csv ----------------------------------------------------------------------------------

// One line of csv_printer's output: fields quoted with '"' ('""' inside), or bare. nullopt
// when a quote is left open (the line was cut off).
std::optional<std::vector<std::string>> csv_cells(std::string_view l) {
    std::vector<std::string> cells;
    std::string cur;
    bool quoted = false, was_quoted = false;
    for (std::size_t i = 0; i < l.size(); ++i) {
        const char c = l[i];
        if (quoted) {
            if (c == '"' && i + 1 < l.size() && l[i + 1] == '"') {
                cur += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cur += c;
            }
        } else if (c == '"' && !was_quoted && trim(cur).empty()) {
            quoted = was_quoted = true;
            cur.clear();
        } else if (c == ',') {
            cells.push_back(was_quoted ? cur : trimmed(cur));
            cur.clear();
            was_quoted = false;
        } else {
            cur += c;
        }
    }
    if (quoted)
        return std::nullopt;
    cells.push_back(was_quoted ? cur : trimmed(cur));
    return cells;
}

bool csv_header(const std::vector<std::string>& cells) {
    bool ts = false, test = false;
    for (const auto& c : cells) {
        ts = ts || c == "avg_ts";
        test = test || c == "n_prompt" || c == "model_type";
    }
    return ts && test;
}

void take_fields(const std::vector<std::string>& names, const std::vector<std::string>& values,
                 LlamaBenchRow& r) {
    for (std::size_t c = 0; c < names.size(); ++c)
        r.fields[names[c]] = values[c];
}

void parse_csv(const std::vector<std::string_view>& lines, LlamaBenchParse& out) {
    std::vector<std::string> header;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string_view l = trim(lines[i]);
        const int64_t line = static_cast<int64_t>(i) + 1;
        if (l.empty())
            continue;
        const auto cells = csv_cells(l);
        if (cells && csv_header(*cells)) {
            header = *cells;
            ++out.n_tables;
            continue;
        }
        if (header.empty() || l.find(',') == std::string_view::npos)
            continue;  // a log line or a shell prompt before the output
        if (!cells) {
            out.skipped.push_back({line, "the row is cut off (a quoted value is not closed)"});
            continue;
        }
        if (cells->size() != header.size()) {
            out.skipped.push_back(
                {line,
                 fmt::format("{} values where the header has {}{}", cells->size(), header.size(),
                             cells->size() < header.size() ? " (the row is cut off)" : "")});
            continue;
        }
        LlamaBenchRow r;
        r.line = line;
        take_fields(header, *cells, r);
        if (std::string why = check_row(r); !why.empty())
            out.skipped.push_back({line, why});
        else
            out.rows.push_back(std::move(r));
    }
}

// --- sql ----------------------------------------------------------------------------------

// "a, b, c" of an INSERT's column list.
std::vector<std::string> sql_names(std::string_view s) {
    std::vector<std::string> names;
    for (auto& n : split_list(s, ','))
        names.push_back(trimmed(n));
    return names;
}

// "'x', 'y''s', 3, NULL" -> values; nullopt when a quote is left open.
std::optional<std::vector<std::string>> sql_values(std::string_view s, std::size_t& end) {
    std::vector<std::string> values;
    std::size_t i = 0;
    for (;;) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
            ++i;
        if (i >= s.size())
            return std::nullopt;
        std::string v;
        if (s[i] == '\'') {
            ++i;
            for (;;) {
                if (i >= s.size())
                    return std::nullopt;
                if (s[i] == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
                    v += '\'';
                    i += 2;
                } else if (s[i] == '\'') {
                    ++i;
                    break;
                } else {
                    v += s[i++];
                }
            }
        } else {
            while (i < s.size() && s[i] != ',' && s[i] != ')')
                v += s[i++];
            v = trimmed(v);
        }
        values.push_back(v);
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
            ++i;
        if (i >= s.size())
            return std::nullopt;
        if (s[i] == ')') {
            end = i + 1;
            return values;
        }
        if (s[i] != ',')
            return std::nullopt;
        ++i;
    }
}

void parse_sql(const std::vector<std::string_view>& lines, LlamaBenchParse& out) {
    std::set<std::string> tables;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string_view l = trim(lines[i]);
        const int64_t line = static_cast<int64_t>(i) + 1;
        if (!starts_with(l, "INSERT INTO "))
            continue;
        std::string_view rest = l.substr(12);
        const std::size_t open = rest.find('(');
        const std::size_t close = rest.find(')');
        const std::size_t vpos = rest.find("VALUES (");
        if (open == std::string_view::npos || close == std::string_view::npos ||
            vpos == std::string_view::npos || vpos < close) {
            out.skipped.push_back({line, "the INSERT is cut off (no VALUES list)"});
            continue;
        }
        const std::string table(trim(rest.substr(0, open)));
        const auto names = sql_names(rest.substr(open + 1, close - open - 1));
        std::size_t end = 0;
        const auto values = sql_values(rest.substr(vpos + 8), end);
        if (!values || trim(rest.substr(vpos + 8 + end)) != ";") {
            out.skipped.push_back({line,
                                   "the INSERT is cut off (its VALUES list or the ';' "
                                   "that ends it is missing)"});
            continue;
        }
        if (values->size() != names.size()) {
            out.skipped.push_back(
                {line, fmt::format("{} values for {} columns", values->size(), names.size())});
            continue;
        }
        if (tables.insert(table).second)
            ++out.n_tables;
        LlamaBenchRow r;
        r.line = line;
        take_fields(names, *values, r);
        if (std::string why = check_row(r); !why.empty())
            out.skipped.push_back({line, why});
        else
            out.rows.push_back(std::move(r));
    }
    std::string t;
    for (const auto& n : tables)
        t += (t.empty() ? "" : ", ") + std::string(n == "test" ? "the old `test` table"
                                                   : n == "llama_bench"
                                                       ? "the `llama_bench` table (since 2025)"
                                                       : "a table `" + n + "`");
    out.variant = "sql, " + (t.empty() ? std::string("no INSERT") : t);
}

// --- json and jsonl -----------------------------------------------------------------------

std::string json_text(const json& v) {
    if (v.is_string())
        return v.get<std::string>();
    if (v.is_boolean())
        return v.get<bool>() ? "true" : "false";
    if (v.is_null())
        return "";
    return v.dump();
}

void take_json_row(const std::string& text, int64_t line, LlamaBenchParse& out) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception&) {
        out.skipped.push_back({line, "the object is not valid JSON (cut off or damaged)"});
        return;
    }
    if (!j.is_object())
        return;
    if (!j.contains("avg_ts") && !j.contains("n_prompt") && !j.contains("model_type"))
        return;  // another program's JSON among the logs
    LlamaBenchRow r;
    r.line = line;
    for (const auto& [k, v] : j.items()) {
        if (k == "samples_ns" || k == "samples_ts") {
            if (!v.is_array()) {
                out.skipped.push_back({line, k + " is not an array"});
                return;
            }
            if (v.size() > kMaxSamples) {
                out.skipped.push_back({line, fmt::format("more than {} {}", kMaxSamples, k)});
                return;
            }
            for (const auto& s : v) {
                if (k == "samples_ns" && s.is_number_integer()) {
                    r.samples_ns.push_back(s.get<int64_t>());
                } else if (k == "samples_ts" && s.is_number() && std::isfinite(s.get<double>())) {
                    r.samples_ts.push_back(s.get<double>());
                } else {
                    out.skipped.push_back({line, fmt::format("{} holds {}", k, s.dump())});
                    return;
                }
            }
        } else if (v.is_array() || v.is_object()) {
            r.fields[k] = v.dump();
        } else {
            r.fields[k] = json_text(v);
        }
    }
    // The JSON printers of 2023-2024 wrote backends as booleans (cuda, metal, vulkan, ...),
    // before the "backends" string.
    if (!r.fields.count("backends")) {
        std::string b;
        for (const char* name :
             {"cuda", "vulkan", "kompute", "metal", "sycl", "rpc", "opencl", "gpu_blas", "blas"})
            if (const auto it = r.fields.find(name);
                it != r.fields.end() && (it->second == "true" || it->second == "1"))
                b += (b.empty() ? "" : ",") + std::string(name);
        if (!b.empty())
            r.fields["backends"] = b;
    }
    if (std::string why = check_row(r); !why.empty())
        out.skipped.push_back({line, why});
    else
        out.rows.push_back(std::move(r));
}

// Objects as llama-bench prints them: json_printer one per "  {" ... "  }" block inside "[" and
// "]", jsonl_printer one per line. A string-aware brace count ends each; lines outside objects
// (the stderr logs of llama-bench and the backends when 2>&1 was used) are passed over.
void parse_json(const std::vector<std::string_view>& lines, LlamaBenchParse& out) {
    std::string obj;
    int64_t start = 0;
    int depth = 0;
    bool in_string = false, escape = false, one_line = false;
    bool jsonl = false, array = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        std::string_view l = lines[i];
        const int64_t line = static_cast<int64_t>(i) + 1;
        const std::string_view t = trim(l);
        if (depth == 0) {
            if (t == "[" || starts_with(t, "[{") || starts_with(t, "[ {")) {
                array = true;
                ++out.n_tables;
            }
            std::size_t b = t.find('{');
            if (b == std::string_view::npos ||
                (b != 0 && !starts_with(t, "[") && !starts_with(t, ",")))
                continue;
            l = t.substr(b);
            start = line;
            obj.clear();
            in_string = escape = false;
            one_line = trim(l.substr(1)) != "" && !starts_with(t, "[");
        } else if (!in_string && starts_with(t, "{")) {
            // A new object while the last is open: the last was cut off.
            out.skipped.push_back(
                {start, "the row is cut off (a new object begins before it ends)"});
            depth = 0;
            --i;
            continue;
        }
        std::size_t end = std::string_view::npos;
        for (std::size_t k = 0; k < l.size(); ++k) {
            const char c = l[k];
            if (in_string) {
                if (escape)
                    escape = false;
                else if (c == '\\')
                    escape = true;
                else if (c == '"')
                    in_string = false;
            } else if (c == '"') {
                in_string = true;
            } else if (c == '{') {
                ++depth;
            } else if (c == '}') {
                if (--depth == 0) {
                    end = k;
                    break;
                }
            }
        }
        obj.append(l.substr(0, end == std::string_view::npos ? l.size() : end + 1));
        obj += '\n';
        if (end != std::string_view::npos) {
            jsonl = jsonl || one_line;
            take_json_row(obj, start, out);
            depth = 0;
        } else if (one_line) {
            // jsonl: every object ends on its own line.
            out.skipped.push_back({start, "the row is cut off (the line ends inside it)"});
            depth = 0;
        }
    }
    if (depth > 0)
        out.skipped.push_back({start, "the row is cut off (the file ends inside it)"});
    out.format = jsonl && !array ? "jsonl" : "json";
}

enum class TableKind { none, md, csv, json, sql };

TableKind detect(const std::vector<std::string_view>& lines) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string_view t = trim(lines[i]);
        if (starts_with(t, "CREATE TABLE") || starts_with(t, "INSERT INTO "))
            return TableKind::sql;
        if (t == "[" || starts_with(t, "{\"") || starts_with(t, "[{") ||
            (t == "{" && i + 1 < lines.size() && starts_with(trim(lines[i + 1]), "\"")))
            return TableKind::json;
        const std::string_view q = unquote(lines[i]);
        if (!q.empty() && q.front() == '|' && md_header(md_cells(q)))
            return TableKind::md;
        if (t.find("avg_ts") != std::string_view::npos && t.find('|') == std::string_view::npos)
            if (const auto cells = csv_cells(t); cells && csv_header(*cells))
                return TableKind::csv;
    }
    return TableKind::none;
}

}  // namespace

std::optional<LlamaBenchTestName> parse_llama_bench_test(std::string_view name) {
    std::string s;
    for (char c : name)
        if (c != ' ')
            s += c;
    LlamaBenchTestName t;
    std::size_t i = 0;
    auto number = [&](int& out) {
        std::size_t j = i;
        while (j < s.size() && j - i < 9 && s[j] >= '0' && s[j] <= '9')
            ++j;
        if (j == i || (j < s.size() && s[j] >= '0' && s[j] <= '9'))
            return false;
        out = std::stoi(s.substr(i, j - i));
        i = j;
        return true;
    };
    bool any = false;
    if (s.compare(i, 2, "pp") == 0) {
        i += 2;
        if (!number(t.n_prompt))
            return std::nullopt;
        any = true;
        if (i < s.size() && s[i] == '+')
            ++i;
    }
    if (s.compare(i, 2, "tg") == 0) {
        i += 2;
        if (!number(t.n_gen))
            return std::nullopt;
        any = true;
    }
    if (!any)
        return std::nullopt;
    if (s.compare(i, 2, "@d") == 0) {
        i += 2;
        if (!number(t.n_depth))
            return std::nullopt;
    }
    if (i != s.size())
        return std::nullopt;
    return t;
}

LlamaBenchParse parse_llama_bench(std::string_view text) {
    LlamaBenchParse out;
    std::vector<std::string_view> lines = split_lines(text);
    out.n_lines = static_cast<int64_t>(lines.size());
    // A line longer than any llama-bench prints is no output of it (a binary file, one huge
    // line): left out, so that the parsers below never scan it.
    for (auto& l : lines)
        if (l.size() > kMaxLineBytes)
            l = {};
    switch (detect(lines)) {
        case TableKind::none:
            return out;
        case TableKind::md:
            out.format = "md";
            parse_md(lines, out);
            out.variant = fmt::format("markdown, {} table(s)", out.n_tables);
            break;
        case TableKind::csv:
            out.format = "csv";
            parse_csv(lines, out);
            out.variant = fmt::format("csv, {} header(s)", out.n_tables);
            break;
        case TableKind::json:
            parse_json(lines, out);
            out.variant =
                out.format == "jsonl" ? "jsonl, one object per line" : "json, an array of objects";
            break;
        case TableKind::sql:
            out.format = "sql";
            parse_sql(lines, out);
            break;
    }
    return out;
}

}  // namespace sb
