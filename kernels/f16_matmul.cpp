#include "kernels/f16_matmul.hpp"

#include "kernels/f16.hpp"
#include "kernels/parallel.hpp"

#include <vector>

namespace bitnet::kernels {

void f16_matmul(const std::uint16_t* w, std::size_t rows, std::size_t cols, const float* x,
                std::size_t n_tok, std::size_t ldx, float* y, std::size_t ldy, int n_threads,
                isa /*family*/) {
    // The activation rounded to F16 once (ggml converts src1 to the weight's vec_dot type).
    std::vector<float> xh(n_tok * cols);
    for (std::size_t t = 0; t < n_tok; ++t)
        for (std::size_t k = 0; k < cols; ++k)
            xh[t * cols + k] = f16_to_f32(f32_to_f16(x[t * ldx + k]));
    parallel_ranges(rows, 64, resolve_threads(n_threads), [&](std::size_t begin, std::size_t end) {
        std::vector<float> wrow(cols);
        for (std::size_t m = begin; m < end; ++m) {
            const std::uint16_t* wr = w + m * cols;
            for (std::size_t k = 0; k < cols; ++k)
                wrow[k] = f16_to_f32(wr[k]);
            for (std::size_t t = 0; t < n_tok; ++t) {
                const float* xt = xh.data() + t * cols;
                float acc = 0.0f;
                for (std::size_t k = 0; k < cols; ++k)
                    acc += wrow[k] * xt[k];
                y[t * ldy + m] = acc;
            }
        }
    });
}

} // namespace bitnet::kernels
