#include "fleet/dist_files.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "core/error.hpp"

namespace sb {

namespace fs = std::filesystem;

std::string sha256_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw input_error("cannot read '" + path + "'");
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad())
        throw input_error("cannot read '" + path + "'");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx.get(), md, &n);
    std::string hex;
    for (unsigned int i = 0; i < n; ++i)
        hex += fmt::format("{:02x}", md[i]);
    return hex;
}

std::string sha256_text(const std::string& text) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(text.data(), text.size(), md, &n, EVP_sha256(), nullptr);
    std::string hex;
    for (unsigned int i = 0; i < n; ++i)
        hex += fmt::format("{:02x}", md[i]);
    return hex;
}

std::optional<fs::path> dist_tarball_for(const std::string& dist_dir, const std::string& arch) {
    std::error_code ec;
    std::optional<fs::path> best;
    fs::file_time_type best_t{};
    const std::string tail = "-linux-" + arch + ".tar.gz";
    for (const auto& e : fs::directory_iterator(dist_dir, ec)) {
        const std::string n = e.path().filename().string();
        if (n.rfind("stagebench-", 0) == 0 && n.size() > tail.size() &&
            n.compare(n.size() - tail.size(), tail.size(), tail) == 0 &&
            n.rfind("stagebench-agent", 0) != 0 && e.is_regular_file(ec)) {
            auto t = fs::last_write_time(e.path(), ec);
            if (!best || t > best_t) {
                best = e.path();
                best_t = t;
            }
        }
    }
    return best;
}

std::optional<fs::path> dist_agent(const std::string& dist_dir, ArmLevel level) {
    fs::path p = fs::path(dist_dir) / agent_file_name(level);
    std::error_code ec;
    if (fs::is_regular_file(p, ec))
        return p;
    return std::nullopt;
}

std::string dist_tarball_stem(const fs::path& tarball) {
    std::string stem = tarball.filename().string();
    const std::string ext = ".tar.gz";
    if (stem.size() > ext.size() && stem.compare(stem.size() - ext.size(), ext.size(), ext) == 0)
        stem.resize(stem.size() - ext.size());
    return stem;
}

}  // namespace sb
