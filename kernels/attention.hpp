// Causal multi-head attention of one query token over a paged F16 KV cache, with GQA
// (docs/GGUF-FORMAT.md §3.4 step 6, §3.6): q rounded to F16, S = K·q accumulated in float,
// softmax(S · scale) with expf in float and the sum in double (kernels/softmax.hpp), probabilities
// optionally rounded to F16 (bitnet.cpp does so in single-token steps only), then o = V·P in float
// (FMA).
//
// KV in Q8_0 (opt-in, kv_cache_type q8_0): each KV head's row of head_dim values is stored as
// head_dim / 32 blocks of an F16 scale d and 32 int8 q (ggml's block_q8_0: d = max|x| / 127,
// q = round(x / d)), 17 halves per 32 values instead of 32: 0.53x the bytes. Attention reads the
// blocks directly: a value is d · q in float (exact), summed in the same order as F16 values.
#pragma once

#include "kernels/cpu_features.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bitnet::kernels {

/// The visible keys and values of one sequence and layer: positions [0, n_ctx), position p in
/// block p / block_tokens at row p % block_tokens; a block tile is
/// [block_tokens][n_kv_heads][head_dim] F16 bits.
struct paged_kv {
    const std::uint16_t* const* k_blocks = nullptr;
    const std::uint16_t* const* v_blocks = nullptr;
    std::uint32_t block_tokens = 0;
    std::uint32_t n_ctx = 0;
    bool q8_0 = false; ///< rows are Q8_0 blocks (head_dim a multiple of 32), not F16 values
};

/// Halves one KV head's row of `head_dim` values takes: head_dim (F16) or head_dim / 32 · 17
/// (Q8_0).
[[nodiscard]] constexpr std::size_t kv_head_halves(std::uint32_t head_dim, bool q8_0) noexcept {
    return q8_0 ? std::size_t{head_dim} / 32 * 17 : head_dim;
}

/// Writes `n_heads` KV heads of `head_dim` floats (`x`, head after head) into a cache row
/// `out`: F16 values, or Q8_0 blocks (head_dim a multiple of 32) quantized as ggml's
/// quantize_row_q8_0 does.
void store_kv_row(const float* x, std::uint32_t n_heads, std::uint32_t head_dim, bool q8_0,
                  std::uint16_t* out);

struct attention_shape {
    std::uint32_t n_head = 0;
    std::uint32_t n_kv_head =
        0; ///< divides n_head; query head h reads kv head h / (n_head / n_kv_head)
    std::uint32_t head_dim = 0;
    float scale = 0.0f; ///< 1 / sqrt(head_dim)
};

/// Per-thread scratch reused across calls.
struct attention_scratch {
    std::vector<float> scores;
    std::vector<float> q16;
};

/// out [n_head · head_dim] = attention of q [n_head · head_dim] over kv. The K·q and V·P sums
/// follow one defined order (16 FMA lanes, see kernels/cpu/attention_kernels.hpp) in every
/// family, so results are bit-identical across families; head_dim not a multiple of 16 runs the
/// scalar family (a Q8_0 cache needs head_dim a multiple of 32).
void attention_one_token(const float* q, const attention_shape& shape, const paged_kv& kv,
                         bool round_probs_f16, float* out, attention_scratch& scratch,
                         isa family = best_isa());

/// The same for KV heads [kv_begin, kv_end) only: their query heads' rows of `out` are written,
/// the others untouched. Heads are independent, so a token's heads may be split over threads
/// (a single decoding sequence would otherwise leave all but one thread idle) with the same bits.
void attention_kv_heads(const float* q, const attention_shape& shape, const paged_kv& kv,
                        bool round_probs_f16, float* out, attention_scratch& scratch,
                        std::uint32_t kv_begin, std::uint32_t kv_end, isa family = best_isa());

} // namespace bitnet::kernels
