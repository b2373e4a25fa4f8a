// A plain float reference of the forward pass, for tests only: docs/GGUF-FORMAT.md §3.4 followed
// literally, with the rounding points of §3.6, one sequence at a time, no optimisation. It owns its
// weights as plain float matrices so it shares no code with the engine's loaders and kernels; the
// optimised engine is checked against it, and it is checked against bitnet.cpp's own logits.
//
// Architectures: `bitnet-b1.58` / `bitnet-25` (ReLU² FFN, sub-norms, NEOX RoPE, tied logits),
// `bitnet` (as b1.58 with SiLU and optional per-projection `.scale`), `llama` (SiLU, NORM RoPE,
// no sub-norms, separate `output` tensor when present).
#pragma once

#include "common/error.hpp"
#include "model/gguf/gguf_reader.hpp"

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace bitnet::test {

enum class reference_arch { bitnet_b158, bitnet, llama };

/// A ternary projection y = W x, W [n_out][n_in] row-major, every entry scale·{−1, 0, +1}.
struct reference_linear {
    std::uint32_t n_in = 0;
    std::uint32_t n_out = 0;
    std::vector<float> w; ///< [n_out][n_in]
    /// `bitnet` arch `.scale` tensor: multiplies the projection's output (1 when absent).
    float out_multiplier = 1.0f;

    // Derived on first use by reference_step: the tensor scale (max |w|) and the ternary codes.
    float w_scale = 0.0f;
    std::vector<std::int8_t> ternary;
};

struct reference_layer {
    std::vector<float> attn_norm;     ///< [n_embd]
    std::vector<float> attn_sub_norm; ///< [n_embd]; empty for llama
    std::vector<float> ffn_norm;      ///< [n_embd]
    std::vector<float> ffn_sub_norm;  ///< [n_ff]; empty for llama
    reference_linear wq, wk, wv, wo, w_gate, w_up, w_down;
};

struct reference_model {
    reference_arch arch = reference_arch::bitnet_b158;
    std::uint32_t n_vocab = 0;
    std::uint32_t n_embd = 0;
    std::uint32_t n_layer = 0;
    std::uint32_t n_head = 0;
    std::uint32_t n_head_kv = 0;
    std::uint32_t head_dim = 0;
    std::uint32_t n_ff = 0;
    float rms_eps = 1e-5f;
    float rope_base = 10000.0f;

    std::vector<float> token_embd;  ///< [n_vocab][n_embd], F16 values widened exactly
    std::vector<float> output_norm; ///< [n_embd]
    /// [n_vocab][n_embd]; used only by `llama` (bitnet archs always use token_embd). Empty: tied.
    std::vector<float> output;
    std::vector<float> rope_freqs; ///< [head_dim/2] divisors; empty when absent
    std::vector<reference_layer> layers;
};

/// One sequence's KV history: per layer, rows [pos][n_head_kv * head_dim], rounded to F16.
struct reference_state {
    std::vector<std::vector<float>> k;
    std::vector<std::vector<float>> v;
    std::uint32_t n_past = 0;
};

/// Reads hyper-parameters and weights (projections I2_S, F32 or F16; embeddings F16 or F32;
/// norms F32). Errors name the key or tensor that is missing or of an unsupported type.
[[nodiscard]] result<reference_model> load_reference_model(const model::gguf_file& f);

/// Decodes an I2_S tensor (docs/GGUF-FORMAT.md §2.2) to scale·{−1, 0, +1} floats, [M][K] row-major.
[[nodiscard]] result<std::vector<float>> reference_decode_i2s(const model::gguf_tensor& t);

/// Runs `tokens` at positions pos0, pos0+1, ... (pos0 must equal state.n_past), appends their
/// K/V to `state` and returns the logits of the last token ([n_vocab]). A multi-token call is a
/// prompt step (attention probabilities stay F32); a single-token call is a decode step (they are
/// rounded to F16), as bitnet.cpp does (docs/GGUF-FORMAT.md §3.6). Positions >= `decoded_from` are
/// computed as in a decode step whatever the call's size (model::seq_chunk::decoded_from).
[[nodiscard]] std::vector<float> reference_step(reference_model& m, reference_state& state,
                                                std::span<const std::int32_t> tokens, int pos0,
                                                int decoded_from = std::numeric_limits<int>::max());

// The building blocks, exposed so kernel tests can compare against them one by one.

/// Per-token int8 absmax quantisation (docs/GGUF-FORMAT.md §3.5): returns the codes, sets
/// `act_scale` = 127/max.
std::vector<std::int8_t> reference_quantize_i8(std::span<const float> x, float& act_scale);
/// BitLinear: (Σ t·q) / act_scale · w_scale · out_multiplier, with t ∈ {−1, 0, 1}.
std::vector<float> reference_bitlinear(reference_linear& w, std::span<const float> x);
/// RMSNorm as ggml computes it: Σ x² in double, scale = 1/sqrtf(mean + eps), then × g.
std::vector<float> reference_rmsnorm(std::span<const float> x, std::span<const float> g, float eps);

} // namespace bitnet::test
