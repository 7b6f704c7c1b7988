#pragma once
// A pure C++ reader and writer for GGUF files (versions 2 and 3, little-endian), the model
// format of llama.cpp. The reader parses metadata and tensor descriptions only, never tensor
// data, and validates every count, length and offset against the file's size, so a truncated
// or corrupt file is reported as one sb::Error(ErrorKind::input, "<path>: <reason>") instead of
// an allocation failure or a crash later in llama.cpp. The writer streams tensor data from
// per-tensor callbacks, so a multi-GB model never has to be held in memory.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sb {

// GGUF metadata value types, as stored in the file.
enum class GgufType : uint32_t {
    uint8 = 0,
    int8 = 1,
    uint16 = 2,
    int16 = 3,
    uint32 = 4,
    int32 = 5,
    float32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    uint64 = 10,
    int64 = 11,
    float64 = 12,
};

// "uint32", "string", ...; "unknown" for values outside the enum.
std::string_view gguf_type_name(GgufType type);

// An array value: one element type (never an array; nested arrays are rejected).
using GgufArray = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                               std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                               std::vector<float>, std::vector<bool>, std::vector<std::string>,
                               std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>>;

// A metadata value. Construct with the exact C++ type of the GGUF type wanted
// (GgufValue{uint32_t{7}}); a string literal needs std::string.
using GgufValue = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, uint64_t, int64_t, double, GgufArray>;

// The GGUF type of a value (GgufType::array for arrays) and of an array's elements.
GgufType gguf_type_of(const GgufValue& value);
GgufType gguf_element_type(const GgufArray& array);
std::size_t gguf_array_size(const GgufArray& array);

struct GgufKv {
    std::string key;
    GgufValue value;
};

// ggml tensor types: ids as in ggml.h (enum ggml_type), which GGUF files store.
namespace ggml_type {
inline constexpr uint32_t kF32 = 0;
inline constexpr uint32_t kF16 = 1;
inline constexpr uint32_t kQ4_0 = 2;
inline constexpr uint32_t kQ4_1 = 3;
inline constexpr uint32_t kQ5_0 = 6;
inline constexpr uint32_t kQ5_1 = 7;
inline constexpr uint32_t kQ8_0 = 8;
inline constexpr uint32_t kQ8_1 = 9;
inline constexpr uint32_t kQ2_K = 10;
inline constexpr uint32_t kQ3_K = 11;
inline constexpr uint32_t kQ4_K = 12;
inline constexpr uint32_t kQ5_K = 13;
inline constexpr uint32_t kQ6_K = 14;
inline constexpr uint32_t kQ8_K = 15;
inline constexpr uint32_t kI8 = 24;
inline constexpr uint32_t kI16 = 25;
inline constexpr uint32_t kI32 = 26;
inline constexpr uint32_t kI64 = 27;
inline constexpr uint32_t kF64 = 28;
inline constexpr uint32_t kBF16 = 30;
}  // namespace ggml_type

// Storage layout of one ggml type: block_size elements take type_size bytes.
struct GgmlTypeInfo {
    uint32_t id;
    std::string_view name;  // as ggml_type_name() spells it: "f32", "q4_0", "q4_K", ...
    int64_t block_size;     // elements per block
    std::size_t type_size;  // bytes per block
};

// The layout of a type id, or nullptr for ids that no GGUF file may hold (unknown, or removed
// from ggml such as 4, 5 and 31..33). Covers every type of ggml up to id 42 (Q2_0).
const GgmlTypeInfo* ggml_type_info(uint32_t id);
// Looks a type up by its ggml name, case-insensitively ("Q4_0", "q4_k").
const GgmlTypeInfo* ggml_type_by_name(std::string_view name);
// Bytes of one row of n_per_row elements; nullopt when the type is unknown or n_per_row is not
// a multiple of its block size.
std::optional<uint64_t> ggml_row_bytes(uint32_t type, int64_t n_per_row);

inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr std::size_t kGgmlMaxDims = 4;
inline constexpr std::size_t kGgmlMaxName = 64;  // a tensor name must be shorter than this

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> ne;  // ggml order: ne[0] is the row length (contiguous dimension)
    uint32_t type = 0;        // ggml type id
    uint64_t offset = 0;      // relative to GgufFile::data_offset
    uint64_t nbytes = 0;      // unpadded size of the data

    int64_t n_elements() const;
};

// What read_gguf() found. Values are owned copies; tensor data is not loaded.
struct GgufFile {
    std::string path;
    uint32_t version = 0;
    uint64_t file_bytes = 0;
    uint32_t alignment = kGgufDefaultAlignment;
    uint64_t data_offset = 0;  // absolute file offset of the (aligned) tensor data section
    std::vector<GgufKv> kv;    // in file order
    std::vector<GgufTensorInfo> tensors;  // in file order

    // The value of a key, or nullptr.
    const GgufValue* find(std::string_view key) const;
    // Typed getters: nullopt when the key is absent or holds an incompatible type. Integer
    // getters accept any integer type whose value fits; get_f32/get_f64 accept either float
    // type; get_bool and get_string need exactly that type.
    std::optional<std::string> get_string(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<uint32_t> get_u32(std::string_view key) const;
    std::optional<int32_t> get_i32(std::string_view key) const;
    std::optional<uint64_t> get_u64(std::string_view key) const;
    std::optional<int64_t> get_i64(std::string_view key) const;
    std::optional<float> get_f32(std::string_view key) const;
    std::optional<double> get_f64(std::string_view key) const;
    // The array of a key, or nullptr when absent or not an array.
    const GgufArray* get_array(std::string_view key) const;
    // Number of elements of an array key.
    std::optional<uint64_t> get_array_size(std::string_view key) const;

    // general.architecture.
    std::optional<std::string> architecture() const;
    // The tensor of that name, or nullptr.
    const GgufTensorInfo* find_tensor(std::string_view name) const;
    // Total elements of all tensors except rope_freqs.weight (a derived constant, not a weight;
    // published parameter counts exclude it).
    uint64_t n_params() const;
};

// Reads and validates the header, metadata and tensor descriptions of a GGUF file: magic,
// version (2 or 3), every length against the bytes left, key uniqueness, general.alignment (a
// power of two), tensor names (unique, shorter than 64 bytes), dimensions (at most 4, none
// negative), known ggml types, rows divisible by the block size, offsets packed in order as
// llama.cpp requires, and tensor data inside the file. Throws sb::Error(ErrorKind::input,
// "<path>: <one-line reason>") on any failure, including a missing path or a directory.
GgufFile read_gguf(const std::string& path);

// Receives a tensor's bytes in order, in as many pieces as convenient.
class GgufSink {
  public:
    virtual ~GgufSink() = default;
    virtual void write(const void* data, std::size_t n) = 0;
};

// Produces a tensor's data: must write exactly the tensor's byte size to the sink.
using GgufTensorFill = std::function<void(GgufSink& sink)>;

// Builds a GGUF v3 file: metadata in insertion order, then tensor infos, then tensor data
// produced by each tensor's fill callback at write time (one tensor at a time), each padded to
// the alignment. The alignment is the general.alignment value if set (a u32 power of two),
// else 32.
class GgufWriter {
  public:
    // Sets a key, replacing an earlier value of the same key in place.
    void set(const std::string& key, GgufValue value);
    void set_string(const std::string& key, std::string value) { set(key, std::move(value)); }
    void set_bool(const std::string& key, bool value) { set(key, value); }
    void set_u32(const std::string& key, uint32_t value) { set(key, value); }
    void set_i32(const std::string& key, int32_t value) { set(key, value); }
    void set_u64(const std::string& key, uint64_t value) { set(key, value); }
    void set_f32(const std::string& key, float value) { set(key, value); }
    void set_array(const std::string& key, GgufArray value) { set(key, std::move(value)); }

    // Declares a tensor. Throws sb::Error(ErrorKind::usage) for an empty, duplicate or too
    // long name, more than 4 or no dimensions, a negative dimension, an unknown type or a row
    // length that is not a multiple of the type's block size. Returns the data's byte size.
    uint64_t add_tensor(std::string name, std::vector<int64_t> ne, uint32_t type,
                        GgufTensorFill fill);
    // Same, with the data given (copied into the writer; for small tensors).
    uint64_t add_tensor(std::string name, std::vector<int64_t> ne, uint32_t type,
                        std::vector<uint8_t> data);

    const std::vector<GgufKv>& kv() const { return kv_; }
    std::size_t tensor_count() const { return tensors_.size(); }
    // Size of the file write() produces, in bytes.
    uint64_t file_bytes() const;

    // Writes the file at path (created or truncated), calling every fill once, in order.
    // Returns the bytes written. Throws sb::Error(ErrorKind::input) when path cannot be opened,
    // ErrorKind::runtime when a write fails or a fill writes a different byte count, and lets
    // a fill's exception through; the partial file is left for the caller to remove.
    uint64_t write(const std::string& path) const;
    // Same, to a sink (the whole file, in order); path names it in messages.
    uint64_t write(GgufSink& sink, const std::string& path) const;

  private:
    struct Tensor {
        std::string name;
        std::vector<int64_t> ne;
        uint32_t type;
        uint64_t nbytes;
        GgufTensorFill fill;
    };
    uint32_t alignment() const;
    uint64_t header_bytes() const;

    std::vector<GgufKv> kv_;
    std::vector<Tensor> tensors_;
};

}  // namespace sb
