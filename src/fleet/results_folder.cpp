#include "fleet/results_folder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "fleet/dist_files.hpp"
#include "store/result_store.hpp"

namespace sb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool plain_name(const std::string& s) {
    return !s.empty() && s.size() <= 128 && s[0] != '.' &&
           s.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
               std::string::npos;
}

bool hex64(const std::string& s) {
    return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The last non-empty line of dir/name (its last 4 KiB), "" when none.
std::string last_line_of(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return "";
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::streamoff>(in.tellg());
    const std::streamoff from = std::max<std::streamoff>(0, size - 4096);
    in.seekg(from);
    std::string tail(static_cast<std::size_t>(size - from), '\0');
    in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' '))
        tail.pop_back();
    const auto nl = tail.rfind('\n');
    std::string line = nl == std::string::npos ? tail : tail.substr(nl + 1);
    for (char& c : line)
        if (static_cast<unsigned char>(c) < 0x20)
            c = ' ';
    return line.substr(0, 300);
}

void find_below(const fs::path& dir, int depth, std::vector<std::string>& out) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (!e.is_directory(ec) || e.is_symlink(ec))
            continue;
        if (fs::is_regular_file(e.path() / "manifest.json", ec))
            out.push_back(e.path().string());
        else if (depth > 1)
            find_below(e.path(), depth - 1, out);
    }
}

}  // namespace

ResultsManifest read_results_manifest(const std::string& dir) {
    const fs::path path = fs::path(dir) / "manifest.json";
    std::string where = "'";
    where += path.string();
    where += '\'';
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        throw input_error("no manifest.json (not a results folder of a stagebench job)");
    if (fs::file_size(path, ec) > kMaxManifestBytes)
        throw input_error(fmt::format("{} is larger than {} bytes", where, kMaxManifestBytes));
    const json j = parse_document_text(read_input_file(path.string(), "manifest"), where);
    auto fail = [&](const std::string& why) { throw input_error(where + ": " + why); };
    if (!j.is_object() || !j.contains("stagebench_results") || j["stagebench_results"] != json(1))
        fail("not a stagebench results manifest (stagebench_results: 1)");
    ResultsManifest m;
    m.dir = dir;
    if (j.contains("host") && j["host"].is_string())
        m.host = j["host"].get<std::string>().substr(0, 256);
    if (!j.contains("outcome") || !j["outcome"].is_string())
        fail("no outcome");
    m.outcome = j["outcome"].get<std::string>();
    if (m.outcome != "measured" && m.outcome != "failed" && m.outcome != "not_measured")
        fail("outcome '" + m.outcome.substr(0, 40) + "' is none of measured, failed, not_measured");
    if (!j.contains("exit_code") || !j["exit_code"].is_number_integer() ||
        j["exit_code"].get<int64_t>() < 0 || j["exit_code"].get<int64_t>() > 255)
        fail("exit_code is not an exit status (0..255)");
    m.exit_code = j["exit_code"].get<int>();
    if (!j.contains("files") || !j["files"].is_array())
        fail("no files list");
    if (j["files"].size() > kMaxManifestFiles)
        fail(fmt::format("lists {} files, more than {}", j["files"].size(), kMaxManifestFiles));
    for (const auto& f : j["files"]) {
        ResultsFile rf;
        if (!f.is_object() || !f.contains("name") || !f["name"].is_string() ||
            !plain_name(f["name"].get<std::string>()))
            fail("a file whose name is not a plain file name of the folder");
        rf.name = f["name"].get<std::string>();
        if (std::any_of(m.files.begin(), m.files.end(),
                        [&](const ResultsFile& x) { return x.name == rf.name; }))
            fail(rf.name + " is listed twice");
        if (!f.contains("kind") || !f["kind"].is_string())
            fail(rf.name + " has no kind");
        rf.kind = f["kind"].get<std::string>();
        if (!f.contains("bytes") || !f["bytes"].is_number_unsigned())
            fail(rf.name + ": bytes is not a size");
        rf.bytes = f["bytes"].get<uint64_t>();
        if (f.contains("sha256") && !f["sha256"].is_null()) {
            if (!f["sha256"].is_string() || !hex64(f["sha256"].get<std::string>()))
                fail(rf.name + ": sha256 is not 64 lowercase hex digits");
            rf.sha256 = f["sha256"].get<std::string>();
        }
        m.files.push_back(rf);
    }
    return m;
}

void verify_results_folder(const ResultsManifest& m) {
    for (const auto& f : m.files) {
        const fs::path p = fs::path(m.dir) / f.name;
        std::error_code ec;
        if (fs::is_symlink(p, ec) || !fs::is_regular_file(p, ec))
            throw input_error(f.name + " is listed in manifest.json but is not there");
        const auto size = fs::file_size(p, ec);
        if (ec || size != f.bytes)
            throw input_error(
                fmt::format("{} has {} bytes, manifest.json says {}", f.name, size, f.bytes));
        if (!f.sha256)
            throw input_error(f.name +
                              " has no sha256 in manifest.json (the device had no sha256sum, "
                              "shasum or openssl): it cannot be checked");
        const std::string h = sha256_file(p.string());
        if (h != *f.sha256)
            throw input_error(f.name + " does not match manifest.json: sha256 " + h +
                              ", the manifest's " + *f.sha256);
    }
}

std::vector<std::string> find_results_folders(const std::string& root) {
    std::error_code ec;
    if (!fs::is_directory(root, ec))
        throw input_error("'" + root + "' is not a folder");
    std::vector<std::string> out;
    if (fs::exists(fs::path(root) / "manifest.json", ec))
        out.push_back(root);
    else
        find_below(root, 4, out);
    std::sort(out.begin(), out.end());
    return out;
}

IngestSummary ingest_results(const std::vector<std::string>& roots, ResultStore& store,
                             std::ostream& log) {
    std::vector<std::string> folders;
    for (const auto& r : roots) {
        auto found = find_results_folders(r);
        if (found.empty())
            throw input_error("'" + r + "' holds no results folder (no manifest.json in it or " +
                              "4 levels below)");
        folders.insert(folders.end(), found.begin(), found.end());
    }
    IngestSummary s;
    for (const auto& dir : folders) {
        ++s.folders;
        auto skip = [&](const std::string& why) {
            s.skipped.push_back(dir + ": " + why);
            log << "stagebench: skipped " << dir << ": " << why << "\n";
        };
        ResultsManifest m;
        std::vector<ResultDocument> docs;
        std::vector<std::string> names;
        try {
            m = read_results_manifest(dir);
            verify_results_folder(m);
            for (const auto& f : m.files)
                if (f.kind == "document") {
                    docs.push_back(load_result_document((fs::path(dir) / f.name).string()));
                    names.push_back((fs::path(dir) / f.name).string());
                }
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::input)
                throw;
            skip(e.what());
            continue;
        }
        if (docs.empty()) {
            const std::string why = last_line_of(fs::path(dir) / "stderr.log");
            skip(fmt::format("not measured (the command exited {}){}", m.exit_code,
                             why.empty() ? "" : ": " + why));
            continue;
        }
        for (std::size_t i = 0; i < docs.size(); ++i) {
            const Appended a = store.append_once(docs[i]);
            const std::string from = m.host.empty() ? "" : " (from " + m.host + ")";
            if (a.added) {
                ++s.stored;
                log << "stagebench: stored " << names[i] << from << " as #" << a.id << " in "
                    << store.path() << "\n";
            } else {
                ++s.present;
                log << "stagebench: " << names[i] << " is already in " << store.path() << " as #"
                    << a.id << "\n";
            }
        }
    }
    return s;
}

}  // namespace sb
