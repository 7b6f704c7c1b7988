#include "model/gguf.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <system_error>
#include <type_traits>
#include <unordered_set>

#include "core/error.hpp"

namespace sb {

// GGUF is little-endian; byte swapping is not implemented because every target is little-endian.
static_assert(std::endian::native == std::endian::little, "GGUF I/O assumes a little-endian host");

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kWriteVersion = 3;

// Sizes from ggml's type_traits (ggml.c) at the pinned llama.cpp; ids without an entry were
// removed from ggml and are rejected like unknown ids.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},    {40, "nvfp4", 64, 36},
    {41, "q1_0", 128, 18},    {42, "q2_0", 64, 18},
};

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};

template <class T>
constexpr GgufType type_for() {
    if constexpr (std::is_same_v<T, uint8_t>)
        return GgufType::uint8;
    if constexpr (std::is_same_v<T, int8_t>)
        return GgufType::int8;
    if constexpr (std::is_same_v<T, uint16_t>)
        return GgufType::uint16;
    if constexpr (std::is_same_v<T, int16_t>)
        return GgufType::int16;
    if constexpr (std::is_same_v<T, uint32_t>)
        return GgufType::uint32;
    if constexpr (std::is_same_v<T, int32_t>)
        return GgufType::int32;
    if constexpr (std::is_same_v<T, float>)
        return GgufType::float32;
    if constexpr (std::is_same_v<T, bool>)
        return GgufType::boolean;
    if constexpr (std::is_same_v<T, std::string>)
        return GgufType::string;
    if constexpr (std::is_same_v<T, uint64_t>)
        return GgufType::uint64;
    if constexpr (std::is_same_v<T, int64_t>)
        return GgufType::int64;
    if constexpr (std::is_same_v<T, double>)
        return GgufType::float64;
    if constexpr (std::is_same_v<T, GgufArray>)
        return GgufType::array;
}

// Text from a file, made safe for a one-line message.
std::string printable(std::string_view s) {
    constexpr std::size_t kMax = 80;
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < kMax; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    if (s.size() > kMax)
        out += "...";
    return out;
}

uint64_t pad_to(uint64_t n, uint64_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

// Element count of a shape, or nullopt on a negative dimension or int64 overflow.
std::optional<int64_t> element_count(const std::vector<int64_t>& ne) {
    int64_t n = 1;
    for (int64_t d : ne) {
        if (d < 0)
            return std::nullopt;
        if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
            return std::nullopt;
        n *= d;
    }
    return n;
}

// Byte size of a tensor, or nullopt when the type is unknown, the row is not a multiple of the
// block size, or the size overflows.
std::optional<uint64_t> tensor_bytes(uint32_t type, const std::vector<int64_t>& ne) {
    const GgmlTypeInfo* info = ggml_type_info(type);
    if (info == nullptr)
        return std::nullopt;
    const int64_t row = ne.empty() ? 1 : ne[0];
    if (row % info->block_size != 0)
        return std::nullopt;
    const auto n = element_count(ne);
    if (!n)
        return std::nullopt;
    const uint64_t blocks = static_cast<uint64_t>(*n / info->block_size);
    if (info->type_size != 0 && blocks > std::numeric_limits<uint64_t>::max() / info->type_size) {
        return std::nullopt;
    }
    return blocks * info->type_size;
}

struct FileCloser {
    void operator()(std::FILE* f) const {
        if (f != nullptr)
            std::fclose(f);
    }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Sequential reader that knows how many bytes are left, so no length read from the file can
// make it allocate or seek beyond the file.
class Reader {
  public:
    Reader(std::string path, std::FILE* f, uint64_t size)
        : path_(std::move(path)), f_(f), size_(size) {}

    [[noreturn]] void fail(const std::string& why) const { throw input_error(path_ + ": " + why); }

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }

    void bytes(void* dst, uint64_t n, const char* what) {
        if (n > remaining()) {
            fail(std::string("truncated file: ") + what + " runs past the end (file has " +
                 std::to_string(size_) + " bytes)");
        }
        if (n != 0 && std::fread(dst, 1, n, f_) != n) {
            fail(std::string("read error in ") + what + ": " + std::strerror(errno));
        }
        pos_ += n;
    }

    template <class T>
    T scalar(const char* what) {
        T v{};
        bytes(&v, sizeof v, what);
        return v;
    }

    std::string string(const char* what) {
        const auto n = scalar<uint64_t>(what);
        if (n > remaining()) {
            fail(std::string("truncated file: ") + what + " of " + std::to_string(n) +
                 " bytes runs past the end (file has " + std::to_string(size_) + " bytes)");
        }
        std::string s(n, '\0');
        bytes(s.data(), n, what);
        return s;
    }

  private:
    std::string path_;
    std::FILE* f_;
    uint64_t size_;
    uint64_t pos_ = 0;
};

template <class T>
GgufArray read_array_of(Reader& r, uint64_t n, const std::string& key) {
    // Every element takes at least this many bytes, which bounds the count by the file size.
    constexpr uint64_t kMinBytes = std::is_same_v<T, std::string> ? 8 : sizeof(T);
    if (n > r.remaining() / kMinBytes) {
        r.fail("truncated file: array '" + printable(key) + "' of " + std::to_string(n) +
               " elements runs past the end");
    }
    std::vector<T> v;
    v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, std::string>) {
            v.push_back(r.string("array string"));
        } else if constexpr (std::is_same_v<T, bool>) {
            v.push_back(r.scalar<uint8_t>("array value") != 0);
        } else {
            v.push_back(r.scalar<T>("array value"));
        }
    }
    return GgufArray(std::move(v));
}

GgufValue read_value(Reader& r, GgufType type, const std::string& key) {
    switch (type) {
        case GgufType::uint8:
            return r.scalar<uint8_t>("value");
        case GgufType::int8:
            return r.scalar<int8_t>("value");
        case GgufType::uint16:
            return r.scalar<uint16_t>("value");
        case GgufType::int16:
            return r.scalar<int16_t>("value");
        case GgufType::uint32:
            return r.scalar<uint32_t>("value");
        case GgufType::int32:
            return r.scalar<int32_t>("value");
        case GgufType::float32:
            return r.scalar<float>("value");
        case GgufType::boolean:
            return r.scalar<uint8_t>("value") != 0;
        case GgufType::string:
            return r.string("string value");
        case GgufType::uint64:
            return r.scalar<uint64_t>("value");
        case GgufType::int64:
            return r.scalar<int64_t>("value");
        case GgufType::float64:
            return r.scalar<double>("value");
        case GgufType::array: {
            const auto elem = static_cast<GgufType>(r.scalar<uint32_t>("array type"));
            const auto n = r.scalar<uint64_t>("array length");
            switch (elem) {
                case GgufType::uint8:
                    return read_array_of<uint8_t>(r, n, key);
                case GgufType::int8:
                    return read_array_of<int8_t>(r, n, key);
                case GgufType::uint16:
                    return read_array_of<uint16_t>(r, n, key);
                case GgufType::int16:
                    return read_array_of<int16_t>(r, n, key);
                case GgufType::uint32:
                    return read_array_of<uint32_t>(r, n, key);
                case GgufType::int32:
                    return read_array_of<int32_t>(r, n, key);
                case GgufType::float32:
                    return read_array_of<float>(r, n, key);
                case GgufType::boolean:
                    return read_array_of<bool>(r, n, key);
                case GgufType::string:
                    return read_array_of<std::string>(r, n, key);
                case GgufType::uint64:
                    return read_array_of<uint64_t>(r, n, key);
                case GgufType::int64:
                    return read_array_of<int64_t>(r, n, key);
                case GgufType::float64:
                    return read_array_of<double>(r, n, key);
                default:
                    r.fail("key '" + printable(key) + "' is an array of unsupported type " +
                           std::to_string(static_cast<uint32_t>(elem)));
            }
        }
        default:
            r.fail("key '" + printable(key) + "' has invalid value type " +
                   std::to_string(static_cast<uint32_t>(type)));
    }
}

// Integer value of any integer type, widened; nullopt for other types.
std::optional<__int128> integer_of(const GgufValue& v) {
    return std::visit(
        [](const auto& x) -> std::optional<__int128> {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                return static_cast<__int128>(x);
            } else {
                return std::nullopt;
            }
        },
        v);
}

template <class T>
std::optional<T> integer_as(const GgufValue* v) {
    if (v == nullptr)
        return std::nullopt;
    const auto i = integer_of(*v);
    if (!i || *i < static_cast<__int128>(std::numeric_limits<T>::min()) ||
        *i > static_cast<__int128>(std::numeric_limits<T>::max())) {
        return std::nullopt;
    }
    return static_cast<T>(*i);
}

// Serialization helpers for the writer.
void put(std::vector<uint8_t>& out, const void* p, std::size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
}
template <class T>
void put_scalar(std::vector<uint8_t>& out, T v) {
    put(out, &v, sizeof v);
}
void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put_scalar<uint64_t>(out, s.size());
    put(out, s.data(), s.size());
}

void put_value(std::vector<uint8_t>& out, const GgufValue& value) {
    std::visit(Overloaded{
                   [&](const std::string& s) { put_string(out, s); },
                   [&](bool b) { put_scalar<uint8_t>(out, b ? 1 : 0); },
                   [&](const GgufArray& a) {
                       put_scalar<uint32_t>(out, static_cast<uint32_t>(gguf_element_type(a)));
                       put_scalar<uint64_t>(out, gguf_array_size(a));
                       std::visit(
                           [&](const auto& vec) {
                               using E = typename std::decay_t<decltype(vec)>::value_type;
                               if constexpr (std::is_same_v<E, std::string>) {
                                   for (const auto& s : vec)
                                       put_string(out, s);
                               } else if constexpr (std::is_same_v<E, bool>) {
                                   for (bool b : vec)
                                       put_scalar<uint8_t>(out, b ? 1 : 0);
                               } else {
                                   put(out, vec.data(), vec.size() * sizeof(E));
                               }
                           },
                           a);
                   },
                   [&](auto x) { put_scalar(out, x); },
               },
               value);
}

uint64_t value_bytes(const GgufValue& value) {
    return std::visit(
        Overloaded{
            [](const std::string& s) -> uint64_t { return 8 + s.size(); },
            [](const GgufArray& a) -> uint64_t {
                return 12 + std::visit(
                                [](const auto& vec) -> uint64_t {
                                    using E = typename std::decay_t<decltype(vec)>::value_type;
                                    if constexpr (std::is_same_v<E, std::string>) {
                                        uint64_t n = 0;
                                        for (const auto& s : vec)
                                            n += 8 + s.size();
                                        return n;
                                    } else if constexpr (std::is_same_v<E, bool>) {
                                        return vec.size();
                                    } else {
                                        return vec.size() * sizeof(E);
                                    }
                                },
                                a);
            },
            [](bool) -> uint64_t { return 1; },
            [](auto x) -> uint64_t { return sizeof x; },
        },
        value);
}

class FileSink : public GgufSink {
  public:
    FileSink(std::FILE* f, const std::string& path) : f_(f), path_(path) {}
    void write(const void* data, std::size_t n) override {
        if (n != 0 && std::fwrite(data, 1, n, f_) != n) {
            throw runtime_error(path_ + ": write failed: " + std::strerror(errno));
        }
        written_ += n;
    }
    uint64_t written() const { return written_; }

  private:
    std::FILE* f_;
    const std::string& path_;
    uint64_t written_ = 0;
};

// Counts the bytes passed on to another sink.
class CountingSink : public GgufSink {
  public:
    explicit CountingSink(GgufSink& inner) : inner_(inner) {}
    void write(const void* data, std::size_t n) override {
        inner_.write(data, n);
        written_ += n;
    }
    uint64_t written() const { return written_; }

  private:
    GgufSink& inner_;
    uint64_t written_ = 0;
};

}  // namespace

std::string_view gguf_type_name(GgufType type) {
    switch (type) {
        case GgufType::uint8:
            return "uint8";
        case GgufType::int8:
            return "int8";
        case GgufType::uint16:
            return "uint16";
        case GgufType::int16:
            return "int16";
        case GgufType::uint32:
            return "uint32";
        case GgufType::int32:
            return "int32";
        case GgufType::float32:
            return "float32";
        case GgufType::boolean:
            return "bool";
        case GgufType::string:
            return "string";
        case GgufType::array:
            return "array";
        case GgufType::uint64:
            return "uint64";
        case GgufType::int64:
            return "int64";
        case GgufType::float64:
            return "float64";
    }
    return "unknown";
}

GgufType gguf_type_of(const GgufValue& value) {
    return std::visit([](const auto& x) { return type_for<std::decay_t<decltype(x)>>(); }, value);
}

GgufType gguf_element_type(const GgufArray& array) {
    return std::visit(
        [](const auto& vec) {
            return type_for<typename std::decay_t<decltype(vec)>::value_type>();
        },
        array);
}

std::size_t gguf_array_size(const GgufArray& array) {
    return std::visit([](const auto& vec) { return vec.size(); }, array);
}

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
    for (const auto& t : kGgmlTypes) {
        if (t.id == id && t.block_size > 0)
            return &t;
    }
    return nullptr;
}

const GgmlTypeInfo* ggml_type_by_name(std::string_view name) {
    auto lower = [](std::string_view s) {
        std::string out(s);
        for (auto& c : out)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return out;
    };
    const std::string want = lower(name);
    for (const auto& t : kGgmlTypes) {
        if (t.block_size > 0 && lower(t.name) == want)
            return &t;
    }
    return nullptr;
}

std::optional<uint64_t> ggml_row_bytes(uint32_t type, int64_t n_per_row) {
    if (n_per_row < 0)
        return std::nullopt;
    return tensor_bytes(type, {n_per_row});
}

int64_t GgufTensorInfo::n_elements() const {
    return element_count(ne).value_or(0);
}

const GgufValue* GgufFile::find(std::string_view key) const {
    for (const auto& p : kv) {
        if (p.key == key)
            return &p.value;
    }
    return nullptr;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const auto* v = find(key);
    if (v == nullptr || !std::holds_alternative<std::string>(*v))
        return std::nullopt;
    return std::get<std::string>(*v);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const auto* v = find(key);
    if (v == nullptr || !std::holds_alternative<bool>(*v))
        return std::nullopt;
    return std::get<bool>(*v);
}

std::optional<uint32_t> GgufFile::get_u32(std::string_view key) const {
    return integer_as<uint32_t>(find(key));
}
std::optional<int32_t> GgufFile::get_i32(std::string_view key) const {
    return integer_as<int32_t>(find(key));
}
std::optional<uint64_t> GgufFile::get_u64(std::string_view key) const {
    return integer_as<uint64_t>(find(key));
}
std::optional<int64_t> GgufFile::get_i64(std::string_view key) const {
    return integer_as<int64_t>(find(key));
}

std::optional<double> GgufFile::get_f64(std::string_view key) const {
    const auto* v = find(key);
    if (v == nullptr)
        return std::nullopt;
    if (const auto* f = std::get_if<float>(v))
        return *f;
    if (const auto* d = std::get_if<double>(v))
        return *d;
    return std::nullopt;
}

std::optional<float> GgufFile::get_f32(std::string_view key) const {
    const auto d = get_f64(key);
    if (!d)
        return std::nullopt;
    return static_cast<float>(*d);
}

const GgufArray* GgufFile::get_array(std::string_view key) const {
    const auto* v = find(key);
    return v == nullptr ? nullptr : std::get_if<GgufArray>(v);
}

std::optional<uint64_t> GgufFile::get_array_size(std::string_view key) const {
    const auto* a = get_array(key);
    if (a == nullptr)
        return std::nullopt;
    return gguf_array_size(*a);
}

std::optional<std::string> GgufFile::architecture() const {
    return get_string("general.architecture");
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    for (const auto& t : tensors) {
        if (t.name == name)
            return &t;
    }
    return nullptr;
}

uint64_t GgufFile::n_params() const {
    uint64_t n = 0;
    for (const auto& t : tensors) {
        if (t.name != "rope_freqs.weight")
            n += static_cast<uint64_t>(t.n_elements());
    }
    return n;
}

GgufFile read_gguf(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (ec || !fs::exists(st))
        throw input_error(path + ": no such file");
    if (fs::is_directory(st))
        throw input_error(path + ": is a directory, not a GGUF file");
    if (!fs::is_regular_file(st))
        throw input_error(path + ": not a regular file");
    const uint64_t size = fs::file_size(path, ec);
    if (ec)
        throw input_error(path + ": cannot read size: " + ec.message());

    FilePtr f(std::fopen(path.c_str(), "rb"));
    if (!f)
        throw input_error(path + ": cannot open: " + std::strerror(errno));
    // Vocabularies are many small strings: a large stdio buffer keeps reading them cheap.
    std::setvbuf(f.get(), nullptr, _IOFBF, 1 << 20);

    Reader r(path, f.get(), size);
    GgufFile g;
    g.path = path;
    g.file_bytes = size;

    if (size < 4)
        r.fail("not a GGUF file (too short: " + std::to_string(size) + " bytes)");
    if (r.scalar<uint32_t>("magic") != kMagic)
        r.fail("not a GGUF file (bad magic)");
    if (size < 24)
        r.fail("truncated GGUF header (" + std::to_string(size) + " bytes)");
    g.version = r.scalar<uint32_t>("version");
    if (g.version == 0x03000000 || g.version == 0x02000000) {
        r.fail("big-endian GGUF files are not supported");
    }
    if (g.version != 2 && g.version != 3) {
        r.fail("unsupported GGUF version " + std::to_string(g.version) + " (supported: 2, 3)");
    }
    const auto n_tensors = r.scalar<uint64_t>("tensor count");
    const auto n_kv = r.scalar<uint64_t>("metadata count");
    // Smallest possible encodings: a key-value pair takes 8 (key length) + 1 (key) + 4 (type) +
    // 1 (value) bytes; a tensor info 8 + 1 + 4 (n_dims) + 4 (type) + 8 (offset).
    if (n_kv > r.remaining() / 14) {
        r.fail("metadata count " + std::to_string(n_kv) + " is impossible for the file size");
    }
    if (n_tensors > r.remaining() / 25) {
        r.fail("tensor count " + std::to_string(n_tensors) + " is impossible for the file size");
    }

    std::unordered_set<std::string> keys;
    g.kv.reserve(n_kv);
    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = r.string("metadata key");
        if (key.empty())
            r.fail("metadata key #" + std::to_string(i) + " is empty");
        if (!keys.insert(key).second)
            r.fail("duplicate metadata key '" + printable(key) + "'");
        const auto type = static_cast<GgufType>(r.scalar<uint32_t>("value type"));
        GgufValue value = read_value(r, type, key);
        g.kv.push_back({std::move(key), std::move(value)});
    }

    if (const auto* a = g.find("general.alignment")) {
        const auto* u = std::get_if<uint32_t>(a);
        if (u == nullptr) {
            r.fail(std::string("general.alignment has type ") +
                   std::string(gguf_type_name(gguf_type_of(*a))) + ", expected uint32");
        }
        if (*u == 0 || (*u & (*u - 1)) != 0) {
            r.fail("general.alignment " + std::to_string(*u) + " is not a power of two");
        }
        g.alignment = *u;
    }

    std::unordered_set<std::string> names;
    g.tensors.reserve(n_tensors);
    uint64_t expected_offset = 0;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensorInfo t;
        t.name = r.string("tensor name");
        const std::string shown = "tensor '" + printable(t.name) + "'";
        if (t.name.empty())
            r.fail("tensor #" + std::to_string(i) + " has an empty name");
        if (t.name.size() >= kGgmlMaxName) {
            r.fail(shown + ": name longer than " + std::to_string(kGgmlMaxName - 1) + " bytes");
        }
        if (!names.insert(t.name).second)
            r.fail("duplicate " + shown);
        const auto n_dims = r.scalar<uint32_t>("tensor dimension count");
        if (n_dims > kGgmlMaxDims) {
            r.fail(shown + " has " + std::to_string(n_dims) + " dimensions (at most 4)");
        }
        t.ne.resize(n_dims);
        for (auto& d : t.ne) {
            d = r.scalar<int64_t>("tensor dimensions");
            if (d < 0)
                r.fail(shown + " has a negative dimension " + std::to_string(d));
        }
        if (!element_count(t.ne))
            r.fail(shown + " has too many elements");
        t.type = r.scalar<uint32_t>("tensor type");
        const GgmlTypeInfo* info = ggml_type_info(t.type);
        if (info == nullptr)
            r.fail(shown + " has unknown ggml type " + std::to_string(t.type));
        const int64_t row = t.ne.empty() ? 1 : t.ne[0];
        if (row % info->block_size != 0) {
            r.fail(shown + " of type " + std::string(info->name) + " has rows of " +
                   std::to_string(row) + " elements, not a multiple of the block size " +
                   std::to_string(info->block_size));
        }
        const auto nbytes = tensor_bytes(t.type, t.ne);
        if (!nbytes || *nbytes > size) {
            r.fail(shown + " needs more bytes than the whole file (" + std::to_string(size) + ")");
        }
        t.nbytes = *nbytes;
        t.offset = r.scalar<uint64_t>("tensor offset");
        // llama.cpp refuses anything but tensors packed in order, each padded to the alignment.
        if (t.offset != expected_offset) {
            r.fail(shown + " has data offset " + std::to_string(t.offset) + ", expected " +
                   std::to_string(expected_offset));
        }
        expected_offset += pad_to(t.nbytes, g.alignment);
        if (expected_offset > size) {
            r.fail("truncated file: tensor data runs past the end (file has " +
                   std::to_string(size) + " bytes)");
        }
        g.tensors.push_back(std::move(t));
    }

    g.data_offset = g.tensors.empty() ? r.pos() : pad_to(r.pos(), g.alignment);
    if (!g.tensors.empty()) {
        const auto& last = g.tensors.back();
        const uint64_t end = g.data_offset + last.offset + last.nbytes;
        if (end > size) {
            r.fail("truncated file: tensor data needs " + std::to_string(end) +
                   " bytes, the file has " + std::to_string(size));
        }
    }
    return g;
}

void GgufWriter::set(const std::string& key, GgufValue value) {
    if (key.empty())
        throw usage_error("GGUF metadata key must not be empty");
    for (auto& p : kv_) {
        if (p.key == key) {
            p.value = std::move(value);
            return;
        }
    }
    kv_.push_back({key, std::move(value)});
}

uint64_t GgufWriter::add_tensor(std::string name, std::vector<int64_t> ne, uint32_t type,
                                GgufTensorFill fill) {
    const std::string shown = "tensor '" + name + "'";
    if (name.empty())
        throw usage_error("GGUF tensor name must not be empty");
    if (name.size() >= kGgmlMaxName)
        throw usage_error(shown + ": name too long");
    for (const auto& t : tensors_) {
        if (t.name == name)
            throw usage_error("duplicate " + shown);
    }
    if (ne.empty() || ne.size() > kGgmlMaxDims) {
        throw usage_error(shown + ": needs 1 to 4 dimensions");
    }
    const GgmlTypeInfo* info = ggml_type_info(type);
    if (info == nullptr)
        throw usage_error(shown + ": unknown ggml type " + std::to_string(type));
    const auto nbytes = tensor_bytes(type, ne);
    if (!nbytes) {
        throw usage_error(shown + ": invalid shape for type " + std::string(info->name) +
                          " (negative dimension, overflow, or row not a multiple of " +
                          std::to_string(info->block_size) + ")");
    }
    if (!fill)
        throw usage_error(shown + ": no data");
    tensors_.push_back({std::move(name), std::move(ne), type, *nbytes, std::move(fill)});
    return *nbytes;
}

uint64_t GgufWriter::add_tensor(std::string name, std::vector<int64_t> ne, uint32_t type,
                                std::vector<uint8_t> data) {
    auto shared = std::make_shared<std::vector<uint8_t>>(std::move(data));
    return add_tensor(std::move(name), std::move(ne), type,
                      [shared](GgufSink& sink) { sink.write(shared->data(), shared->size()); });
}

uint32_t GgufWriter::alignment() const {
    for (const auto& p : kv_) {
        if (p.key != "general.alignment")
            continue;
        const auto* u = std::get_if<uint32_t>(&p.value);
        if (u == nullptr || *u == 0 || (*u & (*u - 1)) != 0) {
            throw usage_error("general.alignment must be a uint32 power of two");
        }
        return *u;
    }
    return kGgufDefaultAlignment;
}

uint64_t GgufWriter::header_bytes() const {
    uint64_t n = 4 + 4 + 8 + 8;
    for (const auto& p : kv_)
        n += 8 + p.key.size() + 4 + value_bytes(p.value);
    for (const auto& t : tensors_)
        n += 8 + t.name.size() + 4 + 8 * t.ne.size() + 4 + 8;
    return n;
}

uint64_t GgufWriter::file_bytes() const {
    const uint64_t a = alignment();
    uint64_t n = tensors_.empty() ? header_bytes() : pad_to(header_bytes(), a);
    for (const auto& t : tensors_)
        n += pad_to(t.nbytes, a);
    return n;
}

uint64_t GgufWriter::write(GgufSink& out, const std::string& path) const {
    const uint64_t a = alignment();
    std::vector<uint8_t> head;
    head.reserve(header_bytes() + a);
    put_scalar<uint32_t>(head, kMagic);
    put_scalar<uint32_t>(head, kWriteVersion);
    put_scalar<uint64_t>(head, tensors_.size());
    put_scalar<uint64_t>(head, kv_.size());
    for (const auto& p : kv_) {
        put_string(head, p.key);
        put_scalar<uint32_t>(head, static_cast<uint32_t>(gguf_type_of(p.value)));
        put_value(head, p.value);
    }
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
        put_string(head, t.name);
        put_scalar<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
        for (int64_t d : t.ne)
            put_scalar<int64_t>(head, d);
        put_scalar<uint32_t>(head, t.type);
        put_scalar<uint64_t>(head, offset);
        offset += pad_to(t.nbytes, a);
    }
    if (!tensors_.empty())
        head.resize(pad_to(head.size(), a), 0);

    CountingSink sink(out);
    sink.write(head.data(), head.size());
    static const std::array<uint8_t, 256> kZeros{};
    for (const auto& t : tensors_) {
        const uint64_t before = sink.written();
        t.fill(sink);
        const uint64_t got = sink.written() - before;
        if (got != t.nbytes) {
            throw runtime_error(path + ": tensor '" + t.name + "' produced " + std::to_string(got) +
                                " bytes, expected " + std::to_string(t.nbytes));
        }
        uint64_t pad = pad_to(t.nbytes, a) - t.nbytes;
        while (pad > 0) {
            const auto n = std::min<uint64_t>(pad, kZeros.size());
            sink.write(kZeros.data(), n);
            pad -= n;
        }
    }
    return sink.written();
}

uint64_t GgufWriter::write(const std::string& path) const {
    FilePtr f(std::fopen(path.c_str(), "wb"));
    if (!f)
        throw input_error(path + ": cannot create: " + std::strerror(errno));
    std::setvbuf(f.get(), nullptr, _IOFBF, 4 << 20);
    FileSink sink(f.get(), path);
    const uint64_t n = write(sink, path);
    if (std::fflush(f.get()) != 0) {
        throw runtime_error(path + ": write failed: " + std::strerror(errno));
    }
    std::FILE* raw = f.release();
    if (std::fclose(raw) != 0) {
        throw runtime_error(path + ": write failed: " + std::strerror(errno));
    }
    return n;
}

}  // namespace sb
