#pragma once
// sb::Quantizer backed by ggml's own quantization code (ggml_quantize_chunk), so synthetic
// models hold exactly the bytes llama-quantize would write for the same floats (without an
// importance matrix). Stateless; safe to use from several threads at once.
#include "model/quantizer.hpp"

namespace sb {

class GgmlQuantizer : public Quantizer {
  public:
    // Types: f32, f16, bf16 and every quantized type ggml_quantize_chunk produces without an
    // importance matrix (q4_0 .. q8_0, the K quants, iq3/iq4, tq, mxfp4, nvfp4, q1_0, q2_0).
    // Anything else, or a row length that is not a multiple of the block size, throws
    // sb::Error(ErrorKind::usage).
    std::size_t row_size(uint32_t ggml_type, int64_t n_per_row) const override;
    void quantize_rows(uint32_t ggml_type, const float* src, void* dst, int64_t n_rows,
                       int64_t n_per_row) const override;
    std::string name() const override { return "ggml"; }
};

}  // namespace sb
