// The greedy token of an F16 logits product without the F16 product of every row: a Q8_0 copy of
// the matrix (kernels/q8_matmul.hpp, half the bytes, the int8 peak instead of the FMA peak) gives
// every row's logit to within a bound computed alongside it, and only the rows whose bound reaches
// the best row's lower bound are computed again in F16, exactly as f16_matmul computes them. The
// index returned is the one a full f16_matmul followed by a first-maximum scan returns, bit for
// bit: not an approximation.
//
// The bound, for token x and row m (x̂ = x rounded to F16, as f16_matmul rounds it; w the row; d̂_b
// and q the row's Q8_0 scales and values; d_a and a the token's Q8_0 scales and values; L the F16
// product as f16_matmul computes it; L~ the Q8_0 product as q8_0_matmul computes it):
//
//   |L - L~| <= min(w_err·Σ|x̂|, err_l2·|x̂|₂) + min(e_a·dq, |δ|₂·q_l2)
//               + γ_f16·w_max·Σ|x̂| + γ_q8·127·max(d_a)·dq
//
// where, per row (at pack time), w_err = max_k |w_k - d̂ q_k|, err_l2 = |w - d̂ q|₂, q_l2 = |d̂ q|₂,
// w_max = max_k |w_k| and dq = Σ_b d̂_b Σ_{k in b} |q_k|; per token, δ = x̂ - d_a a and e_a =
// max_k |δ_k|; and γ_f16, γ_q8 the float rounding of the two fixed summation orders (chains of
// cols / 16 and cols / 512 fused multiply-adds, then four folds). The first two terms are what
// quantizing the row and the token change in the exact sums (each the smaller of a max-times-sum
// and a Cauchy-Schwarz bound); the last two what rounding changes in each computed sum.
#pragma once

#include "kernels/cpu_features.hpp"
#include "kernels/q8_matmul.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bitnet::kernels {

/// A Q8_0 copy of an F16 matrix [rows][cols] and, per row, what its bound needs.
struct q8_0_screen {
    packed_q8_0 q8;
    std::vector<float> w_err; ///< max |w - d̂ q| over the row, rounded up (inf: a value not finite)
    std::vector<float> w_max; ///< max |w| over the row, rounded up
    std::vector<float> dq;    ///< Σ_b d̂_b Σ_{k in b} |q_k|, rounded up
    /// sqrt(Σ_k (w_k - d̂ q_k)²), rounded up: with the token's sqrt(Σ x̂²) a second bound on the
    /// first term (Cauchy-Schwarz), tighter where a row's errors are not all at their largest
    std::vector<float> err_l2;
    /// sqrt(Σ_k (d̂ q_k)²), rounded up: with the token's |x̂ - d_a a|₂ the same for the second term
    std::vector<float> q_l2;
    bool finite = true; ///< every value of the matrix is finite

    /// What one screening pass reads of the copy.
    [[nodiscard]] std::uint64_t bytes() const noexcept {
        return q8.bytes() +
               (w_err.size() + w_max.size() + dq.size() + err_l2.size() + q_l2.size()) *
                   sizeof(float);
    }
};

/// Packs the copy (pack_q8_0) and the per-row terms of the bound. cols must be a multiple of 32.
[[nodiscard]] q8_0_screen make_q8_0_screen(const std::uint16_t* f16, std::uint32_t rows,
                                           std::uint32_t cols, isa family = best_isa());

/// One token's greedy choice.
struct screened_token {
    std::int32_t token = -1;      ///< the first maximum of the token's F16 logits row
    float logit = 0.0f;           ///< its value, as f16_matmul computes it
    std::uint32_t exact_rows = 0; ///< rows computed in F16 to decide it (all of them on fallback)
};

/// For each token t < n_tok (row t of x at x + t·ldx, cols floats): the index of the largest of
/// f16_matmul(w, rows, cols, x_t) (the lowest index among equal values), found from the screen's
/// Q8_0 product of every row and the F16 product of the rows whose bound reaches the best. A
/// token with a value that is not finite, or a matrix with one, takes the full F16 product. `w` is
/// the matrix the screen was made from; n_threads as f16_matmul (0 = one per core).
void screened_argmax(const q8_0_screen& screen, const std::uint16_t* w, const float* x,
                     std::size_t n_tok, std::size_t ldx, screened_token* out, int n_threads,
                     isa family = best_isa());

} // namespace bitnet::kernels
