#pragma once
// Which ggml type each tensor of a synthetic model gets, as llama-quantize chooses it: the
// pinned src/llama-quant.cpp's default mix for a file type (llama_tensor_get_type: the output
// and a tied embedding at Q6_K for Q4_0 files, attn_v and ffn_down of some layers at Q6_K for
// Q4_K_M, the shape fallbacks such as Q4_K to Q5_0 for rows not a multiple of 256), or with
// --pure every quantizable tensor at the file type's own type (llama-quantize --pure). Which
// tensors are quantized at all follows tensor_allows_quantization(); those that are not keep
// the converter's type (F32 for norms, the expert router and the convolution kernels).
#include <cstdint>
#include <string>
#include <vector>

#include "model/arch.hpp"

namespace sb {

struct QuantScheme {
    std::string name;        // canonical lower case: "q4_0", "q4_k_m", "f16"
    uint32_t file_type = 0;  // LLAMA_FTYPE, general.file_type
    uint32_t base_type = 0;  // ggml type of the bulk of the weights
};

// The file types synth writes: f32, f16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k.
std::vector<std::string> quant_names();
// Case-insensitive; throws sb::Error(ErrorKind::usage) naming the valid ones.
QuantScheme parse_quant_scheme(const std::string& name);

// Chooses the types of one model's tensors, in the converter's order (llama-quantize counts
// some tensors as it meets them, so call type_for() once per tensor, in order).
class QuantMixer {
  public:
    // n_layers: the layer count the model is written with.
    QuantMixer(const QuantScheme& scheme, bool pure, const ModelSpec& spec, int64_t n_layers,
               const std::vector<TensorSpec>& tensors);
    // The ggml type of t; F32 for tensors llama-quantize leaves alone (1D, the router, the
    // convolution kernels) and, for f16/f32 files, the file's type.
    uint32_t type_for(const TensorSpec& t);
    // Whether the last type_for() fell back from the type the mix chose because the rows are
    // not a multiple of its block (Q4_K to Q5_0, Q4_0 to F16, ...).
    bool fell_back() const { return fell_back_; }

  private:
    QuantScheme scheme_;
    bool pure_;
    const ModelSpec& spec_;
    int64_t n_layers_;
    bool tied_;
    int n_attention_wv_ = 0;
    int i_attention_wv_ = 0;
    int i_ffn_down_ = 0;
    bool fell_back_ = false;
};

}  // namespace sb
