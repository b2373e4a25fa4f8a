// Entry points of the per-ISA attention translation units (kernels/cpu/attention_*.cpp), called
// only by attention.cpp after a CPUID check. Plain pointers only, for the reason given in
// isa_kernels.hpp. The summation order they implement is defined by the scalar twins in
// attention.cpp: 16 FMA lanes (lane j takes the elements d ≡ j mod 16, in order), reduced by
// halving (lane i += lane i+8, then i+4, i+2, i+1); V rows accumulate with one FMA per position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace bitnet::kernels::cpu {

/// Q8_0 KV rows (kernels/attention.hpp, "KV in Q8_0"): per 32 values, an F16 scale d (one
/// half) then 32 int8 (16 halves). A value is d · q in float, exact (an 11-bit mantissa times
/// an 8-bit integer), so the sums below follow the F16 order on the dequantized values.
inline constexpr std::size_t q8_block_values = 32;
inline constexpr std::size_t q8_block_halves = 17;

/// The `group` query heads that read one KV head of a paged cache (GQA), together: each K and V
/// row is read once for all of them, and each head's sums keep the order above.
struct attention_head_args {
    const float* q16 = nullptr; ///< [group][head_dim], already rounded to F16
    std::uint32_t group = 1;
    const std::uint16_t* const* k_blocks = nullptr;
    const std::uint16_t* const* v_blocks = nullptr;
    std::uint32_t block_tokens = 0;
    std::size_t row_stride = 0;  ///< halves between consecutive positions (a whole KV row)
    std::size_t kv_offset = 0;   ///< halves from a row's start to this KV head
    std::size_t head_halves = 0; ///< halves of this KV head in a row (kv_head_halves)
    std::uint32_t n_ctx = 0;
    std::uint32_t head_dim = 0; ///< a multiple of 16
    float scale = 0.0f;
};

/// How many positions ahead the vector families fetch KV rows. A KV head's row is a few hundred
/// bytes, rows of consecutive positions are a whole KV row apart (1,280 bytes on the 2B shape)
/// and each 16 positions start a new block elsewhere, so the hardware prefetchers, which stop at
/// page boundaries, leave most rows of a long context to be read at memory latency.
inline constexpr std::uint32_t kv_prefetch_ahead = 8;

/// Asks for the `bytes` from `p` into L1 (a hint: no fault, no effect on any result).
inline void prefetch_bytes(const void* p, std::size_t bytes) {
    const auto* c = static_cast<const char*>(p);
    for (std::size_t off = 0; off < bytes; off += 64)
        __builtin_prefetch(c + off, 0, 3);
    __builtin_prefetch(c + bytes - 1, 0, 3); // the last line, where p is not line-aligned
}

/// Calls fn(g0, std::integral_constant<std::uint32_t, N>{}) for the query heads [g0, g0 + N) of a
/// group, in tiles of up to four (the vector families' accumulators per pass over the rows).
template <class Fn>
void for_head_tiles(std::uint32_t group, Fn&& fn) {
    for (std::uint32_t g0 = 0; g0 < group; g0 += 4) {
        switch (group - g0 < 4 ? group - g0 : 4) {
        case 1:
            fn(g0, std::integral_constant<std::uint32_t, 1>{});
            break;
        case 2:
            fn(g0, std::integral_constant<std::uint32_t, 2>{});
            break;
        case 3:
            fn(g0, std::integral_constant<std::uint32_t, 3>{});
            break;
        default:
            fn(g0, std::integral_constant<std::uint32_t, 4>{});
            break;
        }
    }
}

/// scores[g · n_ctx + p] = (K[p] · q16[g]) · scale for g < group, p < n_ctx.
void attention_scores_avx2(const attention_head_args& a, float* scores);
void attention_scores_avx512(const attention_head_args& a, float* scores);
/// out[g · head_dim + d] = Σ_p probs[g · n_ctx + p] · V[p][d], one FMA per p in order, from 0.
void attention_values_avx2(const attention_head_args& a, const float* probs, float* out);
void attention_values_avx512(const attention_head_args& a, const float* probs, float* out);
/// The same over Q8_0 rows (head_dim a multiple of 32).
void attention_scores_q8_avx2(const attention_head_args& a, float* scores);
void attention_scores_q8_avx512(const attention_head_args& a, float* scores);
void attention_values_q8_avx2(const attention_head_args& a, const float* probs, float* out);
void attention_values_q8_avx512(const attention_head_args& a, const float* probs, float* out);

} // namespace bitnet::kernels::cpu
