#include "model/presets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "model/hf_config.hpp"

namespace sb {

namespace {

using nlohmann::json;

std::string text_field(const json& j, const char* key, const std::string& origin, bool required) {
    if (!j.contains(key) || j.at(key).is_null()) {
        if (required)
            throw input_error(origin + ": no " + key);
        return "";
    }
    if (!j.at(key).is_string())
        throw input_error(origin + ": " + key + " is " + j.at(key).dump() + ", expected a string");
    return j.at(key).get<std::string>();
}

std::optional<int64_t> id_field(const json& j, const char* key, const std::string& origin) {
    if (!j.contains(key) || j.at(key).is_null())
        return std::nullopt;
    if (!j.at(key).is_number_integer() || j.at(key).get<int64_t>() < 0)
        throw input_error(origin + ": tokenizer." + key + " is " + j.at(key).dump() +
                          ", expected a token id");
    return j.at(key).get<int64_t>();
}

TokenizerOverlay parse_tokenizer(const json& t, const std::string& origin, int64_t n_vocab) {
    if (!t.is_object())
        throw input_error(origin + ": tokenizer is " + t.dump() + ", expected an object");
    TokenizerOverlay o;
    o.source = text_field(t, "source", origin, false);
    o.bos_token_id = id_field(t, "bos_token_id", origin);
    o.eos_token_id = id_field(t, "eos_token_id", origin);
    o.padding_token_id = id_field(t, "padding_token_id", origin);
    if (t.contains("add_bos_token") && !t.at("add_bos_token").is_null()) {
        if (!t.at("add_bos_token").is_boolean())
            throw input_error(origin + ": tokenizer.add_bos_token is not true or false");
        o.add_bos_token = t.at("add_bos_token").get<bool>();
    }
    for (const auto id : {o.bos_token_id, o.eos_token_id, o.padding_token_id})
        if (id && *id >= n_vocab)
            throw input_error(origin + ": tokenizer token id " + std::to_string(*id) +
                              " is outside the vocabulary of " + std::to_string(n_vocab));
    if (t.contains("added_tokens")) {
        const json& a = t.at("added_tokens");
        if (!a.is_array())
            throw input_error(origin + ": tokenizer.added_tokens is not a list");
        for (const auto& e : a) {
            AddedToken tok;
            if (!e.is_object() || !e.contains("id") || !e.at("id").is_number_integer() ||
                !e.contains("content") || !e.at("content").is_string() ||
                e.at("content").get<std::string>().empty() ||
                (e.contains("special") && !e.at("special").is_boolean()))
                throw input_error(origin + ": tokenizer.added_tokens holds " + e.dump() +
                                  ", expected {\"id\": N, \"content\": \"...\", \"special\": "
                                  "true|false}");
            tok.id = e.at("id").get<int64_t>();
            tok.content = e.at("content").get<std::string>();
            tok.special = e.value("special", true);
            if (tok.id < 0 || tok.id >= n_vocab)
                throw input_error(origin + ": tokenizer.added_tokens id " + std::to_string(tok.id) +
                                  " is outside the vocabulary of " + std::to_string(n_vocab));
            o.added_tokens.push_back(std::move(tok));
        }
    }
    return o;
}

Preset parse_text(const std::string& text, const std::string& origin, const std::string& name) {
    return parse_preset(parse_config_text(text, origin), origin, name);
}

// The counts a published figure stands for, as [low, high): one value for an exact number,
// the rounding interval for "0.6B", "350M"; nullopt when it is neither.
std::optional<std::pair<double, double>> parse_published(const std::string& s) {
    if (s.empty())
        return std::nullopt;
    if (s.find_first_not_of("0123456789") == std::string::npos) {
        if (s.size() > 19)
            return std::nullopt;
        const auto v = static_cast<double>(std::stoull(s));
        return std::pair{v, std::nextafter(v, 1e300)};
    }
    const char unit = s.back();
    const double scale = unit == 'B' ? 1e9 : unit == 'M' ? 1e6 : unit == 'K' ? 1e3 : 0;
    const std::string digits = s.substr(0, s.size() - 1);
    if (scale == 0 || digits.empty() || digits.size() > 12 ||
        digits.find_first_not_of("0123456789.") != std::string::npos ||
        std::count(digits.begin(), digits.end(), '.') > 1 || digits.front() == '.' ||
        digits.back() == '.')
        return std::nullopt;
    const auto dot = digits.find('.');
    const int decimals = dot == std::string::npos ? 0 : static_cast<int>(digits.size() - dot - 1);
    const double value = std::stod(digits) * scale;
    const double half_step = 0.5 * std::pow(10.0, -decimals) * scale;
    return std::pair{value - half_step, value + half_step};
}

}  // namespace

std::string preset_dir() {
    if (const char* d = std::getenv("STAGEBENCH_PRESET_DIR"); d && *d)
        return d;
    // Beside the executable, never a path of the build machine (the build tree links it to the
    // repository's share/, `make dist` copies the files there).
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec || self.empty())
        return "";
    return (self.parent_path().parent_path() / "share" / "stagebench" / "presets").string();
}

Preset parse_preset(const json& j, const std::string& origin, const std::string& expected_name) {
    if (!j.is_object())
        throw input_error(origin + ": expected a JSON object");
    Preset p;
    p.name = text_field(j, "name", origin, true);
    if (p.name != expected_name)
        throw input_error(origin + ": name is '" + p.name + "', not the file's name '" +
                          expected_name + "'");
    if (p.name.empty() ||
        p.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") != std::string::npos)
        throw input_error(origin + ": name '" + p.name +
                          "' must be lower-case letters, digits, '.' and '-'");
    p.description = text_field(j, "description", origin, true);
    p.special = text_field(j, "special", origin, false);
    p.source = text_field(j, "source", origin, true);
    p.published_params = text_field(j, "published_params", origin, false);
    p.params_source = text_field(j, "params_source", origin, false);
    if (!p.published_params.empty() && !parse_published(p.published_params))
        throw input_error(origin + ": published_params '" + p.published_params +
                          "' is not a count (\"1235814400\" or \"0.6B\")");
    p.vocab = text_field(j, "vocab", origin, false);
    if (!j.contains("config"))
        throw input_error(origin + ": no config (the model's config.json)");
    p.config = j.at("config");
    p.spec = spec_from_hf_config(p.config, origin + " config");
    if (j.contains("tokenizer") && !j.at("tokenizer").is_null())
        p.tokenizer = parse_tokenizer(j.at("tokenizer"), origin, p.spec.n_vocab);
    return p;
}

std::vector<Preset> load_presets(const std::string& dir) {
    std::map<std::string, Preset> by_name;
    for (const auto& [file, text] : builtin_preset_files()) {
        const std::string f(file);
        const std::string name = f.substr(0, f.size() - 5);
        by_name[name] = parse_text(std::string(text), "preset " + f + " (built in)", name);
    }
    std::error_code ec;
    if (!dir.empty() && std::filesystem::is_directory(dir, ec)) {
        std::vector<std::filesystem::path> files;
        for (const auto& e : std::filesystem::directory_iterator(dir, ec))
            if (e.path().extension() == ".json")
                files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto& path : files) {
            const std::string name = path.stem().string();
            // A regular file only (core/file_io.hpp): a FIFO there must not block every command.
            Preset p =
                parse_text(read_input_file(path.string(), "preset file"), path.string(), name);
            p.file = path.string();
            by_name[name] = std::move(p);
        }
    }
    std::vector<Preset> v;
    for (auto& [name, p] : by_name)
        v.push_back(std::move(p));
    return v;
}

const std::vector<Preset>& presets() {
    static const std::vector<Preset> kPresets = load_presets(preset_dir());
    return kPresets;
}

std::vector<std::string> preset_names() {
    std::vector<std::string> names;
    for (const auto& p : presets())
        names.push_back(p.name);
    return names;
}

const Preset& find_preset(std::string_view name) {
    for (const auto& p : presets()) {
        if (p.name == name)
            return p;
    }
    std::string valid;
    for (const auto& n : preset_names())
        valid += (valid.empty() ? "" : ", ") + n;
    throw usage_error("unknown preset '" + std::string(name) + "' (valid: " + valid + ")");
}

bool matches_published(const std::string& published, uint64_t count) {
    const auto range = parse_published(published);
    if (!range)
        return false;
    const auto c = static_cast<double>(count);
    return c >= range->first && c < range->second;
}

}  // namespace sb
