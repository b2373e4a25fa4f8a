#include "kernels/f16_matmul.hpp"

#include "kernels/aligned_buffer.hpp"
#include "kernels/cpu/isa_kernels.hpp"
#include "kernels/f16.hpp"
#include "kernels/f16_round.hpp"
#include "kernels/parallel.hpp"

#include <cmath>
#include <vector>

namespace bitnet::kernels {
namespace {

// The summation order every family follows (see f16_matmul.hpp), written plainly.
void f16_rows_scalar(const cpu::f16_args& a) {
    std::vector<float> wrow(a.cols);
    for (std::size_t m = a.row_begin; m < a.row_end; ++m) {
        const std::uint16_t* wr = a.w + m * a.cols;
        for (std::size_t k = 0; k < a.cols; ++k)
            wrow[k] = f16_to_f32(wr[k]);
        for (std::size_t t = 0; t < a.n_tok; ++t) {
            const float* xt = a.x + t * a.cols;
            float acc[f16_dot_lanes] = {};
            for (std::size_t k = 0; k < a.cols; ++k)
                acc[k % f16_dot_lanes] = std::fma(wrow[k], xt[k], acc[k % f16_dot_lanes]);
            for (std::size_t width = f16_dot_lanes / 2; width > 0; width /= 2)
                for (std::size_t i = 0; i < width; ++i)
                    acc[i] += acc[i + width];
            a.y[t * a.ldy + m] = acc[0];
        }
    }
}

} // namespace

void f16_matmul(const std::uint16_t* w, std::size_t rows, std::size_t cols, const float* x,
                std::size_t n_tok, std::size_t ldx, float* y, std::size_t ldy, int n_threads,
                isa family) {
    family = best_isa_up_to(family);
    // The activation rounded to F16 once (ggml converts src1 to the weight's vec_dot type), kept
    // as floats: n_tok · cols · 4 bytes, small next to the weight. 64-byte aligned: from malloc,
    // a block this size starts 16 bytes into a page, and half the kernels' 32-byte loads of it
    // would straddle two cache lines (the batched product ran at about 0.8 of its aligned speed).
    aligned_buffer xh_bytes(n_tok * cols * sizeof(float));
    auto* xh = xh_bytes.as<float>();
    for (std::size_t t = 0; t < n_tok; ++t)
        round_to_f16(x + t * ldx, xh + t * cols, cols, family);
    void (*rows_fn)(const cpu::f16_args&) = f16_rows_scalar;
    if (family == isa::avx2)
        rows_fn = cpu::f16_rows_avx2;
    else if (family == isa::avx512_vnni)
        rows_fn = cpu::f16_rows_avx512;
    parallel_ranges(rows, 64, resolve_threads(n_threads), [&](std::size_t begin, std::size_t end) {
        rows_fn({w, cols, xh, n_tok, y, ldy, begin, end});
    });
}

} // namespace bitnet::kernels
