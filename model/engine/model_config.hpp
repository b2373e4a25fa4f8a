// Architectures bitnet.cpp writes (docs/GGUF-FORMAT.md §3): hyper-parameters read from GGUF keys,
// the tensor map of each architecture, and validation of both with messages an operator can act on.
#pragma once

#include "common/error.hpp"
#include "model/gguf/gguf_reader.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::model {

/// Graph families. `bitnet-25` is an alias of `bitnet-b1.58` (same tensors, same graph).
enum class architecture {
    bitnet_b158, ///< "bitnet-b1.58" / "bitnet-25": ReLU² FFN, sub-norms, NEOX RoPE, tied logits
    bitnet,      ///< "bitnet": as above with SiLU FFN and optional per-projection scales
    llama,       ///< "llama": ternary Llama (Llama3-8B-1.58): no sub-norms, SiLU, NORM RoPE
};

enum class rope_style { neox, norm };
enum class ffn_activation { relu_sqr, silu };

struct model_config {
    std::string arch_name; ///< as stored in general.architecture
    architecture arch = architecture::bitnet_b158;
    std::uint32_t n_vocab = 0;
    std::uint32_t n_ctx_train = 0;
    std::uint32_t n_embd = 0;
    std::uint32_t n_layer = 0;
    std::uint32_t n_ff = 0;
    std::uint32_t n_head = 0;
    std::uint32_t n_head_kv = 0;
    std::uint32_t head_dim = 0; ///< n_embd / n_head unless key_length says otherwise
    std::uint32_t n_rot = 0;
    float rms_eps = 1e-5f;
    float rope_base = 10000.0f;
    rope_style rope = rope_style::neox;
    ffn_activation activation = ffn_activation::relu_sqr;
    bool has_sub_norms = true;
    /// Logits come from token_embd (bitnet archs always; llama when no `output` tensor).
    bool tied_output = true;
    std::uint32_t file_type = 0; ///< general.file_type (40 = I2_S), informative

    [[nodiscard]] std::uint32_t n_embd_kv() const noexcept { return head_dim * n_head_kv; }
    [[nodiscard]] std::uint32_t n_embd_q() const noexcept { return head_dim * n_head; }
};

/// Tensors of one transformer block. Optional ones are null when absent.
struct layer_tensors {
    const gguf_tensor* attn_norm = nullptr;
    const gguf_tensor* wq = nullptr;
    const gguf_tensor* wk = nullptr;
    const gguf_tensor* wv = nullptr;
    const gguf_tensor* attn_sub_norm = nullptr; ///< bitnet archs only
    const gguf_tensor* wo = nullptr;
    const gguf_tensor* ffn_norm = nullptr;
    const gguf_tensor* w_gate = nullptr;
    const gguf_tensor* w_up = nullptr;
    const gguf_tensor* ffn_sub_norm = nullptr; ///< bitnet archs only
    const gguf_tensor* w_down = nullptr;
    /// `bitnet` arch: optional [1] F32 multipliers after q, k, v, o, gate, up, down.
    const gguf_tensor* scale_q = nullptr;
    const gguf_tensor* scale_k = nullptr;
    const gguf_tensor* scale_v = nullptr;
    const gguf_tensor* scale_o = nullptr;
    const gguf_tensor* scale_gate = nullptr;
    const gguf_tensor* scale_up = nullptr;
    const gguf_tensor* scale_down = nullptr;
};

struct model_tensors {
    const gguf_tensor* token_embd = nullptr; ///< [n_embd, n_vocab]
    const gguf_tensor* output_norm = nullptr;
    const gguf_tensor* output = nullptr;     ///< null when absent (or unused: bitnet archs)
    const gguf_tensor* rope_freqs = nullptr; ///< optional [head_dim/2] divisors
    std::vector<layer_tensors> layers;
};

/// Types a projection (linear) weight may have: the ternary formats, or F32/F16 holding exactly
/// scale × {-1, 0, +1} (bitnet.cpp's F32 twin files).
bool is_projection_type(ggml_type t) noexcept;
/// Types the token embedding may have (F16 in I2_S files; F32, BF16, Q8_0, Q6_K, Q4_0 also read).
bool is_embedding_type(ggml_type t) noexcept;

/// Reads and checks hyper-parameters. Errors: unsupported architecture, missing keys, values out
/// of range or inconsistent (e.g. n_head not dividing n_embd).
[[nodiscard]] result<model_config> read_model_config(const gguf_file& f);

/// Maps tensor names to roles and checks each shape and type against the config.
[[nodiscard]] result<model_tensors> map_model_tensors(const gguf_file& f, const model_config& c);

/// Every violation found in the file (hyper-parameters, tensors, tokenizer metadata presence), one
/// line each; empty when the file is valid. What `bitnet-cli verify` prints.
[[nodiscard]] std::vector<std::string> verify_model(const gguf_file& f);

/// "bitnet-b1.58" etc.
const char* architecture_name(architecture a) noexcept;

/// Weights of the hyper-parameters: token embeddings plus each layer's projections (norms are
/// noise at this scale; an untied output matrix is not visible here).
[[nodiscard]] std::uint64_t parameter_count(const model_config& c);

} // namespace bitnet::model
