#include "engine/ggml_quantizer.hpp"

#include <ggml.h>

#include <string>

#include "core/error.hpp"

namespace sb {

namespace {

// The types ggml_quantize_chunk handles; for others it only asserts.
bool chunk_supports(ggml_type t) {
    switch (t) {
        case GGML_TYPE_F32:
        case GGML_TYPE_F16:
        case GGML_TYPE_BF16:
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1:
        case GGML_TYPE_Q8_0:
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K:
        case GGML_TYPE_IQ3_XXS:
        case GGML_TYPE_IQ3_S:
        case GGML_TYPE_IQ2_S:
        case GGML_TYPE_IQ1_M:
        case GGML_TYPE_IQ4_NL:
        case GGML_TYPE_IQ4_XS:
        case GGML_TYPE_TQ1_0:
        case GGML_TYPE_TQ2_0:
        case GGML_TYPE_MXFP4:
        case GGML_TYPE_NVFP4:
        case GGML_TYPE_Q1_0:
        case GGML_TYPE_Q2_0:
            return !ggml_quantize_requires_imatrix(t);
        default:
            return false;
    }
}

ggml_type checked(uint32_t id, int64_t n_per_row) {
    if (id >= GGML_TYPE_COUNT || !chunk_supports(static_cast<ggml_type>(id))) {
        throw usage_error("ggml quantizer cannot produce ggml type " + std::to_string(id));
    }
    const auto t = static_cast<ggml_type>(id);
    if (n_per_row <= 0 || n_per_row % ggml_blck_size(t) != 0) {
        throw usage_error("row of " + std::to_string(n_per_row) +
                          " elements is not a multiple of " + "the block size of " +
                          ggml_type_name(t));
    }
    return t;
}

}  // namespace

std::size_t GgmlQuantizer::row_size(uint32_t ggml_type, int64_t n_per_row) const {
    return ggml_row_size(checked(ggml_type, n_per_row), n_per_row);
}

void GgmlQuantizer::quantize_rows(uint32_t ggml_type, const float* src, void* dst, int64_t n_rows,
                                  int64_t n_per_row) const {
    const auto t = checked(ggml_type, n_per_row);
    if (n_rows <= 0)
        return;
    ggml_quantize_chunk(t, src, dst, 0, n_rows, n_per_row, nullptr);
}

}  // namespace sb
