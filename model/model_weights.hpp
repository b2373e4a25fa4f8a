// A model's weights in the form the kernels run: every projection repacked once into the kernel
// family's ternary layout (I2_S files directly, TL1/TL2 and F32/F16 twins by way of their decoded
// ternary values), norms as float vectors, and the F16 logits matrix. The token embedding is read
// in place from the mapping; other tensors' mapped pages are not touched after loading.
#pragma once

#include "common/error.hpp"
#include "kernels/aligned_buffer.hpp"
#include "kernels/ternary_matmul.hpp"
#include "model/gguf_reader.hpp"
#include "model/model_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::model {

/// One BitLinear: the packed weights, and the `bitnet` arch's optional output multiplier.
struct projection {
    kernels::packed_ternary w;
    float out_multiplier = 1.0f;
    ggml_type source_type = ggml_type::i2_s; ///< the file's type, for describe()
};

struct layer_weights {
    std::vector<float> attn_norm;
    std::vector<float> attn_sub_norm; ///< empty without sub-norms
    std::vector<float> ffn_norm;
    std::vector<float> ffn_sub_norm; ///< empty without sub-norms
    projection wq, wk, wv, wo, w_gate, w_up, w_down;
};

struct model_weights {
    /// Token embedding as stored (F16 in I2_S files); rows read through `embedding_row`.
    const gguf_tensor* token_embd = nullptr;
    /// The logits matrix [n_vocab][n_embd] in F16: points into the mapping when the file's tensor
    /// is F16, else into `logits_owned` (converted once at load).
    const std::uint16_t* logits_f16 = nullptr;
    kernels::aligned_buffer logits_owned;
    std::vector<float> output_norm;
    std::vector<float> rope_freqs; ///< empty when absent
    std::vector<layer_weights> layers;
    /// Bytes held in memory by us (packed projections, norms, converted logits) and read from
    /// the mapping at run time (embedding).
    std::uint64_t owned_bytes = 0;
    std::uint64_t mapped_bytes = 0;
    std::string formats; ///< e.g. "I2_S" or "TL2"
};

struct weight_load_options {
    kernels::isa family = kernels::best_isa();
    std::string tl_kernel_config; ///< bitnet.cpp kernel_config.ini, for TL1/TL2 files
};

/// Repacks `tensors` of `file` for the kernels. Errors name the tensor: unsupported formats, TL
/// shapes without kernel parameters, projections whose K is not a multiple of 128.
[[nodiscard]] result<model_weights> load_model_weights(const gguf_file& file,
                                                       const model_config& config,
                                                       const model_tensors& tensors,
                                                       const weight_load_options& opt);

/// Row `id` of the token embedding as floats (exact for F16/F32/BF16; dequantized otherwise).
void embedding_row(const model_weights& w, std::uint32_t n_embd, std::int32_t id, float* out);

} // namespace bitnet::model
