// A model's weights in the form the kernels run: every projection repacked once into the kernel
// family's ternary layout (I2_S files directly, TL1/TL2 and F32/F16 twins by way of their decoded
// ternary values), norms as float vectors, the token embedding copied as stored, and the F16 logits
// matrix. Nothing points into the file's bytes after loading: the engine owns every byte it reads,
// so the file can be truncated or rewritten while it serves.
#pragma once

#include "common/error.hpp"
#include "kernels/aligned_buffer.hpp"
#include "kernels/greedy_screen.hpp"
#include "kernels/q8_matmul.hpp"
#include "kernels/ternary_matmul.hpp"
#include "model/engine/model_config.hpp"
#include "model/gguf/gguf_reader.hpp"

#include <cstdint>
#include <optional>
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

/// The token embedding [n_vocab][n_embd], its rows as the file stores them (F16 in I2_S files).
struct embedding_table {
    ggml_type type = ggml_type::f16;
    std::uint64_t row_bytes = 0;
    kernels::aligned_buffer data;
};

struct model_weights {
    /// Read through `embedding_row`.
    embedding_table token_embd;
    /// The logits matrix [n_vocab][n_embd] in F16: the embedding's bytes when it is the (tied,
    /// F16) logits matrix, else `logits_owned` (copied or converted once at load). Null with q8
    /// logits over an untied matrix (then only `logits_q8` is read).
    const std::uint16_t* logits_f16 = nullptr;
    kernels::aligned_buffer logits_owned;
    /// The logits matrix in Q8_0 blocks when q8 logits were asked for (then the F16 one is not
    /// read after loading).
    std::optional<kernels::packed_q8_0> logits_q8;
    /// The F16 logits matrix's exact greedy screen, when engine_options::greedy_screen asked.
    std::optional<kernels::q8_0_screen> logits_screen;
    std::vector<float> output_norm;
    std::vector<float> rope_freqs; ///< empty when absent
    std::vector<layer_weights> layers;
    /// Bytes held in memory (embedding, packed projections, norms, logits).
    std::uint64_t owned_bytes = 0;
    /// What one decode token reads: every packed projection and the logits matrix (F16 or Q8).
    std::uint64_t projection_bytes = 0;
    std::uint64_t logits_bytes = 0;
    std::string formats; ///< e.g. "I2_S" or "TL2"
};

struct weight_load_options {
    kernels::isa family = kernels::best_isa();
    std::string tl_kernel_config; ///< bitnet.cpp kernel_config.ini, for TL1/TL2 files
    bool q8_logits = false;       ///< quantize the logits matrix to Q8_0 blocks (opt-in)
    bool greedy_screen = false;   ///< keep the F16 matrix's exact greedy screen (not with q8)
};

/// Repacks or copies `tensors` of `file` for the kernels, handing each tensor's pages of the file's
/// image back once copied (the image is not read afterwards). Errors name the tensor: unsupported
/// formats, TL shapes without kernel parameters, projections whose K is not a multiple of 128.
[[nodiscard]] result<model_weights> load_model_weights(const gguf_file& file,
                                                       const model_config& config,
                                                       const model_tensors& tensors,
                                                       const weight_load_options& opt);

/// Row `id` of the token embedding as floats (exact for F16/F32/BF16; dequantized otherwise).
void embedding_row(const model_weights& w, std::uint32_t n_embd, std::int32_t id, float* out);

} // namespace bitnet::model
