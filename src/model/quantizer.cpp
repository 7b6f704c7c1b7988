#include "model/quantizer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "model/gguf.hpp"

namespace sb {

namespace {

constexpr int kQk = 32;  // block size of Q4_0 and Q8_0

float from_bits(uint32_t w) {
    return std::bit_cast<float>(w);
}
uint32_t to_bits(float f) {
    return std::bit_cast<uint32_t>(f);
}

// ggml's block_q4_0 and block_q8_0: an f16 scale, then the packed quants.
void quantize_row_q4_0(const float* x, uint8_t* y, int64_t k) {
    for (int64_t i = 0; i < k / kQk; ++i, x += kQk, y += 2 + kQk / 2) {
        float amax = 0.0f;
        float max = 0.0f;
        for (int j = 0; j < kQk; ++j) {
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = fp32_to_fp16(d);
        std::memcpy(y, &dh, 2);
        for (int j = 0; j < kQk / 2; ++j) {
            // The truncating int8 cast (not rounding) is ggml's reference behaviour.
            const auto q0 =
                static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x[j] * id + 8.5f)));
            const auto q1 = static_cast<uint8_t>(
                std::min<int>(15, static_cast<int8_t>(x[kQk / 2 + j] * id + 8.5f)));
            y[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

void quantize_row_q8_0(const float* x, uint8_t* y, int64_t k) {
    for (int64_t i = 0; i < k / kQk; ++i, x += kQk, y += 2 + kQk) {
        float amax = 0.0f;
        for (int j = 0; j < kQk; ++j)
            amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = fp32_to_fp16(d);
        std::memcpy(y, &dh, 2);
        for (int j = 0; j < kQk; ++j) {
            y[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
        }
    }
}

}  // namespace

uint16_t fp32_to_fp16(float f) {
    // Maratos' branch-light conversion (the one ggml-impl.h uses): scaling through the float
    // unit makes the hardware do the round-to-nearest-even.
    const float scale_to_inf = from_bits(0x77800000);   // 2^112
    const float scale_to_zero = from_bits(0x08800000);  // 2^-110
    float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
    const uint32_t w = to_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u)
        bias = 0x71000000u;
    base = from_bits((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = to_bits(base);
    const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
    const uint32_t mantissa_bits = bits & 0x00000FFFu;
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

float fp16_to_fp32(uint16_t h) {
    const uint32_t w = static_cast<uint32_t>(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;
    const uint32_t exp_offset = 0xE0u << 23;
    const float exp_scale = from_bits(0x7800000u);  // 2^-112
    const float normalized = from_bits((two_w >> 4) + exp_offset) * exp_scale;
    const uint32_t magic_mask = 126u << 23;
    const float denormalized = from_bits((two_w >> 17) | magic_mask) - 0.5f;
    const uint32_t cutoff = 1u << 27;
    return from_bits(sign | (two_w < cutoff ? to_bits(denormalized) : to_bits(normalized)));
}

std::size_t BuiltinQuantizer::row_size(uint32_t type, int64_t n_per_row) const {
    if (type != ggml_type::kF32 && type != ggml_type::kF16 && type != ggml_type::kQ8_0 &&
        type != ggml_type::kQ4_0) {
        const auto* info = ggml_type_info(type);
        throw usage_error("builtin quantizer cannot produce type " +
                          (info ? std::string(info->name) : std::to_string(type)) +
                          " (supported: f32, f16, q8_0, q4_0)");
    }
    const auto n = ggml_row_bytes(type, n_per_row);
    if (!n) {
        throw usage_error("row of " + std::to_string(n_per_row) +
                          " elements is not a multiple of the block size of " +
                          std::string(ggml_type_info(type)->name));
    }
    return static_cast<std::size_t>(*n);
}

void BuiltinQuantizer::quantize_rows(uint32_t type, const float* src, void* dst, int64_t n_rows,
                                     int64_t n_per_row) const {
    const std::size_t rs = row_size(type, n_per_row);
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t r = 0; r < n_rows; ++r, src += n_per_row, out += rs) {
        switch (type) {
            case ggml_type::kF32:
                std::memcpy(out, src, rs);
                break;
            case ggml_type::kF16:
                for (int64_t j = 0; j < n_per_row; ++j) {
                    const uint16_t h = fp32_to_fp16(src[j]);
                    std::memcpy(out + 2 * j, &h, 2);
                }
                break;
            case ggml_type::kQ8_0:
                quantize_row_q8_0(src, out, n_per_row);
                break;
            default:
                quantize_row_q4_0(src, out, n_per_row);
                break;
        }
    }
}

}  // namespace sb
