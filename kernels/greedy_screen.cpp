#include "kernels/greedy_screen.hpp"

#include "kernels/f16.hpp"
#include "kernels/f16_matmul.hpp"
#include "kernels/f16_round.hpp"
#include "kernels/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace bitnet::kernels {
namespace {

/// The float nearest `v` from above: a bound stored as float never shrinks.
float rounded_up(double v) {
    auto f = static_cast<float>(v);
    if (static_cast<double>(f) < v)
        f = std::nextafter(f, std::numeric_limits<float>::infinity());
    return f;
}

/// The full F16 product of one token and a first-maximum scan: the definition the screen keeps.
screened_token full_argmax(const std::uint16_t* w, std::size_t rows, std::size_t cols,
                           const float* x, int n_threads, isa family) {
    std::vector<float> y(rows);
    f16_matmul(w, rows, cols, x, 1, cols, y.data(), rows, n_threads, family);
    screened_token out;
    const auto best = std::max_element(y.begin(), y.end());
    out.token = static_cast<std::int32_t>(best - y.begin());
    out.logit = *best;
    out.exact_rows = static_cast<std::uint32_t>(rows);
    return out;
}

/// Relative rounding error of a chain of `n` fused multiply-adds and four folds (16 lanes), with
/// room to spare: (n + 8) unit roundoffs, and 1 % more for the second-order terms.
double chain_gamma(double n) {
    return 1.01 * (n + 8.0) * 0x1p-24;
}

} // namespace

q8_0_screen make_q8_0_screen(const std::uint16_t* f16, std::uint32_t rows, std::uint32_t cols,
                             isa family) {
    q8_0_screen s;
    s.q8 = pack_q8_0(f16, rows, cols, family);
    const std::size_t nb = cols / q8_0_block;
    s.w_err.resize(rows);
    s.w_max.resize(rows);
    s.dq.resize(rows);
    s.err_l2.resize(rows);
    s.q_l2.resize(rows);
    const auto* values = s.q8.values.as<std::int8_t>();
    const auto* scales = s.q8.scales.as<std::uint16_t>();
    std::vector<std::uint32_t> offset(cols);
    for (std::size_t k = 0; k < cols; ++k)
        offset[k] = static_cast<std::uint32_t>(q8_0_value_offset(k, cols));
    std::vector<unsigned char> row_finite(rows, 1);
    parallel_ranges(rows, 256, resolve_threads(0), [&](std::size_t begin, std::size_t end) {
        for (std::size_t m = begin; m < end; ++m) {
            double err = 0.0, w_max = 0.0, dq = 0.0, err_sq = 0.0, q_sq = 0.0;
            bool finite = true;
            for (std::size_t b = 0; b < nb; ++b) {
                // Every term below is exact in double: F16 values and scales, int8 values.
                const double d = f16_to_f32(scales[m * nb + b]);
                std::int32_t q_abs = 0;
                for (std::size_t j = 0; j < q8_0_block; ++j) {
                    const std::size_t k = b * q8_0_block + j;
                    const double w = f16_to_f32(f16[m * cols + k]);
                    const int q = values[m * cols + offset[k]];
                    finite = finite && std::isfinite(w);
                    q_abs += q < 0 ? -q : q;
                    const double e = w - d * q; // exact: both F16-wide, q 8 bits
                    err = std::max(err, std::fabs(e));
                    err_sq += e * e;
                    q_sq += (d * q) * (d * q);
                    w_max = std::max(w_max, std::fabs(w));
                }
                dq += d * q_abs;
            }
            finite = finite && std::isfinite(dq);
            row_finite[m] = finite ? 1 : 0;
            constexpr float inf = std::numeric_limits<float>::infinity();
            s.w_err[m] = finite ? rounded_up(err) : inf;
            s.w_max[m] = finite ? rounded_up(w_max) : inf;
            s.dq[m] = finite ? rounded_up(dq) : inf;
            // The square root of a sum of cols squares, each rounded (2^-53 relative): 2^-40
            // more covers them and the root.
            s.err_l2[m] = finite ? rounded_up(std::sqrt(err_sq) * (1.0 + 0x1p-40)) : inf;
            s.q_l2[m] = finite ? rounded_up(std::sqrt(q_sq) * (1.0 + 0x1p-40)) : inf;
        }
    });
    s.finite = std::all_of(row_finite.begin(), row_finite.end(), [](unsigned char f) { return f; });
    return s;
}

void screened_argmax(const q8_0_screen& screen, const std::uint16_t* w, const float* x,
                     std::size_t n_tok, std::size_t ldx, screened_token* out, int n_threads,
                     isa family) {
    const std::size_t rows = screen.q8.rows;
    const std::size_t cols = screen.q8.cols;
    const std::size_t nb = cols / q8_0_block;
    family = best_isa_up_to(family);
    if (!screen.finite) {
        for (std::size_t t = 0; t < n_tok; ++t)
            out[t] = full_argmax(w, rows, cols, x + t * ldx, n_threads, family);
        return;
    }
    // The tokens rounded to F16 (as f16_matmul rounds them), then in Q8_0 blocks.
    std::vector<float> xs(n_tok * cols);
    for (std::size_t t = 0; t < n_tok; ++t)
        round_to_f16(x + t * ldx, xs.data() + t * cols, cols, family);
    q8_0_acts acts;
    quantize_q8_0(xs.data(), n_tok, cols, cols, acts);
    std::vector<float> y(n_tok * rows);
    q8_0_matmul(screen.q8, acts, y.data(), rows, n_threads, family);

    const double gamma_f16 = chain_gamma(static_cast<double>(cols) / f16_dot_lanes);
    const double gamma_q8 = chain_gamma(static_cast<double>(nb) / q8_0_dot_lanes + 1.0);
    std::vector<double> bound(rows);
    std::vector<std::uint32_t> candidates;
    std::vector<std::uint16_t> gathered;
    std::vector<float> exact;
    for (std::size_t t = 0; t < n_tok; ++t) {
        // The token's side of the bound: x̂ and what its blocks leave of it, δ = x̂ - d_a·a,
        // exactly (double).
        const float* xh = xs.data() + t * cols;
        const std::int8_t* a = acts.q.data() + t * cols;
        const float* d_a = acts.scale.data() + t * nb;
        double x_sum = 0.0, x_sq = 0.0, e_a = 0.0, e_sq = 0.0, d_a_max = 0.0;
        bool finite = true;
        for (std::size_t k = 0; k < cols; ++k) {
            const std::size_t b = k / q8_0_block;
            const double v = xh[k];
            finite = finite && std::isfinite(v) && std::isfinite(d_a[b]);
            const double delta = v - static_cast<double>(d_a[b]) * a[k];
            x_sum += std::fabs(v);
            x_sq += v * v;
            e_a = std::max(e_a, std::fabs(delta));
            e_sq += delta * delta;
        }
        for (std::size_t b = 0; b < nb; ++b)
            d_a_max = std::max(d_a_max, std::fabs(static_cast<double>(d_a[b])));
        if (!finite) {
            out[t] = full_argmax(w, rows, cols, x + t * ldx, n_threads, family);
            continue;
        }
        // Sums of cols terms in double (2^-53 each) and their roots: a relative 2^-40 covers
        // them; the whole bound gets 2^-20 more for the rounding of its own arithmetic.
        x_sum *= 1.0 + 0x1p-40;
        const double x_l2 = std::sqrt(x_sq) * (1.0 + 0x1p-40);
        const double e_l2 = std::sqrt(e_sq) * (1.0 + 0x1p-40);
        const double rounding_q8 = gamma_q8 * 127.0 * d_a_max;
        const float* yt = y.data() + t * rows;
        double best_low = -std::numeric_limits<double>::infinity();
        for (std::size_t m = 0; m < rows; ++m) {
            // Each term by the smaller of its two bounds: max times sum, or the two lengths.
            const double row_term = std::min(static_cast<double>(screen.w_err[m]) * x_sum,
                                             static_cast<double>(screen.err_l2[m]) * x_l2);
            const double token_term = std::min(e_a * screen.dq[m], e_l2 * screen.q_l2[m]);
            bound[m] =
                (1.0 + 0x1p-20) * (row_term + token_term + gamma_f16 * screen.w_max[m] * x_sum +
                                   rounding_q8 * screen.dq[m]);
            best_low = std::max(best_low, static_cast<double>(yt[m]) - bound[m]);
        }
        // Every row that may reach the best: the maximum is among them, and every row left out
        // is below it (its upper bound is under some row's lower bound).
        candidates.clear();
        for (std::size_t m = 0; m < rows; ++m)
            if (static_cast<double>(yt[m]) + bound[m] >= best_low)
                candidates.push_back(static_cast<std::uint32_t>(m));
        gathered.resize(candidates.size() * cols);
        for (std::size_t i = 0; i < candidates.size(); ++i)
            std::memcpy(gathered.data() + i * cols, w + std::size_t{candidates[i]} * cols,
                        cols * sizeof(std::uint16_t));
        exact.resize(candidates.size());
        // Each row's F16 sum depends on that row and the token only: the same bits gathered.
        f16_matmul(gathered.data(), candidates.size(), cols, x + t * ldx, 1, ldx, exact.data(),
                   candidates.size(), n_threads, family);
        const auto best = std::max_element(exact.begin(), exact.end()); // first maximum
        out[t].token =
            static_cast<std::int32_t>(candidates[static_cast<std::size_t>(best - exact.begin())]);
        out[t].logit = *best;
        out[t].exact_rows = static_cast<std::uint32_t>(candidates.size());
    }
}

} // namespace bitnet::kernels
