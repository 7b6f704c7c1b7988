#pragma once
// Turns rows of float weights into the bytes of a ggml tensor type. The model library sees
// quantizers only through this interface; src/engine/ggml_quantizer.hpp implements it with
// ggml's own code, and BuiltinQuantizer below is a dependency-free fallback for a few types.
#include <cstddef>
#include <cstdint>
#include <string>

namespace sb {

class Quantizer {
  public:
    virtual ~Quantizer() = default;
    // Bytes of one row of n_per_row elements of the ggml type (type ids as in ggml.h).
    // Throws sb::Error(ErrorKind::usage) for a type it cannot produce or a row length that is
    // not a multiple of the type's block size.
    virtual std::size_t row_size(uint32_t ggml_type, int64_t n_per_row) const = 0;
    // Converts n_rows rows of n_per_row floats at src into n_rows * row_size() bytes at dst.
    // Must give the same bytes for the same input on every call and be safe to call from
    // several threads at once (on disjoint buffers). Errors as for row_size().
    virtual void quantize_rows(uint32_t ggml_type, const float* src, void* dst, int64_t n_rows,
                               int64_t n_per_row) const = 0;
    // Short name for reports: "ggml", "builtin".
    virtual std::string name() const = 0;
};

// Pure C++ conversions to F32, F16, Q8_0 and Q4_0, byte-identical to ggml's reference
// implementations (which ggml_quantize_chunk uses without an importance matrix).
class BuiltinQuantizer : public Quantizer {
  public:
    std::size_t row_size(uint32_t ggml_type, int64_t n_per_row) const override;
    void quantize_rows(uint32_t ggml_type, const float* src, void* dst, int64_t n_rows,
                       int64_t n_per_row) const override;
    std::string name() const override { return "builtin"; }
};

// IEEE half precision from float, rounding to nearest even, as ggml's scalar conversion does.
uint16_t fp32_to_fp16(float f);
// The float value of an IEEE half.
float fp16_to_fp32(uint16_t h);

}  // namespace sb
